package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// A Service the user made under the name the cluster's client Service needs is invisible to
// the operator's cache (it holds only objects with the operator's label): the status says
// whose object is in the way and what to do, nothing of the user's is changed, and no member
// starts; once the user's Service is gone, the cluster goes on.
func TestAnObjectOfTheUserUnderANameTheClusterNeedsIsNamedInTheStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	theirs := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "taken-client", Namespace: ns, Labels: map[string]string{"team": "payments"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 8080}}}}
	g.Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "taken", Namespace: ns}})).To(Succeed())

	g.Eventually(func(g Gomega) {
		degraded := condition(get(g, ns, "taken", &etcdv1alpha1.EtcdCluster{}), etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonReconcileFailed))
		g.Expect(degraded.Message).To(ContainSubstring("a Service named taken-client already exists in namespace " + ns + ", not made by etcdpilot"))
		g.Expect(degraded.Message).To(ContainSubstring("rename or delete that Service, or give the EtcdCluster another name"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	svc := get(g, ns, "taken-client", &corev1.Service{})
	g.Expect(svc.Labels).To(Equal(map[string]string{"team": "payments"}), "the user's Service is left alone")
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(8080)))
	err := k8sClient.Get(ctx, keyOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "taken-0", Namespace: ns}}), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no member starts while the cluster's Services are not in place")

	g.Expect(k8sClient.Delete(ctx, svc)).To(Succeed())
	g.Eventually(func(g Gomega) {
		ours := get(g, ns, "taken-client", &corev1.Service{})
		g.Expect(ours.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "etcdpilot"))
		g.Expect(condition(get(g, ns, "taken", &etcdv1alpha1.EtcdCluster{}), etcdv1alpha1.ConditionDegraded).Message).
			NotTo(ContainSubstring("not made by etcdpilot"))
	}).WithTimeout(2*timeout).WithPolling(interval).Should(Succeed(), "the failing passes are retried with a growing backoff")
}
