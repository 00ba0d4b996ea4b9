package maintenance

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// MiB is a mebibyte, in bytes.
const MiB int64 = 1 << 20

// The defaults and fixed thresholds of the policy.
//
// DefaultMinFragmentationPercent is the fragmentation OpenShift's etcd operator (and
// MicroShift) wait for before they defragment a member. They pair it with a database of at
// least 100 MiB; we ask for 100 MiB that a defragmentation would actually give back
// (DefaultMinReclaimableBytes), which at 45 % means a file of about 222 MiB or more: below
// that, the pause of a defragmentation buys too little.
//
// Under quota pressure (a file at PressurePercent of the quota or more) a smaller gain is
// worth it, since the alternative is the NOSPACE alarm: PressureReclaimable, the smaller of
// PressureMinReclaimableBytes (cozystack's defragmentation policy defragments at 80 % of
// the quota with 32 MiB to give back) and PressureMinReclaimablePercent of the quota, so
// that a small quota, whose file never holds 32 MiB of free pages, is defragmented too. Less
// than that would bring the file back to the trigger after a few writes. PressurePercent is
// the storage autoscaler's threshold (internal/autoscale), so that a file at it is either
// defragmented or given a larger quota: with the autoscaler on (Policy.QuotaAutoscaled), a
// member is defragmented under pressure only when that brings its file PressureReclaimable
// under the trigger, and is left to a quota raise otherwise.
//
// DisarmBelowPercent is how far under the quota every member must be before a NOSPACE
// alarm is disarmed; disarming any closer would let the cluster run into the alarm again
// after a few writes. The ahrtr/etcd-defrag tool disarms at the same 90 %.
//
// DefragmentedBelowBytes is the least a defragmentation must give back to be worth doing
// at all: with less to reclaim, a member is taken as already defragmented. Scheduled runs and the NOSPACE
// recovery use it.
const (
	DefaultMinFragmentationPercent int32 = 45
	DefaultMinReclaimableBytes           = 100 * MiB
	PressurePercent                      = int64(autoscale.DefaultThresholdPercent)
	PressureMinReclaimableBytes          = 32 * MiB
	PressureMinReclaimablePercent        = 5
	DisarmBelowPercent                   = 90
	DefragmentedBelowBytes               = 1 * MiB
	// DefaultQuotaBytes is etcd's own quota when --quota-backend-bytes is not set (2 GiB).
	DefaultQuotaBytes = 2 << 30
)

// Mode says when members are defragmented.
type Mode string

// The modes of a Policy.
const (
	// Auto defragments a member once its fragmentation passes the thresholds.
	Auto Mode = "Auto"
	// Schedule defragments every member with anything to give back when a scheduled run
	// is due.
	Schedule Mode = "Schedule"
	// Disabled never defragments on its own; NOSPACE recovery has its own switch.
	Disabled Mode = "Disabled"
)

