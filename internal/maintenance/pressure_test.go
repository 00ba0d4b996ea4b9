package maintenance_test

import (
	"math/rand/v2"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
)

// storage is what the controller hands storage autoscaling for observation o under policy
// p (controllers.storageMembers): each member's sizes, and whether maintenance defragments
// it.
func storage(p maintenance.Policy, o maintenance.Observed) []autoscale.Member {
	defragmenting := maintenance.Defragmenting(p, o)
	var out []autoscale.Member
	for _, m := range o.Members {
		out = append(out, autoscale.Member{Name: m.Name, DBSize: m.DBSize, DBSizeInUse: m.DBSizeInUse, Defragmenting: defragmenting[m.Name]})
	}
	return out
}

// compacted is o with the history compacted to the current revision.
func compacted(o maintenance.Observed) maintenance.Observed {
	o.CompactedRevision = o.Revision
	return o
}

// pass is one reconcile pass's two decisions on a cluster whose quota is autoscaled:
// maintenance first, then storage autoscaling from the same observation.
func pass(p maintenance.Policy, o maintenance.Observed) (maintenance.Action, autoscale.Decision) {
	p.QuotaAutoscaled = true
	return maintenance.Plan(p, o), autoscale.Plan(autoscale.Policy{QuotaBytes: p.QuotaBytes}, storage(p, o), 0, false)
}

// The quota pressure of a file that runs ahead of its data, as in an e2e with a 24Mi quota
// and values of 256 KiB: each case is one pass, and exactly one of maintenance and storage
// autoscaling acts on the file at the trigger (75 % of the quota: 18 MiB).
func TestQuotaPressureGetsADefragmentationOrALargerQuota(t *testing.T) {
	small := with(auto, func(p *maintenance.Policy) { p.QuotaBytes = 24 * mib })
	cases := []struct {
		name     string
		policy   maintenance.Policy
		obs      maintenance.Observed
		wantMain maintenance.Action
		wantKind autoscale.Kind
		wantWhy  autoscale.Reason
	}{
		{
			name:     "file at the trigger, in use well below: defragmented, the quota waits",
			policy:   small,
			obs:      cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 12), clean24("e-2", 3)),
			wantMain: defrag("e-1", 2, maintenance.ReasonQuotaPressure),
			wantKind: autoscale.None, wantWhy: autoscale.ReasonDefragmentationPending,
		},
		{
			name:     "two files at the trigger: one defragmented now, the other next, the quota waits for both",
			policy:   small,
			obs:      cluster(leader(member("e-0", 1, 20, 12)), member("e-1", 2, 20, 12), clean24("e-2", 3)),
			wantMain: defrag("e-1", 2, maintenance.ReasonQuotaPressure),
			wantKind: autoscale.None, wantWhy: autoscale.ReasonDefragmentationPending,
		},
		{
			name:     "in use at the trigger: the quota is raised, no defragmentation",
			policy:   small,
			obs:      cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 18), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonQuotaRaiseDue),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "in use within 5 % of the quota of the trigger: too close for a defragmentation, the quota is raised",
			policy:   small,
			obs:      cluster(leader(clean24("e-0", 1)), bytes(clean("e-1", 2), 20*mib, 18*mib-24*mib/20+1), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonQuotaRaiseDue),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "in use at the trigger with plenty to reclaim (1000 MiB quota): the quota is raised, no defragmentation",
			policy:   auto,
			obs:      cluster(leader(clean("e-0", 1)), member("e-1", 2, 900, 760), clean("e-2", 3)),
			wantMain: none(maintenance.ReasonQuotaRaiseDue),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "defragmentation disabled: the file at the trigger raises the quota",
			policy:   with(small, func(p *maintenance.Policy) { p.Mode = maintenance.Disabled }),
			obs:      cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 12), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonDisabled),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "defragmented less than MinInterval ago and back at the trigger: the quota is raised",
			policy:   small,
			obs:      cluster(leader(clean24("e-0", 1)), recent(member("e-1", 2, 20, 12)), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonQuotaRaiseDue),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "scheduled defragmentation not due: the quota is raised",
			policy:   with(small, func(p *maintenance.Policy) { p.Mode = maintenance.Schedule }),
			obs:      cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 12), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonNotDue),
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "NOSPACE with the data fitting: the recovery defragments, the quota waits",
			policy:   small,
			obs:      compacted(noSpace(cluster(leader(member("e-0", 1, 24, 12)), member("e-1", 2, 24, 12), member("e-2", 3, 24, 12)))),
			wantMain: defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
			wantKind: autoscale.None, wantWhy: autoscale.ReasonDefragmentationPending,
		},
		{
			name:     "NOSPACE with data that does not fit: the quota is raised",
			policy:   small,
			obs:      compacted(noSpace(cluster(leader(member("e-0", 1, 24, 24)), member("e-1", 2, 24, 24), member("e-2", 3, 24, 24)))),
			wantMain: maintenance.Action{Kind: maintenance.CannotRecover, Reason: maintenance.ReasonNoSpaceDoesNotFit},
			wantKind: autoscale.RaiseQuota, wantWhy: autoscale.ReasonNearQuota,
		},
		{
			name:     "below the trigger: neither",
			policy:   small,
			obs:      cluster(leader(clean24("e-0", 1)), member("e-1", 2, 17, 12), clean24("e-2", 3)),
			wantMain: none(maintenance.ReasonBelowThresholds),
			wantKind: autoscale.None, wantWhy: autoscale.ReasonBelowThreshold,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a, d := pass(tc.policy, tc.obs)
			g.Expect(a.Message).NotTo(BeEmpty())
			a.Message = ""
			g.Expect(a).To(Equal(tc.wantMain))
			g.Expect(d.Kind).To(Equal(tc.wantKind), d.Message)
			g.Expect(d.Reason).To(Equal(tc.wantWhy), d.Message)
		})
	}
}

