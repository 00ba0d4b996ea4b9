package status_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/consistency"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// mismatch is a check that found e-1 (ID a1) differing from the others.
func mismatch() *etcdv1alpha1.ConsistencyStatus {
	return &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.NewTime(time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)),
		Revision: 120, Result: "Mismatch", Message: "e-1's hash 00000009 differs from 00000007 of e-0, e-2 at revision 120",
		Suspects: []etcdv1alpha1.SuspectMember{{Name: "e-1", ID: "a1"}}}
}

func TestACheckThatFindsACorruptMemberDegradesFencesAndWarnsOnce(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	in := status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)},
		Action:      membership.Action{Kind: membership.RemoveMember, Reason: etcdv1alpha1.ReasonReplacingMember, Message: "replacing e-1"},
		Consistency: mismatch()}

	s := compute(in)

	g.Expect(s.Consistency).To(Equal(mismatch()))
	degraded := cond(g, s, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberCorrupt))
	g.Expect(degraded.Message).To(Equal("data of e-1 differs from the majority's (e-1's hash 00000009 differs from 00000007 of e-0, e-2 at revision 120); fenced, being replaced one at a time"))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	events := status.Transitions(c.Status, s)
	g.Expect(events).To(ContainElement(HaveField("Reason", etcdv1alpha1.ReasonMemberCorrupt)))

	msg := "the next passes keep the verdict without a new warning"
	c.Status = s
	again := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)}})
	g.Expect(again.Consistency).To(Equal(mismatch()), msg)
	g.Expect(status.Transitions(s, again)).NotTo(ContainElement(HaveField("Reason", etcdv1alpha1.ReasonMemberCorrupt)), msg)

	// Fenced: the suspect is what backups skip and the planner replaces.
	g.Expect(status.Suspects(c)).To(HaveKey(uint64(0xa1)))
	g.Expect(status.Suspects(c)).To(HaveLen(1))

	// Replaced: its ID is gone from the member list; the cluster is no longer degraded by it.
	replaced := members(true, true, true)
	replaced[1].ID = 0xb1
	done := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: replaced},
		Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected}})
	g.Expect(cond(g, done, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
}

func TestInReportModeACorruptMemberIsLeftToAHuman(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckReport
	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)}, Consistency: mismatch()})
	degraded := cond(g, s, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberCorrupt))
	g.Expect(degraded.Message).To(ContainSubstring("consistencyCheck.mode is Report: nothing is changed"))
}

func TestWithTheCheckDisabledNothingIsReportedOrFenced(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Status.Consistency = mismatch()
	c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckDisabled
	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)}})
	g.Expect(s.Consistency).To(BeNil())
	g.Expect(status.Suspects(c)).To(BeEmpty())
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
}

func TestAnInconclusiveCheckFencesNothing(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	st := mismatch()
	st.Result, st.Suspects, st.Message = "Inconclusive", nil, "no 2 of the 3 voting members agree"
	c.Status.Consistency = st
	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)}})
	g.Expect(status.Suspects(c)).To(BeEmpty())
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(s.Consistency.Message).To(Equal("no 2 of the 3 voting members agree"), "what was found stays in the status")
}

func TestConsistencyCheckedNamesSuspectsByHexID(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	v := consistency.Verdict{Kind: consistency.Mismatch, Revision: 118, Suspects: []string{"e-1"}, SuspectIDs: []uint64{0xbeef}, Message: "e-1 differs"}
	st := status.ConsistencyChecked(v, now)
	g.Expect(st.LastCheckTime.Time).To(Equal(now))
	g.Expect(st.Revision).To(Equal(int64(118)))
	g.Expect(st.Result).To(Equal(string(consistency.Mismatch)))
	g.Expect(st.Message).To(Equal("e-1 differs"))
	g.Expect(st.Suspects).To(Equal([]etcdv1alpha1.SuspectMember{{Name: "e-1", ID: "beef"}}), "the ID as etcdctl shows it")

	st = status.ConsistencyChecked(consistency.Verdict{Kind: consistency.Consistent, Revision: 118}, now)
	g.Expect(st.Suspects).To(BeEmpty())
}
