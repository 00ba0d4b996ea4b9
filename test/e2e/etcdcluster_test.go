package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// etcdImage is pushed to the local registry by `make images`; the client pods use its etcdctl.
const etcdImage = "localhost:5000/etcd-development/etcd:v3.7.3"

var _ = Describe("EtcdCluster", func() {
	Describe("a 3-member TLS cluster", Ordered, longestSpec(305), func() {
		var (
			ns      string
			cluster *etcdv1alpha1.EtcdCluster
			keys    = map[string]string{}
		)

		var counting string // the operator that created the cluster (operatorIncarnation)
		BeforeAll(func(ctx SpecContext) {
			ns = newTestNamespace(ctx, "e2e-three-")
			counting = operatorIncarnation(ctx)
			cluster = createCluster(ctx, ns, "main", 3)
		})

		It("becomes Ready with every member healthy and voting", func(ctx SpecContext) {
			c := waitReady(ctx, cluster)
			Expect(c.Status.ReadyMembers).To(Equal(int32(3)))
			Expect(c.Status.CurrentVersion).To(Equal("3.7.3"))
			Expect(c.Status.Members).To(HaveLen(3))
			leaders := 0
			for _, m := range c.Status.Members {
				Expect(m.Healthy).To(BeTrue(), m.Name)
				Expect(m.Learner).To(BeFalse(), m.Name)
				Expect(m.ClientURL).To(HavePrefix("https://"))
				if m.Leader {
					leaders++
				}
			}
			Expect(leaders).To(Equal(1))
		})

		It("says where each member runs, as the pod and its node say, one member per node and zone by default", func(ctx SpecContext) {
			c := waitReady(ctx, cluster)
			Expect(c.Status.Members).To(HaveLen(3))
			nodes, zones := map[string]bool{}, map[string]bool{}
			for _, m := range c.Status.Members {
				pod := get(ctx, ns, m.Name, &corev1.Pod{})
				Expect(pod.Spec.NodeName).NotTo(BeEmpty(), m.Name)
				node := get(ctx, "", pod.Spec.NodeName, &corev1.Node{})
				Expect([]string{m.Node, m.Zone}).To(Equal([]string{pod.Spec.NodeName, node.Labels[corev1.LabelTopologyZone]}), m.Name)
				Expect(m.Zone).NotTo(BeEmpty(), "the local cluster's nodes carry a zone label")
				nodes[m.Node], zones[m.Zone] = true, true
			}
			// The default spread, as the scheduler applied it: with a node per member, no two
			// members share one (and here each node is a zone of its own).
			var all corev1.NodeList
			Expect(k8sClient.List(ctx, &all)).To(Succeed())
			allZones := map[string]bool{}
			for _, n := range all.Items {
				allZones[n.Labels[corev1.LabelTopologyZone]] = true
			}
			Expect(nodes).To(HaveLen(min(3, len(all.Items))), "members on separate nodes")
			Expect(zones).To(HaveLen(min(3, len(allZones))), "members in separate zones")
			out, err := exec.CommandContext(ctx, os.Getenv("KUBECTL"), "-n", ns, "get", "etcdcluster", "main", "-o", "wide").Output()
			Expect(err).NotTo(HaveOccurred())
			Expect(string(out)).To(MatchRegexp(`(?m)^NAME .* NODES `), "kubectl get -o wide has a Nodes column")
			Expect(string(out)).To(ContainSubstring(c.Status.Members[0].Node))
		})

		It("is reported in the operator's metrics as it is", func(ctx SpecContext) {
			token := metricsReaderToken(ctx, ns)
			endpoint := metricsEndpoint(ctx)
			labels := fmt.Sprintf(`name="main",namespace="%s"`, ns)
			Eventually(func(g Gomega) {
				code, body := getMetrics(ctx, endpoint, token)
				g.Expect(code).To(Equal(http.StatusOK), body)
				for _, series := range []string{
					"etcdpilot_cluster_desired_members{" + labels + "} 3",
					"etcdpilot_cluster_members{" + labels + "} 3",
					"etcdpilot_cluster_ready_members{" + labels + "} 3",
					"etcdpilot_cluster_healthy_members{" + labels + "} 3",
					"etcdpilot_cluster_quorum_margin{" + labels + "} 1",
					"etcdpilot_cluster_has_leader{" + labels + "} 1",
					`etcdpilot_cluster_condition{condition="Ready",` + labels + "} 1",
				} {
					g.Expect(body).To(ContainSubstring(series))
				}
				g.Expect(body).NotTo(ContainSubstring(`etcdpilot_cluster_actions_total{action="AddLearner",`+labels), "a static bootstrap adds no learner")
				if operatorIncarnation(ctx) == counting {
					g.Expect(body).To(ContainSubstring(`etcdpilot_cluster_actions_total{action="CreateSeed",` + labels + "} 1"))
				}
				g.Expect(body).To(MatchRegexp(`etcdpilot_member_db_size_bytes\{member="main-0",%s\} [1-9]`, labels))
				g.Expect(body).To(MatchRegexp(`etcdpilot_cluster_last_successful_reconcile_timestamp_seconds\{%s\} [1-9]`, labels))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		It("serves a client with the client Secret through the client Service", func(ctx SpecContext) {
			c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			endpoint := fmt.Sprintf("https://%s.%s.svc:2379", c.Status.ClientService, ns)
			etcdctl(ctx, ns, c.Status.ClientSecret, "put-", "--endpoints="+endpoint, "put", "/e2e/through-service", "hello")
			out := etcdctl(ctx, ns, c.Status.ClientSecret, "get-", "--endpoints="+endpoint, "get", "--print-value-only", "/e2e/through-service")
			Expect(out).To(Equal("hello\n"))
		})

		It("refuses a client without a certificate, and TLS before 1.3 on the client and peer ports", func(ctx SpecContext) {
			expectTLS13Only(ctx, ns, cluster.Name)

			endpoint := podEndpoints(ctx, ns, cluster.Name)[0]
			withCert := clusterTLS(ctx, ns, cluster.Name)
			noCert := withCert.Clone()
			noCert.Certificates = nil
			Expect(tlsRead(endpoint, noCert)).To(MatchError(ContainSubstring("certificate required")))

			err := tlsRead(endpoint, withCert)
			Expect(err).To(HaveOccurred()) // the server says nothing before the client does...
			Expect(err.Error()).To(ContainSubstring("i/o timeout"), "...but accepts the certificate")
		})

		It("brings a deleted member pod back with the same identity and every key", func(ctx SpecContext) {
			cli := etcdClient(ctx, ns, cluster.Name)
			defer func() { _ = cli.Close() }()
			for i := range 200 {
				k, v := fmt.Sprintf("/e2e/key-%03d", i), fmt.Sprintf("value-%d", i)
				Expect(cli.Put(ctx, k, v)).To(Succeed())
				keys[k] = v
			}
			before := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			victim := before.Status.Members[1]
			oldPod := get(ctx, ns, victim.Name, &corev1.Pod{})

			Expect(clientset.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{})).To(Succeed())

			Eventually(func(g Gomega) {
				pod := &corev1.Pod{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), pod)).To(Succeed())
				g.Expect(pod.UID).NotTo(Equal(oldPod.UID), "a new pod")
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			after := waitReady(ctx, cluster)
			Expect(memberIDs(after)).To(Equal(memberIDs(before)), "no membership change")
			Expect(after.Status.Members).To(ContainElement(SatisfyAll(
				HaveField("Name", victim.Name), HaveField("ID", victim.ID), HaveField("Healthy", true))))
			for k, v := range keys {
				got, found, err := cli.Get(ctx, k)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), k)
				Expect(got).To(Equal(v), k)
			}
		})

		// A drain as kubectl drain makes it: the node cordoned, then the member's pod evicted.
		// Its volume is local to that node, so it cannot come back elsewhere with its data.
		It("lets a drain take one member at a time: the member of a cordoned node is replaced on another node, and a second eviction waits for it", func(ctx SpecContext) {
			before := waitReady(ctx, cluster)
			Expect(before.Status.Members).To(HaveLen(3))
			// The shortest lost-node bound the API allows, so the spec does not wait the default 3m.
			c := before.DeepCopy()
			patch := client.MergeFrom(c.DeepCopy())
			c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: 30 * time.Second}
			Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
			before = waitReady(ctx, c)
			first, second := before.Status.Members[0], before.Status.Members[1]
			evict := func(member string) error { return fw.Evict(ctx, ns, member) }
			cordon := func(ctx context.Context, node string, cordoned bool) {
				ExpectWithOffset(1, fw.Cordon(ctx, node, cordoned)).To(Succeed())
			}
			Eventually(func(g Gomega) {
				g.Expect(get(ctx, ns, cluster.Name, &policyv1.PodDisruptionBudget{}).Status.DisruptionsAllowed).To(Equal(int32(1)))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "the budget admits one disruption")

			By("draining the node of " + first.Name + ": cordoned, then the member evicted")
			cordon(ctx, first.Node, true)
			DeferCleanup(func(ctx SpecContext) { cordon(ctx, first.Node, false) })
			Expect(evict(first.Name)).To(Succeed(), "the first eviction, as kubectl drain makes it")
			err := evict(second.Name)
			Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "the second is refused while %s is away: %v", first.Name, err)

			By("the member, whose data cannot leave its node, is replaced on another node")
			var fresh etcdv1alpha1.MemberStatus
			Eventually(func(g Gomega) {
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				g.Expect(c.Status.Members).NotTo(ContainElement(HaveField("ID", first.ID)), "the drained member is removed")
				g.Expect(c.Status.Members).To(HaveLen(3))
				g.Expect(meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
				// A fresh member ID; the name may be the drained member's, free once its pod
				// (never placed) and claim were deleted.
				for _, m := range c.Status.Members {
					if m.ID != first.ID && m.ID != second.ID && m.ID != before.Status.Members[2].ID {
						fresh = m
					}
				}
				g.Expect(fresh.Node).NotTo(BeEmpty())
				g.Expect(fresh.Node).NotTo(Equal(first.Node), "not on the cordoned node")
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
			events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(events.Items).To(ContainElement(SatisfyAll(HaveField("Reason", "MemberRemoved"),
				HaveField("Note", ContainSubstring("replacing member "+first.Name+": it has been unhealthy since ")),
				HaveField("Note", ContainSubstring("node "+first.Node+", which holds its data, cordoned since ")))))

			By("the node uncordoned, the next member may go, and comes back as itself")
			cordon(ctx, first.Node, false)
			// The one member alone on its node: the fresh member shares a node with another,
			// which the spread would keep that other from coming back to.
			after := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			perNode := map[string]int{}
			for _, m := range after.Status.Members {
				perNode[m.Node]++
			}
			for _, m := range after.Status.Members {
				if perNode[m.Node] == 1 {
					second = m
				}
			}
			secondUID := get(ctx, ns, second.Name, &corev1.Pod{}).UID
			Eventually(func() error { return evict(second.Name) }).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).
				Should(Succeed(), "once the replacement is Ready, the second may go")
			Eventually(func(g Gomega) {
				pod := &corev1.Pod{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: second.Name}, pod)).To(Succeed())
				g.Expect(pod.UID).NotTo(Equal(secondUID), "a new pod")
				g.Expect(podReady(pod)).To(BeTrue())
			}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), second.Name)
			Expect(memberIDs(waitReady(ctx, cluster))).To(HaveKeyWithValue(second.Name, second.ID), "the evicted member came back as itself")
			expectKeys(ctx, ns, cluster.Name, keys)
		})

		It("scales 3 -> 5 -> 3 -> 1 -> 3, one member at a time, keeping every key", func(ctx SpecContext) {
			for _, size := range []int32{5, 3, 1, 3} {
				By(fmt.Sprintf("scaling to %d", size))
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				patch := client.MergeFrom(c.DeepCopy())
				c.Spec.Size = size
				Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
				c = waitReady(ctx, cluster)
				Expect(c.Status.Members).To(HaveLen(int(size)))
				Expect(c.Status.ReadyMembers).To(Equal(size))

				var pods corev1.PodList
				Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": cluster.Name})).To(Succeed())
				Expect(pods.Items).To(HaveLen(int(size)), "removed members' pods are gone")
				var pvcs corev1.PersistentVolumeClaimList
				Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": cluster.Name})).To(Succeed())
				live := 0
				for _, p := range pvcs.Items {
					if p.DeletionTimestamp == nil {
						live++
					}
				}
				Expect(live).To(Equal(int(size)), "deletionPolicy Delete: removed members' claims are deleted")

				expectKeys(ctx, ns, cluster.Name, keys)
			}
			// 5 -> 3 and 3 -> 1 removed four members within the hour: Prometheus raises the
			// shipped alert, from the operator's counter of removals.
			Eventually(func(g Gomega) {
				g.Expect(promAlertStates(ctx, g, "EtcdMemberReplacedRepeatedly", fmt.Sprintf(`namespace=%q, name=%q`, ns, cluster.Name))).To(ContainElement("firing"))
			}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(5 * time.Second).Should(Succeed())
		})

		It("replaces a member whose volume is deleted with a fresh one, keeping every key", func(ctx SpecContext) {
			before := waitReady(ctx, cluster)
			victim := before.Status.Members[len(before.Status.Members)-1]
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name + "-data", Namespace: ns}}
			Expect(k8sClient.Delete(ctx, pvc)).To(Succeed())
			Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})).To(Succeed())

			Eventually(func(g Gomega) {
				c := &etcdv1alpha1.EtcdCluster{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cluster), c)).To(Succeed())
				g.Expect(c.Status.Members).NotTo(ContainElement(HaveField("ID", victim.ID)), "the lost member is removed")
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
			after := waitReady(ctx, cluster)
			Expect(after.Status.Members).To(HaveLen(3))
			expectKeys(ctx, ns, cluster.Name, keys)
		})

		It("replaces a member that stays unhealthy longer than spec.replaceUnhealthyMemberAfter, keeping every key", func(ctx SpecContext) {
			before := waitReady(ctx, cluster)
			patch := client.MergeFrom(before.DeepCopy())
			before.Spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{Duration: 30 * time.Second}
			Expect(k8sClient.Patch(ctx, before, patch)).To(Succeed())
			before = waitReady(ctx, cluster)
			var victim etcdv1alpha1.MemberStatus
			for _, m := range before.Status.Members {
				if !m.Leader {
					victim = m
				}
			}
			By("breaking member " + victim.Name + ": its container now runs an image that does not exist")
			pod := get(ctx, ns, victim.Name, &corev1.Pod{})
			podPatch := client.MergeFrom(pod.DeepCopy())
			pod.Spec.Containers[0].Image = "gcr.io/etcd-development/etcd:v0.0.0-does-not-exist"
			Expect(k8sClient.Patch(ctx, pod, podPatch)).To(Succeed())

			By("the status records since when it is unhealthy and when it will be replaced")
			Eventually(func(g Gomega) {
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				g.Expect(c.Status.Members).To(ContainElement(SatisfyAll(
					HaveField("ID", victim.ID), HaveField("Healthy", false), HaveField("UnhealthySince", Not(BeNil())))))
				degraded := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionDegraded)
				g.Expect(degraded).NotTo(BeNil())
				g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMembersUnhealthy))
				zone := get(ctx, "", pod.Spec.NodeName, &corev1.Node{}).Labels[corev1.LabelTopologyZone]
				g.Expect(degraded.Message).To(ContainSubstring(victim.Name+" on node "+pod.Spec.NodeName+" in zone "+zone+" (since "),
					"named with where it runs")
				g.Expect(degraded.Message).To(ContainSubstring("replaced at"))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

			By("after the bound it is removed and a fresh member takes its place")
			Eventually(func(g Gomega) {
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				g.Expect(c.Status.Members).NotTo(ContainElement(HaveField("ID", victim.ID)), "the unhealthy member is removed")
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
			after := waitReady(ctx, cluster)
			Expect(after.Status.Members).To(HaveLen(3))
			for _, m := range after.Status.Members {
				Expect(m.Healthy).To(BeTrue(), m.Name)
				Expect(m.UnhealthySince).To(BeNil(), m.Name)
			}
			events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(events.Items).To(ContainElement(SatisfyAll(
				HaveField("Reason", "MemberRemoved"),
				HaveField("Note", SatisfyAll(ContainSubstring("replacing member "+victim.Name), ContainSubstring("unhealthy since"))))))

			expectKeys(ctx, ns, cluster.Name, keys)
		})

		It("runs member pods under the restricted Pod Security Standard", func(ctx SpecContext) {
			// Any member: the specs above replaced members, and a replacement may get a new name.
			pods := clusterPods(ctx, ns, cluster.Name)
			Expect(pods).NotTo(BeEmpty())
			pod := &pods[0]
			Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
			sc := pod.Spec.Containers[0].SecurityContext
			Expect(sc.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			Expect(sc.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
			Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))

			By("the suite's namespaces enforce that standard: a pod that breaks it is refused")
			_, err := clientset.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "unrestricted-"},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: etcdImage}}},
			}, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
			Expect(err).To(MatchError(ContainSubstring(`violates PodSecurity "restricted:latest"`)))
		})
	})

	// The 3-member cluster above runs the default (newest) release; these cover the others,
	// whose flags differ.
	DescribeTable("reaches Ready",
		func(ctx SpecContext, size int, version string) {
			ns := newTestNamespace(ctx, fmt.Sprintf("e2e-size%d-", size))
			c := createCluster(ctx, ns, "s", int32(size), version)
			c = waitReady(ctx, c)
			Expect(c.Status.ReadyMembers).To(Equal(int32(size)))
			Expect(c.Status.CurrentVersion).To(Equal(version))
			cli := etcdClient(ctx, ns, "s")
			defer func() { _ = cli.Close() }()
			Expect(cli.Put(ctx, "/e2e/size", strconv.Itoa(size))).To(Succeed())
			expectTLS13Only(ctx, ns, "s")
		},
		Entry("with 1 member of etcd 3.6", 1, "3.6.16"),
		Entry("with 5 members of etcd 3.5", 5, "3.5.35"),
	)

	It("refuses invalid specs with a message saying what is allowed", func(ctx SpecContext) {
		c := &etcdv1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "even", Namespace: "default"},
			Spec:       etcdv1alpha1.EtcdClusterSpec{Size: 4},
		}
		err := k8sClient.Create(ctx, c)
		Expect(err).To(MatchError(ContainSubstring(`spec.size: Unsupported value: 4: supported values: "1", "3", "5", "7"`)))
	})
})

