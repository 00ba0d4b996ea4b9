package autoscale_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/autoscale"
)

const (
	mib = autoscale.MiB
	gib = autoscale.GiB
)

// base is the policy of most cases: the default 2 GiB quota on 10 GiB volumes, which take a
// quota of up to 4352 MiB, expandable up to 20 GiB.
var base = autoscale.Policy{QuotaBytes: 2 * gib, VolumeBytes: 10 * gib, MaxVolumeBytes: 20 * gib, VolumeExpandable: true}

func with(p autoscale.Policy, change func(*autoscale.Policy)) autoscale.Policy {
	change(&p)
	return p
}

// small is the API's default volume of 4 GiB, too small for more than 1536 MiB of quota (in
// QuotaStep), with the quota q.
func small(q int64) autoscale.Policy {
	return with(base, func(p *autoscale.Policy) { p.QuotaBytes, p.VolumeBytes = q, 4*gib })
}

func TestPlan(t *testing.T) {
	cases := []struct {
		name    string
		policy  autoscale.Policy
		used    int64
		trend   float64
		trendOK bool
		want    autoscale.Decision
	}{
		// The threshold.
		{name: "threshold: a byte under 75 % is below", policy: base, used: 1536*mib - 1,
			want: none()},
		{name: "threshold: exactly 75 % raises by half", policy: base, used: 1536 * mib,
			want: raise(3072*mib, autoscale.ReasonNearQuota)},
		{name: "threshold: further past it, the data at half the new quota, rounded up to 64 MiB", policy: base, used: 1800 * mib,
			want: raise(3648*mib, autoscale.ReasonNearQuota)},
		{name: "threshold: the policy's own", policy: with(base, func(p *autoscale.Policy) { p.ThresholdPercent = 50 }), used: 1024 * mib,
			want: raise(3072*mib, autoscale.ReasonNearQuota)},
		{name: "threshold: 100 or more means the default", policy: with(base, func(p *autoscale.Policy) { p.ThresholdPercent = 100 }), used: 1536 * mib,
			want: raise(3072*mib, autoscale.ReasonNearQuota)},
		{name: "threshold: no quota given means etcd's 2 GiB", policy: with(base, func(p *autoscale.Policy) { p.QuotaBytes = 0 }), used: 1536 * mib,
			want: raise(3072*mib, autoscale.ReasonNearQuota)},
		{name: "threshold: past the quota already, the data at half the new quota", policy: base, used: 2200 * mib,
			want: grow(11*gib, autoscale.ReasonNearQuota)},
		{name: "threshold: a negative size is no data", policy: base, used: -1,
			want: none()},

		// The trend.
		{name: "trend: full in exactly FullWithin is due", policy: with(base, func(p *autoscale.Policy) { p.FullWithin = 4 * time.Hour }),
			used: 1024 * mib, trend: float64(256 * mib), trendOK: true,
			want: raise(3072*mib, autoscale.ReasonFullSoon)},
		{name: "trend: full a little after FullWithin is not", policy: with(base, func(p *autoscale.Policy) { p.FullWithin = 4 * time.Hour }),
			used: 1024 * mib, trend: float64(255 * mib), trendOK: true,
			want: none()},
		{name: "trend: the new quota lasts twice FullWithin (6 hours by default)", policy: base,
			used: 1024 * mib, trend: float64(200 * mib), trendOK: true,
			want: raise(3456*mib, autoscale.ReasonFullSoon)},
		{name: "trend: a trend that is not ok is ignored", policy: base, used: 1024 * mib, trend: 1e12,
			want: none()},
		{name: "trend: shrinking is no trend", policy: base, used: 1024 * mib, trend: -1e12, trendOK: true,
			want: none()},
		{name: "trend: not a number is no trend", policy: base, used: 1024 * mib, trend: math.NaN(), trendOK: true,
			want: none()},
		{name: "trend: an infinite trend is no trend", policy: base, used: 1024 * mib, trend: math.Inf(1), trendOK: true,
			want: none()},
		{name: "trend: a wild trend asks for the ceiling, on volumes grown for it", policy: base, used: 1024 * mib, trend: 1e18, trendOK: true,
			want: grow(19*gib, autoscale.ReasonFullSoon)},
		{name: "trend: the threshold is the reason when both are due", policy: base, used: 1536 * mib, trend: float64(100 * mib), trendOK: true,
			want: raise(3072*mib, autoscale.ReasonNearQuota)},

		// The quota ceiling.
		{name: "quota ceiling: the raise stops at it", policy: with(base, func(p *autoscale.Policy) { p.MaxQuotaBytes = 2560 * mib }), used: 1600 * mib,
			want: raise(2560*mib, autoscale.ReasonNearQuota)},
		{name: "quota ceiling: reached", policy: with(base, func(p *autoscale.Policy) { p.MaxQuotaBytes = 2 * gib }), used: 1600 * mib,
			want: ceiling(autoscale.ReasonQuotaCeiling)},
		{name: "quota ceiling: a quota above it is never lowered", policy: with(base, func(p *autoscale.Policy) { p.QuotaBytes, p.MaxQuotaBytes = 3*gib, 2*gib }),
			used: 2400 * mib, want: ceiling(autoscale.ReasonQuotaCeiling)},
		{name: "quota ceiling: not past etcd's 8 GiB, whatever the ceiling says", policy: autoscale.Policy{QuotaBytes: 6 * gib, MaxQuotaBytes: 16 * gib, VolumeBytes: 20 * gib},
			used: 5 * gib, want: raise(8*gib, autoscale.ReasonNearQuota)},
		{name: "quota ceiling: at etcd's 8 GiB", policy: autoscale.Policy{QuotaBytes: 8 * gib, VolumeBytes: 20 * gib, MaxVolumeBytes: 40 * gib, VolumeExpandable: true},
			used: 7 * gib, want: ceiling(autoscale.ReasonQuotaCeiling)},
		{name: "quota ceiling: below the threshold, nothing to say", policy: with(base, func(p *autoscale.Policy) { p.MaxQuotaBytes = 2 * gib }), used: gib,
			want: none()},

		// The volumes.
		{name: "volume: too small for the next quota, grown first, to a whole GiB", policy: small(2 * gib), used: 1600 * mib,
			want: grow(8*gib, autoscale.ReasonNearQuota)},
		{name: "volume: once grown, the quota rises", policy: with(small(2*gib), func(p *autoscale.Policy) { p.VolumeBytes = 8 * gib }), used: 1600 * mib,
			want: raise(3200*mib, autoscale.ReasonNearQuota)},
		{name: "volume: grown to the ceiling when that is enough", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 7680 * mib }), used: 1600 * mib,
			want: grow(7680*mib, autoscale.ReasonNearQuota)},
		{name: "volume: grown to the ceiling when that is not enough but lets the quota rise", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 6 * gib }), used: 1600 * mib,
			want: grow(6*gib, autoscale.ReasonNearQuota)},
		{name: "volume: at the ceiling, the quota rises as far as the volumes allow", policy: with(small(2*gib), func(p *autoscale.Policy) { p.VolumeBytes, p.MaxVolumeBytes = 6*gib, 6*gib }), used: 1600 * mib,
			want: raise(2496*mib, autoscale.ReasonNearQuota)},
		{name: "volume: not expandable, the quota rises as far as the volumes allow", policy: with(small(gib), func(p *autoscale.Policy) { p.VolumeExpandable = false }), used: 800 * mib,
			want: raise(1536*mib, autoscale.ReasonNearQuota)},
		{name: "volume: a growth that lets the quota rise no further is not made", policy: with(small(gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 4097 * mib }), used: 800 * mib,
			want: raise(1536*mib, autoscale.ReasonNearQuota)},
		{name: "volume: not expandable, with a quota that already fills the volumes", policy: with(small(2*gib), func(p *autoscale.Policy) { p.VolumeExpandable = false }), used: 1600 * mib,
			want: ceiling(autoscale.ReasonVolumeNotExpandable)},
		{name: "volume: not expandable is said before the ceiling", policy: with(small(2*gib), func(p *autoscale.Policy) { p.VolumeExpandable, p.MaxVolumeBytes = false, 0 }), used: 1600 * mib,
			want: ceiling(autoscale.ReasonVolumeNotExpandable)},
		{name: "volume: expandable, at the ceiling", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 4 * gib }), used: 1600 * mib,
			want: ceiling(autoscale.ReasonVolumeCeiling)},
		{name: "volume: a ceiling under the volumes means they never grow", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = gib }), used: 1600 * mib,
			want: ceiling(autoscale.ReasonVolumeCeiling)},
		{name: "volume: none (ephemeral storage), the quota alone", policy: autoscale.Policy{QuotaBytes: 2 * gib}, used: 1600 * mib,
			want: raise(3200*mib, autoscale.ReasonNearQuota)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := autoscale.Plan(tc.policy, data(tc.used), tc.trend, tc.trendOK)
			g.Expect(got.Message).NotTo(BeEmpty())
			got.Message = ""
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// data is one member whose database file is used bytes, all in use.
func data(used int64) []autoscale.Member {
	return []autoscale.Member{{Name: "e-0", DBSize: used, DBSizeInUse: used}}
}

func none() autoscale.Decision {
	return autoscale.Decision{Kind: autoscale.None, Reason: autoscale.ReasonBelowThreshold}
}

func raise(to int64, reason autoscale.Reason) autoscale.Decision {
	return autoscale.Decision{Kind: autoscale.RaiseQuota, To: to, Reason: reason}
}

func grow(to int64, reason autoscale.Reason) autoscale.Decision {
	return autoscale.Decision{Kind: autoscale.GrowVolume, To: to, Reason: reason}
}

func ceiling(reason autoscale.Reason) autoscale.Decision {
	return autoscale.Decision{Kind: autoscale.AtCeiling, Reason: reason}
}

func TestPlanMessages(t *testing.T) {
	cases := []struct {
		name    string
		policy  autoscale.Policy
		used    int64
		trend   float64
		trendOK bool
		want    string
	}{
		{name: "below", policy: base, used: gib, trend: float64(10 * mib), trendOK: true,
			want: "the largest database is 1 GiB, 50 % of the 2 GiB quota, growing by 10 MiB an hour " +
				"(full in about 4 days): below the 75 % threshold, and not full within 6 hours"},
		{name: "raise at the threshold", policy: base, used: 1536 * mib,
			want: "raising the quota from 2 GiB to 3 GiB: the largest database is 1.5 GiB, 75 % of the 2 GiB quota"},
		{name: "raise on the trend", policy: base, used: gib, trend: float64(200 * mib), trendOK: true,
			want: "raising the quota from 2 GiB to 3.38 GiB: the largest database is 1 GiB, 50 % of the 2 GiB quota, " +
				"growing by 200 MiB an hour (full in about 5 hours)"},
		{name: "raise to the quota ceiling", policy: with(base, func(p *autoscale.Policy) { p.MaxQuotaBytes = 2560 * mib }), used: 1600 * mib,
			want: "raising the quota from 2 GiB to 2.5 GiB, its ceiling: the largest database is 1.56 GiB, 78 % of the 2 GiB quota"},
		{name: "raise as far as the volumes allow", policy: with(small(gib), func(p *autoscale.Policy) { p.VolumeExpandable = false }), used: 800 * mib,
			want: "raising the quota from 1 GiB to 1.5 GiB, as far as the volumes of 4 GiB allow: " +
				"the largest database is 800 MiB, 78 % of the 1 GiB quota"},
		{name: "grow", policy: small(2 * gib), used: 1600 * mib,
			want: "growing the volumes from 4 GiB to 8 GiB, so that the quota can rise from 2 GiB to 3.13 GiB: " +
				"the largest database is 1.56 GiB, 78 % of the 2 GiB quota"},
		{name: "grow to a ceiling that is not enough", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 6 * gib }), used: 1600 * mib,
			want: "growing the volumes from 4 GiB to 6 GiB, so that the quota can rise from 2 GiB to 2.44 GiB: " +
				"the largest database is 1.56 GiB, 78 % of the 2 GiB quota"},
		{name: "quota ceiling", policy: with(base, func(p *autoscale.Policy) { p.MaxQuotaBytes = 2 * gib }), used: 1600 * mib,
			want: "the quota of 2 GiB has reached its ceiling of 2 GiB, and the largest database is 1.56 GiB, " +
				"78 % of the 2 GiB quota: raise storage.autoscaling.maxQuotaBackendBytes (up to 8 GiB), or delete data"},
		{name: "etcd's maximum", policy: autoscale.Policy{QuotaBytes: 8 * gib, VolumeBytes: 20 * gib}, used: 7 * gib, trend: float64(100 * mib), trendOK: true,
			want: "the quota of 8 GiB is at etcd's recommended maximum of 8 GiB, and the largest database is 7 GiB, " +
				"87 % of the 8 GiB quota, growing by 100 MiB an hour (full in about 10 hours): " +
				"delete data, or keep less history (etcd.autoCompactionRetention)"},
		{name: "not expandable", policy: with(small(2*gib), func(p *autoscale.Policy) { p.VolumeExpandable = false }), used: 1600 * mib,
			want: "the quota of 2 GiB should rise to 3.13 GiB, which needs volumes of 7.5 GiB or more, and the largest database " +
				"is 1.56 GiB, 78 % of the 2 GiB quota, but the StorageClass of the volumes of 4 GiB does not allow " +
				"volume expansion: set allowVolumeExpansion on the class if its provisioner supports it, or delete data"},
		{name: "volume ceiling", policy: with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = 4 * gib }), used: 1600 * mib,
			want: "the quota of 2 GiB should rise to 3.13 GiB, which needs volumes of 7.5 GiB or more, and the largest database " +
				"is 1.56 GiB, 78 % of the 2 GiB quota, but the volumes of 4 GiB are at their ceiling: " +
				"raise storage.autoscaling.maxSize to 8 GiB or more, or delete data"},
		{name: "full in less than an hour", policy: with(base, func(p *autoscale.Policy) { p.VolumeExpandable = false }), used: 1900 * mib, trend: float64(gib), trendOK: true,
			want: "raising the quota from 2 GiB to 4.25 GiB, as far as the volumes of 10 GiB allow: the largest database is " +
				"1.86 GiB, 92 % of the 2 GiB quota, growing by 1 GiB an hour (full in less than an hour)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(autoscale.Plan(tc.policy, data(tc.used), tc.trend, tc.trendOK).Message).To(Equal(tc.want))
		})
	}
}

