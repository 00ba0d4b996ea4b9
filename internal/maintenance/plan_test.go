package maintenance_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
)

const mib = maintenance.MiB

// quota is the quota of most cases: 1000 MiB, so that 80 % and 90 % are round figures.
const quota = 1000 * mib

var auto = maintenance.Policy{Mode: maintenance.Auto, QuotaBytes: quota, RecoverFromNoSpace: true}

// autoscaled is auto with storage autoscaling able to raise the quota.
var autoscaled = with(auto, func(p *maintenance.Policy) { p.QuotaAutoscaled = true })

// keeping is auto with etcd's auto-compaction in mode revision, keeping the last n
// revisions. auto itself stands for mode periodic: no count of revisions.
func keeping(n int64) maintenance.Policy {
	return with(auto, func(p *maintenance.Policy) { p.HistoryRevisions = n })
}

// member is a healthy follower whose file is size MiB with inUse MiB in use.
func member(name string, id uint64, size, inUse int64) maintenance.Member {
	return maintenance.Member{Name: name, ID: id, Reachable: true, Healthy: true, DBSize: size * mib, DBSizeInUse: inUse * mib}
}

// clean is a healthy follower with nothing to reclaim.
func clean(name string, id uint64) maintenance.Member { return member(name, id, 50, 50) }

// clean24 is clean under a quota of 24 MiB: 5 MiB, all in use.
func clean24(name string, id uint64) maintenance.Member { return member(name, id, 5, 5) }

func leader(m maintenance.Member) maintenance.Member {
	m.Leader = true
	return m
}

func recent(m maintenance.Member) maintenance.Member {
	m.RecentlyDefragmented = true
	return m
}

func learner(m maintenance.Member) maintenance.Member {
	m.Learner = true
	return m
}

// bytes sets a member's figures to the byte.
func bytes(m maintenance.Member, size, inUse int64) maintenance.Member {
	m.DBSize, m.DBSizeInUse = size, inUse
	return m
}

// cluster observes the members, its desired size the number of voters among them.
func cluster(ms ...maintenance.Member) maintenance.Observed {
	o := maintenance.Observed{Members: ms, Revision: 500, CompactedRevision: 400}
	for _, m := range ms {
		if !m.Learner {
			o.Size++
		}
	}
	return o
}

func withAlarm(o maintenance.Observed, id uint64, alarm string) maintenance.Observed {
	alarms := map[uint64][]string{}
	for k, v := range o.Alarms {
		alarms[k] = v
	}
	alarms[id] = append(alarms[id], alarm)
	o.Alarms = alarms
	return o
}

func noSpace(o maintenance.Observed) maintenance.Observed {
	return withAlarm(o, 1, etcd.AlarmNoSpace)
}

func with(p maintenance.Policy, change func(*maintenance.Policy)) maintenance.Policy {
	change(&p)
	return p
}