// Policy is what the spec asks of maintenance.
type Policy struct {
	// Mode says when members are defragmented.
	Mode Mode
	// MinFragmentationPercent is, in Auto, the fragmentation from which a member is due.
	// Zero or less means DefaultMinFragmentationPercent.
	MinFragmentationPercent int32
	// MinReclaimableBytes is, in Auto, how much a defragmentation must give back, at
	// least, for a member to be due. Zero or less means DefaultMinReclaimableBytes.
	MinReclaimableBytes int64
	// QuotaBytes is the members' quota (--quota-backend-bytes). Zero or less means
	// DefaultQuotaBytes, as it does to etcd.
	QuotaBytes int64
	// ScheduledRunDue says, in Schedule, that a run is due: the caller computes it from
	// the schedule and the time the last run completed (a None with ReasonRunComplete).
	ScheduledRunDue bool
	// QuotaAutoscaled says that storage autoscaling raises the quota of a member whose
	// file is at PressurePercent (internal/autoscale) and that the quota is below its
	// ceiling. Plan then defragments under quota pressure only a member whose size in use
	// is PressureReclaimable or more under PressurePercent, so that the defragmented file
	// stays under the trigger for a while; a member with more data than that needs the
	// larger quota, and Plan leaves it to the autoscaler.
	QuotaAutoscaled bool
	// HistoryRevisions is how many revisions of history etcd's auto-compaction keeps
	// (etcd.autoCompactionRetention in mode revision), and so how many the NOSPACE
	// recovery keeps as long as they fit. It is zero in mode periodic: etcd's own periodic
	// compactor keeps that time window, which the operator cannot map to a revision, so the
	// recovery leaves the history to it and compacts only when the history does not fit.
	// Zero or less skips the recovery's first compaction.
	HistoryRevisions int64
	// RecoverFromNoSpace lets Plan recover from a NOSPACE alarm whatever the Mode, so that
	// even Disabled (which a user picks to run defragmentations by hand, at hours of their
	// choosing) does not leave the cluster refusing writes; the caller sets it true unless
	// the user turned recovery off as well. With it false, a NOSPACE alarm is left alone
	// (Auto and Schedule still defragment as usual).
	RecoverFromNoSpace bool
	// Request is a defragmentation asked for by hand (PolicyFor reads it), in any Mode;
	// nil when none is due. RequestError says why the request cannot be read: Plan then
	// does nothing but say so, until it is corrected or removed.
	Request      *Request
	RequestError string
}

// Request is a defragmentation asked for by hand: every member in Members (every member
// when empty) last defragmented before At is due, whatever its fragmentation.
type Request struct {
	At      time.Time
	Members []string
}

// Member is one etcd member as observed.
type Member struct {
	// Name is the member name.
	Name string
	// ID is the etcd member ID.
	ID uint64
	// Learner is true for a non-voting learner.
	Learner bool
	// Leader is true for the raft leader.
	Leader bool
	// Reachable is true when the member answered its status call; DBSize and DBSizeInUse
	// are known only then.
	Reachable bool
	// Healthy is true when the member's pod is Ready and the member is healthy apart from
	// alarms: a member whose only error is an alarm counts as healthy, since NOSPACE must
	// not block its own recovery and CORRUPT is judged from Observed.Alarms.
	Healthy bool
	// DBSize is the size of the member's database file, in bytes.
	DBSize int64
	// DBSizeInUse is the part of DBSize that holds data; the rest is free pages that a
	// defragmentation gives back. Zero when the member did not report it.
	DBSizeInUse int64
	// RecentlyDefragmented is true when the operator defragmented the member less than
	// MinInterval ago: Auto and Schedule leave it alone, so that a cluster whose churn
	// refills the free pages at once is not defragmented over and over. NOSPACE recovery
	// does not wait for it.
	RecentlyDefragmented bool
	// LastDefragmented is when the operator last defragmented the member; zero when never.
	LastDefragmented time.Time
}

// MinInterval is the least time between two defragmentations of one member by Auto or
// Schedule.
const MinInterval = 10 * time.Minute

// Observed is everything Plan needs, gathered by the controller in one pass.
type Observed struct {
	// Members are the etcd members, in any order.
	Members []Member
	// Alarms are the cluster's alarms (etcd.AlarmNoSpace, etcd.AlarmCorrupt) by the ID of the member
	// each is raised on.
	Alarms map[uint64][]string
	// Size is the desired number of voting members (spec.size).
	Size int
	// Revision is the cluster's current revision; zero when unknown.
	Revision int64
	// CompactedRevision is a revision the cluster is known to be compacted to at least, as
	// the caller learned it; zero when unknown. It may lag behind the cluster's own: the
	// caller counts a compaction etcd refuses because the revision is already compacted as
	// done, and learns no more than that.
	CompactedRevision int64
}

// Kind is the kind of step an Action takes.
type Kind string

