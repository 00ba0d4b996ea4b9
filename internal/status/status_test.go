package status_test

import (
	"errors"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

func newCluster(size int32) *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: 3},
		Spec:       etcdv1alpha1.EtcdClusterSpec{Size: size, TLS: etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeOperatorCA}},
	}
}

func members(healthy ...bool) []membership.Member {
	c := cluster.Names{Name: "e", Namespace: "ns", TLS: true}
	var out []membership.Member
	for i, h := range healthy {
		name := c.MemberName(i)
		out = append(out, membership.Member{Name: name, ID: uint64(0xa0 + i), PeerURL: c.PeerURL(name), Started: true, Healthy: h, Ready: h})
	}
	return out
}

func cond(g Gomega, s etcdv1alpha1.EtcdClusterStatus, t string) metav1.Condition {
	c := meta.FindStatusCondition(s.Conditions, t)
	g.ExpectWithOffset(1, c).NotTo(BeNil(), "condition %s", t)
	g.ExpectWithOffset(1, c.ObservedGeneration).To(Equal(int64(3)))
	return *c
}

func TestHealthyClusterIsReady(t *testing.T) {
	g := NewWithT(t)
	ms := members(true, true, true)
	ms[0].Leader = true
	in := status.Input{
		Cluster:  newCluster(3),
		Observed: membership.Observed{Members: ms, Upgrade: membership.Upgrade{Target: "3.6.16"}},
		Details: map[string]status.Detail{
			"e-0": {Version: "3.6.16", DBSize: 20480},
			"e-1": {Version: "3.6.16"}, "e-2": {Version: "3.6.16"},
		},
		Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"},
	}

	s := compute(in)

	g.Expect(s.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(s.ReadyMembers).To(Equal(int32(3)))
	g.Expect(s.CurrentVersion).To(Equal("3.6.16"))
	g.Expect(s.UpdatedMembers).To(Equal(int32(3)))
	g.Expect(s.Selector).To(Equal("app.kubernetes.io/name=etcd,etcd.etcdpilot.io/cluster=e"))
	g.Expect(s.ClientService).To(Equal("e-client"))
	g.Expect(s.ClientSecret).To(Equal("e-client-tls"))
	g.Expect(s.Members).To(HaveLen(3))
	g.Expect(s.Members[0]).To(Equal(etcdv1alpha1.MemberStatus{
		Name: "e-0", ID: "a0", PeerURL: "https://e-0.e-peer.ns.svc:2380", ClientURL: "https://e-0.e-peer.ns.svc:2379",
		Leader: true, Healthy: true, Version: "3.6.16", DBSize: 20480,
	}))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	ready := cond(g, s, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonReady))
}

// An upgrade from 3.6.15 to 3.6.16 whose last member is restarting: its new pod carries
// 3.6.16 but its etcd has not answered. currentVersion is the lowest release every member
// was seen to run, so it stays at 3.6.15, and the member is not counted as updated, until
// the member answers with 3.6.16. A member that never answered counts with its pod's.
func TestAnUpgradeIsNotReportedDoneBeforeTheLastMemberAnswers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-0", Version: "3.6.16"}, {Name: "e-1", Version: "3.6.16"}, {Name: "e-2", Version: "3.6.15"}}
	c.Status.CurrentVersion = "3.6.15"
	ms := members(true, true, false)
	obs := membership.Observed{Members: ms, Upgrade: membership.Upgrade{Target: "3.6.16", From: "3.6.15"}, Pods: map[string]membership.Pod{
		"e-0": {Version: "3.6.16"}, "e-1": {Version: "3.6.16"}, "e-2": {Version: "3.6.16"}}}
	details := map[string]status.Detail{"e-0": {Version: "3.6.16"}, "e-1": {Version: "3.6.16"}}
	action := membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for e-2"}

	s := compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: action})
	g.Expect(s.CurrentVersion).To(Equal("3.6.15"), "e-2 last answered with 3.6.15")
	g.Expect(s.Members[2].Version).To(Equal("3.6.15"))
	g.Expect(s.UpdatedMembers).To(Equal(int32(2)))

	// A member whose pod is at 3.6.16 but that answers with 3.6.15 is not updated either.
	details["e-2"] = status.Detail{Version: "3.6.15"}
	ms[2].Healthy, ms[2].Ready = true, true
	s = compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: action})
	g.Expect(s.CurrentVersion).To(Equal("3.6.15"))
	g.Expect(s.UpdatedMembers).To(Equal(int32(2)))

	details["e-2"] = status.Detail{Version: "3.6.16"}
	s = compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: action})
	g.Expect(s.CurrentVersion).To(Equal("3.6.16"))
	g.Expect(s.UpdatedMembers).To(Equal(int32(3)))

	// A new member that has never answered counts with its pod's release.
	c.Status.Members = c.Status.Members[:2]
	delete(details, "e-2")
	ms[2].Healthy, ms[2].Ready = false, false
	obs.Pods["e-2"] = membership.Pod{Version: "3.6.15"}
	s = compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: action})
	g.Expect(s.Members[2].Version).To(Equal("3.6.15"))
	g.Expect(s.CurrentVersion).To(Equal("3.6.15"))
}

// A cluster restored from a backup that does not exist (or has not succeeded) has started
// nothing: it says it waits for its restore source, never that it lost a quorum.
func TestARestoreWaitingForItsSourceHasNoQuorumToLose(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	wait := membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonRestoreSourceNotReady,
		Message: `the EtcdBackup "nightly" does not exist`}
	s := compute(status.Input{Cluster: c, Action: wait})

	available := cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonRestoreSourceNotReady))
	g.Expect(available.Message).To(ContainSubstring(`"nightly" does not exist`))
	ready := cond(g, s, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Message).To(ContainSubstring(`"nightly" does not exist`))
	g.Expect(ready.Message).NotTo(ContainSubstring("voting members"))
	for _, e := range status.Transitions(c.Status, s) {
		g.Expect(e.Reason).NotTo(Equal(etcdv1alpha1.ReasonQuorumLost), "%+v", e)
	}
}

