package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "etcdcluster-test-"}}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func TestSizeDefaultsToThree(t *testing.T) {
	g := NewWithT(t)
	cluster := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: newNamespace(t)}}

	g.Expect(k8sClient.Create(context.Background(), cluster)).To(Succeed())

	g.Expect(cluster.Spec.Size).To(Equal(int32(3)))
}

func TestSizeMustBeOddAndAtMostSeven(t *testing.T) {
	ns := newNamespace(t)
	for _, size := range []int32{2, 4, 9, -1} {
		g := NewWithT(t)
		cluster := &etcdv1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-size-", Namespace: ns},
			Spec:       etcdv1alpha1.EtcdClusterSpec{Size: size},
		}

		err := k8sClient.Create(context.Background(), cluster)

		g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "size %d: want Invalid, got %v", size, err)
		g.Expect(err).To(MatchError(ContainSubstring(`spec.size: Unsupported value: %d: supported values: "1", "3", "5", "7"`, size)))
	}
}

func TestStatusSaysMembersAreNotManagedYet(t *testing.T) {
	g := NewWithT(t)
	key := client.ObjectKey{Name: "status", Namespace: newNamespace(t)}
	cluster := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: key.Name, Namespace: key.Namespace}}
	g.Expect(k8sClient.Create(context.Background(), cluster)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := &etcdv1alpha1.EtcdCluster{}
		g.Expect(k8sClient.Get(context.Background(), key, got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonMembersNotManaged))
	}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
}