// The kinds of Action.
const (
	// None: nothing to do now; Reason and Message say why.
	None Kind = "None"
	// Compact: compact the cluster's history up to Revision.
	Compact Kind = "Compact"
	// Defragment: defragment the member Member (MemberID).
	Defragment Kind = "Defragment"
	// Disarm: disarm the NOSPACE alarm.
	Disarm Kind = "Disarm"
	// CannotRecover: a NOSPACE alarm persists with the history compacted to the current
	// revision, every member defragmented and one still close to the quota: the data does
	// not fit, and only a larger quota (or deleting data) helps. Nothing is done.
	CannotRecover Kind = "CannotRecover"
)

// Reason is why Plan chose an Action, fit for a condition's reason.
type Reason string

// The reasons of an Action, one for each way Plan decides. ReasonRunComplete is how the
// caller learns that a scheduled run is over and records its time; a None for any other
// reason while a run is due leaves the run due.
//
// Under a NOSPACE alarm, ReasonNoSpaceCompact compacts to keep Policy.HistoryRevisions of
// history, and ReasonNoSpaceHistoryDoesNotFit compacts to the current revision, dropping
// the history: every member's size in use is at PressurePercent of the quota or more, so
// even a defragmentation would leave the files at the storage autoscaler's trigger, or
// every member is defragmented and one is still too close to the quota to disarm.
const (
	ReasonDisabled                 Reason = "Disabled"
	ReasonNotDue                   Reason = "NotDue"
	ReasonBelowThresholds          Reason = "BelowThresholds"
	ReasonRunComplete              Reason = "RunComplete"
	ReasonCorruptAlarm             Reason = "CorruptAlarm"
	ReasonLearner                  Reason = "LearnerPresent"
	ReasonNotAtSize                Reason = "NotAtDesiredSize"
	ReasonUnreachable              Reason = "MemberUnreachable"
	ReasonUnhealthy                Reason = "MemberUnhealthy"
	ReasonRevisionUnknown          Reason = "RevisionUnknown"
	ReasonFragmented               Reason = "Fragmented"
	ReasonQuotaPressure            Reason = "QuotaPressure"
	ReasonQuotaRaiseDue            Reason = "QuotaRaiseDue"
	ReasonScheduled                Reason = "Scheduled"
	ReasonRequested                Reason = "Requested"
	ReasonRequestInvalid           Reason = "RequestInvalid"
	ReasonNoSpaceCompact           Reason = "NoSpaceCompact"
	ReasonNoSpaceDefrag            Reason = "NoSpaceDefragment"
	ReasonNoSpaceDisarm            Reason = "NoSpaceDisarm"
	ReasonNoSpaceDoesNotFit        Reason = "NoSpaceDataDoesNotFit"
	ReasonNoSpaceHistoryDoesNotFit Reason = "NoSpaceHistoryDoesNotFit"
)

// Action is the one step Plan chose.
type Action struct {
	Kind Kind
	// Member and MemberID name the member to defragment.
	Member   string
	MemberID uint64
	// Revision is the revision to compact to.
	Revision int64
	// Reason and Message say why, for a condition and for events.
	Reason  Reason
	Message string
}

// FragmentationPercent is the share of a database file that is free pages, in whole
// percent rounded down; 0 when the member reported no size in use. It is the figure the
// member status shows, and Plan's thresholds compare against it, so a member shown at 45 %
// is due at a threshold of 45.
func FragmentationPercent(size, inUse int64) int32 {
	if size <= 0 || inUse <= 0 || inUse >= size {
		return 0
	}
	return int32((size - inUse) * 100 / size)
}

// Reclaimable is what a defragmentation of a database file would give back, in bytes; 0
// when the member reported no size in use.
func Reclaimable(size, inUse int64) int64 {
	if size <= 0 || inUse <= 0 || inUse >= size {
		return 0
	}
	return size - inUse
}