func TestPlan(t *testing.T) {
	scheduled := with(auto, func(p *maintenance.Policy) { p.Mode = maintenance.Schedule; p.ScheduledRunDue = true })
	disabled := with(auto, func(p *maintenance.Policy) { p.Mode = maintenance.Disabled })
	noRecovery := func(p *maintenance.Policy) { p.RecoverFromNoSpace = false }
	cases := []struct {
		name   string
		policy maintenance.Policy
		obs    maintenance.Observed
		want   maintenance.Action
	}{
		// Auto thresholds.
		{
			name:   "auto: every member below the thresholds",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), clean("e-1", 2), member("e-2", 3, 400, 300)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: 50 % and exactly 100 MiB to reclaim is due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 200, 100), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		{
			name:   "auto: one byte short of 100 MiB to reclaim is not due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), bytes(clean("e-1", 2), 200*mib, 100*mib+1), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: exactly 45 % fragmented is due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 220), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		{
			name:   "auto: a byte under 45 % fragmented is not due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), bytes(clean("e-1", 2), 400*mib, 220*mib+1), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: a member that reported no size in use has nothing to reclaim",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 900, 0), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name: "auto: thresholds of the policy replace the defaults",
			policy: with(auto, func(p *maintenance.Policy) {
				p.MinFragmentationPercent, p.MinReclaimableBytes = 20, 10*mib
			}),
			obs:  cluster(leader(clean("e-0", 1)), member("e-1", 2, 50, 40), clean("e-2", 3)),
			want: defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		{
			name:   "auto: a member defragmented less than MinInterval ago is not due again",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), recent(member("e-1", 2, 200, 100)), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: the next due member is taken past a recently defragmented one",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), recent(member("e-1", 2, 400, 100)), member("e-2", 3, 200, 100)),
			want:   defrag("e-2", 3, maintenance.ReasonFragmented),
		},
		{
			name:   "schedule: a run is complete when the members left were just defragmented",
			policy: with(auto, func(p *maintenance.Policy) { p.Mode = maintenance.Schedule; p.ScheduledRunDue = true }),
			obs:    cluster(leader(recent(member("e-0", 1, 60, 50))), recent(member("e-1", 2, 60, 50)), clean("e-2", 3)),
			want:   none(maintenance.ReasonRunComplete),
		},
		{
			name:   "NOSPACE: recovery defragments a member however recently it was",
			policy: auto,
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(clean("e-0", 1)), recent(member("e-1", 2, 60, 50)), clean("e-2", 3)))
				o.CompactedRevision = o.Revision
				return o
			}(),
			want: defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "auto: at exactly 75 % of the quota, 32 MiB to reclaim is due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 750, 718), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonQuotaPressure),
		},
		{
			name:   "auto: at 75 % of the quota, a byte short of 32 MiB is not due",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), bytes(clean("e-1", 2), 750*mib, 718*mib+1), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: a byte under 75 % of the quota is no pressure",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), bytes(clean("e-1", 2), 750*mib-1, 718*mib-1), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: no quota given means etcd's 2 GiB, so 800 MiB is no pressure",
			policy: with(auto, func(p *maintenance.Policy) { p.QuotaBytes = 0 }),
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 800, 768), clean("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		{
			name:   "auto: a small quota's pressure asks for 5 % of it to reclaim, under 32 MiB",
			policy: with(auto, func(p *maintenance.Policy) { p.QuotaBytes = 24 * mib }),
			obs:    cluster(leader(clean24("e-0", 1)), bytes(clean("e-1", 2), 18*mib, 18*mib-24*mib/20), clean24("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonQuotaPressure),
		},
		{
			name:   "auto: a small quota's pressure, a byte short of 5 % of it to reclaim, is not due",
			policy: with(auto, func(p *maintenance.Policy) { p.QuotaBytes = 24 * mib }),
			obs:    cluster(leader(clean24("e-0", 1)), bytes(clean("e-1", 2), 18*mib, 18*mib-24*mib/20+1), clean24("e-2", 3)),
			want:   none(maintenance.ReasonBelowThresholds),
		},
		// Quota pressure with the quota autoscaled (quota 1000 MiB: the trigger at 750 MiB,
		// 32 MiB to reclaim).
		{
			name:   "autoscaled: in use 32 MiB under the trigger is defragmented",
			policy: autoscaled,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 760, 718), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonQuotaPressure),
		},
		{
			name:   "autoscaled: in use a byte closer to the trigger is left to the quota raise",
			policy: autoscaled,
			obs:    cluster(leader(clean("e-0", 1)), bytes(clean("e-1", 2), 760*mib, 718*mib+1), clean("e-2", 3)),
			want:   none(maintenance.ReasonQuotaRaiseDue),
		},
		{
			name:   "autoscaled: in use at the trigger, however much to reclaim, is left to the quota raise",
			policy: autoscaled,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 900, 760), clean("e-2", 3)),
			want:   none(maintenance.ReasonQuotaRaiseDue),
		},
		{
			name:   "autoscaled: a member at the trigger defragmented less than MinInterval ago is left to the quota raise",
			policy: autoscaled,
			obs:    cluster(leader(clean("e-0", 1)), recent(member("e-1", 2, 800, 400)), clean("e-2", 3)),
			want:   none(maintenance.ReasonQuotaRaiseDue),
		},
		{
			name:   "autoscaled: a fragmented member is defragmented as without autoscaling",
			policy: autoscaled,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		{
			name:   "auto: the follower with the most to reclaim first, whichever threshold it passes",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 900, 600), member("e-2", 3, 400, 200)),
			want:   defrag("e-1", 2, maintenance.ReasonQuotaPressure),
		},
		{
			name:   "auto: a follower under pressure before a fragmented leader",
			policy: auto,
			obs:    cluster(leader(member("e-0", 1, 400, 100)), member("e-1", 2, 900, 850), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonQuotaPressure),
		},
		// Order.
		{
			name:   "order: a follower before the leader, even with less to reclaim",
			policy: auto,
			obs:    cluster(leader(member("e-0", 1, 800, 100)), member("e-1", 2, 400, 200), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		{
			name:   "order: the leader once no follower is due",
			policy: auto,
			obs:    cluster(leader(member("e-0", 1, 800, 100)), clean("e-1", 2), clean("e-2", 3)),
			want:   defrag("e-0", 1, maintenance.ReasonFragmented),
		},
		{
			name:   "order: the follower with the most to reclaim first",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200), member("e-2", 3, 500, 200)),
			want:   defrag("e-2", 3, maintenance.ReasonFragmented),
		},
		{
			name:   "order: a tie goes to the first name",
			policy: auto,
			obs:    cluster(member("e-2", 3, 400, 200), leader(clean("e-0", 1)), member("e-1", 2, 400, 200)),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		// The gate.
		{
			name:   "gate: a cluster with a learner waits, and the learner is never picked",
			policy: auto,
			obs:    cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3), learner(member("e-3", 4, 800, 100))),
			want:   none(maintenance.ReasonLearner),
		},
		{
			name:   "gate: fewer voters than the desired size",
			policy: auto,
			obs: func() maintenance.Observed {
				o := cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200))
				o.Size = 3
				return o
			}(),
			want: none(maintenance.ReasonNotAtSize),
		},
		{
			name:   "gate: a member that did not answer",
			policy: auto,
			obs: cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200),
				maintenance.Member{Name: "e-2", ID: 3, Healthy: true}),
			want: none(maintenance.ReasonUnreachable),
		},
		{
			name:   "gate: a member that is not healthy",
			policy: auto,
			obs: cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200),
				maintenance.Member{Name: "e-2", ID: 3, Reachable: true}),
			want: none(maintenance.ReasonUnhealthy),
		},
		// CORRUPT.
		{
			name:   "corrupt: defragmentation is deferred",
			policy: auto,
			obs:    withAlarm(cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200), clean("e-2", 3)), 3, etcd.AlarmCorrupt),
			want:   none(maintenance.ReasonCorruptAlarm),
		},
		{
			name:   "corrupt: NOSPACE recovery is deferred too",
			policy: auto,
			obs:    withAlarm(noSpace(cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3))), 2, etcd.AlarmCorrupt),
			want:   none(maintenance.ReasonCorruptAlarm),
		},
		{
			name:   "corrupt: a scheduled run is deferred",
			policy: scheduled,
			obs:    withAlarm(cluster(leader(clean("e-0", 1)), member("e-1", 2, 60, 50), clean("e-2", 3)), 1, etcd.AlarmCorrupt),
			want:   none(maintenance.ReasonCorruptAlarm),
		},
		// NOSPACE.
		{
			name:   "nospace: periodic, the data fits under the trigger: no compaction, a follower is defragmented",
			policy: auto,
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 700)), member("e-1", 2, 1000, 600), member("e-2", 3, 1000, 500))),
			want:   defrag("e-2", 3, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: periodic, the least size in use exactly at 75 % of the quota: compact to the current revision",
			policy: auto,
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 800)), member("e-1", 2, 1000, 750), member("e-2", 3, 1000, 900))),
			want:   compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
		},
		{
			name:   "nospace: periodic, the least size in use a byte under 75 % of the quota fits",
			policy: auto,
			obs: noSpace(cluster(leader(member("e-0", 1, 1000, 800)), bytes(clean("e-1", 2), 1000*mib, 750*mib-1),
				member("e-2", 3, 1000, 900))),
			want: defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: a member that did not report its size in use does not count as the least",
			policy: auto,
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 800)), member("e-1", 2, 1000, 0), member("e-2", 3, 1000, 900))),
			want:   compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
		},
		{
			name:   "nospace: revision mode, the followers still count what the compaction freed: the leader's size in use decides",
			policy: keeping(100),
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 200)), member("e-1", 2, 1000, 800), member("e-2", 3, 1000, 810))),
			want:   defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: revision mode, compact to the current revision less the retention first, however full",
			policy: keeping(50),
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 950)), member("e-1", 2, 1000, 990), member("e-2", 3, 1000, 500))),
			want:   compact(450, maintenance.ReasonNoSpaceCompact),
		},
		{
			name:   "nospace: revision mode, the history compacted and in use at the trigger: compact to the current revision",
			policy: keeping(100),
			obs:    noSpace(cluster(leader(member("e-0", 1, 1000, 780)), member("e-1", 2, 1000, 800), member("e-2", 3, 1000, 760))),
			want:   compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
		},
		{
			name:   "nospace: revision mode, the history compacted further than the retention by etcd, and it fits: defragment",
			policy: keeping(100),
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(member("e-0", 1, 1000, 700)), member("e-1", 2, 1000, 600), member("e-2", 3, 1000, 500)))
				o.CompactedRevision = 450
				return o
			}(),
			want: defrag("e-2", 3, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: revision mode, no more revisions than the retention: no history compaction",
			policy: keeping(500),
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(member("e-0", 1, 1000, 700)), member("e-1", 2, 1000, 600), member("e-2", 3, 1000, 500)))
				o.CompactedRevision = 0
				return o
			}(),
			want: defrag("e-2", 3, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: revision mode, fewer revisions than the retention and in use at the trigger: compact to the current revision",
			policy: keeping(800),
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(member("e-0", 1, 1000, 780)), member("e-1", 2, 1000, 800), member("e-2", 3, 1000, 760)))
				o.CompactedRevision = 0
				return o
			}(),
			want: compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
		},
		{
			name:   "nospace: sizes in use not reported: defragmentation has nothing to go by, the files at 90 %: compact to the current revision",
			policy: auto,
			obs:    noSpace(cluster(leader(member("e-0", 1, 950, 0)), member("e-1", 2, 500, 0), member("e-2", 3, 500, 0))),
			want:   compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
		},
		{
			name:   "nospace: sizes in use not reported, the files below 90 %: disarm without a compaction",
			policy: auto,
			obs:    noSpace(cluster(leader(member("e-0", 1, 899, 0)), member("e-1", 2, 500, 0), member("e-2", 3, 500, 0))),
			want:   maintenance.Action{Kind: maintenance.Disarm, Reason: maintenance.ReasonNoSpaceDisarm},
		},
		{
			name:   "nospace: sizes in use not reported and compacted to the current revision: the data does not fit",
			policy: auto,
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(member("e-0", 1, 950, 0)), member("e-1", 2, 500, 0), member("e-2", 3, 500, 0)))
				o.CompactedRevision = o.Revision
				return o
			}(),
			want: maintenance.Action{Kind: maintenance.CannotRecover, Reason: maintenance.ReasonNoSpaceDoesNotFit},
		},
		{
			name:   "nospace: the current revision is not known",
			policy: auto,
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3)))
				o.Revision = 0
				return o
			}(),
			want: none(maintenance.ReasonRevisionUnknown),
		},
		{
			name:   "nospace: compacted past the current revision, defragment a follower",
			policy: auto,
			obs: func() maintenance.Observed {
				o := noSpace(cluster(leader(member("e-0", 1, 1000, 700)), member("e-1", 2, 1000, 999), member("e-2", 3, 1000, 998)))
				o.CompactedRevision = 600
				return o
			}(),
			want: defrag("e-2", 3, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: a member under pressure waits for every member to answer",
			policy: auto,
			obs: noSpace(cluster(leader(member("e-0", 1, 1000, 700)), member("e-1", 2, 1000, 600),
				maintenance.Member{Name: "e-2", ID: 3})),
			want: none(maintenance.ReasonUnreachable),
		},
		{
			name:   "nospace: recovery does not wait for a scheduled run",
			policy: with(scheduled, func(p *maintenance.Policy) { p.ScheduledRunDue = false }),
			obs:    noSpace(cluster(leader(clean("e-0", 1)), member("e-1", 2, 60, 50), clean("e-2", 3))),
			want:   defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "nospace: without recovery, auto goes on as usual",
			policy: with(auto, noRecovery),
			obs:    noSpace(cluster(leader(clean("e-0", 1)), member("e-1", 2, 1000, 500), clean("e-2", 3))),
			want:   defrag("e-1", 2, maintenance.ReasonFragmented),
		},
		// Schedule.
		{
			name:   "schedule: not due",
			policy: with(scheduled, func(p *maintenance.Policy) { p.ScheduledRunDue = false }),
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 800, 100), clean("e-2", 3)),
			want:   none(maintenance.ReasonNotDue),
		},
		{
			name:   "schedule: due, exactly 1 MiB to reclaim is enough",
			policy: scheduled,
			obs:    cluster(leader(member("e-0", 1, 60, 50)), member("e-1", 2, 51, 50), clean("e-2", 3)),
			want:   defrag("e-1", 2, maintenance.ReasonScheduled),
		},
		{
			name:   "schedule: due, the leader last",
			policy: scheduled,
			obs:    cluster(leader(member("e-0", 1, 60, 50)), bytes(clean("e-1", 2), 51*mib, 50*mib+1), clean("e-2", 3)),
			want:   defrag("e-0", 1, maintenance.ReasonScheduled),
		},
		{
			name:   "schedule: due and every member defragmented, the run is complete",
			policy: scheduled,
			obs:    cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3)),
			want:   none(maintenance.ReasonRunComplete),
		},
		// Disabled.
		{
			name:   "disabled: nothing, however fragmented",
			policy: disabled,
			obs:    cluster(leader(clean("e-0", 1)), member("e-1", 2, 800, 100), clean("e-2", 3)),
			want:   none(maintenance.ReasonDisabled),
		},
		{
			name:   "disabled: NOSPACE is still recovered from",
			policy: disabled,
			obs:    noSpace(cluster(leader(clean("e-0", 1)), member("e-1", 2, 60, 50), clean("e-2", 3))),
			want:   defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
		},
		{
			name:   "disabled: NOSPACE recovery keeps the history of revision mode too",
			policy: with(keeping(50), func(p *maintenance.Policy) { p.Mode = maintenance.Disabled }),
			obs:    noSpace(cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3))),
			want:   compact(450, maintenance.ReasonNoSpaceCompact),
		},
		{
			name:   "disabled: NOSPACE is left alone when its recovery is disabled too",
			policy: with(disabled, noRecovery),
			obs:    noSpace(cluster(leader(clean("e-0", 1)), clean("e-1", 2), clean("e-2", 3))),
			want:   none(maintenance.ReasonDisabled),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := maintenance.Plan(tc.policy, tc.obs)
			g.Expect(got.Message).NotTo(BeEmpty())
			got.Message = ""
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func none(reason maintenance.Reason) maintenance.Action {
	return maintenance.Action{Kind: maintenance.None, Reason: reason}
}

// noSpaceDefrags are the defragmentations of a NOSPACE recovery of e-2, e-1 and e-0, in
// the order Plan takes them.
var noSpaceDefrags = []maintenance.Action{
	defrag("e-2", 3, maintenance.ReasonNoSpaceDefrag),
	defrag("e-1", 2, maintenance.ReasonNoSpaceDefrag),
	defrag("e-0", 1, maintenance.ReasonNoSpaceDefrag),
}

func defrag(name string, id uint64, reason maintenance.Reason) maintenance.Action {
	return maintenance.Action{Kind: maintenance.Defragment, Member: name, MemberID: id, Reason: reason}
}

func compact(revision int64, reason maintenance.Reason) maintenance.Action {
	return maintenance.Action{Kind: maintenance.Compact, Revision: revision, Reason: reason}
}

func TestPlanMessages(t *testing.T) {
	g := NewWithT(t)
	a := maintenance.Plan(auto, cluster(leader(clean("e-0", 1)), member("e-1", 2, 400, 200), clean("e-2", 3)))
	g.Expect(a.Message).To(Equal("defragmenting member e-1: 50 % fragmented, 200.0 MiB of 400.0 MiB to reclaim"))

	a = maintenance.Plan(auto, withAlarm(cluster(leader(clean("e-0", 1)), clean("e-1", 2)), 0xabc, etcd.AlarmCorrupt))
	g.Expect(a.Message).To(HavePrefix("a CORRUPT alarm is raised on member abc:"))

	a = maintenance.Plan(auto, cluster(leader(clean("e-0", 1)), clean("e-1", 2), maintenance.Member{Name: "e-2", ID: 3, Reachable: true}))
	g.Expect(a.Message).To(Equal("member e-2 is not healthy: maintenance waits"))

	a = maintenance.Plan(keeping(100), noSpace(compactedTo(0, cluster(leader(clean("e-0", 1)), clean("e-1", 2)))))
	g.Expect(a.Message).To(Equal("a NOSPACE alarm is raised: compacting to revision 400, which keeps the last 100 revisions of the history"))

	// The member with the least in use is named, whatever its name.
	a = maintenance.Plan(auto, noSpace(cluster(leader(member("e-0", 1, 1000, 800)), member("e-1", 2, 1000, 760), member("e-2", 3, 1000, 850))))
	g.Expect(a.Message).To(Equal("a NOSPACE alarm is raised: compacting to revision 500, which drops the history: " +
		"member e-1, the one with the least data in use, has 760.0 MiB in use, at or above 75 % of the quota of 1000.0 MiB: " +
		"the history does not fit"))

	a = maintenance.Plan(auto, noSpace(cluster(leader(member("e-0", 1, 950, 0)), clean("e-1", 2))))
	g.Expect(a.Message).To(Equal("a NOSPACE alarm is raised: compacting to revision 500, which drops the history: " +
		"every member is defragmented and member e-0 still holds 950.0 MiB, at or above 90 % of the quota of 1000.0 MiB"))
}

func compactedTo(revision int64, o maintenance.Observed) maintenance.Observed {
	o.CompactedRevision = revision
	return o
}

// recovery carries out every action Plan returns on o, as the controller would, until
// Plan has nothing left to do, and returns the actions without their messages. A
// compaction to a revision takes freed[revision] MiB (the history it drops) off the size
// in use of the member that serves it, or of every member when served is zero; the other
// members go on counting those pages as in use, as etcd does until a write commits, and a
// defragmentation drops them with the rest of the member's free pages. A disarm clears the
// alarms.
func recovery(g Gomega, p maintenance.Policy, o maintenance.Observed, freed map[int64]int64, served uint64) []maintenance.Action {
	o.Members = append([]maintenance.Member(nil), o.Members...)
	stale := map[uint64]int64{} // the pages a member counts as in use that a compaction freed
	var steps []maintenance.Action
	for range 12 {
		a := maintenance.Plan(p, o)
		g.Expect(a.Message).NotTo(BeEmpty())
		a.Message = ""
		steps = append(steps, a)
		switch a.Kind {
		case maintenance.Compact:
			o.CompactedRevision = a.Revision
			for i, m := range o.Members {
				switch {
				case m.DBSizeInUse == 0:
				case served == 0 || m.ID == served:
					o.Members[i].DBSizeInUse -= freed[a.Revision] * mib
				default:
					stale[m.ID] += freed[a.Revision] * mib
				}
			}
		case maintenance.Defragment:
			for i, m := range o.Members {
				if m.ID == a.MemberID {
					o.Members[i].DBSizeInUse -= stale[m.ID]
					o.Members[i].DBSize, stale[m.ID] = o.Members[i].DBSizeInUse, 0
				}
			}
		case maintenance.Disarm:
			o.Alarms = nil
		default:
			return steps
		}
	}
	return steps
}

// TestPlanNoSpaceRecovery follows clusters in NOSPACE through the whole recovery: the
// history etcd's auto-compaction keeps is kept when it fits, and dropped when it does not.
func TestPlanNoSpaceRecovery(t *testing.T) {
	// Three members whose files are at the quota, with in MiB in use each (e-0 the leader).
	full := func(e0, e1, e2 int64) maintenance.Observed {
		return noSpace(compactedTo(0, cluster(leader(member("e-0", 1, 1000, e0)), member("e-1", 2, 1000, e1), member("e-2", 3, 1000, e2))))
	}
	disarm := maintenance.Action{Kind: maintenance.Disarm, Reason: maintenance.ReasonNoSpaceDisarm}
	cases := []struct {
		name   string
		policy maintenance.Policy
		obs    maintenance.Observed
		freed  map[int64]int64
		served uint64
		want   []maintenance.Action
	}{
		{
			name:   "periodic, the data fits: no compaction, every member defragmented, the leader last, then disarmed",
			policy: auto,
			obs:    full(300, 400, 200),
			want: slices.Concat(noSpaceDefrags, []maintenance.Action{
				disarm,
				none(maintenance.ReasonBelowThresholds),
			}),
		},
		{
			name:   "periodic, in use at the trigger: compacted to the current revision, then defragmented and disarmed",
			policy: auto,
			obs:    full(800, 850, 820),
			freed:  map[int64]int64{500: 300},
			want: slices.Concat([]maintenance.Action{
				compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
			}, noSpaceDefrags, []maintenance.Action{
				disarm,
				none(maintenance.ReasonBelowThresholds),
			}),
		},
		{
			name:   "revision, the history fits once compacted to the retention: kept, then defragmented and disarmed",
			policy: keeping(100),
			obs:    full(800, 850, 820),
			freed:  map[int64]int64{400: 300},
			want: slices.Concat([]maintenance.Action{
				compact(400, maintenance.ReasonNoSpaceCompact),
			}, noSpaceDefrags, []maintenance.Action{
				disarm,
				none(maintenance.ReasonBelowThresholds),
			}),
		},
		{
			name:   "revision, the history fits though only the member that served the compaction says so: kept",
			policy: keeping(100),
			obs:    full(800, 850, 820),
			freed:  map[int64]int64{400: 300},
			served: 1,
			want: slices.Concat([]maintenance.Action{
				compact(400, maintenance.ReasonNoSpaceCompact),
			}, noSpaceDefrags, []maintenance.Action{
				disarm,
				none(maintenance.ReasonBelowThresholds),
			}),
		},
		{
			name:   "revision, in use still at the trigger once compacted to the retention: the history goes",
			policy: keeping(100),
			obs:    full(800, 850, 820),
			freed:  map[int64]int64{400: 20, 500: 300},
			want: slices.Concat([]maintenance.Action{
				compact(400, maintenance.ReasonNoSpaceCompact),
				compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
			}, noSpaceDefrags, []maintenance.Action{
				disarm,
				none(maintenance.ReasonBelowThresholds),
			}),
		},
		{
			name:   "revision, the history goes and the data still does not fit",
			policy: keeping(100),
			obs:    full(800, 950, 820),
			freed:  map[int64]int64{400: 10, 500: 10},
			want: slices.Concat([]maintenance.Action{
				compact(400, maintenance.ReasonNoSpaceCompact),
				compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
			}, noSpaceDefrags, []maintenance.Action{
				{Kind: maintenance.CannotRecover, Reason: maintenance.ReasonNoSpaceDoesNotFit},
			}),
		},
		{
			name:   "sizes in use not reported: compacted to the current revision, then the data does not fit",
			policy: keeping(100),
			obs:    full(0, 0, 0),
			want: []maintenance.Action{
				compact(400, maintenance.ReasonNoSpaceCompact),
				compact(500, maintenance.ReasonNoSpaceHistoryDoesNotFit),
				{Kind: maintenance.CannotRecover, Reason: maintenance.ReasonNoSpaceDoesNotFit},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(recovery(g, tc.policy, tc.obs, tc.freed, tc.served)).To(Equal(tc.want))
		})
	}
}

func TestPlanNoSpaceDoesNotFit(t *testing.T) {
	// Every member defragmented: less than 1 MiB to reclaim each.
	defragmented := func(name string, id uint64, size int64) maintenance.Member {
		return bytes(clean(name, id), size, size-mib+1)
	}
	cases := []struct {
		name    string
		biggest int64
		want    maintenance.Kind
	}{
		{name: "exactly 90 % of the quota does not fit", biggest: 900 * mib, want: maintenance.CannotRecover},
		{name: "above 90 % does not fit", biggest: 999 * mib, want: maintenance.CannotRecover},
		{name: "a byte under 90 % is disarmed", biggest: 900*mib - 1, want: maintenance.Disarm},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := noSpace(cluster(leader(defragmented("e-0", 1, 500*mib)), defragmented("e-1", 2, tc.biggest), defragmented("e-2", 3, 500*mib)))
			o.CompactedRevision = o.Revision
			a := maintenance.Plan(auto, o)
			g.Expect(a.Kind).To(Equal(tc.want))
			g.Expect(a.Member).To(BeEmpty())
			if tc.want == maintenance.CannotRecover {
				g.Expect(a.Reason).To(Equal(maintenance.ReasonNoSpaceDoesNotFit))
				g.Expect(a.Message).To(ContainSubstring("member e-1"))
				g.Expect(a.Message).To(ContainSubstring("the data does not fit"))
			}
		})
	}
}

