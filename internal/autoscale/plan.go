package autoscale

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// Sizes, in bytes.
const (
	MiB int64 = 1 << 20
	GiB int64 = 1 << 30
)

// The defaults of a Policy and the fixed figures of the sizing. The package comment says
// where each comes from.
const (
	// DefaultThresholdPercent is the share of the quota a member's database file may fill
	// before the quota is raised: the warning tier of OpenShift's quota alerts. It is
	// maintenance's quota-pressure trigger too (internal/maintenance.PressurePercent), so
	// that a file at it is defragmented or gets a larger quota.
	DefaultThresholdPercent int32 = 75
	// DefaultFullWithin is how soon the growth trend may reach the quota before the quota is
	// raised: ahead of the etcd mixin's 4-hour growth alert.
	DefaultFullWithin = 6 * time.Hour
	// DefaultQuotaBytes is etcd's own quota when --quota-backend-bytes is not set.
	DefaultQuotaBytes = 2 * GiB
	// EtcdMaxQuotaBytes is the largest quota etcd recommends, and the largest Plan sets
	// whatever the ceiling says.
	EtcdMaxQuotaBytes = 8 * GiB

	// GrowthPercent is the least a raise adds to the quota, in percent of it.
	GrowthPercent = 50
	// RunwayFactor is how many times FullWithin a new quota lasts, at least, at the trend:
	// with 2, the next raise is at least FullWithin away.
	RunwayFactor = 2
	// QuotaStep is what a new quota is rounded up to a multiple of.
	QuotaStep = 64 * MiB

	// VolumeStep is what a new volume size is rounded up to a multiple of.
	VolumeStep = GiB
	// WALReserveBytes is the room a volume keeps for the write-ahead log (5 files of 64 MB,
	// and the next one preallocated), the snapshot files, and a margin.
	WALReserveBytes = 512 * MiB
	// UsablePercent is the share of a volume's size the members can fill: ext4 reserves 5 %
	// of its blocks for root, which the members do not run as, and the file system's
	// metadata takes some more.
	UsablePercent = 90
)

// maxBytes bounds every size Plan computes with (16 PiB, far past any volume), so that its
// integer arithmetic cannot overflow.
const maxBytes int64 = 1 << 54

// Policy is what Plan needs of the cluster's autoscaling settings and of the sizes in force.
// The caller calls Plan only while autoscaling is on.
type Policy struct {
	// QuotaBytes is the quota in force now. Zero or less means DefaultQuotaBytes, as it
	// does to etcd.
	QuotaBytes int64
	// MaxQuotaBytes is the quota ceiling: the highest quota Plan sets. Zero or less, or
	// more than EtcdMaxQuotaBytes, means EtcdMaxQuotaBytes.
	MaxQuotaBytes int64
	// VolumeBytes is the size of the members' volumes now (the smallest member's, when
	// they differ). Zero or less means the members keep their data on no claim (ephemeral
	// storage): the quota is then bounded by its ceiling alone, and no volume is grown.
	VolumeBytes int64
	// MaxVolumeBytes is the volume ceiling: the largest Plan grows the volumes to. At
	// VolumeBytes or less, the volumes never grow.
	MaxVolumeBytes int64
	// VolumeExpandable says that the claims' StorageClass allows volume expansion
	// (allowVolumeExpansion).
	VolumeExpandable bool
	// ThresholdPercent is the share of the quota a member's Used may fill before the quota
	// is raised. Outside 1 to 99 means DefaultThresholdPercent.
	ThresholdPercent int32
	// FullWithin is how soon the trend may reach the quota before the quota is raised.
	// Zero or less means DefaultFullWithin.
	FullWithin time.Duration
}

// Kind is the kind of Decision.
type Kind string

// The kinds of Decision.
const (
	// None: nothing to do; Reason and Message say why.
	None Kind = "None"
	// RaiseQuota: set the quota to To, rolled out one member at a time.
	RaiseQuota Kind = "RaiseQuota"
	// GrowVolume: grow the members' claims to To, one at a time, so that the next pass can
	// raise the quota.
	GrowVolume Kind = "GrowVolume"
	// AtCeiling: the data needs more room and a ceiling stops it; Reason names the ceiling
	// and Message says what the user can do. Nothing is changed.
	AtCeiling Kind = "AtCeiling"
)