// Plan returns the one next maintenance step the cluster needs.
func Plan(p Policy, o Observed) Action {
	p = p.withDefaults()
	members := sortedByName(o.Members)
	noSpace := hasAlarm(o.Alarms, etcd.AlarmNoSpace)
	recoverNoSpace := noSpace && p.RecoverFromNoSpace
	if p.RequestError != "" && !recoverNoSpace {
		return none(ReasonRequestInvalid, p.RequestError)
	}
	requested, pending := p.requested(members)
	if a, idle := p.idle(recoverNoSpace, noSpace); idle && !pending {
		return a
	}
	if id, ok := firstWith(o.Alarms, etcd.AlarmCorrupt); ok {
		return none(ReasonCorruptAlarm, fmt.Sprintf(
			"a CORRUPT alarm is raised on member %s: defragmentation and compaction are deferred until it is resolved",
			nameOf(members, id)))
	}
	if a, blocked := gate(members, o.Size); blocked {
		return a
	}
	if recoverNoSpace {
		return p.recoverNoSpace(members, o)
	}
	if pending {
		return requested
	}
	if p.Mode == Schedule {
		return scheduled(members)
	}
	return p.auto(members)
}

// Defragmenting names the members Plan defragments, in this pass or the passes after it,
// as long as nothing changes but what Plan does: a Compact, a Defragment (which shrinks
// the member's file to its size in use) or a Disarm, each taken as done. The storage
// autoscaler (internal/autoscale.Member) counts a member Plan defragments by its size in
// use, so that the quota is raised for a file at the trigger only when no defragmentation
// brings it back under.
func Defragmenting(p Policy, o Observed) map[string]bool {
	out := map[string]bool{}
	o.Members = append([]Member(nil), o.Members...)
	// Each step below leaves one fewer step to take: two compactions (one that keeps the
	// history, one to the current revision), one disarm, and each member defragmented once
	// at most; one more Plan finds nothing left.
	for range len(o.Members) + 4 {
		a := Plan(p, o)
		switch a.Kind {
		case Compact:
			o.CompactedRevision = a.Revision
		case Defragment:
			out[a.Member] = true
			for i, m := range o.Members {
				if m.ID == a.MemberID {
					o.Members[i].DBSize, o.Members[i].RecentlyDefragmented = m.DBSizeInUse, true
					if p.Request != nil && !m.LastDefragmented.After(p.Request.At) {
						o.Members[i].LastDefragmented = p.Request.At
					}
				}
			}
		case Disarm:
			o.Alarms = nil
		default:
			return out
		}
	}
	return out
}

func (p Policy) withDefaults() Policy {
	if p.MinFragmentationPercent <= 0 {
		p.MinFragmentationPercent = DefaultMinFragmentationPercent
	}
	if p.MinReclaimableBytes <= 0 {
		p.MinReclaimableBytes = DefaultMinReclaimableBytes
	}
	if p.QuotaBytes <= 0 {
		p.QuotaBytes = DefaultQuotaBytes
	}
	return p
}

// idle says when the mode leaves nothing to do: Disabled, or a Schedule run not due, unless
// a NOSPACE alarm is to be recovered from.
func (p Policy) idle(recoverNoSpace, noSpace bool) (Action, bool) {
	if recoverNoSpace {
		return Action{}, false
	}
	switch {
	case p.Mode == Disabled && noSpace:
		return none(ReasonDisabled, "automatic defragmentation and NOSPACE recovery are disabled"), true
	case p.Mode == Disabled:
		return none(ReasonDisabled, "automatic defragmentation is disabled"), true
	case p.Mode == Schedule && !p.ScheduledRunDue:
		return none(ReasonNotDue, "no scheduled defragmentation is due"), true
	}
	return Action{}, false
}

// gate holds every step back until the cluster can spare a member: no learner (one is
// joining, and etcd does not defragment learners), the desired number of voters, and every
// member answering and healthy. It checks in that order so that a joining learner, which
// is often not answering yet, is reported as what it is.
func gate(members []Member, size int) (Action, bool) {
	for _, m := range members {
		if m.Learner {
			return none(ReasonLearner, fmt.Sprintf(
				"member %s is a learner: maintenance waits until it is promoted", m.Name)), true
		}
	}
	if len(members) != size {
		return none(ReasonNotAtSize, fmt.Sprintf(
			"the cluster has %d voting members of %d: maintenance waits", len(members), size)), true
	}
	for _, m := range members {
		if !m.Reachable {
			return none(ReasonUnreachable, fmt.Sprintf("member %s did not answer: maintenance waits", m.Name)), true
		}
		if !m.Healthy {
			return none(ReasonUnhealthy, fmt.Sprintf("member %s is not healthy: maintenance waits", m.Name)), true
		}
	}
	return Action{}, false
}