func TestFragmentationPercent(t *testing.T) {
	cases := []struct {
		size, inUse int64
		want        int32
	}{
		{size: 0, inUse: 0, want: 0},
		{size: 100, inUse: 0, want: 0},
		{size: 100, inUse: 100, want: 0},
		{size: 100, inUse: 120, want: 0},
		{size: 100, inUse: 55, want: 45},
		{size: 3, inUse: 1, want: 66},
		{size: 1000, inUse: 551, want: 44},
	}
	for _, tc := range cases {
		g := NewWithT(t)
		g.Expect(maintenance.FragmentationPercent(tc.size, tc.inUse)).To(Equal(tc.want), "%d of %d", tc.inUse, tc.size)
	}
}

// TestPlanProperties checks, over generated observations, what must hold whatever the
// figures: Plan never acts under a CORRUPT alarm, never picks a learner or a member that did
// not answer, never picks the leader while a follower is due, and does not depend on the
// order of the members.
func TestPlanProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(17, 45))
	seen := map[string]int{}
	for i := range 20000 {
		p, o := generate(r)
		a := maintenance.Plan(p, o)
		seen[string(a.Kind)]++
		seen[string(a.Reason)]++

		shuffled := o
		shuffled.Members = append([]maintenance.Member(nil), o.Members...)
		r.Shuffle(len(shuffled.Members), func(i, j int) {
			shuffled.Members[i], shuffled.Members[j] = shuffled.Members[j], shuffled.Members[i]
		})
		g.Expect(maintenance.Plan(p, shuffled)).To(Equal(a), "case %d: the order of the members changed the action", i)

		if corrupt(o) {
			g.Expect(a.Kind).To(Equal(maintenance.None), "case %d: acted under a CORRUPT alarm: %+v", i, a)
		}
		if a.Kind == maintenance.Compact {
			// A compaction goes past what is known compacted, never past the current
			// revision, and keeps the retention unless the history does not fit.
			g.Expect(a.Revision).To(BeNumerically(">", o.CompactedRevision), "case %d: %+v", i, a)
			g.Expect(a.Revision).To(BeNumerically("<=", o.Revision), "case %d: %+v", i, a)
			if a.Reason == maintenance.ReasonNoSpaceCompact {
				g.Expect(a.Revision).To(Equal(o.Revision-p.HistoryRevisions), "case %d: %+v", i, a)
			} else {
				g.Expect(a.Reason).To(Equal(maintenance.ReasonNoSpaceHistoryDoesNotFit), "case %d: %+v", i, a)
				g.Expect(a.Revision).To(Equal(o.Revision), "case %d: %+v", i, a)
			}
		}
		if a.Kind != maintenance.Defragment {
			continue
		}
		target, ok := find(o.Members, a.MemberID)
		g.Expect(ok).To(BeTrue(), "case %d: defragments an unknown member", i)
		g.Expect(target.Name).To(Equal(a.Member))
		g.Expect(target.Learner).To(BeFalse(), "case %d: defragments a learner", i)
		g.Expect(target.Reachable).To(BeTrue(), "case %d: defragments a member that did not answer", i)
		if target.Leader {
			seen["leader"]++
			// With nothing left to reclaim on the leader, no follower may be due.
			o.Members = append([]maintenance.Member(nil), o.Members...)
			for j := range o.Members {
				if o.Members[j].Leader {
					o.Members[j].DBSizeInUse = o.Members[j].DBSize
				}
			}
			g.Expect(maintenance.Plan(p, o).Kind).NotTo(Equal(maintenance.Defragment),
				"case %d: the leader was picked while a follower was due", i)
		}
	}
	// The generated cases reach every kind of action, and the leader.
	for _, k := range []string{"None", "Compact", "Defragment", "Disarm", "CannotRecover", "leader",
		"CorruptAlarm", "QuotaPressure", "QuotaRaiseDue", "Fragmented", "Scheduled", "RunComplete",
		"NoSpaceCompact", "NoSpaceHistoryDoesNotFit"} {
		g.Expect(seen[k]).To(BeNumerically(">", 0), "no generated case gave %s", k)
	}
}