// The operator goes away at the worst moments, one after another on one cluster (one
// bootstrap instead of three while the other process idles). Serial, so that no other spec
// sees the operator go away; Ordered, because each step starts from the cluster the one
// before left Ready.
var _ = Describe("the operator going away", Serial, Ordered, func() {
	var (
		ns      string
		cluster *etcdv1alpha1.EtcdCluster
		keys    = map[string]string{}
	)

	BeforeAll(func(ctx SpecContext) {
		ns = newTestNamespace(ctx, "e2e-away-")
	})

	// The operator dies while it creates the initial members of a static bootstrap, right
	// after the first member's pod: after its restart, it must create the others, on the
	// claims it made for them, and end with one cluster of three.
	It("crashing during bootstrap, right after the first initial member's pod, still ends with one Ready cluster", func(ctx SpecContext) {
		restartsBefore := operatorRestarts(ctx)
		transitions := *operatorLease(ctx).Spec.LeaseTransitions
		cluster = &etcdv1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "away", Namespace: ns,
				Annotations: map[string]string{"test.etcdpilot.io/crash-after": "CreateInitialMember"}},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete},
		}
		Expect(k8sClient.Create(ctx, cluster)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(operatorRestarts(ctx)).To(BeNumerically(">", restartsBefore), "the operator crashed")
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the restarted container leads again under its pod's name, with no handover: it did not wait out the crashed process's lease")
		Eventually(func(g Gomega) {
			pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1))
			started := pods.Items[0].Status.ContainerStatuses[0].State.Running
			g.Expect(started).NotTo(BeNil(), "the restarted container runs")
			lease := operatorLease(ctx)
			g.Expect(*lease.Spec.HolderIdentity).To(Equal(pods.Items[0].Name))
			g.Expect(lease.Spec.RenewTime.Time).To(BeTemporally(">", started.StartedAt.Time), "renewed by the restarted process")
			g.Expect(*lease.Spec.LeaseTransitions).To(Equal(transitions), "the same leader throughout")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		c := waitReady(ctx, cluster)
		Expect(c.Status.ReadyMembers).To(Equal(int32(3)))
		ids := map[string]bool{}
		for _, m := range c.Status.Members {
			Expect(m.Learner).To(BeFalse(), m.Name)
			ids[m.ID] = true
		}
		Expect(ids).To(HaveLen(3), "three members of one cluster")
		// away-0 came from the crashed operator, away-1 from the restarted one while away-0
		// alone could not answer: both from the claims' static initial cluster, as new.
		// away-2 too, or, when away-0 and away-1 already answered, joining them as existing.
		initial := make([]string, 3)
		for i := range initial {
			initial[i] = fmt.Sprintf("away-%d=https://away-%d.away-peer.%s.svc:2380", i, i, ns)
		}
		for i := range 3 {
			pod := get(ctx, ns, fmt.Sprintf("away-%d", i), &corev1.Pod{})
			args := map[string]string{}
			for _, a := range pod.Spec.Containers[0].Args {
				if k, v, ok := strings.Cut(a, "="); ok {
					args[k] = v
				}
			}
			Expect(strings.Split(args["--initial-cluster"], ",")).To(ConsistOf(initial), pod.Name)
			if i < 2 {
				Expect(args["--initial-cluster-state"]).To(Equal("new"), pod.Name)
			}
		}
	})

	// The operator dies right after a membership change in etcd and before the pod and claim
	// work that follows it (controllers/failpoint.go; the e2e deploy turns the hooks on).
	It("crashing right after a membership change, finishes the step after its restart: 3 -> 5 crashing after a member add, 5 -> 3 crashing after a member remove", func(ctx SpecContext) {
		waitReady(ctx, cluster)
		cli := etcdClient(ctx, ns, cluster.Name)
		for i := range 50 {
			k, v := fmt.Sprintf("/e2e/crash-%02d", i), fmt.Sprintf("value-%d", i)
			Expect(cli.Put(ctx, k, v)).To(Succeed())
			keys[k] = v
		}
		Expect(cli.Close()).To(Succeed())

		for _, step := range []struct {
			crashAfter string
			size       int32
		}{{"AddLearner", 5}, {"RemoveMember", 3}} {
			By(fmt.Sprintf("scaling to %d with a crash right after %s", step.size, step.crashAfter))
			restartsBefore := operatorRestarts(ctx)
			c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			patch := client.MergeFrom(c.DeepCopy())
			if c.Annotations == nil {
				c.Annotations = map[string]string{}
			}
			c.Annotations["test.etcdpilot.io/crash-after"] = step.crashAfter
			c.Spec.Size = step.size
			Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())

			Eventually(func(g Gomega) {
				g.Expect(operatorRestarts(ctx)).To(BeNumerically(">", restartsBefore), "the operator crashed")
				got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				g.Expect(got.Annotations).NotTo(HaveKey("test.etcdpilot.io/crash-after"), "the failpoint fired once")
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

			c = waitReady(ctx, cluster)
			Expect(c.Status.Members).To(HaveLen(int(step.size)))
			Expect(c.Status.ReadyMembers).To(Equal(step.size))
			var pods corev1.PodList
			Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": cluster.Name})).To(Succeed())
			Expect(pods.Items).To(HaveLen(int(step.size)), "one pod per member, none left behind")
			expectKeys(ctx, ns, cluster.Name, keys)
		}
	})

	It("scaled to zero and back, leaves the cluster serving while it is gone, then adopts it without restarting a member", func(ctx SpecContext) {
		before := waitReady(ctx, cluster)
		pods := memberPods(ctx, ns, cluster.Name)

		scaleOperator(ctx, 0)
		DeferCleanup(func(ctx SpecContext) { scaleOperator(ctx, 1) }) // whatever happens below
		Eventually(func(g Gomega) {
			list, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		By("the cluster serves reads and writes with no operator")
		keys["/e2e/away"] = "still here"
		cli := etcdClient(ctx, ns, cluster.Name)
		Expect(cli.Put(ctx, "/e2e/away", "still here")).To(Succeed())
		Expect(cli.Close()).To(Succeed())

		By("Prometheus no longer scrapes the operator: EtcdpilotOperatorDown goes pending")
		Eventually(func(g Gomega) {
			g.Expect(promAlertStates(ctx, g, "EtcdpilotOperatorDown", `job="etcdpilot-controller-manager-metrics-service"`)).NotTo(BeEmpty())
		}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(2 * time.Second).Should(Succeed())

		By("the operator comes back and adopts the cluster as it is")
		scaleOperator(ctx, 1)
		Eventually(func(g Gomega) {
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", etcdv1alpha1.ConditionReady), HaveField("Status", metav1.ConditionTrue),
				HaveField("LastTransitionTime", Equal(meta.FindStatusCondition(before.Status.Conditions, etcdv1alpha1.ConditionReady).LastTransitionTime)))))
			list, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(list.Items).To(HaveLen(1))
			g.Expect(podReady(&list.Items[0])).To(BeTrue())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		after := waitReady(ctx, cluster)
		Expect(memberIDs(after)).To(Equal(memberIDs(before)))
		Expect(memberPods(ctx, ns, cluster.Name)).To(Equal(pods), "same pods (UIDs), no restarts")
		expectKeys(ctx, ns, cluster.Name, keys)
	})
})

// memberPods maps each member pod of a cluster to its UID and restart count.
func memberPods(ctx context.Context, ns, name string) map[string]string {
	var pods corev1.PodList
	ExpectWithOffset(1, k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name})).To(Succeed())
	out := map[string]string{}
	for _, p := range pods.Items {
		var restarts int32
		for _, cs := range p.Status.ContainerStatuses {
			restarts += cs.RestartCount
		}
		out[p.Name] = fmt.Sprintf("%s restarts=%d", p.UID, restarts)
	}
	return out
}