func TestVolumeRule(t *testing.T) {
	g := NewWithT(t)
	// The default quota of 2 GiB needs 5 GiB: 4 GiB for the file and a copy, 512 MiB for
	// the WAL, within 90 %.
	g.Expect(autoscale.VolumeFor(2 * gib)).To(Equal(5 * gib))
	g.Expect(autoscale.QuotaFitsVolume(2*gib, 5*gib)).To(BeTrue())
	g.Expect(autoscale.QuotaFitsVolume(2*gib, 5*gib-1)).To(BeFalse())
	g.Expect(autoscale.QuotaFitsVolume(2*gib+1, 5*gib)).To(BeFalse())
	g.Expect(autoscale.MaxQuotaFor(5 * gib)).To(Equal(2 * gib))
	// The API's default volume of 4 GiB takes 1587.2 MiB.
	g.Expect(autoscale.MaxQuotaFor(4 * gib)).To(Equal(int64(1664299827)))
	g.Expect(autoscale.QuotaFitsVolume(2*gib, 4*gib)).To(BeFalse())
	// etcd's recommended maximum needs 18773.3 MiB.
	g.Expect(autoscale.VolumeFor(8 * gib)).To(Equal(int64(19685266774)))
	// A volume too small for the WAL alone takes no quota.
	g.Expect(autoscale.MaxQuotaFor(568 * mib)).To(BeZero())
	g.Expect(autoscale.MaxQuotaFor(0)).To(BeZero())
	g.Expect(autoscale.QuotaFitsVolume(0, 569*mib)).To(BeTrue())

	r := rand.New(rand.NewPCG(3, 7))
	for range 10000 {
		q := r.Int64N(16 * gib)
		v := autoscale.VolumeFor(q)
		g.Expect(autoscale.QuotaFitsVolume(q, v)).To(BeTrue(), "quota %d on VolumeFor %d", q, v)
		g.Expect(autoscale.QuotaFitsVolume(q, v-1)).To(BeFalse(), "quota %d on VolumeFor-1 %d", q, v-1)
		g.Expect(q).To(BeNumerically("<", v), "the rule is stricter than the API's quota < volume")

		vol := r.Int64N(64 * gib)
		m := autoscale.MaxQuotaFor(vol)
		if m > 0 {
			g.Expect(autoscale.QuotaFitsVolume(m, vol)).To(BeTrue(), "MaxQuotaFor %d on %d", m, vol)
		}
		g.Expect(autoscale.QuotaFitsVolume(m+1, vol)).To(BeFalse(), "MaxQuotaFor+1 %d on %d", m+1, vol)
	}
}