// recoverNoSpace takes the next step of the recovery from a NOSPACE alarm: compact,
// defragment every member, disarm. The first compaction keeps the history etcd's
// auto-compaction keeps (HistoryRevisions), so that watchers need not relist; the history
// goes, with a compaction to the current revision, only when it does not fit: even the
// member with the least data in use is at the trigger (PressurePercent), or a member is
// still too close to the quota to disarm once every member is defragmented.
func (p Policy) recoverNoSpace(members []Member, o Observed) Action {
	if o.Revision <= 0 {
		return none(ReasonRevisionUnknown, "a NOSPACE alarm is raised and the current revision is not known: compaction waits")
	}
	if keep := o.Revision - p.HistoryRevisions; p.HistoryRevisions > 0 && keep > 0 && o.CompactedRevision < keep {
		return Action{Kind: Compact, Revision: keep, Reason: ReasonNoSpaceCompact, Message: fmt.Sprintf(
			"a NOSPACE alarm is raised: compacting to revision %d, which keeps the last %d revisions of the history",
			keep, p.HistoryRevisions)}
	}
	if m, ok := p.historyDoesNotFit(members); ok && o.CompactedRevision < o.Revision {
		return Action{Kind: Compact, Revision: o.Revision, Reason: ReasonNoSpaceHistoryDoesNotFit, Message: fmt.Sprintf(
			"a NOSPACE alarm is raised: compacting to revision %d, which drops the history: member %s, the one "+
				"with the least data in use, has %s in use, at or above %d %% of the quota of %s: the history does not fit",
			o.Revision, m.Name, size(m.DBSizeInUse), PressurePercent, size(p.QuotaBytes))}
	}
	if m, ok := next(members, func(m Member) bool { return reclaimable(m) >= DefragmentedBelowBytes }); ok {
		return defragment(m, ReasonNoSpaceDefrag, "a NOSPACE alarm is raised: defragmenting member "+m.Name)
	}
	for _, m := range members {
		if below(m.DBSize, DisarmBelowPercent, p.QuotaBytes) {
			continue
		}
		if o.CompactedRevision < o.Revision {
			return Action{Kind: Compact, Revision: o.Revision, Reason: ReasonNoSpaceHistoryDoesNotFit, Message: fmt.Sprintf(
				"a NOSPACE alarm is raised: compacting to revision %d, which drops the history: every member is "+
					"defragmented and member %s still holds %s, at or above %d %% of the quota of %s",
				o.Revision, m.Name, size(m.DBSize), DisarmBelowPercent, size(p.QuotaBytes))}
		}
		return Action{Kind: CannotRecover, Reason: ReasonNoSpaceDoesNotFit, Message: fmt.Sprintf(
			"a NOSPACE alarm is raised and every member is defragmented, but member %s still holds %s, "+
				"at or above %d %% of the quota of %s: the data does not fit",
			m.Name, size(m.DBSize), DisarmBelowPercent, size(p.QuotaBytes))}
	}
	return Action{Kind: Disarm, Reason: ReasonNoSpaceDisarm, Message: fmt.Sprintf(
		"every member is below %d %% of the quota of %s: disarming the NOSPACE alarm",
		DisarmBelowPercent, size(p.QuotaBytes))}
}

// historyDoesNotFit is the member with the least data in use, when even that is at
// PressurePercent of the quota or more: a defragmentation would leave its file at the
// storage autoscaler's trigger, so the history that compaction keeps does not fit. Every
// member holds the same data, and a member's size in use can only overstate it (up to the
// layout of its pages): a member goes on counting the pages a compaction freed as in use
// until it commits a write, which NOSPACE refuses, so right after a compaction only the
// member that served it reports them free (measured on etcd 3.7.3). A member that did not
// report its size in use is not counted; with none reported, there is no figure to judge.
func (p Policy) historyDoesNotFit(members []Member) (Member, bool) {
	var least Member
	found := false
	for _, m := range members {
		if m.DBSizeInUse > 0 && (!found || m.DBSizeInUse < least.DBSizeInUse) {
			least, found = m, true
		}
	}
	return least, found && !below(least.DBSizeInUse, PressurePercent, p.QuotaBytes)
}