// scaleOperator sets the replicas of the operator's Deployment.
func scaleOperator(ctx context.Context, replicas int32) {
	scale, err := clientset.AppsV1().Deployments(operatorNamespace).GetScale(ctx, operatorDeployment, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	scale.Spec.Replicas = replicas
	_, err = clientset.AppsV1().Deployments(operatorNamespace).UpdateScale(ctx, operatorDeployment, scale, metav1.UpdateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// operatorRestarts sums the container restarts of the operator's pods.
// operatorLease is the Lease the operator's replicas elect their leader with.
func operatorLease(ctx context.Context) *coordinationv1.Lease {
	lease, err := clientset.CoordinationV1().Leases(operatorNamespace).Get(ctx, "etcdpilot.etcd.etcdpilot.io", metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, lease.Spec.HolderIdentity).NotTo(BeNil())
	ExpectWithOffset(1, lease.Spec.LeaseTransitions).NotTo(BeNil())
	return lease
}

func operatorRestarts(ctx context.Context) int32 {
	pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var n int32
	for _, p := range pods.Items {
		for _, cs := range p.Status.ContainerStatuses {
			n += cs.RestartCount
		}
	}
	return n
}

func newTestNamespace(ctx context.Context, prefix string) string {
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: restrictedNamespace},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	cleanUpNamespace(ns.Name)
	return ns.Name
}

// cleanUpNamespace has namespace ns searched for shown secrets and removed when the spec
// ends.
func cleanUpNamespace(ns string) {
	DeferCleanup(func(ctx SpecContext) {
		// Delete the clusters first, so their finalizer runs while the operator is there.
		_ = k8sClient.DeleteAllOf(ctx, &etcdv1alpha1.EtcdCluster{}, client.InNamespace(ns))
		_ = clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
	})
	// Cleanups run last registered first: the search sees the namespace as the spec left it,
	// and the deletion above runs even when the search fails.
	DeferCleanup(expectNoSecretsShown, ns)
}

// restrictedNamespace are the labels of every namespace the suite runs the project's pods
// in: the API server refuses a pod that breaks the restricted Pod Security Standard, so a
// member, backup, restore or operator pod that breaks it fails the suite.
var restrictedNamespace = map[string]string{
	"pod-security.kubernetes.io/enforce":         "restricted",
	"pod-security.kubernetes.io/enforce-version": "latest",
}

// restrictedPod is the security context a test's own pod needs in such a namespace.
func restrictedPod() (*corev1.PodSecurityContext, *corev1.SecurityContext) {
	return &corev1.PodSecurityContext{
			RunAsNonRoot:   ptr.To(true),
			RunAsUser:      ptr.To[int64](65532),
			SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
		}, &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}
}

// createCluster creates a TLS cluster; version is optional (the default is the newest).
func createCluster(ctx context.Context, ns, name string, size int32, version ...string) *etcdv1alpha1.EtcdCluster {
	c := newCluster(ns, name, size)
	if len(version) > 0 {
		c.Spec.Version = version[0]
	}
	ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
	return c
}

// newCluster is the EtcdCluster createCluster creates, for a spec that sets more first.
func newCluster(ns, name string, size int32) *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{
			Size:           size,
			DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
		},
	}
}