func TestUsed(t *testing.T) {
	g := NewWithT(t)
	g.Expect(autoscale.Used(autoscale.Member{DBSize: 300 * mib, DBSizeInUse: 100 * mib})).To(Equal(300*mib),
		"the file: its free pages count against the quota too")
	g.Expect(autoscale.Used(autoscale.Member{DBSize: 300 * mib, DBSizeInUse: 100 * mib, Defragmenting: true})).To(Equal(100*mib),
		"what a defragmentation shrinks the file to")
	g.Expect(autoscale.Used(autoscale.Member{DBSize: 300 * mib, Defragmenting: true})).To(Equal(300*mib),
		"the file when the size in use is not reported")
	g.Expect(autoscale.Used(
		autoscale.Member{DBSize: 300 * mib, DBSizeInUse: 100 * mib, Defragmenting: true},
		autoscale.Member{DBSize: 200 * mib, DBSizeInUse: 150 * mib},
	)).To(Equal(200*mib), "the largest")
	g.Expect(autoscale.Used()).To(BeZero())
	g.Expect(autoscale.Used(autoscale.Member{DBSize: -1})).To(BeZero())
}

// The threshold is on the database file, which etcd refuses writes on: a 24 MiB quota,
// whose threshold is 18 MiB, with values of 256 KiB that leave the file well ahead of the
// data in use.
func TestPlanOnTheDatabaseFile(t *testing.T) {
	quota := autoscale.Policy{QuotaBytes: 24 * mib}
	member := func(name string, file, inUse int64, defragmenting bool) autoscale.Member {
		return autoscale.Member{Name: name, DBSize: file * mib, DBSizeInUse: inUse * mib, Defragmenting: defragmenting}
	}
	cases := []struct {
		name    string
		members []autoscale.Member
		want    autoscale.Decision
	}{
		{name: "file at the threshold, in use well below, no defragmentation to come: raised",
			members: []autoscale.Member{member("e-0", 20, 12, false)},
			want:    raise(64*mib, autoscale.ReasonNearQuota)},
		{name: "file at the threshold, in use well below, defragmenting: the quota waits",
			members: []autoscale.Member{member("e-0", 20, 12, true)},
			want:    autoscale.Decision{Kind: autoscale.None, Reason: autoscale.ReasonDefragmentationPending}},
		{name: "defragmenting, in use at the threshold: raised",
			members: []autoscale.Member{member("e-0", 20, 18, true)},
			want:    raise(64*mib, autoscale.ReasonNearQuota)},
		{name: "defragmenting, the file below the threshold: nothing to wait for",
			members: []autoscale.Member{member("e-0", 17, 12, true)},
			want:    none()},
		{name: "a file a byte under the threshold: below",
			members: []autoscale.Member{{Name: "e-0", DBSize: 18*mib - 1, DBSizeInUse: 12 * mib}},
			want:    none()},
		{name: "one member defragmenting, another at the threshold with none to come: raised",
			members: []autoscale.Member{member("e-0", 20, 12, true), member("e-1", 18, 12, false)},
			want:    raise(64*mib, autoscale.ReasonNearQuota)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := autoscale.Plan(quota, tc.members, 0, false)
			g.Expect(got.Message).NotTo(BeEmpty())
			got.Message = ""
			g.Expect(got).To(Equal(tc.want))
		})
	}

	g := NewWithT(t)
	d := autoscale.Plan(quota, []autoscale.Member{member("e-0", 19, 12, true), member("e-2", 20, 13, true), member("e-1", 20, 11, true)}, 0, false)
	g.Expect(d.Message).To(Equal("member e-1's database file is 20 MiB, 83 % of the 24 MiB quota, past the 75 % threshold: "+
		"maintenance defragments it down to the 11 MiB in use first, and the quota rises only if that is not enough"),
		"the largest file, the first name of a tie")
}