func TestOneMemberDownKeepsQuorumButDegrades(t *testing.T) {
	g := NewWithT(t)
	s := compute(status.Input{
		Cluster: newCluster(3),
		Observed: membership.Observed{Members: members(true, false, true),
			Pods: map[string]membership.Pod{"e-1": {Node: "n-b", Zone: "zone-b"}}},
		Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for e-1"},
	})

	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	degraded := cond(g, s, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMembersUnhealthy))
	g.Expect(degraded.Message).To(Equal("members not healthy: e-1 on node n-b in zone zone-b"), "where it runs, to look at its node")
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Reason).To(Equal(etcdv1alpha1.ReasonDegraded))
}

// A loss of quorum is declared only when a client would see it: the member list, a
// linearizable read, fails, and keeps failing for QuorumLossConfirmAfter. Before that,
// Available is Unknown and no QuorumLost event is emitted; a member list that answers ends
// the suspicion, whatever the members' status calls said.
func TestQuorumLostIsDeclaredOnlyWhenConfirmed(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	t0 := time.Date(2026, 11, 29, 6, 0, 0, 0, time.UTC)
	wait := membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting"}
	c.Status = compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true), Now: t0}, Action: wait})
	g.Expect(cond(g, c.Status, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))

	// The quorum-loss recovery has seen the loss from its first look (internal/recovery).
	lost := &etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoveryQuorumLost, Message: "the quorum is lost"}
	pass := func(obs membership.Observed) (etcdv1alpha1.EtcdClusterStatus, []status.Event) {
		in := status.Input{Cluster: c, Observed: obs, Action: wait}
		if obs.Members == nil {
			in.RecoveryDecided, in.Recovery = true, lost
		}
		s := compute(in)
		events := status.Transitions(c.Status, s)
		c.Status = s
		return s, events
	}
	quorumLost := HaveField("Reason", etcdv1alpha1.ReasonQuorumLost)

	// Status calls time out under load, but the member list answers: the cluster has a quorum.
	s, events := pass(membership.Observed{Members: members(true, false, false), Now: t0.Add(2 * time.Second)})
	available := cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonQuorumUnconfirmed))
	g.Expect(available.Message).To(ContainSubstring("linearizable"))
	g.Expect(events).NotTo(ContainElement(quorumLost))

	// The member list answers again with every member healthy: no loss was ever declared.
	s, events = pass(membership.Observed{Members: members(true, true, true), Now: t0.Add(4 * time.Second)})
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(events).NotTo(ContainElement(quorumLost))

	// The member list fails (Members nil): suspected, not declared, until it has failed for
	// QuorumLossConfirmAfter.
	first := time.Now() // meta.SetStatusCondition stamps the transition with the wall clock
	s, events = pass(membership.Observed{Now: first})
	available = cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonQuorumUnconfirmed))
	g.Expect(available.Message).To(ContainSubstring("0 of 3 voting members are healthy"))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Reason).NotTo(Equal(etcdv1alpha1.ReasonQuorumLost), "the recovery's first look is not a confirmation")
	g.Expect(events).NotTo(ContainElement(quorumLost))
	s, events = pass(membership.Observed{Now: first.Add(status.QuorumLossConfirmAfter / 2)})
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Reason).To(Equal(etcdv1alpha1.ReasonQuorumUnconfirmed))
	g.Expect(events).NotTo(ContainElement(quorumLost))

	s, events = pass(membership.Observed{Now: first.Add(status.QuorumLossConfirmAfter + time.Second)})
	available = cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonQuorumLost))
	g.Expect(available.Message).To(Equal("0 of 3 voting members are healthy; a quorum needs 2, so the cluster refuses writes"))
	g.Expect(events).To(ContainElement(quorumLost))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Reason).To(Equal(etcdv1alpha1.ReasonNotAvailable))

	// Declared, it stays declared while the member list fails, with one event in all.
	s, events = pass(membership.Observed{Now: first.Add(time.Minute)})
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Reason).To(Equal(etcdv1alpha1.ReasonQuorumLost))
	g.Expect(events).NotTo(ContainElement(quorumLost))
}

func TestLearnersDoNotCountTowardsQuorumOrReadiness(t *testing.T) {
	g := NewWithT(t)
	ms := members(true, true)
	ms[1].Learner = true
	s := compute(status.Input{
		Cluster:  newCluster(3),
		Observed: membership.Observed{Members: ms},
		Action:   membership.Action{Kind: membership.Promote, Reason: etcdv1alpha1.ReasonPromotingLearner, Message: "promoting e-1"},
	})

	g.Expect(s.ReadyMembers).To(Equal(int32(1)))
	g.Expect(s.Members[1].Learner).To(BeTrue())
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Message).To(Equal("1 of 1 voting members are healthy"))
	progressing := cond(g, s, etcdv1alpha1.ConditionProgressing)
	g.Expect(progressing.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(progressing.Reason).To(Equal(etcdv1alpha1.ReasonPromotingLearner))
}

func TestBootstrapping(t *testing.T) {
	g := NewWithT(t)
	s := compute(status.Input{
		Cluster: newCluster(3),
		Action:  membership.Action{Kind: membership.CreateSeed, Reason: etcdv1alpha1.ReasonBootstrapping, Message: "creating the first member e-0"},
	})

	available := cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Message).To(Equal("creating the first member e-0"))
}

func TestFailedReconcileKeepsObservedGenerationAndDegrades(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Status.ObservedGeneration = 2
	s := compute(status.Input{Cluster: c, Err: errors.New("ensuring TLS secrets: boom")})

	g.Expect(s.ObservedGeneration).To(Equal(int64(2)))
	degraded := cond(g, s, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonReconcileFailed))
	g.Expect(degraded.Message).To(Equal("ensuring TLS secrets: boom"))
}

func TestUnreachableKeepsMembersButNotTheirHealth(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(1)
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-0", Healthy: true, Leader: true, Version: "3.6.16"}}
	c.Status.CurrentVersion = "3.6.16"
	s := compute(status.Input{Cluster: c, Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "w"}})

	g.Expect(s.Members).To(Equal([]etcdv1alpha1.MemberStatus{{Name: "e-0", Version: "3.6.16"}}))
	g.Expect(s.CurrentVersion).To(Equal("3.6.16"))
	g.Expect(s.ReadyMembers).To(BeZero())
	g.Expect(c.Status.Members[0].Healthy).To(BeTrue(), "Compute must not modify its input")
}

