package membership_test

import (
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// unchanged is the second look at every member of o as o saw it.
func unchanged(o membership.Observed) map[string]membership.Recheck {
	now := map[string]membership.Recheck{}
	for _, m := range o.Members {
		p, ok := o.Pods[m.Name]
		now[m.Name] = membership.Recheck{HasPod: ok, Pod: p, Healthy: m.Healthy}
	}
	return now
}

func TestADisruptionGoesAheadOnlyWhileTheVotersThePlanSawHealthyStillAre(t *testing.T) {
	g := NewWithT(t)
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	// A rollout's first restart: e-1, planned while every member was healthy.
	o := rolling("old", "old", "old")
	restart := membership.Plan(o)
	g.Expect(restart.Kind).To(Equal(membership.RestartMember))
	g.Expect(restart.Member).To(Equal(e1))

	g.Expect(o.ConfirmDisruption(restart, unchanged(o))).To(Equal(restart), "nothing changed: it goes ahead")

	for _, tc := range []struct {
		name   string
		change func(now map[string]membership.Recheck)
		says   string
	}{
		{"another voter's pod deleted meanwhile (a drain, a user)", func(now map[string]membership.Recheck) {
			r := now[e2]
			r.Pod.Terminating = true
			now[e2] = r
		}, "member " + e2 + " was healthy when this pass began, but its pod is being deleted"},
		{"another voter's pod gone", func(now map[string]membership.Recheck) { now[e0] = membership.Recheck{} },
			"member " + e0 + " was healthy when this pass began, but its pod is gone"},
		{"another voter's etcd died meanwhile (its pod still there)", func(now map[string]membership.Recheck) {
			r := now[e0]
			r.Healthy = false
			now[e0] = r
		}, "member " + e0 + " was healthy when this pass began, but it no longer answers healthy"},
	} {
		now := unchanged(o)
		tc.change(now)
		got := o.ConfirmDisruption(restart, now)
		g.Expect(got.Kind).To(Equal(membership.Wait), tc.name)
		g.Expect(got.Member).To(Equal(e1), tc.name)
		g.Expect(got.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut), tc.name)
		g.Expect(got.Message).To(ContainSubstring(tc.says), tc.name)
		g.Expect(got.Message).To(ContainSubstring("restarting member "+e1), tc.name)
	}

	// The member the action is about may change: it is the one going anyway.
	now := unchanged(o)
	now[e1] = membership.Recheck{HasPod: true, Pod: membership.Pod{Terminating: true}}
	g.Expect(o.ConfirmDisruption(restart, now)).To(Equal(restart), "the restarted member itself changed")
}

func TestADisruptionDoesNotWaitForAVoterThatWasAlreadyDown(t *testing.T) {
	g := NewWithT(t)
	e1, e2 := c.MemberName(1), c.MemberName(2)
	// e-2 is outdated and not healthy: restarted at once (repairOutdated); e-1 was already
	// down when the pass began, so its state does not hold the restart back.
	o := rolling("new", "new", "old")
	o.Members[2].Healthy = false
	restart := membership.Plan(o)
	g.Expect(restart.Kind).To(Equal(membership.RestartMember))
	g.Expect(restart.Member).To(Equal(e2))
	o.Members[1].Healthy = false
	now := unchanged(o)
	now[e1] = membership.Recheck{}
	g.Expect(o.ConfirmDisruption(restart, now)).To(Equal(restart))
}

func TestARemovalIsConfirmedLikeARestart(t *testing.T) {
	g := NewWithT(t)
	e1, e3 := c.MemberName(1), c.MemberName(3)
	o := membership.Observed{Cluster: c, Size: 3,
		Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12), voter(3, 13)},
		Pods:    pods(c.MemberName(0), e1, c.MemberName(2), e3), PVCs: pvcs(true, c.MemberName(0), e1, c.MemberName(2), e3)}
	remove := membership.Plan(o)
	g.Expect(remove.Kind).To(Equal(membership.RemoveMember))
	g.Expect(remove.Member).To(Equal(e3))
	now := unchanged(o)
	r := now[e1]
	r.Healthy = false
	now[e1] = r
	got := o.ConfirmDisruption(remove, now)
	g.Expect(got.Kind).To(Equal(membership.Wait))
	g.Expect(got.Message).To(ContainSubstring("member " + e1 + " was healthy when this pass began, but it no longer answers healthy"))
}

func TestOtherActionsAreNotRechecked(t *testing.T) {
	g := NewWithT(t)
	o := rolling("old", "new", "new")
	move := membership.Plan(o)
	g.Expect(move.Kind).To(Equal(membership.MoveLeader))
	g.Expect(o.ConfirmDisruption(move, map[string]membership.Recheck{})).To(Equal(move))
}
