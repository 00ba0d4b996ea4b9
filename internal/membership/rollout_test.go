package membership_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// rolling is a healthy 3-member cluster at 3.6.16 (e-0 leads) whose pods carry the given spec
// hashes; the current spec gives every member hash "new".
func rolling(hashes ...string) membership.Observed {
	o := upgrading("3.6.16", "3.6.16", "3.6.16", "3.6.16")
	o.SpecHashes = map[string]string{}
	for i, h := range hashes {
		name := c.MemberName(i)
		p := o.Pods[name]
		p.SpecHash = h
		o.Pods[name] = p
		o.SpecHashes[name] = "new"
	}
	return o
}

func TestRollout(t *testing.T) {
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	runPlanCases(t, []planCase{
		{
			name: "every pod built from the current spec: nothing to do",
			obs:  func() membership.Observed { return rolling("new", "new", "new") },
			want: membership.None,
		},
		{
			name: "pods made before the hash was recorded count as current",
			obs:  func() membership.Observed { return rolling("", "", "") },
			want: membership.None,
		},
		{
			name: "a changed spec: the first follower restarts, no snapshot for a rollout",
			obs: func() membership.Observed {
				o := rolling("old", "old", "old")
				o.Upgrade.SnapshotTaken, o.Upgrade.RaftSnapshotsForced = false, false
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.6.16"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
				g.Expect(a.Message).To(ContainSubstring("0 of 3 members updated"))
			},
		},
		{
			name: "followers done: leadership moves to an updated member before the leader restarts",
			obs:  func() membership.Observed { return rolling("old", "new", "new") },
			want: membership.MoveLeader,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.MemberID).To(Equal(uint64(11)))
				g.Expect(a.Message).To(ContainSubstring("2 of 3 members updated"))
			},
		},
		{
			name: "the leader moved: it restarts last",
			obs: func() membership.Observed {
				o := rolling("old", "new", "new")
				o.Members[0].Leader, o.Members[1].Leader = false, true
				return o
			},
			want:  membership.RestartMember,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e0)) },
		},
		{
			name: "a restarted member not healthy yet: wait, restart nobody else",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Members[1].UnhealthySince = now.Add(-time.Minute)
				o.Pods[e1] = membership.Pod{Version: "3.6.16", SpecHash: "new", Created: now.Add(-time.Minute)}
				return o
			},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut), "the wait belongs to the rollout")
				g.Expect(a.Message).To(HavePrefix("rolling out the new spec: 1 of 3 members updated; waiting for member " + e1))
			},
		},
		{
			name: "a restarted member's pod is created again as part of the rollout",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				delete(o.Pods, e1)
				return o
			},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
				g.Expect(a.Message).To(ContainSubstring("0 of 3 members updated"))
			},
		},
		{
			name: "a deleted pod without a rollout is just recreated",
			obs: func() membership.Observed {
				o := rolling("new", "new", "new")
				delete(o.Pods, e1)
				return o
			},
			want:  membership.CreatePod,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRecreatingPod)) },
		},
		{
			name: "a restarted member not Ready yet (healthy, readyz failing): wait",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Members[1].Ready = false
				return o
			},
			want: membership.Wait,
		},
		{
			name: "a member lagging behind the leader: wait before the next restart",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Members[0].RaftIndex = 9000
				return o
			},
			want:  membership.Wait,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Message).To(ContainSubstring("catch up")) },
		},
		{
			name: "a restarted member unhealthy past memberUpgradeTimeout: the rollout stops and says what to do",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Members[1].UnhealthySince = now.Add(-6 * time.Minute)
				o.Pods[e1] = membership.Pod{Version: "3.6.16", SpecHash: "new", Created: now.Add(-6 * time.Minute)}
				return o
			},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRolloutStuck))
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("1 of 3 members updated"))
				g.Expect(a.Message).To(ContainSubstring("correct the spec"))
			},
		},
		{
			name: "a member long healthy that just fell ill is not a stuck rollout",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Members[1].UnhealthySince = now.Add(-time.Minute)
				return o
			},
			want: membership.Wait,
		},
		{
			name: "the spec corrected: the stuck member, outdated again and unhealthy, restarts at once",
			obs: func() membership.Observed {
				o := rolling("old", "bad", "old")
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Members[1].UnhealthySince = now.Add(-6 * time.Minute)
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
				g.Expect(a.Message).To(ContainSubstring("costs no availability"))
			},
		},
		{
			name: "an unhealthy member is not restarted out of turn during an upgrade",
			obs: func() membership.Observed {
				o := rolling("old", "old", "old")
				o.Upgrade.Target = "3.7.3"
				o.Members[2].Healthy, o.Members[2].Ready = false, false
				return o
			},
			want:  membership.Wait,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e2)) },
		},
		{
			name: "an upgrade and a changed spec together: one restart per member, at the new release",
			obs: func() membership.Observed {
				o := rolling("old", "new", "old")
				o.Upgrade.Target = "3.7.3"
				p := o.Pods[e1]
				p.Version = "3.7.3"
				o.Pods[e1] = p
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e2))
				g.Expect(a.Version).To(Equal("3.7.3"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
				g.Expect(a.Message).To(ContainSubstring("1/3 members at 3.7.3"))
			},
		},
		{
			name: "at the new release but built from an older spec: restarted as part of the upgrade",
			obs: func() membership.Observed {
				o := rolling("new", "old", "new")
				o.Upgrade.Target = "3.7.3"
				for _, n := range []string{e0, e2} {
					p := o.Pods[n]
					p.Version = "3.7.3"
					o.Pods[n] = p
				}
				p := o.Pods[e1]
				p.Version = "3.7.3"
				o.Pods[e1] = p
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRollingOut))
			},
		},
		{
			name: "followers by ordinal, whatever order etcd lists them in (by member ID)",
			obs: func() membership.Observed {
				o := rolling("old", "old", "old")
				o.Members[1], o.Members[2] = o.Members[2], o.Members[1]
				return o
			},
			want:  membership.RestartMember,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e1)) },
		},
		{
			name: "a pod already being deleted is not restarted again",
			obs: func() membership.Observed {
				o := rolling("old", "old", "old")
				stopping(&o, 1)
				return o
			},
			want:  membership.Wait,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e1)) },
		},
		{
			name: "a file system waiting for a restart to grow: the member is rolled",
			obs: func() membership.Observed {
				o := rolling("new", "new", "new")
				o.PVCs[e2] = membership.PVC{Bootstrapped: true, Volume: membership.Volume{FileSystemResizePending: true}}
				return o
			},
			want:  membership.RestartMember,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e2)) },
		},
	})
}