func TestKeepsTransitionTimeWhenUnchanged(t *testing.T) {
	g := NewWithT(t)
	then := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	c := newCluster(1)
	c.Status.Conditions = []metav1.Condition{{
		Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonQuorumAvailable, LastTransitionTime: then, ObservedGeneration: 1,
	}}
	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true)},
		Action: membership.Action{Kind: membership.None}})

	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).LastTransitionTime).To(Equal(then))
}

func TestAHealthyVoterWhosePodIsNotReadyKeepsQuorumButNotReadiness(t *testing.T) {
	g := NewWithT(t)
	ms := members(true, true, true)
	ms[2].Ready = false
	s := compute(status.Input{
		Cluster:  newCluster(3),
		Observed: membership.Observed{Members: ms},
		Action:   membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for the pod of member e-2 to become ready"},
	})

	g.Expect(s.ReadyMembers).To(Equal(int32(2)))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue), "quorum is etcd's business, not the pod's")
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
}

func TestEveryChangeIsProgressing(t *testing.T) {
	for _, kind := range []membership.Kind{membership.CreateSeed, membership.CreatePod, membership.AddLearner,
		membership.Promote, membership.Wait, membership.MoveLeader, membership.RemoveMember, membership.DeletePod, membership.CreateBackup} {
		g := NewWithT(t)
		s := compute(status.Input{
			Cluster:  newCluster(1),
			Observed: membership.Observed{Members: members(true)},
			Action:   membership.Action{Kind: kind, Reason: etcdv1alpha1.ReasonRemovingMember, Message: string(kind)},
		})
		g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionTrue), string(kind))
		g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse), string(kind))
	}
}

func TestUnhealthySinceIsRecordedAndSaysWhenTheMemberIsReplaced(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	ms := members(true, false, true)
	ms[1].UnhealthySince = now.Add(-time.Minute)
	in := status.Input{
		Cluster:  newCluster(3),
		Observed: membership.Observed{Members: ms, Now: now, ReplaceUnhealthyAfter: 10 * time.Minute},
		Action:   membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for e-1"},
	}

	s := compute(in)

	g.Expect(s.Members[0].UnhealthySince).To(BeNil())
	g.Expect(s.Members[1].UnhealthySince).To(Equal(&metav1.Time{Time: now.Add(-time.Minute)}))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Message).To(Equal(
		"members not healthy: e-1 (since 2026-11-21T11:59:00Z; replaced at 2026-11-21T12:09:00Z if still unhealthy)"))

	in.Observed.ReplaceUnhealthyAfter = 0
	g.Expect(cond(g, compute(in), etcdv1alpha1.ConditionDegraded).Message).To(
		HaveSuffix("e-1 (since 2026-11-21T11:59:00Z; replacement is off)"))

	// On a lost node: the sooner bound of the two, counted from when the node turned NotReady.
	in.Observed.ReplaceUnhealthyAfter, in.Observed.ReplaceOnLostNodeAfter = 10*time.Minute, 3*time.Minute
	in.Observed.Pods = map[string]membership.Pod{"e-1": {Node: "n2", Zone: "zone-b",
		LostNode: membership.NodeLoss{Node: "n2", How: membership.NodeNotReady, Since: now.Add(-30 * time.Second)}}}
	g.Expect(cond(g, compute(in), etcdv1alpha1.ConditionDegraded).Message).To(Equal("members not healthy: e-1 on node n2 in zone zone-b " +
		"(since 2026-11-21T11:59:00Z; node n2 NotReady since 2026-11-21T11:59:30Z; replaced at 2026-11-21T12:02:30Z if still unhealthy)"))
	in.Observed.Pods["e-1"] = membership.Pod{Node: "n2", LostNode: membership.NodeLoss{Node: "n2", How: membership.NodeGone}}
	g.Expect(cond(g, compute(in), etcdv1alpha1.ConditionDegraded).Message).To(HaveSuffix(
		"(since 2026-11-21T11:59:00Z; node n2 gone; replaced at 2026-11-21T12:02:00Z if still unhealthy)"))
}

func TestUnreachableMembersStartTheirUnhealthyRecord(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	earlier := metav1.NewTime(now.Add(-time.Hour))
	c := newCluster(3)
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-0", Healthy: true}, {Name: "e-1", UnhealthySince: &earlier}}

	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Now: now},
		Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "w"}})

	g.Expect(s.Members[0].UnhealthySince).To(Equal(&metav1.Time{Time: now}))
	g.Expect(s.Members[1].UnhealthySince).To(Equal(&earlier), "an existing record is kept")
}