// requested is the next defragmentation of the request, and whether one is pending: a
// requested member not defragmented since the request's time, followers first.
func (p Policy) requested(members []Member) (Action, bool) {
	if p.Request == nil {
		return Action{}, false
	}
	named := func(m Member) bool { return len(p.Request.Members) == 0 || slices.Contains(p.Request.Members, m.Name) }
	m, ok := next(members, func(m Member) bool { return named(m) && m.LastDefragmented.Before(p.Request.At) })
	if !ok {
		return Action{}, false
	}
	return defragment(m, ReasonRequested, fmt.Sprintf("defragmenting member %s as requested at %s",
		m.Name, p.Request.At.UTC().Format(time.RFC3339))), true
}

// scheduled takes the next step of a scheduled run, which is complete once no member has
// DefragmentedBelowBytes to give back, or was just defragmented.
func scheduled(members []Member) Action {
	if m, ok := next(members, func(m Member) bool { return !m.RecentlyDefragmented && reclaimable(m) >= DefragmentedBelowBytes }); ok {
		return defragment(m, ReasonScheduled, "scheduled defragmentation of member "+m.Name)
	}
	return none(ReasonRunComplete, fmt.Sprintf(
		"scheduled defragmentation complete: no member has %s or more to reclaim", size(DefragmentedBelowBytes)))
}

// auto defragments the next member past either threshold, if any: fragmented, or close to
// the quota with less to reclaim. Both count the same for the order, so the leader stays last.
func (p Policy) auto(members []Member) Action {
	m, ok := next(members, func(m Member) bool {
		return !m.RecentlyDefragmented && (p.fragmented(m) || p.underPressure(m))
	})
	switch {
	case ok && p.fragmented(m):
		return defragment(m, ReasonFragmented, "defragmenting member "+m.Name)
	case ok:
		return defragment(m, ReasonQuotaPressure, fmt.Sprintf(
			"defragmenting member %s, at %d %% of the quota of %s or more", m.Name, PressurePercent, size(p.QuotaBytes)))
	}
	if m, ok := p.leftToAutoscaling(members); ok {
		why := fmt.Sprintf("with %s in use, a defragmentation would not bring it %s under that",
			size(m.DBSizeInUse), size(p.pressureReclaimable()))
		if m.RecentlyDefragmented {
			why = fmt.Sprintf("it was defragmented less than %d minutes ago", int(MinInterval.Minutes()))
		}
		return none(ReasonQuotaRaiseDue, fmt.Sprintf(
			"member %s is at %d %% of the quota of %s or more and %s: storage autoscaling raises the quota instead",
			m.Name, PressurePercent, size(p.QuotaBytes), why))
	}
	return none(ReasonBelowThresholds, fmt.Sprintf(
		"every member below the thresholds (%d %% fragmented and %s to reclaim, or %s to reclaim at %d %% of the quota)",
		p.MinFragmentationPercent, size(p.MinReclaimableBytes), size(p.pressureReclaimable()), PressurePercent))
}

func (p Policy) fragmented(m Member) bool {
	return FragmentationPercent(m.DBSize, m.DBSizeInUse) >= p.MinFragmentationPercent &&
		reclaimable(m) >= p.MinReclaimableBytes
}

// underPressure says whether m is due for a defragmentation under quota pressure: its file
// at the trigger, and PressureReclaimable to give back; with the quota autoscaled, its
// size in use PressureReclaimable under the trigger (which implies as much to give back).
func (p Policy) underPressure(m Member) bool {
	if !p.atTrigger(m) || m.DBSizeInUse <= 0 {
		return false
	}
	if p.QuotaAutoscaled {
		return (m.DBSizeInUse+p.pressureReclaimable())*100 <= PressurePercent*p.QuotaBytes
	}
	return reclaimable(m) >= p.pressureReclaimable()
}