func TestUpdatedCountsMembersAtTheDesiredReleaseAndSpec(t *testing.T) {
	g := NewWithT(t)
	o := rolling("old", "new", "")
	g.Expect(o.Updated()).To(Equal(2), "new, and the legacy pod without a hash")
	o.Upgrade.Target = "3.7.3"
	g.Expect(o.Updated()).To(Equal(0))
}

// growing is a healthy, current 3-member cluster whose claims request 4Gi; the spec asks for
// `want`.
func growing(want string, expandable *bool) membership.Observed {
	const have = "4Gi"
	o := rolling("new", "new", "new")
	o.Storage = membership.Storage{Size: resource.MustParse(want), Class: "local", Expandable: expandable}
	for n := range o.Pods {
		o.PVCs[n] = membership.PVC{Bootstrapped: true, Volume: membership.Volume{Requested: resource.MustParse(have), Capacity: resource.MustParse(have)}}
	}
	return o
}

func TestVolumeGrowth(t *testing.T) {
	e0, e1 := c.MemberName(0), c.MemberName(1)
	runPlanCases(t, []planCase{
		{
			name: "claims at the size: nothing to do",
			obs:  func() membership.Observed { return growing("4Gi", nil) },
			want: membership.None,
		},
		{
			name: "a larger size, an expandable class: the first claim grows",
			obs:  func() membership.Observed { return growing("8Gi", ptr.To(true)) },
			want: membership.ExpandVolume,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonExpandingVolumes))
				g.Expect(a.Message).To(ContainSubstring("0 of 3 claims done"))
			},
		},
		{
			name: "one claim still growing: wait, one at a time",
			obs: func() membership.Observed {
				o := growing("8Gi", ptr.To(true))
				o.PVCs[e0] = membership.PVC{Bootstrapped: true, Volume: membership.Volume{Requested: resource.MustParse("8Gi"), Capacity: resource.MustParse("4Gi")}}
				return o
			},
			want:  membership.Wait,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e0)) },
		},
		{
			name: "the first claim grown: the next",
			obs: func() membership.Observed {
				o := growing("8Gi", ptr.To(true))
				o.PVCs[e0] = membership.PVC{Bootstrapped: true, Volume: membership.Volume{Requested: resource.MustParse("8Gi"), Capacity: resource.MustParse("8Gi")}}
				return o
			},
			want: membership.ExpandVolume,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("1 of 3 claims done"))
			},
		},
		{
			name: "a class without expansion: blocked, naming the class, nothing changed",
			obs:  func() membership.Observed { return growing("8Gi", ptr.To(false)) },
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonVolumeExpansionNotSupported))
				g.Expect(a.Message).To(ContainSubstring(`StorageClass "local" does not allow volume expansion`))
			},
		},
		{
			name: "a class that is gone: blocked",
			obs: func() membership.Observed {
				o := growing("8Gi", nil)
				o.Storage.Unknown = `StorageClass "local" was not found`
				return o
			},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonVolumeExpansionNotSupported))
				g.Expect(a.Message).To(HaveSuffix(`cannot grow: StorageClass "local" was not found; nothing was changed`))
			},
		},
		{
			name: "a member unhealthy: no expansion until the cluster is steady",
			obs: func() membership.Observed {
				o := growing("8Gi", ptr.To(true))
				o.Members[2].Healthy, o.Members[2].Ready = false, false
				return o
			},
			want: membership.Wait,
		},
		{
			name: "a rollout goes first",
			obs: func() membership.Observed {
				o := growing("8Gi", ptr.To(true))
				p := o.Pods[e1]
				p.SpecHash = "old"
				o.Pods[e1] = p
				return o
			},
			want: membership.RestartMember,
		},
		{
			name: "ephemeral clusters have no claims to grow",
			obs: func() membership.Observed {
				o := growing("8Gi", ptr.To(true))
				o.Ephemeral = true
				return o
			},
			want: membership.None,
		},
	})
}