func TestUpgradeIsRecordedStartedRolledBackAndCompleted(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	at := func(versions ...string) map[string]status.Detail {
		d := map[string]status.Detail{}
		for i, v := range versions {
			d[fmt.Sprintf("e-%d", i)] = status.Detail{Version: v}
		}
		return d
	}
	c := newCluster(3)
	c.Spec.Version = "3.6.16"
	obs := membership.Observed{Members: members(true, true, true), Now: now, Upgrade: membership.Upgrade{Target: "3.6.16"}}

	By := func(string) {}
	By("the first restart towards spec.version starts the record")
	details := at("3.5.35", "3.5.35", "3.5.35")
	s := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.RestartMember, Member: "e-1", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "upgrading to 3.6.16: 0/3 members at 3.6.16; restarting member e-1"}})
	started := metav1.NewTime(now)
	g.Expect(s.Upgrade).To(Equal(&etcdv1alpha1.UpgradeStatus{FromVersion: "3.5.35", ToVersion: "3.6.16", StartedAt: &started}))
	progressing := cond(g, s, etcdv1alpha1.ConditionProgressing)
	g.Expect(progressing.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
	g.Expect(progressing.Message).To(ContainSubstring("0/3 members at 3.6.16"))
	events := status.Transitions(c.Status, s)
	g.Expect(events).To(ContainElement(HaveField("Reason", "UpgradeStarted")))

	By("a later restart keeps it")
	c.Status = s
	details = at("3.5.35", "3.6.16", "3.5.35")
	s2 := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.RestartMember, Member: "e-2", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "m"}})
	g.Expect(s2.Upgrade).To(Equal(s.Upgrade))
	g.Expect(status.Transitions(s, s2)).NotTo(ContainElement(HaveField("Reason", "UpgradeStarted")))

	By("a rollback is recorded and keeps the cluster Degraded")
	rolled := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.RollBack, Member: "e-1", Version: "3.5.35", Reason: etcdv1alpha1.ReasonUpgradeRolledBack, Message: "member e-1 did not become healthy"}})
	g.Expect(rolled.Upgrade.RolledBack).To(Equal(&etcdv1alpha1.UpgradeRollback{Member: "e-1", Reason: "member e-1 did not become healthy", At: started}))
	c.Status = rolled
	later := compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}})
	degraded := cond(g, later, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeRolledBack))
	g.Expect(cond(g, later, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))

	By("spec.version set back: the record is dropped once nothing moves")
	c.Spec.Version = "3.5.35"
	cancelled := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true), Now: now, Upgrade: membership.Upgrade{Target: "3.5.35"}},
		Details: details, Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}})
	g.Expect(cancelled.Upgrade).To(BeNil())

	By("every member at the target and nothing to do: completed")
	c.Spec.Version = "3.6.16"
	c.Status = s
	details = at("3.6.16", "3.6.16", "3.6.16")
	done := compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}})
	g.Expect(done.Upgrade.CompletedAt).To(Equal(&started))
	g.Expect(status.Transitions(s, done)).To(ContainElement(HaveField("Reason", "UpgradeCompleted")))
	g.Expect(cond(g, done, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))

	By("the snapshot before the first restart starts the record, with where it is; not when it failed")
	c.Status = etcdv1alpha1.EtcdClusterStatus{}
	details = at("3.5.35", "3.5.35", "3.5.35")
	snap := membership.Action{Kind: membership.Snapshot, Member: "e-1", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "saving a snapshot"}
	snapped := compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: snap})
	g.Expect(snapped.Upgrade).To(Equal(&etcdv1alpha1.UpgradeStatus{FromVersion: "3.5.35", ToVersion: "3.6.16", StartedAt: &started,
		Snapshot: &etcdv1alpha1.UpgradeSnapshot{Member: "e-1", Path: "/var/lib/etcd/pre-upgrade-snapshot.db", TakenAt: started}}))
	g.Expect(compute(status.Input{Cluster: c, Observed: obs, Details: details, Action: snap, Err: errors.New("exec failed")}).Upgrade).To(BeNil())
	c.Status = snapped
	g.Expect(compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.RestartMember, Member: "e-1", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "m"}}).Upgrade).
		To(Equal(snapped.Upgrade), "the first restart keeps the record")

	By("a snapshot that is an EtcdBackup (spec.upgradeBackupDestination) is recorded by its name")
	c.Status = etcdv1alpha1.EtcdClusterStatus{}
	backed := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.Snapshot, Backup: "e-pre-upgrade-3-6-16", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "m"}})
	g.Expect(backed.Upgrade.Snapshot).To(Equal(&etcdv1alpha1.UpgradeSnapshot{Backup: "e-pre-upgrade-3-6-16", TakenAt: started}))
	g.Expect(compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.CreateBackup, Backup: "e-pre-upgrade-3-6-16", Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "m"}}).Upgrade).
		To(BeNil(), "creating the backup is not having it")

	By("forcing raft snapshots is recorded on the upgrade it belongs to")
	c.Status = snapped
	forced := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.ForceRaftSnapshots, Entries: 10100, Version: "3.6.16", Reason: etcdv1alpha1.ReasonUpgrading, Message: "m"}})
	g.Expect(forced.Upgrade.RaftSnapshotsForcedAt).To(Equal(&started))

	By("going back to what members run starts no record")
	c.Status = etcdv1alpha1.EtcdClusterStatus{}
	details = at("3.5.35", "3.6.16", "3.5.35")
	back := compute(status.Input{Cluster: c, Observed: obs, Details: details,
		Action: membership.Action{Kind: membership.RestartMember, Member: "e-1", Version: "3.5.35", Reason: etcdv1alpha1.ReasonUpgrading, Message: "going back"}})
	g.Expect(back.Upgrade).To(BeNil())
}

// compute is status.Compute of a pass that observed the members, each with a pod built from
// the current spec (unless the test gave pods), each healthy member answering with its pod's
// release (unless the test gave what they answered).
func compute(in status.Input) etcdv1alpha1.EtcdClusterStatus {
	in.Seen = true
	if in.Observed.Size == 0 {
		in.Observed.Size = int(in.Cluster.Spec.Size)
	}
	if in.Details == nil {
		in.Details = map[string]status.Detail{}
		for _, m := range in.Observed.Members {
			if m.Healthy {
				v := in.Observed.Upgrade.Desired()
				if p, ok := in.Observed.Pods[m.Name]; ok && p.Version != "" {
					v = p.Version
				}
				in.Details[m.Name] = status.Detail{Version: v}
			}
		}
	}
	if in.Observed.Pods == nil {
		in.Observed.Pods = map[string]membership.Pod{}
		for _, m := range in.Observed.Members {
			in.Observed.Pods[m.Name] = membership.Pod{Version: in.Observed.Upgrade.Desired()}
		}
	}
	return status.Compute(in)
}

// A pass that fails before it observes the members (here ensureServices hitting a conflict)
// must not report a healthy cluster as lost: members and availability stay as last observed,
// and Degraded says what failed. No event claims a quorum loss or sick members.
func TestAPassThatCouldNotObserveKeepsTheLastObservation(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	ms := members(true, true, true)
	ms[0].Leader = true
	c.Status = compute(status.Input{Cluster: c, Observed: membership.Observed{Members: ms, Upgrade: membership.Upgrade{Target: "3.6.16"}},
		Details: map[string]status.Detail{"e-0": {Version: "3.6.16"}, "e-1": {Version: "3.6.16"}, "e-2": {Version: "3.6.16"}},
		Action:  membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}})
	g.Expect(cond(g, c.Status, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))

	c.Generation = 4 // a spec change, and the first pass after it fails before observing
	s := status.Compute(status.Input{Cluster: c, Err: errors.New(`ensuring service e-client: Operation cannot be fulfilled: the object has been modified`)})
	g.Expect(s.ObservedGeneration).To(Equal(int64(3)))

	g.Expect(s.Members).To(Equal(c.Status.Members))
	g.Expect(s.ReadyMembers).To(Equal(int32(3)))
	g.Expect(s.UpdatedMembers).To(Equal(int32(3)))
	g.Expect(s.CurrentVersion).To(Equal("3.6.16"))
	available := *meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionAvailable)
	g.Expect(available).To(Equal(*meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionAvailable)), "as observed, for the generation it was observed for")
	g.Expect(available.Status).To(Equal(metav1.ConditionTrue))
	degraded := *meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.ObservedGeneration).To(Equal(int64(4)))
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonReconcileFailed))
	g.Expect(degraded.Message).To(ContainSubstring("ensuring service e-client"))
	g.Expect(degraded.Message).To(ContainSubstring("not observed"))
	for _, e := range status.Transitions(c.Status, s) {
		g.Expect(e.Reason).NotTo(BeElementOf(etcdv1alpha1.ReasonQuorumLost, "MemberUnhealthy"), "%+v", e)
	}
}