// Reason is why Plan decided as it did, fit for a condition's reason.
type Reason string

// The reasons of a Decision. A RaiseQuota or GrowVolume gives what made it due
// (ReasonNearQuota or ReasonFullSoon); an AtCeiling gives the ceiling.
const (
	// ReasonBelowThreshold (None): every member's Used is below the threshold and not
	// growing fast enough to reach the quota within FullWithin.
	ReasonBelowThreshold Reason = "BelowThreshold"
	// ReasonDefragmentationPending (None): a member's database file is at the threshold,
	// and maintenance defragments it down to a size in use below the threshold: the quota
	// waits for that.
	ReasonDefragmentationPending Reason = "DefragmentationPending"
	// ReasonNearQuota: a member's Used is at the threshold of the quota or past it.
	ReasonNearQuota Reason = "NearQuota"
	// ReasonFullSoon: the trend reaches the quota within FullWithin.
	ReasonFullSoon Reason = "FullSoon"
	// ReasonQuotaCeiling (AtCeiling): the quota is at its ceiling, or at etcd's
	// recommended maximum.
	ReasonQuotaCeiling Reason = "QuotaCeiling"
	// ReasonVolumeCeiling (AtCeiling): the next quota does not fit the volumes, and they
	// are at their ceiling.
	ReasonVolumeCeiling Reason = "VolumeCeiling"
	// ReasonVolumeNotExpandable (AtCeiling): the next quota does not fit the volumes, and
	// their StorageClass does not allow expansion.
	ReasonVolumeNotExpandable Reason = "VolumeNotExpandable"
)

// Decision is the one step Plan chose.
type Decision struct {
	Kind Kind
	// To is the new quota of a RaiseQuota, or the new volume size of a GrowVolume, in
	// bytes; zero otherwise.
	To int64
	// Reason and Message say why, for a condition and for events.
	Reason  Reason
	Message string
}

// Member is what Plan weighs of one member's database.
type Member struct {
	// Name names the member in messages.
	Name string
	// DBSize is the size of the member's database file: what etcd holds against the quota,
	// free pages included.
	DBSize int64
	// DBSizeInUse is the part of the file in use; zero or less when the member did not
	// report it.
	DBSizeInUse int64
	// Defragmenting says that maintenance defragments the member in this pass or the next
	// ones (internal/maintenance.Defragmenting), which shrinks its file to the size in use.
	Defragmenting bool
}

// Used is the room the members' databases take against the quota: the largest of their
// files, a member that maintenance is defragmenting counted by the size in use its file
// shrinks to (by its file when it did not report the size in use). Samples and Plan weigh
// it. The file is what etcd refuses writes on (NOSPACE once it reaches the quota), and it
// runs ahead of the data in use by the free pages it holds; only a defragmentation gives
// them back.
func Used(members ...Member) int64 {
	var used int64
	for _, m := range members {
		used = max(used, m.used())
	}
	return used
}

func (m Member) used() int64 {
	if m.Defragmenting && m.DBSizeInUse > 0 {
		return m.DBSizeInUse
	}
	return max(m.DBSize, m.DBSizeInUse, 0)
}

// QuotaFitsVolume says whether a volume of volumeBytes has room for a quota of quotaBytes:
// twice the quota (the database file, and the copy a defragmentation or a snapshot from the
// leader writes next to it) plus WALReserveBytes, within UsablePercent of the volume.
func QuotaFitsVolume(quotaBytes, volumeBytes int64) bool {
	q, v := clamp(quotaBytes), clamp(volumeBytes)
	return (2*q+WALReserveBytes)*100 <= v*UsablePercent
}

// VolumeFor is the smallest volume QuotaFitsVolume accepts for a quota of quotaBytes.
func VolumeFor(quotaBytes int64) int64 {
	need := (2*clamp(quotaBytes) + WALReserveBytes) * 100
	return (need + UsablePercent - 1) / UsablePercent
}