func TestSpecInForce(t *testing.T) {
	g := NewWithT(t)
	g.Expect(rolling("new", "new", "new").SpecInForce()).To(BeTrue())
	g.Expect(rolling("new", "", "new").SpecInForce()).To(BeTrue(), "a legacy pod counts as current")
	g.Expect(rolling("new", "old", "new").SpecInForce()).To(BeFalse(), "a member on an older spec")

	sick := rolling("new", "new", "new")
	sick.Members[1].Healthy, sick.Members[1].Ready = false, false
	g.Expect(sick.SpecInForce()).To(BeTrue(), "health is not the spec's business")
	g.Expect(sick.Settled()).To(BeFalse(), "settled: the spec in force and every member healthy")
	notReady := rolling("new", "new", "new")
	notReady.Members[2].Ready = false
	g.Expect(notReady.Settled()).To(BeFalse())
	g.Expect(rolling("new", "new", "new").Settled()).To(BeTrue())
	g.Expect(rolling("new", "old", "new").Settled()).To(BeFalse())

	bigger := rolling("new", "new", "new")
	bigger.Size = 5
	g.Expect(bigger.SpecInForce()).To(BeFalse(), "spec.size not reached")

	learner := rolling("new", "new", "new")
	learner.Members[2].Learner = true
	g.Expect(learner.SpecInForce()).To(BeFalse(), "a learner is not promoted yet")

	g.Expect(growing("8Gi", ptr.To(true)).SpecInForce()).To(BeFalse(), "claims smaller than spec.storage.size")
	g.Expect(growing("4Gi", nil).SpecInForce()).To(BeTrue())

	unknown := rolling("new", "new", "new")
	unknown.Members = nil
	g.Expect(unknown.SpecInForce()).To(BeFalse(), "nobody answered")
}

// stopping makes member i of o unhealthy, with its pod being deleted.
func stopping(o *membership.Observed, i int) {
	m := &o.Members[i]
	m.Healthy, m.Ready = false, false
	p := o.Pods[m.Name]
	p.Terminating = true
	o.Pods[m.Name] = p
}