// TestPlanProperties checks, over generated policies and figures, what must hold whatever
// they are: a decision never lowers the quota or the volumes, never passes a ceiling, sets
// only a quota that fits the volumes in force, grows only expandable volumes (and then the
// next pass raises the quota), acts whenever the data is due and only then, and settles
// within two steps.
func TestPlanProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(17, 45))
	seen := map[string]int{}
	for i := range 20000 {
		p, members, trend, ok := generate(r)
		d := autoscale.Plan(p, members, trend, ok)
		seen[string(d.Kind)]++
		seen[string(d.Reason)]++
		e := effective(p)
		g.Expect(d.Message).NotTo(BeEmpty(), "case %d", i)

		used := usedOf(members)
		due := isDue(e, used, trend, ok)
		g.Expect(d.Kind == autoscale.None).To(Equal(!due), "case %d: due %v, decided %+v for %+v, members %+v, trend %v %v", i, due, d, p, members, trend, ok)

		switch d.Kind {
		case autoscale.None:
			g.Expect(d.To).To(BeZero())
			if awaited(e, members) {
				g.Expect(d.Reason).To(Equal(autoscale.ReasonDefragmentationPending), "case %d", i)
			} else {
				g.Expect(d.Reason).To(Equal(autoscale.ReasonBelowThreshold), "case %d", i)
			}
		case autoscale.RaiseQuota:
			checkRaise(g, i, e, d)
		case autoscale.GrowVolume:
			g.Expect(d.Reason).To(BeElementOf(autoscale.ReasonNearQuota, autoscale.ReasonFullSoon))
			g.Expect(e.VolumeExpandable).To(BeTrue(), "case %d: grows a volume that cannot expand", i)
			g.Expect(e.VolumeBytes).To(BeNumerically(">", 0), "case %d: grows no volume", i)
			g.Expect(d.To).To(BeNumerically(">", e.VolumeBytes), "case %d: does not grow", i)
			g.Expect(d.To).To(BeNumerically("<=", e.MaxVolumeBytes), "case %d: past the volume ceiling", i)
			// The next pass, on the grown volumes, raises the quota.
			grown := with(p, func(p *autoscale.Policy) { p.VolumeBytes = d.To })
			next := autoscale.Plan(grown, members, trend, ok)
			g.Expect(next.Kind).To(Equal(autoscale.RaiseQuota), "case %d: grew to %d, then %+v", i, d.To, next)
			checkRaise(g, i, effective(grown), next)
		case autoscale.AtCeiling:
			g.Expect(d.To).To(BeZero())
			switch d.Reason {
			case autoscale.ReasonQuotaCeiling:
				g.Expect(e.QuotaBytes).To(BeNumerically(">=", e.MaxQuotaBytes), "case %d: quota ceiling below it", i)
			case autoscale.ReasonVolumeNotExpandable:
				g.Expect(e.VolumeExpandable).To(BeFalse(), "case %d", i)
			case autoscale.ReasonVolumeCeiling:
				g.Expect(e.VolumeExpandable).To(BeTrue(), "case %d", i)
			default:
				t.Fatalf("case %d: AtCeiling with reason %s", i, d.Reason)
			}
		default:
			t.Fatalf("case %d: kind %s", i, d.Kind)
		}

		// Carried out, the decisions settle within two steps, and never shrink anything.
		q, v := e.QuotaBytes, e.VolumeBytes
		steps := 0
		for d.Kind == autoscale.RaiseQuota || d.Kind == autoscale.GrowVolume {
			steps++
			g.Expect(steps).To(BeNumerically("<=", 2), "case %d: does not settle: %+v", i, d)
			if d.Kind == autoscale.RaiseQuota {
				g.Expect(d.To).To(BeNumerically(">", q))
				p.QuotaBytes, q = d.To, d.To
			} else {
				g.Expect(d.To).To(BeNumerically(">", v))
				p.VolumeBytes, v = d.To, d.To
			}
			d = autoscale.Plan(p, members, trend, ok)
		}
		seen["settled after "+string(rune('0'+steps))]++
	}
	for _, k := range []string{"None", "RaiseQuota", "GrowVolume", "AtCeiling",
		"BelowThreshold", "DefragmentationPending", "NearQuota", "FullSoon", "QuotaCeiling", "VolumeCeiling", "VolumeNotExpandable",
		"settled after 0", "settled after 1", "settled after 2"} {
		g.Expect(seen[k]).To(BeNumerically(">", 0), "no generated case gave %s", k)
	}
}