// MaxQuotaFor is the largest quota QuotaFitsVolume accepts on a volume of volumeBytes; 0
// when the volume is too small for any.
func MaxQuotaFor(volumeBytes int64) int64 {
	room := clamp(volumeBytes)*UsablePercent - WALReserveBytes*100
	if room < 0 {
		return 0
	}
	return room / 200
}

// PlanAsking is Plan for a caller that learns whether the volumes can expand only at a
// cost (a read of their StorageClass from the API server): p.VolumeExpandable is taken as
// false, and expandable is asked only when the answer can change the decision, that is
// when a change is due and the volumes may still grow (MaxVolumeBytes above VolumeBytes).
// Whether the class allows expansion then decides between growing the volumes first and
// raising the quota only as far as they allow.
func PlanAsking(p Policy, members []Member, trend float64, trendOK bool, expandable func() bool) Decision {
	p.VolumeExpandable = false
	d := Plan(p, members, trend, trendOK)
	if d.Kind == None || p.MaxVolumeBytes <= p.VolumeBytes {
		return d
	}
	p.VolumeExpandable = expandable()
	return Plan(p, members, trend, trendOK)
}

// Plan returns the one next step of storage autoscaling for the members as they are now
// (their Used), and trend, trendOK the Trend of the History, in bytes an hour (ignored
// unless trendOK and growing). A member whose file is at the threshold while maintenance
// defragments it down to a size in use below the threshold raises nothing: Plan waits
// for the defragmentation (ReasonDefragmentationPending), and raises the quota once the
// file is at the threshold with no defragmentation to come.
func Plan(p Policy, members []Member, trend float64, trendOK bool) Decision {
	p = p.withDefaults()
	u := usage{used: clamp(Used(members...)), quota: p.QuotaBytes}
	if trendOK && trend > 0 && !math.IsInf(trend, 1) {
		u.perHour = trend
	}
	reason, due := p.due(u)
	if !due {
		if m, ok := p.awaited(members); ok {
			return Decision{Kind: None, Reason: ReasonDefragmentationPending, Message: fmt.Sprintf(
				"member %s's database file is %s, %d %% of the %s quota, past the %d %% threshold: maintenance "+
					"defragments it down to the %s in use first, and the quota rises only if that is not enough",
				m.Name, size(clamp(m.DBSize)), percent(clamp(m.DBSize), p.QuotaBytes), size(p.QuotaBytes), p.ThresholdPercent, size(m.DBSizeInUse))}
		}
		return Decision{Kind: None, Reason: ReasonBelowThreshold, Message: fmt.Sprintf(
			"%s: below the %d %% threshold, and not full within %s", p.state(u), p.ThresholdPercent, within(p.FullWithin))}
	}
	want, capped := p.wanted(u)
	if want <= p.QuotaBytes {
		return p.quotaCeiling(u)
	}
	if p.fits(want) {
		limit := ""
		if capped {
			limit = ", its ceiling"
		}
		return p.raise(want, reason, limit, u)
	}
	room := roundDown(MaxQuotaFor(p.VolumeBytes), QuotaStep)
	if v, ok := p.grownVolume(want, room); ok {
		to := want
		if !QuotaFitsVolume(want, v) {
			to = roundDown(MaxQuotaFor(v), QuotaStep)
		}
		return Decision{Kind: GrowVolume, To: v, Reason: reason, Message: fmt.Sprintf(
			"growing the volumes from %s to %s, so that the quota can rise from %s to %s: %s",
			size(p.VolumeBytes), size(v), size(p.QuotaBytes), size(to), p.state(u))}
	}
	if room > p.QuotaBytes {
		return p.raise(room, reason, fmt.Sprintf(", as far as the volumes of %s allow", size(p.VolumeBytes)), u)
	}
	return p.volumeCeiling(want, u)
}