// leftToAutoscaling is the first member, by name, whose file is at the trigger and which
// auto does not defragment, when the quota is autoscaled: the autoscaler raises the quota
// for it.
func (p Policy) leftToAutoscaling(members []Member) (Member, bool) {
	if !p.QuotaAutoscaled {
		return Member{}, false
	}
	for _, m := range members {
		if !m.Learner && p.atTrigger(m) {
			return m, true
		}
	}
	return Member{}, false
}

// atTrigger says whether m's file is at PressurePercent of the quota or past it.
func (p Policy) atTrigger(m Member) bool { return !below(m.DBSize, PressurePercent, p.QuotaBytes) }

func (p Policy) pressureReclaimable() int64 { return PressureReclaimable(p.QuotaBytes) }

// PressureReclaimable is the least a defragmentation under quota pressure gives back, for
// a quota of quotaBytes (zero or less: DefaultQuotaBytes): the smaller of
// PressureMinReclaimableBytes and PressureMinReclaimablePercent of the quota, and at
// least DefragmentedBelowBytes.
func PressureReclaimable(quotaBytes int64) int64 {
	if quotaBytes <= 0 {
		quotaBytes = DefaultQuotaBytes
	}
	return max(min(PressureMinReclaimableBytes, quotaBytes*PressureMinReclaimablePercent/100), DefragmentedBelowBytes)
}

// next is the member to defragment first among those due: a follower before the leader,
// the one with the most to reclaim first, ties broken by name (members are sorted by name).
func next(members []Member, due func(Member) bool) (Member, bool) {
	var best Member
	found := false
	for _, m := range members {
		if m.Learner || !due(m) {
			continue
		}
		if !found || before(m, best) {
			best, found = m, true
		}
	}
	return best, found
}

// before orders the members to defragment; members come sorted by name, so a tie keeps the
// first.
func before(a, b Member) bool {
	if a.Leader != b.Leader {
		return b.Leader
	}
	return reclaimable(a) > reclaimable(b)
}

// defragment is a Defragment of m, its message what is done followed by the member's figures.
func defragment(m Member, reason Reason, what string) Action {
	return Action{Kind: Defragment, Member: m.Name, MemberID: m.ID, Reason: reason, Message: fmt.Sprintf(
		"%s: %d %% fragmented, %s of %s to reclaim",
		what, FragmentationPercent(m.DBSize, m.DBSizeInUse), size(reclaimable(m)), size(m.DBSize))}
}

func none(reason Reason, message string) Action {
	return Action{Kind: None, Reason: reason, Message: message}
}

func reclaimable(m Member) int64 { return Reclaimable(m.DBSize, m.DBSizeInUse) }

// below says whether n is under percent % of quota, in exact integer arithmetic.
func below(n int64, percent, quota int64) bool { return n*100 < percent*quota }

func sortedByName(in []Member) []Member {
	out := append([]Member(nil), in...)
	sort.SliceStable(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func hasAlarm(alarms map[uint64][]string, alarm string) bool {
	_, ok := firstWith(alarms, alarm)
	return ok
}

// firstWith is the lowest member ID with the alarm raised, for a stable message.
func firstWith(alarms map[uint64][]string, alarm string) (uint64, bool) {
	var first uint64
	found := false
	for id, raised := range alarms {
		for _, a := range raised {
			if a == alarm && (!found || id < first) {
				first, found = id, true
			}
		}
	}
	return first, found
}

// nameOf names a member by ID, or gives the ID in hexadecimal, as the status shows it, for
// a member that is not in the list.
func nameOf(members []Member, id uint64) string {
	for _, m := range members {
		if m.ID == id {
			return m.Name
		}
	}
	return strconv.FormatUint(id, 16)
}

// size writes a size in bytes for a reader: MiB with one decimal.
func size(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/float64(MiB))
}