func get[T client.Object](ctx context.Context, ns, name string, obj T) T {
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// waitReady waits for the cluster's Ready condition for its current generation.
func waitReady(ctx context.Context, c *etcdv1alpha1.EtcdCluster) *etcdv1alpha1.EtcdCluster {
	return waitReadyWithin(ctx, c, 4*time.Minute)
}

// waitReadyWithin is waitReady with its own bound.
func waitReadyWithin(ctx context.Context, c *etcdv1alpha1.EtcdCluster, timeout time.Duration) *etcdv1alpha1.EtcdCluster {
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	got := c.DeepCopy()
	ExpectWithOffset(1, fw.WaitFor(wctx, got, "Ready", framework.Ready())).To(Succeed())
	return got
}

func memberIDs(c *etcdv1alpha1.EtcdCluster) map[string]string {
	out := map[string]string{}
	for _, m := range c.Status.Members {
		out[m.Name] = m.ID
	}
	return out
}

// expectTLS13Only checks that a member's client and peer listeners refuse TLS 1.2, even
// from a client with a valid certificate, and complete a TLS 1.3 handshake.
func expectTLS13Only(ctx context.Context, ns, name string) {
	endpoint := podEndpoints(ctx, ns, name)[0]
	cfg := clusterTLS(ctx, ns, name)
	host, _, err := net.SplitHostPort(endpoint)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, ep := range []string{endpoint, net.JoinHostPort(host, "2380")} {
		tls12 := cfg.Clone()
		tls12.MaxVersion = tls.VersionTLS12
		ExpectWithOffset(1, tlsRead(ep, tls12)).To(MatchError(ContainSubstring("protocol version")), "%s refuses TLS 1.2", ep)
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", ep, cfg)
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), ep)
		ExpectWithOffset(1, conn.ConnectionState().Version).To(Equal(uint16(tls.VersionTLS13)), "%s speaks TLS 1.3", ep)
		_ = conn.Close()
	}
}

