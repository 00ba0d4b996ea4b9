package e2e

import (
	"fmt"
	"os"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// A node stops as a machine that loses power does (hack/local-cluster.sh node-stop: its
// kubelet, container runtime and pod processes killed at once), with a member whose data is
// on a local volume of that node. Serial: every pod on that node stops with it.
var _ = Describe("node loss", Serial, func() {
	It("replaces a member whose node stops, on another node, once the node is NotReady for spec.replaceMemberOnLostNodeAfter, and the node coming back does not bring the old member back", func(ctx SpecContext) {
		nodeCtl := os.Getenv("NODE_CTL")
		if nodeCtl == "" {
			Skip("NODE_CTL is not set: make test-e2e-deploy sets it to the local cluster's node-stop and node-start")
		}
		ns := newTestNamespace(ctx, "e2e-nodeloss-")
		c := newCluster(ns, "lost", 3)
		// The default is 3 minutes; the rule is the same at 30 s, the shortest allowed.
		c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: 30 * time.Second}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		c = waitReady(ctx, c)
		keys := map[string]string{}
		cli := etcdClient(ctx, ns, c.Name)
		for i := range 100 {
			k, v := fmt.Sprintf("/e2e/nodeloss-%03d", i), fmt.Sprintf("v%d", i)
			Expect(cli.Put(ctx, k, v)).To(Succeed())
			keys[k] = v
		}
		_ = cli.Close()

		By("stopping the node of a member, not one of the operator or of the volume provisioner")
		// Either on the stopped node would stop with it, until Kubernetes evicted it after 5
		// minutes: the operator, or the volumes of the member that replaces the lost one.
		keep, err := framework.NodesRunning(ctx, k8sClient, framework.RecoveryNeeds(operatorNamespace)...)
		Expect(err).NotTo(HaveOccurred())
		victim, ok := framework.MemberToLose(c.Status.Members, keep)
		Expect(ok).To(BeTrue(), "a member away from the nodes %v: %+v", keep, c.Status.Members)
		lost := victim.Node
		Expect(framework.NodeCtl(ctx, nodeCtl, "node-stop", lost)).To(Succeed())
		started := false
		DeferCleanup(func(ctx SpecContext) {
			if !started {
				Expect(framework.NodeCtl(ctx, nodeCtl, "node-start", lost)).To(Succeed())
			}
		})
		stopped := time.Now()

		By("the status names the member, its node NotReady, and when it is replaced")
		Eventually(func(g Gomega) {
			got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
			degraded := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Message).To(MatchRegexp(victim.Name + ` on node ` + lost + ` in zone \S+ \(since \S+; node ` + lost + ` NotReady since \S+; replaced at `))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the member is removed from etcd and a fresh one joins on another node")
		var fresh etcdv1alpha1.MemberStatus
		Eventually(func(g Gomega) {
			got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
			cli := etcdClient(ctx, ns, c.Name)
			defer func() { _ = cli.Close() }()
			members, err := cli.MemberList(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(members).To(HaveLen(3))
			for _, m := range members {
				g.Expect(strconv.FormatUint(m.ID, 16)).NotTo(Equal(victim.ID), "the lost member is out of etcd's member list")
				g.Expect(m.IsLearner).To(BeFalse(), m.Name)
			}
			known := map[string]bool{}
			for _, m := range c.Status.Members {
				known[m.ID] = true
			}
			for _, m := range got.Status.Members {
				if !known[m.ID] {
					fresh = m
				}
			}
			g.Expect(fresh.Name).NotTo(BeEmpty())
			pod := get(ctx, ns, fresh.Name, &corev1.Pod{})
			g.Expect(pod.Spec.NodeName).NotTo(Equal(lost))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		GinkgoWriter.Printf("member %s on %s replaced by %s on %s, %s after the node stopped\n",
			victim.Name, lost, fresh.Name, fresh.Node, time.Since(stopped).Round(time.Second))
		expectKeys(ctx, ns, c.Name, keys)

		By("the node comes back: its old pod goes, and the old member stays out")
		Expect(framework.NodeCtl(ctx, nodeCtl, "node-start", lost)).To(Succeed())
		started = true
		Eventually(func(g Gomega) {
			_, notReady := framework.NodeNotReadySince(get(ctx, "", lost, &corev1.Node{}))
			g.Expect(notReady).To(BeFalse(), "node %s is Ready", lost)
			err := k8sClient.Get(ctx, types.NamespacedName{Namespace: ns, Name: victim.Name}, &corev1.Pod{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the old pod of %s is gone: %v", victim.Name, err)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		got := waitReady(ctx, c)
		Expect(got.Status.Members).To(HaveLen(3))
		cli = etcdClient(ctx, ns, c.Name)
		defer func() { _ = cli.Close() }()
		members, err := cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		ids := []string{}
		for _, m := range members {
			ids = append(ids, strconv.FormatUint(m.ID, 16))
		}
		Expect(ids).NotTo(ContainElement(victim.ID))
		Expect(ids).To(HaveLen(3))
		expectKeys(ctx, ns, c.Name, keys)
	})
})
