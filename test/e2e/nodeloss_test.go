package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// Nodes stop as machines that lose power do (hack/local-cluster.sh node-stop: the kubelet,
// container runtime and pod processes killed at once), with members whose data is on local
// volumes of those nodes: first one node, whose member is replaced on another; then, with
// that node still down, a second, which takes a majority of the members with it: a quorum
// loss, recovered from the member of the one node left. One cluster for both, since each
// stage costs the Serial tail of the suite minutes of waiting for Kubernetes' and the
// operator's bounds. Serial: every pod on a stopped node stops with it; last of the Serial
// specs (the lowest priority), so that no early cluster (early_test.go) is left to stop with it.
var _ = Describe("node loss", Serial, SpecPriority(-1), func() {
	It("replaces the member of a stopped node once the node is NotReady for spec.replaceMemberOnLostNodeAfter; with a second node stopped, recovers the lost quorum from the node left after approval; the nodes coming back bring no old member back", func(ctx SpecContext) {
		nodeCtl := requireNodeCtl()
		ns := newTestNamespace(ctx, "e2e-nodeloss-")
		c := newCluster(ns, "lost", 3)
		// The defaults are 3 and 5 minutes; the rules are the same at 30 s, the shortest allowed.
		c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: 30 * time.Second}
		c.Spec.QuorumLossRecovery = etcdv1alpha1.QuorumLossRecoverySpec{Policy: etcdv1alpha1.QuorumLossManual, After: &metav1.Duration{Duration: 30 * time.Second}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		c = waitReady(ctx, c)
		acked, floor := writeAcknowledged(ctx, ns, c.Name, "round-1/", 100)

		By("the operator and the volume provisioner on one node, which keeps running")
		// Either on a stopped node would stop with it, until Kubernetes evicted it after 5
		// minutes: the operator, or the volumes of the members that replace the lost ones.
		keep := gatherRecoveryNeeds(ctx)
		c = get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
		var survivor etcdv1alpha1.MemberStatus
		var others []etcdv1alpha1.MemberStatus
		for _, m := range c.Status.Members {
			if m.Node == keep {
				survivor = m
			} else {
				others = append(others, m)
			}
		}
		Expect(survivor.Name).NotTo(BeEmpty(), "a member on %s: %+v", keep, c.Status.Members)
		Expect(others).To(HaveLen(2), "the other two members on nodes of their own: %+v", c.Status.Members)
		first, second := others[0], others[1]
		Expect(first.Node).NotTo(Equal(second.Node))
		started := map[string]bool{}
		stop := func(node string) {
			Expect(framework.NodeCtl(ctx, nodeCtl, "node-stop", node)).To(Succeed())
			started[node] = false
			DeferCleanup(func(ctx SpecContext) {
				if !started[node] {
					Expect(framework.NodeCtl(ctx, nodeCtl, "node-start", node)).To(Succeed())
				}
			})
		}

		By(fmt.Sprintf("stopping node %s of member %s", first.Node, first.Name))
		// Cordoned, the node left takes no replacement: it goes to the node stopped next, so
		// that stopping that one takes a majority.
		Expect(fw.Cordon(ctx, keep, true)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(fw.Cordon(ctx, keep, false)).To(Succeed()) })
		stop(first.Node)
		stopped := time.Now()

		By("the status names the member, its node NotReady, and when it is replaced")
		Eventually(func(g Gomega) {
			got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
			degraded := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Message).To(MatchRegexp(first.Name + ` on node ` + first.Node + ` in zone \S+ \(since \S+; node ` + first.Node + ` NotReady since \S+; replaced at `))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the member is removed from etcd and a fresh one joins on another node")
		var fresh etcdv1alpha1.MemberStatus
		Eventually(func(g Gomega) {
			got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
			ids := etcdMemberIDs(ctx, g, ns, c.Name)
			g.Expect(ids).To(HaveLen(3))
			g.Expect(ids).NotTo(ContainElement(first.ID), "the lost member is out of etcd's member list")
			for _, m := range got.Status.Members {
				if m.ID != survivor.ID && m.ID != second.ID {
					fresh = m
				}
			}
			g.Expect(fresh.ID).NotTo(Equal(first.ID))
			g.Expect(get(ctx, ns, fresh.Name, &corev1.Pod{}).Spec.NodeName).To(Equal(second.Node))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("member %s on %s replaced by %s on %s, %s after the node stopped\n",
			first.Name, first.Node, fresh.Name, fresh.Node, time.Since(stopped).Round(time.Second))
		expectKeys(ctx, ns, c.Name, acked)
		Expect(fw.Cordon(ctx, keep, false)).To(Succeed())

		By(fmt.Sprintf("stopping node %s too, of members %s and %s: a majority", second.Node, second.Name, fresh.Name))
		// The survivor has applied every acknowledged write: what it holds is what the
		// recovery keeps.
		last := fmt.Sprintf("round-1/key-%04d", len(acked)-1)
		Eventually(func(g Gomega) {
			read := fw.ReadFromMember(ctx, c, survivor.Name, last)
			g.Expect(read.Err).NotTo(HaveOccurred())
			g.Expect(read.Value).To(Equal(acked[last]))
		}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "%s holds the last write", survivor.Name)
		stop(second.Node)

		By("the loss waits for approval (the stopped members' data is kept), naming the survivor")
		var rec *etcdv1alpha1.RecoveryStatus
		Eventually(func(g Gomega) {
			rec = get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{}).Status.Recovery
			g.Expect(rec).NotTo(BeNil())
			g.Expect(rec.Phase).To(Equal(etcdv1alpha1.RecoveryAwaitingApproval), rec.Message)
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(rec.Survivor).To(Equal(survivor.Name))
		Expect(rec.LostMembers).To(ConsistOf(second.Name, fresh.Name))

		By("approving recovery " + rec.ID)
		got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(got.DeepCopy())
		got.Annotations = map[string]string{etcdv1alpha1.AnnotationApproveRecovery: rec.ID}
		Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
		rec = expectRecovered(ctx, c, acked, "", floor)
		Expect(rec.Survivor).To(Equal(survivor.Name))
		// The stopped nodes are tainted unreachable, and the spread leaves them out: the
		// cluster grows back on the node left.
		for _, m := range get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{}).Status.Members {
			Expect(m.Node).To(Equal(keep), m.Name)
		}

		By("the nodes come back: the old pods go, and no old member comes back")
		for _, node := range []string{first.Node, second.Node} {
			Expect(framework.NodeCtl(ctx, nodeCtl, "node-start", node)).To(Succeed())
			started[node] = true
		}
		Eventually(func(g Gomega) {
			var pods corev1.PodList
			g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
			for _, node := range []string{first.Node, second.Node} {
				_, notReady := framework.NodeNotReadySince(get(ctx, "", node, &corev1.Node{}))
				g.Expect(notReady).To(BeFalse(), "node %s is Ready", node)
				for _, p := range pods.Items {
					g.Expect(p.Spec.NodeName).NotTo(Equal(node), "pod %s of a lost member is gone from %s", p.Name, node)
				}
			}
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(waitReady(ctx, c).Status.Members).To(HaveLen(3))
		Eventually(func(g Gomega) {
			ids := etcdMemberIDs(ctx, g, ns, c.Name)
			g.Expect(ids).To(HaveLen(3))
			g.Expect(ids).NotTo(ContainElements(first.ID), "%s stays out", first.Name)
			g.Expect(ids).NotTo(ContainElements(second.ID), "%s stays out", second.Name)
			g.Expect(ids).NotTo(ContainElements(fresh.ID), "%s stays out", fresh.Name)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		expectKeys(ctx, ns, c.Name, acked)
	})
})

// etcdMemberIDs are the IDs (hexadecimal, as status.members has them) in etcd's own member
// list of cluster name.
func etcdMemberIDs(ctx context.Context, g Gomega, ns, name string) []string {
	cli := etcdClient(ctx, ns, name)
	defer func() { _ = cli.Close() }()
	members, err := cli.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	ids := make([]string, 0, len(members))
	for _, m := range members {
		ids = append(ids, strconv.FormatUint(m.ID, 16))
	}
	return ids
}

// requireNodeCtl is the command that stops and starts the local cluster's nodes, or skips
// the spec without it.
func requireNodeCtl() string {
	nodeCtl := os.Getenv("NODE_CTL")
	if nodeCtl == "" {
		Skip("NODE_CTL is not set: make test-e2e-deploy sets it to the local cluster's node-stop and node-start")
	}
	return nodeCtl
}

// gatherRecoveryNeeds moves the operator's pod to the node of the volume provisioner when it
// runs elsewhere (the other nodes cordoned while it is made again), and returns that node:
// the one a test may keep running while it stops every other. Both are needed to grow a
// cluster back.
func gatherRecoveryNeeds(ctx context.Context) string {
	needs := framework.RecoveryNeeds(operatorNamespace)
	operator, provisioner := needs[0], needs[1]
	at, err := framework.NodesRunning(ctx, k8sClient, provisioner)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, at).To(HaveLen(1), "the volume provisioner runs on one node")
	var keep string
	for n := range at {
		keep = n
	}
	ops, err := framework.NodesRunning(ctx, k8sClient, operator)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	if len(ops) == 1 && ops[keep] {
		return keep
	}
	var nodes corev1.NodeList
	ExpectWithOffset(1, k8sClient.List(ctx, &nodes)).To(Succeed())
	for _, n := range nodes.Items {
		if n.Name != keep && !n.Spec.Unschedulable {
			ExpectWithOffset(1, fw.Cordon(ctx, n.Name, true)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(fw.Cordon(ctx, n.Name, false)).To(Succeed()) })
		}
	}
	var pods corev1.PodList
	ExpectWithOffset(1, k8sClient.List(ctx, &pods, client.InNamespace(operator.Namespace), client.MatchingLabels(operator.Labels))).To(Succeed())
	for i := range pods.Items {
		ExpectWithOffset(1, k8sClient.Delete(ctx, &pods.Items[i])).To(Succeed())
	}
	EventuallyWithOffset(1, func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(operator.Namespace), client.MatchingLabels(operator.Labels))).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		g.Expect(pods.Items[0].Spec.NodeName).To(Equal(keep))
		g.Expect(podReady(&pods.Items[0])).To(BeTrue())
	}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "the operator on "+keep)
	for _, n := range nodes.Items {
		if n.Name != keep && !n.Spec.Unschedulable {
			ExpectWithOffset(1, fw.Cordon(ctx, n.Name, false)).To(Succeed())
		}
	}
	return keep
}