// clusterTLS is how a client of cluster name on this machine dials a member
// (framework.Env.ClientTLS): with the client certificate, trusting the cluster's CA, and
// checking the member's certificate against the client Service's name, since the machine
// dials pod IPs.
func clusterTLS(ctx context.Context, ns, name string) *tls.Config {
	cfg, err := fw.ClientTLS(ctx, get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{}))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, cfg).NotTo(BeNil(), "EtcdCluster %s serves TLS", name)
	return cfg
}

// podEndpoints are host:port of the client listeners of a cluster's member pods that have
// an address on the local cluster's pod network, sorted; none when the list fails.
func podEndpoints(ctx context.Context, ns, name string) []string {
	endpoints, _ := fw.MemberAddresses(ctx, &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})
	return endpoints
}

// etcdClient connects from this machine to the member pods with the client certificate.
func etcdClient(ctx context.Context, ns, name string) etcd.Client {
	cli, err := fw.Connect(ctx, get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{}))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cli
}

// etcdV3Client is a client of the etcd API itself, for what the operator's client does
// not expose: revisions, the cluster ID, statuses. It connects to the member pods of the
// moment and is closed when the spec ends.
func etcdV3Client(ctx context.Context, ns, name string, endpoints ...string) *clientv3.Client {
	cli, err := fw.ClientV3(ctx, get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{}), endpoints...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	DeferCleanup(cli.Close)
	return cli
}