func checkRaise(g *WithT, i int, e autoscale.Policy, d autoscale.Decision) {
	g.Expect(d.Reason).To(BeElementOf(autoscale.ReasonNearQuota, autoscale.ReasonFullSoon))
	g.Expect(d.To).To(BeNumerically(">", e.QuotaBytes), "case %d: does not raise", i)
	g.Expect(d.To).To(BeNumerically("<=", e.MaxQuotaBytes), "case %d: past the quota ceiling", i)
	g.Expect(d.To).To(BeNumerically("<=", autoscale.EtcdMaxQuotaBytes), "case %d: past etcd's maximum", i)
	if e.VolumeBytes > 0 {
		g.Expect(autoscale.QuotaFitsVolume(d.To, e.VolumeBytes)).To(BeTrue(), "case %d: quota %d does not fit %d", i, d.To, e.VolumeBytes)
	}
}

// effective is the policy with the defaults Plan documents.
func effective(p autoscale.Policy) autoscale.Policy {
	if p.QuotaBytes <= 0 {
		p.QuotaBytes = autoscale.DefaultQuotaBytes
	}
	if p.MaxQuotaBytes <= 0 || p.MaxQuotaBytes > autoscale.EtcdMaxQuotaBytes {
		p.MaxQuotaBytes = autoscale.EtcdMaxQuotaBytes
	}
	p.MaxVolumeBytes = max(p.MaxVolumeBytes, p.VolumeBytes)
	if p.ThresholdPercent < 1 || p.ThresholdPercent > 99 {
		p.ThresholdPercent = autoscale.DefaultThresholdPercent
	}
	if p.FullWithin <= 0 {
		p.FullWithin = autoscale.DefaultFullWithin
	}
	return p
}

