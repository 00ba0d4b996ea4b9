package e2e

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// A member the scheduler can place on no node says so in the cluster's status (Degraded
// MemberUnschedulable, quoting the scheduler) and in a Warning event, instead of a silent
// Pending; once the user's rule admits a node, the cluster starts.
var _ = Describe("member placement", longestSpec(150), func() {
	It("says which rule keeps a member from every node, and starts once the rule admits one", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-placement-")
		c := newCluster(ns, "p", 3)
		c.Spec.PodTemplate.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-nowhere"}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())

		By("the members' pods wait for a node, and the cluster says why")
		var degraded *metav1.Condition
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "p", &etcdv1alpha1.EtcdCluster{})
			degraded = meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberUnschedulable), degraded.Message)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(degraded.Message).To(SatisfyAll(ContainSubstring("member p-0 has waited for a node since"),
			ContainSubstring("node affinity/selector")), "the member, and the scheduler's words on the rule")
		pod := get(ctx, ns, "p-0", &corev1.Pod{})
		Expect(pod.Spec.NodeName).To(BeEmpty())
		scheduled := podCondition(pod, corev1.PodScheduled)
		Expect(scheduled).NotTo(BeNil())
		Expect(scheduled.Reason).To(Equal(corev1.PodReasonUnschedulable), "the pod itself says it is unschedulable")
		Eventually(func(g Gomega) {
			var evs eventsv1.EventList
			g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
			var reasons []string
			for _, e := range evs.Items {
				if e.Regarding.Kind == "EtcdCluster" && e.Type == corev1.EventTypeWarning {
					reasons = append(reasons, e.Reason)
				}
			}
			g.Expect(reasons).To(ContainElement(etcdv1alpha1.ReasonMemberUnschedulable))
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("the node selector admits the node: the cluster starts")
		got := get(ctx, ns, "p", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.PodTemplate.NodeSelector = map[string]string{corev1.LabelTopologyZone: "zone-a"}
		Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
		ready := waitReady(ctx, got)
		Expect(ready.Status.Members).To(HaveLen(3))
		for _, m := range ready.Status.Members {
			Expect(m.Zone).To(Equal("zone-a"), m.Name)
		}
		Expect(meta.FindStatusCondition(ready.Status.Conditions, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	})
})

// podCondition is pod's condition of type t, or nil.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
