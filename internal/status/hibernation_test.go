package status_test

import (
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

func TestAHibernatedClusterSaysSoAndNothingElseIsWrong(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Spec.Hibernation.Enabled = true
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-0", Healthy: true}, {Name: "e-1", Healthy: true}, {Name: "e-2", Healthy: true}}

	// Stopping: the final backup is being taken, the cluster still serves.
	stopping := status.Input{Cluster: c, Seen: true,
		Observed: membership.Observed{Members: members(true, true, true), Hibernate: true, Pods: map[string]membership.Pod{"e-0": {}, "e-1": {}, "e-2": {}}},
		Action:   membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonHibernating, Message: "waiting for the final backup e-hibernation-3"}}
	s := status.Compute(stopping)
	g.Expect(cond(g, s, etcdv1alpha1.ConditionHibernated)).To(HaveField("Status", metav1.ConditionFalse))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionHibernated).Reason).To(Equal(etcdv1alpha1.ReasonHibernating))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonHibernating))
	g.Expect(s.ObservedGeneration).NotTo(Equal(c.Generation), "the members still run")

	// A member stopped, another stopping: not a fault.
	stopping.Observed.Members = members(true, true, false)
	stopping.Observed.Pods = map[string]membership.Pod{"e-0": {}, "e-1": {Terminating: true}}
	stopping.Action = membership.Action{Kind: membership.Wait, Member: "e-1", Reason: etcdv1alpha1.ReasonHibernating, Message: "hibernating: waiting for member e-1 to stop"}
	s = status.Compute(stopping)
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Reason).To(Equal(etcdv1alpha1.ReasonHibernating))
	// A failed final backup is one.
	stopping.Action = membership.Action{Kind: membership.Blocked, Reason: etcdv1alpha1.ReasonHibernationBlocked, Message: "the final backup failed"}
	s = status.Compute(stopping)
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Reason).To(Equal(etcdv1alpha1.ReasonHibernationBlocked))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionHibernated).Reason).To(Equal(etcdv1alpha1.ReasonHibernationBlocked))

	// Every member stopped: no member answers, and that is what was asked.
	c.Status = s
	done := status.Input{Cluster: c, Seen: true,
		Observed: membership.Observed{Hibernate: true, FinalBackup: &membership.UpgradeBackup{Name: "e-hibernation-3", State: membership.BackupSucceeded}},
		Action:   membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonHibernated, Message: "every member is stopped"}}
	s = status.Compute(done)
	h := cond(g, s, etcdv1alpha1.ConditionHibernated)
	g.Expect(h.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(h.Message).To(ContainSubstring("EtcdBackup e-hibernation-3"))
	for _, t := range []string{etcdv1alpha1.ConditionAvailable, etcdv1alpha1.ConditionDegraded, etcdv1alpha1.ConditionReady} {
		got := cond(g, s, t)
		g.Expect(got.Status).To(Equal(metav1.ConditionFalse), t)
		g.Expect(got.Reason).To(Equal(etcdv1alpha1.ReasonHibernated), t)
	}
	g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(s.ObservedGeneration).To(Equal(c.Generation), "hibernated is the spec in force")
	g.Expect(s.ReadyMembers).To(BeZero())
	g.Expect(s.Members).To(HaveLen(3), "the members are still the cluster's")
	for _, m := range s.Members {
		g.Expect(m.Healthy).To(BeFalse(), "a stopped member is not reported healthy")
	}
	events := status.Transitions(stopping.Cluster.Status, s)
	g.Expect(events).To(ContainElement(HaveField("Reason", etcdv1alpha1.ReasonHibernated)))
	for _, e := range events {
		g.Expect(e.Type).To(Equal("Normal"), "stopping on purpose is no warning: %+v", e)
	}

	// Woken: the condition goes, an event says so.
	c.Status = s
	c.Spec.Hibernation.Enabled = false
	waking := status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Size: 3},
		Action: membership.Action{Kind: membership.CreatePod, Member: "e-0", Reason: etcdv1alpha1.ReasonRecreatingPod, Message: "recreating"}}
	s = status.Compute(waking)
	g.Expect(meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionHibernated)).To(BeNil())
	g.Expect(status.Transitions(c.Status, s)).To(ContainElement(HaveField("Reason", "Waking")))
}