// usedOf is Used, computed apart from it: the largest file, the size in use of a member
// defragmenting when it reported one.
func usedOf(members []autoscale.Member) int64 {
	var used int64
	for _, m := range members {
		n := m.DBSize
		if m.Defragmenting && m.DBSizeInUse > 0 {
			n = m.DBSizeInUse
		}
		used = max(used, n)
	}
	return used
}

// awaited says whether a member maintenance defragments has its file at the threshold.
func awaited(e autoscale.Policy, members []autoscale.Member) bool {
	for _, m := range members {
		if m.Defragmenting && m.DBSize*100 >= int64(e.ThresholdPercent)*e.QuotaBytes {
			return true
		}
	}
	return false
}

// isDue is when the package comment says the quota must rise, computed apart from Plan.
func isDue(e autoscale.Policy, used int64, trend float64, ok bool) bool {
	if used*100 >= int64(e.ThresholdPercent)*e.QuotaBytes {
		return true
	}
	if !ok || !(trend > 0) || math.IsInf(trend, 1) {
		return false
	}
	return float64(e.QuotaBytes-used)/trend <= e.FullWithin.Hours()
}

func generate(r *rand.Rand) (autoscale.Policy, []autoscale.Member, float64, bool) {
	pick := func(vs ...int64) int64 { return vs[r.IntN(len(vs))] }
	p := autoscale.Policy{
		QuotaBytes:       pick(0, 24*mib, gib, 2*gib, 3*gib, 8*gib, 16*mib+r.Int64N(8*gib-16*mib)),
		VolumeExpandable: r.IntN(3) != 0,
	}
	p.MaxQuotaBytes = pick(0, 16*gib, p.QuotaBytes, 16*mib+r.Int64N(8*gib-16*mib))
	p.VolumeBytes = pick(0, 4*gib, 10*gib, autoscale.VolumeFor(p.QuotaBytes), 64*mib+r.Int64N(40*gib))
	p.MaxVolumeBytes = pick(0, p.VolumeBytes, p.VolumeBytes+r.Int64N(8*gib), p.VolumeBytes+r.Int64N(64*gib))
	p.ThresholdPercent = int32(pick(0, 75, 50, 1+r.Int64N(99), 150))
	p.FullWithin = time.Duration(pick(0, int64(time.Hour), r.Int64N(int64(24*time.Hour))))
	e := effective(p)
	members := make([]autoscale.Member, 1+r.IntN(3))
	for j := range members {
		file := r.Int64N(e.QuotaBytes + e.QuotaBytes/4)
		if r.IntN(5) == 0 {
			file = int64(e.ThresholdPercent) * e.QuotaBytes / 100 // at the threshold, or a byte under
		}
		m := autoscale.Member{Name: string(rune('a' + j)), DBSize: file, DBSizeInUse: file - r.Int64N(file/2+1), Defragmenting: r.IntN(3) == 0}
		if r.IntN(8) == 0 {
			m.DBSizeInUse = 0
		}
		members[j] = m
	}
	var trend float64
	ok := r.IntN(3) != 0
	switch r.IntN(5) {
	case 0:
		trend = -r.Float64() * float64(gib)
	case 1:
		trend = r.Float64() * 1e15
	default:
		trend = r.Float64() * float64(gib)
	}
	return p, members, trend, ok
}