func generate(r *rand.Rand) (maintenance.Policy, maintenance.Observed) {
	modes := []maintenance.Mode{maintenance.Auto, maintenance.Schedule, maintenance.Disabled}
	p := maintenance.Policy{
		Mode:               modes[r.IntN(len(modes))],
		QuotaBytes:         quota,
		ScheduledRunDue:    r.IntN(2) == 0,
		RecoverFromNoSpace: r.IntN(4) != 0,
		QuotaAutoscaled:    r.IntN(2) == 0,
	}
	var o maintenance.Observed
	n := 1 + r.IntN(5)
	leaderAt := r.IntN(n + 1) // n: no leader known
	names := r.Perm(n)
	for i := range n {
		size := r.Int64N(quota + quota/10)
		if r.IntN(3) == 0 {
			size = 500 * mib // the same figures now and then: ties
		}
		m := maintenance.Member{
			Name:      string(rune('a' + names[i])),
			ID:        uint64(i + 1),
			Learner:   r.IntN(8) == 0,
			Leader:    i == leaderAt,
			Reachable: r.IntN(10) != 0,
			Healthy:   r.IntN(10) != 0,
		}
		if m.Reachable {
			m.DBSize = size
			m.DBSizeInUse = size - r.Int64N(size/2+1)
			switch r.IntN(4) {
			case 0:
				m.DBSizeInUse = size - r.Int64N(3*mib)
			case 1:
				m.DBSizeInUse = size / 2
			}
		}
		if m.Learner {
			m.Leader = false
		} else {
			o.Size++
		}
		o.Members = append(o.Members, m)
	}
	if r.IntN(5) == 0 {
		o.Size = 1 + r.IntN(5)
	}
	o.Alarms = map[uint64][]string{}
	if r.IntN(3) == 0 {
		id := uint64(1 + r.IntN(n))
		o.Alarms[id] = append(o.Alarms[id], etcd.AlarmNoSpace)
	}
	if r.IntN(10) == 0 {
		id := uint64(1 + r.IntN(n+1))
		o.Alarms[id] = append(o.Alarms[id], etcd.AlarmCorrupt)
	}
	o.Revision = r.Int64N(1000)
	o.CompactedRevision = r.Int64N(1000)
	if r.IntN(2) == 0 {
		p.HistoryRevisions = r.Int64N(1200) // now and then more than the revisions there are
	}
	return p, o
}

