package membership_test

import (
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// hibernating is a healthy cluster of three on claims, e1 its leader, asked to hibernate.
func hibernating() membership.Observed {
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	return membership.Observed{
		Cluster: c, Size: 3, Hibernate: true, StaticBootstrap: true,
		Pods: pods(e0, e1, e2), PVCs: staticPVCsStarted(e0, e1, e2),
		Members: []membership.Member{voter(0, 10), leader(voter(1, 11)), voter(2, 12)},
		Upgrade: membership.Upgrade{Target: "3.6.5"},
	}
}

func without(o membership.Observed, gone ...string) membership.Observed {
	ps := map[string]membership.Pod{}
	for n, p := range o.Pods {
		ps[n] = p
	}
	for _, n := range gone {
		delete(ps, n)
	}
	o.Pods = ps
	var ms []membership.Member
	for _, m := range o.Members {
		if _, ok := ps[m.Name]; ok {
			ms = append(ms, m)
		}
	}
	o.Members = ms
	return o
}

func TestHibernationStopsFollowersFirstAndTheLeaderLast(t *testing.T) {
	g := NewWithT(t)
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	o := hibernating()
	var order []string
	for range 3 {
		a := membership.Plan(o)
		g.Expect(a.Kind).To(Equal(membership.StopMember), a.Message)
		g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonHibernating))
		order = append(order, a.Member)
		// While the stopped member's pod terminates, nothing else stops.
		stopping := o.Pods[a.Member]
		stopping.Terminating = true
		o.Pods[a.Member] = stopping
		w := membership.Plan(o)
		g.Expect(w.Kind).To(Equal(membership.Wait))
		g.Expect(w.Member).To(Equal(a.Member))
		o = without(o, a.Member)
		if len(o.Members) < 2 {
			o.Members = nil // no quorum: the member list does not answer
		}
	}
	g.Expect(order).To(Equal([]string{e2, e0, e1}))

	done := membership.Plan(o)
	g.Expect(done.Kind).To(Equal(membership.None))
	g.Expect(done.Reason).To(Equal(etcdv1alpha1.ReasonHibernated))
	g.Expect(o.SpecInForce()).To(BeTrue())
	g.Expect(o.Settled()).To(BeFalse(), "the steps that need running members must not run")
}

func TestHibernationTakesTheFinalBackupWhileAQuorumRuns(t *testing.T) {
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	cases := []struct {
		state membership.BackupState
		want  membership.Kind
	}{
		{membership.BackupMissing, membership.CreateBackup},
		{membership.BackupRunning, membership.Wait},
		{membership.BackupFailed, membership.Blocked},
		{membership.BackupSucceeded, membership.StopMember},
	}
	for _, tc := range cases {
		t.Run(string(tc.state), func(t *testing.T) {
			g := NewWithT(t)
			o := hibernating()
			o.FinalBackup = &membership.UpgradeBackup{Name: "e-hibernation-4", State: tc.state, Message: "Failed: no space"}
			a := membership.Plan(o)
			g.Expect(a.Kind).To(Equal(tc.want), a.Message)
			switch tc.want {
			case membership.CreateBackup, membership.Wait:
				g.Expect(a.Backup).To(Equal("e-hibernation-4"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonHibernating))
			case membership.Blocked:
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonHibernationBlocked))
				g.Expect(a.Message).To(ContainSubstring("no space"))
				g.Expect(a.Message).To(ContainSubstring("Delete EtcdBackup e-hibernation-4"))
			}
			// A member missing (or stopped under an earlier generation) does not excuse
			// the backup while a quorum runs.
			g.Expect(membership.Plan(without(o, e2)).Kind).To(Equal(tc.want))
			// Below a quorum no backup can succeed: the rest stop.
			a = membership.Plan(without(o, e2, e0))
			g.Expect(a.Kind).To(Equal(membership.StopMember))
			g.Expect(a.Member).To(Equal(e1))
		})
	}
}

func TestWakingBringsEveryMemberBackWithItsData(t *testing.T) {
	g := NewWithT(t)
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	o := without(hibernating(), e0, e1, e2)
	o.Members = nil
	o.Hibernate = false
	g.Expect(o.SpecInForce()).To(BeFalse())
	for _, name := range []string{e0, e1, e2} {
		a := membership.Plan(o)
		g.Expect(a.Kind).To(Equal(membership.CreatePod), a.Message)
		g.Expect(a.Member).To(Equal(name))
		g.Expect(a.OnExistingClaim).To(BeTrue(), "the member comes back on its claim, with its data")
		g.Expect(a.Version).To(Equal("3.6.5"))
		o.Pods[name] = membership.Pod{}
	}
}

func TestACreatedHibernatedClusterStartsNothing(t *testing.T) {
	g := NewWithT(t)
	a := membership.Plan(membership.Observed{Cluster: c, Size: 3, Hibernate: true, StaticBootstrap: true})
	g.Expect(a.Kind).To(Equal(membership.None))
	g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonHibernated))
}