// TestPlanGrowingCluster follows a cluster whose data grows by 100 MiB an hour for 80
// hours, the operator passing every minute and carrying out each decision at once: the
// volumes grow before the quota needs them, the quota stays ahead of the data until etcd's
// maximum, each raise comes at least FullWithin after the one before, and the ceiling is
// reported before the data reaches the quota.
func TestPlanGrowingCluster(t *testing.T) {
	g := NewWithT(t)
	p := autoscale.Policy{QuotaBytes: 2 * gib, VolumeBytes: 4 * gib, MaxVolumeBytes: 40 * gib, VolumeExpandable: true}
	h := autoscale.NewHistory()
	start := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var raises, grows []time.Time
	var ceilingAt time.Time
	for minute := range 80 * 60 {
		now := start.Add(time.Duration(minute) * time.Minute)
		used := 500*mib + int64(float64(100*mib)*now.Sub(start).Hours())
		h.Add(autoscale.Sample{At: now, Bytes: used})
		trend, ok := autoscale.Trend(h.Samples())
		d := autoscale.Plan(p, data(used), trend, ok)
		switch d.Kind {
		case autoscale.RaiseQuota:
			g.Expect(autoscale.QuotaFitsVolume(d.To, p.VolumeBytes)).To(BeTrue())
			p.QuotaBytes = d.To
			raises = append(raises, now)
		case autoscale.GrowVolume:
			p.VolumeBytes = d.To
			grows = append(grows, now)
		case autoscale.AtCeiling:
			if ceilingAt.IsZero() {
				ceilingAt = now
				g.Expect(d.Reason).To(Equal(autoscale.ReasonQuotaCeiling))
			}
		}
		if used >= p.QuotaBytes {
			g.Expect(ceilingAt.IsZero()).To(BeFalse(), "at %s the data reached the quota unannounced", now.Sub(start))
			g.Expect(now.Sub(ceilingAt)).To(BeNumerically(">=", autoscale.DefaultFullWithin),
				"the ceiling was announced only %s before", now.Sub(ceilingAt))
			break
		}
	}
	g.Expect(p.QuotaBytes).To(Equal(autoscale.EtcdMaxQuotaBytes))
	g.Expect(autoscale.QuotaFitsVolume(p.QuotaBytes, p.VolumeBytes)).To(BeTrue())
	g.Expect(len(raises)).To(BeNumerically(">=", 2))
	for i := 1; i < len(raises); i++ {
		g.Expect(raises[i].Sub(raises[i-1])).To(BeNumerically(">=", autoscale.DefaultFullWithin),
			"raise %d only %s after the one before", i, raises[i].Sub(raises[i-1]))
	}
	// Each growth of the volumes is followed by a raise on the next pass.
	for _, at := range grows {
		g.Expect(raises).To(ContainElement(at.Add(time.Minute)))
	}
	g.Expect(ceilingAt.IsZero()).To(BeFalse())
}