func TestANewClusterWaitingForCertificatesIsNotObservedYet(t *testing.T) {
	g := NewWithT(t)
	s := status.Compute(status.Input{Cluster: newCluster(3), Action: membership.Action{Kind: membership.Wait,
		Reason: etcdv1alpha1.ReasonWaitingForCertificates, Message: "waiting for cert-manager"}})

	available := cond(g, s, etcdv1alpha1.ConditionAvailable)
	g.Expect(available.Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(available.Reason).To(Equal(etcdv1alpha1.ReasonNotObserved))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonWaitingForCertificates))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{}, s)).To(BeEmpty())
}

// A rollout under way: Progressing says how far it got, Ready is False and observedGeneration
// stays at the generation the members run, until the last member runs the current spec.
func TestARolloutIsDoneOnlyWhenEveryMemberRunsTheSpec(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Generation, c.Status.ObservedGeneration = 4, 3
	ms := members(true, true, true)
	pods := map[string]membership.Pod{"e-0": {SpecHash: "old"}, "e-1": {SpecHash: "new"}, "e-2": {SpecHash: "old"}}
	hashes := map[string]string{"e-0": "new", "e-1": "new", "e-2": "new"}
	obs := membership.Observed{Members: ms, Pods: pods, SpecHashes: hashes}

	s := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.RestartMember,
		Reason: etcdv1alpha1.ReasonRollingOut, Message: "rolling out the new spec: 1 of 3 members updated; restarting member e-2"}})

	g.Expect(s.ObservedGeneration).To(Equal(int64(3)), "the members do not all run generation 4 yet")
	g.Expect(s.UpdatedMembers).To(Equal(int32(1)))
	progressing := meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionProgressing)
	g.Expect(progressing.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
	g.Expect(progressing.Message).To(ContainSubstring("1 of 3 members updated"))
	g.Expect(meta.IsStatusConditionTrue(s.Conditions, etcdv1alpha1.ConditionReady)).To(BeFalse())
	g.Expect(status.Transitions(c.Status, s)).To(ContainElement(HaveField("Reason", "RolloutStarted")))

	// Even with nothing to do this pass (a bug, or a member not yet seen), Ready needs every
	// member at the current spec.
	s = compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.None}})
	g.Expect(meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionReady).Message).To(Equal("1 of 3 members run the current spec"))

	c.Status = s
	obs.Pods = map[string]membership.Pod{"e-0": {SpecHash: "new"}, "e-1": {SpecHash: "new"}, "e-2": {SpecHash: "new"}}
	done := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected}})
	g.Expect(done.ObservedGeneration).To(Equal(int64(4)))
	g.Expect(done.UpdatedMembers).To(Equal(int32(3)))
	g.Expect(meta.IsStatusConditionTrue(done.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
}

// observedGeneration is about the spec: a spec in force stays in force when a member falls
// sick (Available, Degraded and Ready say how the cluster is), and a spec whose size is not
// reached yet is not in force.
func TestObservedGenerationIsAboutTheSpec(t *testing.T) {
	for _, tc := range []struct {
		name    string
		size    int32
		members []membership.Member
		action  membership.Action
		want    int64
		sick    bool
	}{
		{"a member fell sick", 3, members(true, false, true),
			membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for member e-1 to become healthy"}, 4, true},
		{"3 of 5 members", 5, members(true, true, true),
			membership.Action{Kind: membership.AddLearner, Reason: etcdv1alpha1.ReasonAddingMember}, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := newCluster(tc.size)
			c.Generation, c.Status.ObservedGeneration = 4, 3
			s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: tc.members}, Action: tc.action})
			g.Expect(s.ObservedGeneration).To(Equal(tc.want))
			g.Expect(meta.IsStatusConditionTrue(s.Conditions, etcdv1alpha1.ConditionReady)).To(BeFalse())
			g.Expect(meta.IsStatusConditionTrue(s.Conditions, etcdv1alpha1.ConditionDegraded)).To(Equal(tc.sick))
		})
	}
}

// After the last restart of a rollout, the leader's pod is created again and waited for: the
// planner sees a plain RecreatingPod or WaitingForMembers, the status keeps RollingOut until
// the end, and the end is one RolloutCompleted event.
func TestTheLastMemberOfARolloutIsStillTheRollout(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonRollingOut, Message: "rolling out the new spec: 2 of 3 members updated; restarting member e-0"}}
	ms := members(true, true, true)
	ms[0].Ready = false
	hashes := map[string]string{"e-0": "new", "e-1": "new", "e-2": "new"}
	pods := map[string]membership.Pod{"e-0": {SpecHash: "new"}, "e-1": {SpecHash: "new"}, "e-2": {SpecHash: "new"}}
	obs := membership.Observed{Members: ms, Pods: pods, SpecHashes: hashes}

	s := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.Wait,
		Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for the pod of member e-0 to become ready"}})
	p := meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionProgressing)
	g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
	g.Expect(p.Message).To(Equal("rolling out the new spec: 3 of 3 members updated; waiting for the pod of member e-0 to become ready"))
	g.Expect(status.Transitions(c.Status, s)).NotTo(ContainElement(HaveField("Reason", HavePrefix("Rollout"))), "no second start, not done yet")

	c.Status = s
	obs.Members = members(true, true, true)
	done := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected}})
	g.Expect(status.Transitions(c.Status, done)).To(ContainElement(HaveField("Reason", "RolloutCompleted")))

	// A pod deleted in a steady cluster is not a rollout.
	c.Status = done
	obs.Members[2].Ready = false
	later := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.CreatePod,
		Reason: etcdv1alpha1.ReasonRecreatingPod, Message: "creating the pod of member e-2"}})
	g.Expect(meta.FindStatusCondition(later.Conditions, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonRecreatingPod))
}