// expectKeys reads every key of keys from the cluster and expects its value.
func expectKeys(ctx context.Context, ns, name string, keys map[string]string) {
	cli := etcdClient(ctx, ns, name)
	defer func() { _ = cli.Close() }()
	ExpectWithOffset(1, framework.CheckKeys(ctx, cli, keys)).To(Succeed())
}

// tlsRead completes a TLS handshake with endpoint and reads, for at most two seconds: with
// TLS 1.3 a server refuses a client certificate only after the client's handshake is done,
// and the refusal arrives as an alert on the first read.
func tlsRead(endpoint string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", endpoint, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

// etcdctl runs etcdctl in a pod of the etcd image with the client Secret mounted, waits
// for it to succeed and returns its output: the way a workload in the cluster connects.
func etcdctl(ctx context.Context, ns, secret, prefix string, args ...string) string {
	podSecurity, containerSecurity := restrictedPod()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy:   corev1.RestartPolicyNever,
			SecurityContext: podSecurity,
			Containers: []corev1.Container{{
				Name:            "etcdctl",
				Image:           etcdImage,
				SecurityContext: containerSecurity,
				Command:         []string{"/usr/local/bin/etcdctl"},
				Args: append([]string{
					"--cacert=/tls/ca.crt", "--cert=/tls/tls.crt", "--key=/tls/tls.key", "--command-timeout=20s",
				}, args...),
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: secret},
			}}},
		},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).NotTo(Equal(corev1.PodFailed), "etcdctl %v failed", args)
		g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	logs, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(logs)
}