// PlanAsking asks whether the volumes can expand only when the answer can change the
// decision, and decides as Plan with the answer.
func TestPlanAsking(t *testing.T) {
	g := NewWithT(t)
	asked := 0
	ask := func(answer bool) func() bool {
		return func() bool { asked++; return answer }
	}
	below := []autoscale.Member{{Name: "m", DBSize: 100 * mib, DBSizeInUse: 100 * mib}}
	near := []autoscale.Member{{Name: "m", DBSize: 1600 * mib, DBSizeInUse: 1600 * mib}}

	d := autoscale.PlanAsking(small(2*gib), below, 0, false, ask(true))
	g.Expect(d.Kind).To(Equal(autoscale.None))
	g.Expect(asked).To(BeZero(), "nothing is due: the class is not read")

	atCeiling := with(small(2*gib), func(p *autoscale.Policy) { p.MaxVolumeBytes = p.VolumeBytes })
	g.Expect(autoscale.PlanAsking(atCeiling, near, 0, false, ask(true))).To(Equal(autoscale.Plan(with(atCeiling, func(p *autoscale.Policy) { p.VolumeExpandable = false }), near, 0, false)))
	g.Expect(asked).To(BeZero(), "the volumes cannot grow: the class does not matter")

	for _, expandable := range []bool{true, false} {
		asked = 0
		want := autoscale.Plan(with(small(2*gib), func(p *autoscale.Policy) { p.VolumeExpandable = expandable }), near, 0, false)
		g.Expect(autoscale.PlanAsking(small(2*gib), near, 0, false, ask(expandable))).To(Equal(want), "expandable %v", expandable)
		g.Expect(asked).To(Equal(1), "asked once")
	}
	grow := autoscale.PlanAsking(small(2*gib), near, 0, false, ask(true))
	g.Expect(grow.Kind).To(Equal(autoscale.GrowVolume))
	stuck := autoscale.PlanAsking(small(2*gib), near, 0, false, ask(false))
	g.Expect(stuck.Reason).To(Equal(autoscale.ReasonVolumeNotExpandable))
}