// The same holds for the last member of an upgrade: while its pod is created again at the
// new release and waited for, Progressing stays Upgrading and says how many members run it,
// which is what a user (and the e2e) watches for.
func TestTheLastMemberOfAnUpgradeIsStillTheUpgrade(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Spec.Version = "3.6.16"
	c.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonUpgrading, Message: "upgrading to 3.6.16: 2/3 members at 3.6.16; restarting member e-0"}}
	ms := members(true, true, true)
	ms[0].Ready = false
	pods := map[string]membership.Pod{"e-0": {Version: "3.6.16"}, "e-1": {Version: "3.6.16"}, "e-2": {Version: "3.6.16"}}
	obs := membership.Observed{Members: ms, Pods: pods, Upgrade: membership.Upgrade{Target: "3.6.16", From: "3.5.35"}}

	s := compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.Wait,
		Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for the pod of member e-0 to become ready"}})
	p := meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionProgressing)
	g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
	g.Expect(p.Message).To(Equal("upgrading to 3.6.16: 3/3 members at 3.6.16; waiting for the pod of member e-0 to become ready"))

	// Its pod not created yet: it does not count as running the new release.
	delete(obs.Pods, "e-0")
	s = compute(status.Input{Cluster: c, Observed: obs, Action: membership.Action{Kind: membership.CreatePod,
		Reason: etcdv1alpha1.ReasonRecreatingPod, Message: "creating the pod of member e-0"}})
	g.Expect(meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionProgressing).Message).
		To(Equal("upgrading to 3.6.16: 2/3 members at 3.6.16; creating the pod of member e-0"))
}

// The CA rotation is shown as the CA Secret says, kept by a pass that did not read it, and
// keeps Progressing True (Ready False) while it waits between its phases.
func TestACARotationIsProgressingUntilItsLastPhaseEnds(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	since := metav1.NewTime(time.Date(2026, 11, 25, 6, 0, 0, 0, time.UTC))
	rot := &etcdv1alpha1.CARotationStatus{Phase: "TrustingNew", PhaseSince: &since, Request: "r1"}
	steady := membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}
	s := compute(status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Members: members(true, true, true)},
		Action: steady, TLSSeen: true, CARotation: rot})
	g.Expect(s.CARotation).To(Equal(rot))
	p := cond(g, s, etcdv1alpha1.ConditionProgressing)
	g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonRotatingCA))
	g.Expect(p.Message).To(HavePrefix("rotating the CA: phase 1 of 3"))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))

	c.Status = s
	kept := compute(status.Input{Cluster: c, Err: errors.New("reading the CA secret failed")})
	g.Expect(kept.CARotation).To(Equal(rot), "not read this pass: kept")

	done := compute(status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Members: members(true, true, true)},
		Action: steady, TLSSeen: true, CARotation: &etcdv1alpha1.CARotationStatus{Request: "r1"}})
	g.Expect(cond(g, done, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond(g, done, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))

	// A restart of the rotation's rollout says RollingOut, as any rollout.
	restart := compute(status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Members: members(true, true, true)},
		Action: membership.Action{Kind: membership.RestartMember, Reason: etcdv1alpha1.ReasonRollingOut, Message: "rolling out"}, TLSSeen: true, CARotation: rot})
	g.Expect(cond(g, restart, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
}

// status.tls is what the TLS step read from the certificate Secrets: kept by a pass that did
// not read them (or refused them, or waits for cert-manager), cleared without TLS.
func TestCertificateExpiryIsWhatTheSecretsLastSaid(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	end := metav1.NewTime(time.Date(2027, 11, 25, 6, 0, 0, 0, time.UTC))
	read := &etcdv1alpha1.TLSStatus{Certificates: []etcdv1alpha1.CertificateStatus{
		{Secret: "e-member-tls", NotAfter: end}, {Secret: "e-client-tls", NotAfter: metav1.NewTime(end.AddDate(0, 1, 0))}}}
	steady := membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}
	s := compute(status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Members: members(true, true, true)},
		Action: steady, TLSSeen: true, TLS: read})
	g.Expect(s.TLS).To(Equal(read))
	read.Certificates[0].NotAfter = metav1.NewTime(end.AddDate(1, 0, 0))
	g.Expect(s.TLS.Certificates[0].NotAfter).To(Equal(end), "the status holds its own copy")

	c.Status = s
	for why, in := range map[string]status.Input{
		"the pass failed before it read the Secrets": {Cluster: c, Err: errors.New("TLS secret mine-member cannot serve as the member certificate")},
		"cert-manager has not issued the Secrets":    {Cluster: c, Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForCertificates}},
	} {
		g.Expect(compute(in).TLS).To(Equal(s.TLS), why+": kept")
	}

	renewed := &etcdv1alpha1.TLSStatus{Certificates: []etcdv1alpha1.CertificateStatus{
		{Secret: "e-member-tls", NotAfter: metav1.NewTime(end.AddDate(1, 0, 0))}, {Secret: "e-client-tls", NotAfter: metav1.NewTime(end.AddDate(0, 1, 0))}}}
	g.Expect(compute(status.Input{Cluster: c, TLSSeen: true, TLS: renewed}).TLS).To(Equal(renewed),
		"read in a pass that did not observe the members: still what the Secrets hold")
	g.Expect(compute(status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Members: members(true, true, true)},
		Action: steady, TLSSeen: true}).TLS).To(BeNil(), "TLS disabled: no certificates")
}

