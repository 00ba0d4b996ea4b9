package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Each member says where its pod runs (the node it is bound to, and that Node's zone
// label), and a member pod that the scheduler could place on no node for 30 s degrades the
// cluster with the scheduler's words and a Warning event.
func TestMembersSayWhereTheyRunAndWhyOneCannotBePlaced(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	readyCluster(g, ns, "pl", nil)

	zoned := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-a", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	plain := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: ns + "-b"}}
	for _, n := range []*corev1.Node{zoned, plain} {
		g.Expect(k8sClient.Create(ctx, n)).To(Succeed())
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), n) })
	}
	bind := func(pod, node string) {
		p := get(g, ns, pod, &corev1.Pod{})
		g.Expect(k8sClient.SubResource("binding").Create(ctx, p, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: pod, Namespace: ns},
			Target:     corev1.ObjectReference{Kind: "Node", Name: node},
		})).To(Succeed())
	}
	bind("pl-0", zoned.Name)
	bind("pl-1", plain.Name)
	g.Eventually(func(g Gomega) {
		var where [][2]string
		for _, m := range get(g, ns, "pl", &etcdv1alpha1.EtcdCluster{}).Status.Members {
			where = append(where, [2]string{m.Node, m.Zone})
		}
		g.Expect(where).To(Equal([][2]string{{zoned.Name, "zone-a"}, {plain.Name, ""}, {"", ""}}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	why := "0/2 nodes are available: 2 node(s) didn't match Pod's node affinity/selector."
	pod := get(g, ns, "pl-2", &corev1.Pod{})
	since := metav1.NewTime(time.Now().Add(-time.Minute).Truncate(time.Second))
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: why, LastTransitionTime: since}}
	g.Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	g.Eventually(func(g Gomega) {
		degraded := condition(get(g, ns, "pl", &etcdv1alpha1.EtcdCluster{}), etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberUnschedulable))
		g.Expect(degraded.Message).To(Equal("member pl-2 has waited for a node since " + since.UTC().Format(time.RFC3339) + ": " + why))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement(etcdv1alpha1.ReasonMemberUnschedulable))
}