func corrupt(o maintenance.Observed) bool {
	for _, raised := range o.Alarms {
		for _, a := range raised {
			if a == etcd.AlarmCorrupt {
				return true
			}
		}
	}
	return false
}

func find(ms []maintenance.Member, id uint64) (maintenance.Member, bool) {
	for _, m := range ms {
		if m.ID == id {
			return m, true
		}
	}
	return maintenance.Member{}, false
}

// A request defragments each requested member not defragmented since its time, in any mode
// and whatever the thresholds, followers first; a member defragmented since is done, and so
// is the request once none is left. It waits, like every step, for a healthy cluster; NOSPACE
// recovery goes first; an unreadable request stops everything but that recovery.
func TestPlanRequest(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	since := func(m maintenance.Member, d time.Duration) maintenance.Member {
		m.LastDefragmented = at.Add(d)
		return m
	}
	o := cluster(leader(clean("a", 1)), recent(clean("b", 2)), clean("c", 3))
	for _, mode := range []maintenance.Mode{maintenance.Auto, maintenance.Schedule, maintenance.Disabled} {
		p := with(auto, func(p *maintenance.Policy) { p.Mode, p.Request = mode, &maintenance.Request{At: at} })
		g.Expect(maintenance.Plan(p, o)).To(Equal(defragReq("b", 2, at)), "%s: nothing to reclaim, just defragmented: due all the same", mode)
	}
	p := with(auto, func(p *maintenance.Policy) { p.Request = &maintenance.Request{At: at} })
	g.Expect(maintenance.Plan(p, cluster(leader(clean("a", 1)), since(clean("b", 2), 0), clean("c", 3)))).To(Equal(defragReq("c", 3, at)),
		"b defragmented at the request's time")
	g.Expect(maintenance.Plan(p, cluster(leader(clean("a", 1)), since(clean("b", 2), time.Second), since(clean("c", 3), time.Minute)))).
		To(Equal(defragReq("a", 1, at)), "the leader last")
	done := cluster(since(leader(clean("a", 1)), time.Second), since(clean("b", 2), time.Second), since(clean("c", 3), time.Minute))
	g.Expect(maintenance.Plan(p, done).Reason).To(Equal(maintenance.ReasonBelowThresholds), "done: the mode's own plan")

	named := with(p, func(p *maintenance.Policy) { p.Request = &maintenance.Request{At: at, Members: []string{"a"}} })
	g.Expect(maintenance.Plan(named, o)).To(Equal(defragReq("a", 1, at)), "only the member named")

	unhealthy := clean("c", 3)
	unhealthy.Healthy = false
	g.Expect(maintenance.Plan(p, cluster(leader(clean("a", 1)), clean("b", 2), unhealthy)).Reason).To(Equal(maintenance.ReasonUnhealthy))
	g.Expect(maintenance.Plan(p, noSpace(o)).Reason).NotTo(Equal(maintenance.ReasonRequested), "NOSPACE recovery first")

	bad := with(auto, func(p *maintenance.Policy) { p.RequestError = "annotation ... is not a time" })
	g.Expect(maintenance.Plan(bad, cluster(leader(member("a", 1, 100, 10)), clean("b", 2)))).
		To(Equal(maintenance.Action{Kind: maintenance.None, Reason: maintenance.ReasonRequestInvalid, Message: "annotation ... is not a time"}),
			"a fragmented member waits too: nothing is done on a request that cannot be read")

	g.Expect(maintenance.Defragmenting(p, o)).To(Equal(map[string]bool{"a": true, "b": true, "c": true}), "the whole request, each member once")
}

func defragReq(name string, id uint64, at time.Time) maintenance.Action {
	return maintenance.Action{Kind: maintenance.Defragment, Member: name, MemberID: id, Reason: maintenance.ReasonRequested,
		Message: fmt.Sprintf("defragmenting member %s as requested at %s: 0 %% fragmented, 0.0 MiB of 50.0 MiB to reclaim", name, at.Format(time.RFC3339))}
}
