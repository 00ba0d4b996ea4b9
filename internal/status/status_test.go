package status_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

func TestComputeReportsMembersNotManaged(t *testing.T) {
	g := NewWithT(t)
	cluster := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Generation: 4}}

	got := status.Compute(cluster)

	g.Expect(got.ObservedGeneration).To(Equal(int64(4)))
	ready := meta.FindStatusCondition(got.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonMembersNotManaged))
	g.Expect(ready.ObservedGeneration).To(Equal(int64(4)))
	g.Expect(cluster.Status.Conditions).To(BeEmpty(), "Compute must not modify its input")
}

func TestComputeKeepsTransitionTimeWhenUnchanged(t *testing.T) {
	g := NewWithT(t)
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cluster := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	cluster.Status.Conditions = []metav1.Condition{{
		Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
		Reason: etcdv1alpha1.ReasonMembersNotManaged, LastTransitionTime: then, ObservedGeneration: 1,
	}}

	got := status.Compute(cluster)

	ready := meta.FindStatusCondition(got.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready.LastTransitionTime).To(Equal(then))
	g.Expect(ready.ObservedGeneration).To(Equal(int64(2)))
}