func (p Policy) withDefaults() Policy {
	if p.QuotaBytes <= 0 {
		p.QuotaBytes = DefaultQuotaBytes
	}
	p.QuotaBytes = clamp(p.QuotaBytes)
	if p.MaxQuotaBytes <= 0 || p.MaxQuotaBytes > EtcdMaxQuotaBytes {
		p.MaxQuotaBytes = EtcdMaxQuotaBytes
	}
	p.VolumeBytes = clamp(p.VolumeBytes)
	p.MaxVolumeBytes = max(clamp(p.MaxVolumeBytes), p.VolumeBytes)
	if p.ThresholdPercent < 1 || p.ThresholdPercent > 99 {
		p.ThresholdPercent = DefaultThresholdPercent
	}
	if p.FullWithin <= 0 {
		p.FullWithin = DefaultFullWithin
	}
	return p
}

// awaited is the member with the largest database file at the threshold among those
// maintenance is defragmenting, if any: the first by name of a tie.
func (p Policy) awaited(members []Member) (Member, bool) {
	var best Member
	found := false
	for _, m := range members {
		if !m.Defragmenting || !p.atThreshold(clamp(m.DBSize), p.QuotaBytes) {
			continue
		}
		if !found || m.DBSize > best.DBSize || m.DBSize == best.DBSize && m.Name < best.Name {
			best, found = m, true
		}
	}
	return best, found
}

// atThreshold says whether n is at ThresholdPercent of quota or past it.
func (p Policy) atThreshold(n, quota int64) bool {
	return n*100 >= int64(p.ThresholdPercent)*quota
}

// usage is the members' Used against the quota in force, and its growth: perHour is zero
// without a growth trend.
type usage struct {
	used, quota int64
	perHour     float64
}

// hoursLeft is how long the trend takes to reach the quota; +Inf without a trend.
func (u usage) hoursLeft() float64 {
	if u.perHour <= 0 {
		return math.Inf(1)
	}
	return max(float64(u.quota-u.used)/u.perHour, 0)
}

// due says whether the quota must rise, and why: the threshold first, as the firmer figure.
func (p Policy) due(u usage) (Reason, bool) {
	switch {
	case p.atThreshold(u.used, u.quota):
		return ReasonNearQuota, true
	case u.hoursLeft() <= p.FullWithin.Hours():
		return ReasonFullSoon, true
	}
	return "", false
}

// wanted is the next quota: the largest of GrowthPercent more; the quota of which Used
// fills two thirds of the threshold (half the quota at the default 75 %: far enough under
// any threshold that a raise is not due again at once); and RunwayFactor times FullWithin
// at the trend. It is rounded up to QuotaStep and capped at the ceiling (capped then true).
// Floating point keeps a wild trend from overflowing; the rest is exact.
func (p Policy) wanted(u usage) (int64, bool) {
	target := (u.used*300 + 2*int64(p.ThresholdPercent) - 1) / (2 * int64(p.ThresholdPercent))
	w := max(float64(p.QuotaBytes+p.QuotaBytes*GrowthPercent/100), float64(target))
	if u.perHour > 0 {
		w = max(w, float64(u.used)+u.perHour*RunwayFactor*p.FullWithin.Hours())
	}
	if w >= float64(p.MaxQuotaBytes) {
		return p.MaxQuotaBytes, true
	}
	want := roundUp(int64(math.Ceil(w)), QuotaStep)
	return min(want, p.MaxQuotaBytes), want >= p.MaxQuotaBytes
}

// fits says whether quota fits the volumes in force; with none (ephemeral storage), any does.
func (p Policy) fits(quota int64) bool {
	return p.VolumeBytes <= 0 || QuotaFitsVolume(quota, p.VolumeBytes)
}

// grownVolume is the volume size to grow to for a quota of want, when the volumes can grow
// and growing them lets the quota rise further than room, the most the volumes allow now.
func (p Policy) grownVolume(want, room int64) (int64, bool) {
	if p.VolumeBytes <= 0 || !p.VolumeExpandable || p.MaxVolumeBytes <= p.VolumeBytes {
		return 0, false
	}
	v := min(roundUp(VolumeFor(want), VolumeStep), p.MaxVolumeBytes)
	if v <= p.VolumeBytes {
		return 0, false
	}
	return v, QuotaFitsVolume(want, v) || roundDown(MaxQuotaFor(v), QuotaStep) > max(room, p.QuotaBytes)
}