func TestQuotaPressureMessages(t *testing.T) {
	g := NewWithT(t)
	small := with(auto, func(p *maintenance.Policy) { p.QuotaBytes = 24 * mib })
	a, d := pass(small, cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 12), clean24("e-2", 3)))
	g.Expect(a.Message).To(Equal("defragmenting member e-1, at 75 % of the quota of 24.0 MiB or more: 40 % fragmented, 8.0 MiB of 20.0 MiB to reclaim"))
	g.Expect(d.Message).To(Equal("member e-1's database file is 20 MiB, 83 % of the 24 MiB quota, past the 75 % threshold: " +
		"maintenance defragments it down to the 12 MiB in use first, and the quota rises only if that is not enough"))

	a, _ = pass(small, cluster(leader(clean24("e-0", 1)), member("e-1", 2, 20, 18), clean24("e-2", 3)))
	g.Expect(a.Message).To(Equal("member e-1 is at 75 % of the quota of 24.0 MiB or more and with 18.0 MiB in use, " +
		"a defragmentation would not bring it 1.2 MiB under that: storage autoscaling raises the quota instead"))
	a, _ = pass(small, cluster(leader(clean24("e-0", 1)), recent(member("e-1", 2, 20, 12)), clean24("e-2", 3)))
	g.Expect(a.Message).To(Equal("member e-1 is at 75 % of the quota of 24.0 MiB or more and it was defragmented " +
		"less than 10 minutes ago: storage autoscaling raises the quota instead"))
}

func TestPressureReclaimable(t *testing.T) {
	g := NewWithT(t)
	g.Expect(maintenance.PressureReclaimable(24 * mib)).To(Equal(24 * mib / 20))
	g.Expect(maintenance.PressureReclaimable(640*mib)).To(Equal(32*mib), "5 % of 640 MiB is 32 MiB")
	g.Expect(maintenance.PressureReclaimable(2 << 30)).To(Equal(32 * mib))
	g.Expect(maintenance.PressureReclaimable(0)).To(Equal(32*mib), "etcd's default quota")
	g.Expect(maintenance.PressureReclaimable(4*mib)).To(Equal(mib), "never less than DefragmentedBelowBytes")
	g.Expect(maintenance.PressurePercent).To(Equal(int64(autoscale.DefaultThresholdPercent)), "one trigger for both")
}

func TestDefragmenting(t *testing.T) {
	cases := []struct {
		name   string
		policy maintenance.Policy
		obs    maintenance.Observed
		want   []string
	}{
		{name: "nothing due", policy: auto, obs: cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3))},
		{name: "every due member, this pass and the next, the leader too", policy: autoscaled,
			obs:  cluster(leader(member("e-0", 1, 800, 400)), member("e-1", 2, 760, 700), recent(member("e-2", 3, 800, 400))),
			want: []string{"e-0", "e-1"}},
		{name: "disabled", policy: with(auto, func(p *maintenance.Policy) { p.Mode = maintenance.Disabled }),
			obs: cluster(leader(member("e-0", 1, 800, 400)), clean("e-1", 2), clean("e-2", 3))},
		{name: "a scheduled run that is due", policy: with(auto, func(p *maintenance.Policy) { p.Mode = maintenance.Schedule; p.ScheduledRunDue = true }),
			obs:  cluster(leader(member("e-0", 1, 60, 50)), member("e-1", 2, 51, 50), clean("e-2", 3)),
			want: []string{"e-0", "e-1"}},
		{name: "NOSPACE: after the compaction, every member with 1 MiB to give back, however recently defragmented", policy: auto,
			obs:  noSpace(cluster(leader(member("e-0", 1, 1000, 300)), recent(member("e-1", 2, 1000, 400)), clean("e-2", 3))),
			want: []string{"e-0", "e-1"}},
		{name: "NOSPACE in revision mode with in use at the trigger: after both compactions, every member with 1 MiB to give back",
			policy: keeping(100),
			obs:    noSpace(compactedTo(0, cluster(leader(member("e-0", 1, 1000, 800)), member("e-1", 2, 1000, 999), member("e-2", 3, 1000, 900)))),
			want:   []string{"e-0", "e-1", "e-2"}},
		{name: "a cluster that waits for a member", policy: auto,
			obs: cluster(leader(member("e-0", 1, 800, 400)), clean("e-1", 2), maintenance.Member{Name: "e-2", ID: 3, Healthy: true})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			var got []string
			for name, ok := range maintenance.Defragmenting(tc.policy, tc.obs) {
				g.Expect(ok).To(BeTrue())
				got = append(got, name)
			}
			g.Expect(got).To(ConsistOf(tc.want))
		})
	}
	g := NewWithT(t)
	o := cluster(leader(member("e-0", 1, 800, 400)), clean("e-1", 2))
	maintenance.Defragmenting(auto, o)
	g.Expect(o.Members[0].DBSize).To(Equal(800*mib), "the observation is left as it was")
}