func TestMembersShowTheirSpaceLagAndAlarms(t *testing.T) {
	g := NewWithT(t)
	ms := members(true, true, false)
	ms[0].Leader, ms[0].RaftIndex, ms[1].RaftIndex, ms[2].RaftIndex = true, 120, 100, 7
	in := status.Input{
		Cluster:  newCluster(3),
		Observed: membership.Observed{Members: ms},
		Details: map[string]status.Detail{
			"e-0": {Version: "3.6.16", DBSize: 1000, DBSizeInUse: 250},
			"e-1": {Version: "3.6.16", DBSize: 1000, DBSizeInUse: 1000, Alarms: []string{"NOSPACE"}},
			// e-2 did not answer: its index is not known, so it shows no lag, and it does
			// not set the highest index either.
		},
		Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"},
	}

	s := compute(in)

	g.Expect(s.Members[0].DBSizeInUse).To(Equal(int64(250)))
	g.Expect(s.Members[0].FragmentationPercent).To(Equal(int32(75)))
	g.Expect(s.Members[0].RaftIndexLag).To(BeZero())
	g.Expect(s.Members[1].FragmentationPercent).To(BeZero())
	g.Expect(s.Members[1].RaftIndexLag).To(Equal(int64(20)))
	g.Expect(s.Members[1].Alarms).To(Equal([]string{"NOSPACE"}))
	g.Expect(s.Members[2].RaftIndexLag).To(BeZero())
	g.Expect(s.Members[2].FragmentationPercent).To(BeZero())
}

func TestMonitoringIsItsOwnConditionAndDoesNotMakeTheClusterUnready(t *testing.T) {
	g := NewWithT(t)
	ms := members(true, true, true)
	ms[0].Leader = true
	in := status.Input{
		Cluster:    newCluster(3),
		Observed:   membership.Observed{Members: ms},
		Details:    map[string]status.Detail{"e-0": {}, "e-1": {}, "e-2": {}},
		Action:     membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"},
		Monitoring: &metav1.Condition{Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonPrometheusOperatorMissing, Message: "no CRDs"},
	}

	s := compute(in)

	mon := cond(g, s, etcdv1alpha1.ConditionMonitoring)
	g.Expect(mon.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(mon.Reason).To(Equal(etcdv1alpha1.ReasonPrometheusOperatorMissing))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))

	// A pass that did not look keeps the last finding.
	in.Cluster = newCluster(3)
	in.Cluster.Status = s
	in.Monitoring = nil
	g.Expect(cond(g, compute(in), etcdv1alpha1.ConditionMonitoring)).To(Equal(mon))
}

func TestNoSpaceDegradesAndSaysWhatIsDone(t *testing.T) {
	full := map[string]status.Detail{"e-0": {}, "e-1": {Alarms: []string{"NOSPACE"}}, "e-2": {}}
	noneAction := membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected}
	disabled := newCluster(3)
	disabled.Spec.Maintenance.NoSpaceRecovery = etcdv1alpha1.NoSpaceRecoveryDisabled
	cases := []struct {
		name        string
		cluster     *etcdv1alpha1.EtcdCluster
		maintenance *status.Maintenance
		reason      string
		says        string
	}{
		{"recovering", newCluster(3), &status.Maintenance{Action: maintenance.Action{Kind: maintenance.Compact, Message: "compacting to revision 9"}},
			etcdv1alpha1.ReasonNoSpace, "recovering: compacting to revision 9"},
		{"the data does not fit", newCluster(3), &status.Maintenance{Action: maintenance.Action{Kind: maintenance.CannotRecover, Message: "member e-1 still holds 15 MiB"}},
			etcdv1alpha1.ReasonNoSpaceDataDoesNotFit, "member e-1 still holds 15 MiB: raise spec.etcd.quotaBackendBytes, or delete data"},
		{"recovery off", disabled, &status.Maintenance{Action: maintenance.Action{Kind: maintenance.None}},
			etcdv1alpha1.ReasonNoSpace, "automatic recovery is off"},
		{"maintenance did not run in this pass", newCluster(3), nil,
			etcdv1alpha1.ReasonNoSpace, "recovery waits until the cluster has nothing else to do"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := compute(status.Input{Cluster: tc.cluster, Observed: membership.Observed{Members: members(true, true, true)},
				Details: full, Action: noneAction, Maintenance: tc.maintenance})
			degraded := cond(g, s, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(degraded.Reason).To(Equal(tc.reason))
			g.Expect(degraded.Message).To(ContainSubstring("the NOSPACE alarm is raised on e-1"))
			g.Expect(degraded.Message).To(ContainSubstring(tc.says))
			g.Expect(cond(g, s, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse), "a cluster refusing writes is not Ready")
		})
	}
}

func TestDefragmentationsAreRecordedAndKept(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	earlier := metav1.NewTime(time.Date(2026, 11, 1, 0, 0, 0, 0, time.UTC))
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-0", LastDefragmentation: &etcdv1alpha1.DefragmentationRecord{Time: earlier, SizeBefore: 300, SizeAfter: 100}}}
	c.Status.Maintenance = &etcdv1alpha1.MaintenanceStatus{LastScheduledRun: &earlier}
	now := time.Date(2026, 11, 25, 3, 0, 0, 0, time.UTC)
	in := status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true)},
		Details: map[string]status.Detail{"e-0": {}, "e-1": {}, "e-2": {}},
		Action:  membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected},
		Maintenance: &status.Maintenance{
			Action:       maintenance.Action{Kind: maintenance.Defragment, Member: "e-1", Reason: maintenance.ReasonScheduled, Message: "scheduled defragmentation of member e-1"},
			Defragmented: "e-1", Record: etcdv1alpha1.DefragmentationRecord{Time: metav1.NewTime(now), SizeBefore: 500, SizeAfter: 200},
		}}

	s := compute(in)
	g.Expect(s.Members[0].LastDefragmentation).To(Equal(&etcdv1alpha1.DefragmentationRecord{Time: earlier, SizeBefore: 300, SizeAfter: 100}), "kept from the last status")
	g.Expect(s.Members[1].LastDefragmentation).To(Equal(&etcdv1alpha1.DefragmentationRecord{Time: metav1.NewTime(now), SizeBefore: 500, SizeAfter: 200}))
	g.Expect(s.Members[2].LastDefragmentation).To(BeNil())
	g.Expect(s.Maintenance).To(Equal(&etcdv1alpha1.MaintenanceStatus{Reason: "Scheduled", Message: "scheduled defragmentation of member e-1", LastScheduledRun: &earlier}))
	g.Expect(cond(g, s, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse), "a defragmentation degrades nothing")

	in.Maintenance = &status.Maintenance{Action: maintenance.Action{Kind: maintenance.None, Reason: maintenance.ReasonRunComplete}, RunCompleted: now}
	s = compute(in)
	g.Expect(s.Maintenance.LastScheduledRun).To(Equal(&metav1.Time{Time: now}))

	in.Maintenance = nil
	g.Expect(compute(in).Maintenance).To(Equal(c.Status.Maintenance), "a pass without maintenance keeps the last")
}