func (p Policy) raise(to int64, reason Reason, limit string, u usage) Decision {
	return Decision{Kind: RaiseQuota, To: to, Reason: reason, Message: fmt.Sprintf(
		"raising the quota from %s to %s%s: %s", size(p.QuotaBytes), size(to), limit, p.state(u))}
}

func (p Policy) quotaCeiling(u usage) Decision {
	if p.MaxQuotaBytes >= EtcdMaxQuotaBytes {
		return atCeiling(ReasonQuotaCeiling, fmt.Sprintf(
			"the quota of %s is at etcd's recommended maximum of %s, and %s: delete data, or keep less history "+
				"(etcd.autoCompactionRetention)", size(p.QuotaBytes), size(EtcdMaxQuotaBytes), p.state(u)))
	}
	return atCeiling(ReasonQuotaCeiling, fmt.Sprintf(
		"the quota of %s has reached its ceiling of %s, and %s: raise storage.autoscaling.maxQuotaBackendBytes "+
			"(up to %s), or delete data", size(p.QuotaBytes), size(p.MaxQuotaBytes), p.state(u), size(EtcdMaxQuotaBytes)))
}

func (p Policy) volumeCeiling(want int64, u usage) Decision {
	need := fmt.Sprintf("the quota of %s should rise to %s, which needs volumes of %s or more, and %s",
		size(p.QuotaBytes), size(want), size(VolumeFor(want)), p.state(u))
	if !p.VolumeExpandable {
		return atCeiling(ReasonVolumeNotExpandable, fmt.Sprintf(
			"%s, but the StorageClass of the volumes of %s does not allow volume expansion: "+
				"set allowVolumeExpansion on the class if its provisioner supports it, or delete data", need, size(p.VolumeBytes)))
	}
	return atCeiling(ReasonVolumeCeiling, fmt.Sprintf(
		"%s, but the volumes of %s are at their ceiling: raise storage.autoscaling.maxSize to %s or more, or delete data",
		need, size(p.VolumeBytes), size(roundUp(VolumeFor(want), VolumeStep))))
}

func atCeiling(reason Reason, message string) Decision {
	return Decision{Kind: AtCeiling, Reason: reason, Message: message}
}

// state is the members' Used against the quota, and its growth, for a person.
func (p Policy) state(u usage) string {
	s := fmt.Sprintf("the largest database is %s, %d %% of the %s quota",
		size(u.used), percent(u.used, u.quota), size(u.quota))
	if u.perHour > 0 {
		s += fmt.Sprintf(", growing by %s an hour (full in %s)", sizeOf(u.perHour), hours(u.hoursLeft()))
	}
	return s
}

// hours writes a duration of h hours for a person, roughly.
func hours(h float64) string {
	switch {
	case h < 1:
		return "less than an hour"
	case h < 1.5:
		return "about an hour"
	case h < 47.5:
		return fmt.Sprintf("about %d hours", int(math.Round(h)))
	case h < 365*24:
		return fmt.Sprintf("about %d days", int(math.Round(h/24)))
	}
	return "more than a year"
}

// within writes a duration for a person: in whole hours when it is some.
func within(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "an hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	}
	return d.String()
}

func size(n int64) string { return sizeOf(float64(n)) }

// percent is n in whole percent of quota, rounded down.
func percent(n, quota int64) int64 { return n * 100 / quota }

// sizeOf writes a size in bytes for a person: GiB from 1 GiB up, MiB below, with at most
// two decimals.
func sizeOf(n float64) string {
	if n >= float64(GiB) {
		return decimals(n/float64(GiB)) + " GiB"
	}
	return decimals(n/float64(MiB)) + " MiB"
}

func decimals(x float64) string {
	return strconv.FormatFloat(math.Round(x*100)/100, 'f', -1, 64)
}

func clamp(n int64) int64 { return min(max(n, 0), maxBytes) }

func roundUp(n, step int64) int64 { return (n + step - 1) / step * step }

func roundDown(n, step int64) int64 { return n / step * step }