// TestQuotaPressurePassesProperties follows generated clusters whose quota is autoscaled,
// pass after pass, carrying out what maintenance and storage autoscaling decide (no writes
// in between): in each pass a file at the trigger is either counted as defragmenting, down
// to a size in use below the trigger, or gets a larger quota, never neither and never both;
// a pass that leaves the quota waiting defragments a member; and the passes end with every
// file below the trigger.
func TestQuotaPressurePassesProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(75, 5))
	seen := map[string]int{}
	for i := range 3000 {
		p, o := generatePressure(r)
		for step := 0; ; step++ {
			g.Expect(step).To(BeNumerically("<", 12), "case %d: the passes do not end", i)
			p.QuotaAutoscaled = true
			a := maintenance.Plan(p, o)
			defragmenting := maintenance.Defragmenting(p, o)
			ap := autoscale.Policy{QuotaBytes: p.QuotaBytes}
			d := autoscale.Plan(ap, storage(p, o), 0, false)
			seen[string(a.Reason)]++
			seen[string(d.Reason)]++
			atTrigger := false
			for _, m := range o.Members {
				if m.DBSize*100 < maintenance.PressurePercent*p.QuotaBytes {
					continue
				}
				atTrigger = true
				if defragmenting[m.Name] {
					seen["defragmenting at the trigger"]++
					g.Expect(m.DBSizeInUse*100).To(BeNumerically("<", maintenance.PressurePercent*p.QuotaBytes),
						"case %d pass %d: %s is defragmented and the quota raised for its data: %+v", i, step, m.Name, m)
				} else {
					seen["raise at the trigger"]++
					g.Expect(d.Kind).To(Equal(autoscale.RaiseQuota), "case %d pass %d: %s is at the trigger and gets neither: %+v, %s",
						i, step, m.Name, m, d.Message)
				}
			}
			if d.Reason == autoscale.ReasonDefragmentationPending {
				g.Expect(a.Kind).To(Equal(maintenance.Defragment), "case %d pass %d: the quota waits for nothing", i, step)
			}
			if !atTrigger {
				g.Expect(d.Kind).To(Equal(autoscale.None), "case %d pass %d", i, step)
				break
			}
			// Carry both out.
			if a.Kind == maintenance.Defragment {
				for j, m := range o.Members {
					if m.ID == a.MemberID {
						o.Members[j].DBSize, o.Members[j].RecentlyDefragmented = m.DBSizeInUse, true
					}
				}
			}
			if d.Kind == autoscale.RaiseQuota {
				p.QuotaBytes = d.To
			}
		}
	}
	for _, k := range []string{"defragmenting at the trigger", "raise at the trigger", "QuotaPressure", "QuotaRaiseDue",
		"Disabled", "NotDue", "DefragmentationPending", "NearQuota", "BelowThreshold"} {
		g.Expect(seen[k]).To(BeNumerically(">", 0), "no generated pass gave %s", k)
	}
}

// generatePressure is a healthy cluster of three at its desired size, with no alarm, its
// files around the trigger of a quota small or large, the size in use anywhere under the
// file or not reported.
func generatePressure(r *rand.Rand) (maintenance.Policy, maintenance.Observed) {
	modes := []maintenance.Mode{maintenance.Auto, maintenance.Auto, maintenance.Schedule, maintenance.Disabled}
	quotas := []int64{16 * mib, 24 * mib, 64 * mib, 1000 * mib, 2 << 30}
	p := maintenance.Policy{Mode: modes[r.IntN(len(modes))], QuotaBytes: quotas[r.IntN(len(quotas))], RecoverFromNoSpace: true}
	var ms []maintenance.Member
	for i := range 3 {
		size := p.QuotaBytes/2 + r.Int64N(p.QuotaBytes/2+1)
		m := maintenance.Member{Name: string(rune('a' + i)), ID: uint64(i + 1), Leader: i == 0, Reachable: true, Healthy: true,
			DBSize: size, DBSizeInUse: size - r.Int64N(size/2+1), RecentlyDefragmented: r.IntN(4) == 0}
		if r.IntN(10) == 0 {
			m.DBSizeInUse = 0
		}
		ms = append(ms, m)
	}
	return p, cluster(ms...)
}