// Each member says where it runs, as its pod does in this pass: node and zone, empty for a
// member whose pod is not placed or is gone, also when no member answers.
func TestMembersSayWhereTheyRun(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "e-2", Node: "n-old", Zone: "zone-old"}}
	pods := map[string]membership.Pod{
		"e-0": {Node: "n-a", Zone: "zone-a"},
		"e-1": {Node: "n-b"},
		"e-2": {},
	}
	s := compute(status.Input{Cluster: c, Observed: membership.Observed{Members: members(true, true, true), Pods: pods},
		Action: membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}})
	var where [][2]string
	for _, m := range s.Members {
		where = append(where, [2]string{m.Node, m.Zone})
	}
	g.Expect(where).To(Equal([][2]string{{"n-a", "zone-a"}, {"n-b", ""}, {"", ""}}), "e-2's pod is not placed: its old node is not reported")

	c.Status.Members = s.Members
	s = compute(status.Input{Cluster: c, Observed: membership.Observed{Pods: map[string]membership.Pod{"e-0": {Node: "n-c", Zone: "zone-c"}}},
		Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "w"}})
	g.Expect(s.Members[0].Node).To(Equal("n-c"), "no member answers: where the pods are is still observed")
	g.Expect(s.Members[1].Node).To(BeEmpty(), "e-1 has no pod now")
}

// A member pod that the scheduler could place on no node degrades the cluster once it has
// waited UnschedulableAfter, naming the member and quoting the scheduler; not before (a pod
// waiting for its volume is briefly unschedulable), and not for a pod being deleted.
func TestAMemberThatCannotBePlacedSaysWhy(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	why := "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
	in := func(since time.Duration, terminating bool) status.Input {
		return status.Input{Cluster: newCluster(3), Observed: membership.Observed{Now: now, Cluster: cluster.Names{Name: "e", Namespace: "ns"},
			Members: members(true, true),
			Pods: map[string]membership.Pod{"e-0": {Ready: true}, "e-1": {Ready: true},
				"e-2": {Unschedulable: why, UnschedulableSince: now.Add(-since), Terminating: terminating}}},
			Action: membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers, Message: "waiting for e-2"}}
	}

	degraded := cond(g, compute(in(status.UnschedulableAfter+5*time.Second, false)), etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberUnschedulable))
	g.Expect(degraded.Message).To(Equal("member e-2 has waited for a node since 2026-11-29T11:59:25Z: " + why))

	g.Expect(cond(g, compute(in(status.UnschedulableAfter-time.Second, false)), etcdv1alpha1.ConditionDegraded).Status).
		To(Equal(metav1.ConditionFalse), "briefly unschedulable is not degraded")
	g.Expect(cond(g, compute(in(time.Hour, true)), etcdv1alpha1.ConditionDegraded).Status).
		To(Equal(metav1.ConditionFalse), "a pod being deleted is not waited on")
}

// spec.auth is in force only once etcd reported it: until then the cluster is Progressing
// (ConfiguringAuth) and observedGeneration waits; status.auth is what the auth step saw,
// kept by a pass that did not look; turning it on and off are events.
func TestAuthIsInForceOnlyOnceEtcdReportsIt(t *testing.T) {
	g := NewWithT(t)
	c := newCluster(3)
	c.Spec.Auth.Enabled = true
	c.Status.ObservedGeneration = 2
	steady := membership.Action{Kind: membership.None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "ok"}
	observed := membership.Observed{Members: members(true, true, true)}

	waiting := compute(status.Input{Cluster: c, Seen: true, Observed: observed, Action: steady})
	g.Expect(waiting.Auth).To(BeNil())
	p := cond(g, waiting, etcdv1alpha1.ConditionProgressing)
	g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonConfiguringAuth))
	g.Expect(p.Message).To(HavePrefix("turning etcd's authentication on"))
	g.Expect(waiting.ObservedGeneration).To(Equal(int64(2)), "auth is not in force yet")
	g.Expect(cond(g, waiting, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))

	on := &etcdv1alpha1.AuthStatus{Enabled: true, RootUsers: []string{"e-member", "etcdpilot", "root"}}
	c.Status = waiting
	done := compute(status.Input{Cluster: c, Seen: true, Observed: observed, Action: steady, Auth: on})
	g.Expect(done.Auth).To(Equal(on))
	g.Expect(done.ObservedGeneration).To(Equal(int64(3)))
	g.Expect(cond(g, done, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond(g, done, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(status.Transitions(waiting, done)).To(ContainElement(status.Event{Type: "Normal", Reason: "AuthEnabled",
		Action: "ConfigureAuth", Message: "etcd's authentication is on; users with the root role: e-member, etcdpilot, root"}))

	c.Status = done
	kept := compute(status.Input{Cluster: c, Seen: true, Observed: observed, Action: steady})
	g.Expect(kept.Auth).To(Equal(on), "not looked at this pass: kept")

	c.Spec.Auth.Enabled, c.Generation = false, 4
	turningOff := compute(status.Input{Cluster: c, Seen: true, Observed: observed, Action: steady})
	g.Expect(meta.FindStatusCondition(turningOff.Conditions, etcdv1alpha1.ConditionProgressing).Message).To(Equal("turning etcd's authentication off"))
	g.Expect(turningOff.ObservedGeneration).To(Equal(int64(3)))
	c.Status = turningOff
	off := compute(status.Input{Cluster: c, Seen: true, Observed: observed, Action: steady, Auth: &etcdv1alpha1.AuthStatus{}})
	g.Expect(off.ObservedGeneration).To(Equal(int64(4)))
	g.Expect(status.Transitions(turningOff, off)).To(ContainElement(HaveField("Reason", "AuthDisabled")))
}
