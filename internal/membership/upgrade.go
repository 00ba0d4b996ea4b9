package membership

import (
	"fmt"
	"sort"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Upgrades. A member runs the release of its pod; changing spec.version restarts the
// members at the new release one at a time (RestartMember deletes the pod, CreatePod brings
// it back at Desired with its data and identity):
//
//   - only when every member is healthy and Ready, the cluster has its full size, no
//     learner is pending, and every member is caught up with the leader (raft index within
//     maxRaftLag), so that one member down leaves a healthy quorum;
//   - a snapshot is saved to a follower's volume before the first restart; going to 3.7,
//     no-op entries are appended first so that every member takes a raft snapshot past the
//     entries 3.5 wrote, which 3.7 cannot replay;
//   - followers first, by ordinal; leadership is moved to an upgraded member before the
//     leader is restarted;
//   - a member restarted at the new release that is not healthy and Ready within
//     MemberTimeout, while another member still runs the old release (so the cluster
//     version has not been raised and the old release can still read the data), is rolled
//     back: RollBack is recorded in the status, the upgrade stops, and Desired becomes the
//     old release again. The failed member goes back at once, the others (if any were
//     upgraded) one at a time through the same gates.

// maxRaftLag is how far behind the leader's raft index a member may be before the next
// member is restarted: a member that far behind has not caught up yet.
const maxRaftLag = 1000

// Upgrade is what the spec and the status say about the etcd version.
type Upgrade struct {
	// Target is spec.version.
	Target string
	// From is status.upgrade.fromVersion when status.upgrade is about Target (an upgrade
	// to it is under way, done or rolled back); empty otherwise.
	From string
	// RolledBack is true when the upgrade to Target was rolled back.
	RolledBack bool
	// MemberTimeout is spec.memberUpgradeTimeout.
	MemberTimeout time.Duration
	// SnapshotTaken is true when status.upgrade (about Target) records the snapshot taken
	// before the first restart.
	SnapshotTaken bool
	// RaftSnapshotsForced is true when status.upgrade (about Target) records that every
	// member was made to take a raft snapshot (versions.NeedsFreshRaftSnapshots).
	RaftSnapshotsForced bool
	// SnapshotCount is spec.etcd.snapshotCount: after that many applied entries a member
	// takes a raft snapshot.
	SnapshotCount int
	// Backup is, when spec.upgradeBackupDestination is set, the EtcdBackup the snapshot
	// before the upgrade to Target goes to, and how it went; nil otherwise (the snapshot
	// goes to a member's volume).
	Backup *UpgradeBackup
}

// UpgradeBackup is an EtcdBackup the planner waits for: the one that holds the snapshot
// taken before an upgrade, or the final backup before the cluster hibernates.
type UpgradeBackup struct {
	// Name is the EtcdBackup's name.
	Name string
	// State is how it went; Message, why it failed.
	State   BackupState
	Message string
}

// BackupState is how an EtcdBackup went, as far as the planner needs to know.
type BackupState string

// The states of an UpgradeBackup.
const (
	BackupMissing   BackupState = "Missing"
	BackupRunning   BackupState = "Running"
	BackupSucceeded BackupState = "Succeeded"
	BackupFailed    BackupState = "Failed"
)

// raftSnapshotMargin is how many no-op entries ForceRaftSnapshots appends beyond
// SnapshotCount, for the entries members apply while it runs.
const raftSnapshotMargin = 100

// Desired is the release every member should run: Target, or From after a rollback.
func (u Upgrade) Desired() string {
	if u.RolledBack && u.From != "" {
		return u.From
	}
	return u.Target
}

// rollback decides, ahead of the health gates, for an upgrade that failed: record the
// rollback, or put the failed member back on the old release at once.
func (o Observed) rollback() (Action, bool) {
	u := o.Upgrade
	if u.Target == "" || u.From == "" || u.From == u.Target {
		return Action{}, false
	}
	if u.RolledBack {
		return o.putBack()
	}
	if u.MemberTimeout <= 0 || !o.someoneRuns(u.From) {
		return Action{}, false // past the point of no return: the cluster version may be raised
	}
	for _, m := range o.Members {
		if !o.timedOut(m) {
			continue
		}
		return Action{Kind: RollBack, Member: m.Name, Version: u.From, Reason: etcdv1alpha1.ReasonUpgradeRolledBack,
			Message: fmt.Sprintf("member %s did not become healthy at %s within %s (spec.memberUpgradeTimeout); it goes back to %s and the upgrade stops. "+
				"To retry, set spec.version to %s, then to %s again", m.Name, u.Target, u.MemberTimeout, u.From, u.From, u.Target)}, true
	}
	return Action{}, false
}

// putBack restarts a member still at the target of a rolled-back upgrade that is not healthy
// and Ready (the one that failed): at once when it does not answer, since it adds nothing to
// the quorum; when it answers but is not Ready, only as any restart of a voter happens (the
// other voters healthy, leadership moved first). A pod already stopping is waited for: it
// comes back at the previous version.
func (o Observed) putBack() (Action, bool) {
	u := o.Upgrade
	for _, m := range o.Members {
		pod := o.Pods[m.Name]
		if pod.Version != u.Target || (m.Healthy && m.Ready) {
			continue
		}
		if pod.Terminating {
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonUpgradeRolledBack,
				Message: fmt.Sprintf("waiting for the pod of member %s to stop; it comes back on %s", m.Name, u.From)}, true
		}
		if m.Healthy && !m.Learner {
			if a, held := o.holdRestart(m); held {
				return a, true
			}
		}
		return Action{Kind: RestartMember, Member: m.Name, Version: u.From, Reason: etcdv1alpha1.ReasonUpgradeRolledBack,
			Message: fmt.Sprintf("putting member %s back on %s: it did not become healthy at %s", m.Name, u.From, u.Target)}, true
	}
	return Action{}, false
}

// holdRestart says what comes before restarting the voter m, which answers: waiting while a
// restart would leave another voter unhealthy or the rest short of a quorum, or moving
// leadership off it.
func (o Observed) holdRestart(m Member) (Action, bool) {
	voters, healthy, successor := o.remainingVoters(m)
	if voters == 0 {
		return Action{}, false
	}
	if healthy < voters || healthy < (voters+1)/2+1 {
		return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonUpgradeRolledBack,
			Message: fmt.Sprintf("not restarting member %s yet: %d of the %d other voting members are healthy", m.Name, healthy, voters)}, true
	}
	if m.Leader {
		return Action{Kind: MoveLeader, Member: m.Name, MemberID: successor.ID, Reason: etcdv1alpha1.ReasonUpgradeRolledBack,
			Message: fmt.Sprintf("moving leadership from %s to %s before putting it back on %s", m.Name, successor.Name, o.Upgrade.From)}, true
	}
	return Action{}, false
}

// timedOut: m was restarted at the target longer than MemberTimeout ago and is still not
// healthy and Ready.
func (o Observed) timedOut(m Member) bool {
	pod, ok := o.Pods[m.Name]
	return ok && pod.Version == o.Upgrade.Target && (!m.Healthy || !m.Ready) &&
		!pod.Created.IsZero() && o.Now.Sub(pod.Created) > o.Upgrade.MemberTimeout
}

func (o Observed) someoneRuns(version string) bool {
	for _, m := range o.Members {
		if o.Pods[m.Name].Version == version {
			return true
		}
	}
	return false
}

// upgradeStep is one pass over the members not running the current spec: an upgrade, a
// rollout, or both at once. What moves, and how to say it.
type upgradeStep struct {
	desired  string
	outdated []Member
	// versionOutdated counts the outdated members whose pods run another release than
	// desired; the others only run an older spec.
	versionOutdated int
	// fromVersion is the release of the first member not at desired ("" for a rollout).
	fromVersion string
	// absent counts the members whose pod is being created again after a restart: neither
	// at desired yet nor outdated.
	absent  int
	leader  *Member
	forward bool // towards a newer release (not going back)
	reason  string
	// say prefixes a detail with where the upgrade or rollout stands.
	say func(detail string) string
}

// rollOut restarts the next member whose pod is not at the desired release or not built
// from the current spec, once every gate is open: one machinery for upgrades and rollouts,
// and a member that needs both gets both in one restart. The caller (planReachable) has
// already made sure that every member is healthy and Ready, no learner is pending and the
// cluster has its full size.
func (o Observed) rollOut() (Action, bool) {
	desired := o.Upgrade.Desired()
	if desired == "" {
		return Action{}, false
	}
	st, stop := o.outdated(desired)
	if stop != nil {
		return *stop, true
	}
	if len(st.outdated) == 0 {
		return Action{}, false
	}
	if a, ok := o.lagging(st); ok {
		return a, true
	}
	if a, ok := o.prepare(st); ok {
		return a, true
	}
	return o.restartNext(st), true
}

// outdated finds the members not at desired or not built from the current spec (none when
// every member is current). stop is set when the upgrade cannot go on: a release unknown,
// or one that cannot reach desired in one step.
func (o Observed) outdated(desired string) (st upgradeStep, stop *Action) {
	st.desired = desired
	for i := range o.Members {
		if o.Members[i].Leader {
			st.leader = &o.Members[i]
		}
	}
	for _, m := range o.byOrdinal() {
		v := o.Pods[m.Name].Version
		if v == "" {
			return st, &Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonUpgrading,
				Message: fmt.Sprintf("waiting to learn which release member %s runs", m.Name)}
		}
		if v == desired {
			if o.specOutdated(m.Name) {
				st.outdated = append(st.outdated, m)
			}
			continue
		}
		// Going back one step (a rollback, or spec.version set back to what members still
		// run) is safe while some member still runs the older release: the cluster version
		// has not been raised, so the older release can read the data.
		back := versions.CheckUpgrade(desired, v) == nil && o.someoneRuns(desired)
		if err := versions.CheckUpgrade(v, desired); err != nil && !back {
			return st, &Action{Kind: Blocked, Member: m.Name, Reason: etcdv1alpha1.ReasonUpgradeBlocked,
				Message: fmt.Sprintf("member %s runs %s, which cannot go to %s: %v; set spec.version to %s", m.Name, v, desired, err, v)}
		}
		st.outdated = append(st.outdated, m)
		st.versionOutdated++
		if st.fromVersion == "" {
			st.fromVersion = v
		}
	}
	if len(st.outdated) > 0 {
		o.describe(&st)
	}
	return st, nil
}

// describe says where the upgrade or rollout stands, and picks its reason.
func (o Observed) describe(st *upgradeStep) {
	if st.versionOutdated == 0 {
		st.reason = etcdv1alpha1.ReasonRollingOut
		progress := fmt.Sprintf("%d of %d members updated", len(o.Members)-len(st.outdated)-st.absent, len(o.Members))
		st.say = func(detail string) string { return "rolling out the new spec: " + progress + "; " + detail }
		return
	}
	progress := fmt.Sprintf("%d/%d members at %s", len(o.Members)-st.versionOutdated-st.absent, len(o.Members), st.desired)
	if len(st.outdated) > st.versionOutdated {
		progress += fmt.Sprintf(", %d of %d members updated", len(o.Members)-len(st.outdated)-st.absent, len(o.Members))
	}
	st.forward = versions.CheckUpgrade(st.fromVersion, st.desired) == nil && !o.Upgrade.RolledBack
	st.reason = etcdv1alpha1.ReasonUpgrading
	verb := "upgrading to " + st.desired
	switch {
	case o.Upgrade.RolledBack:
		st.reason, verb = etcdv1alpha1.ReasonUpgradeRolledBack, "going back to "+st.desired+" after the rolled-back upgrade"
	case !st.forward:
		verb = "going back to " + st.desired
	}
	st.say = func(detail string) string { return verb + ": " + progress + "; " + detail }
}

// lagging waits for a member that has not caught up with the leader.
func (o Observed) lagging(st upgradeStep) (Action, bool) {
	if st.leader == nil {
		return Action{}, false
	}
	for _, m := range o.Members {
		if st.leader.RaftIndex > m.RaftIndex+maxRaftLag {
			return Action{Kind: Wait, Member: m.Name, Reason: st.reason,
				Message: st.say(fmt.Sprintf("waiting for member %s to catch up with the leader (raft index %d of %d)", m.Name, m.RaftIndex, st.leader.RaftIndex))}, true
		}
	}
	return Action{}, false
}

// prepare is what comes before the first restart of an upgrade: a snapshot, to the
// destination of spec.upgradeBackupDestination (backupFirst) or else on a follower's
// volume (not to load the leader), or the only member's; then, going to 3.7, raft
// snapshots on every member.
func (o Observed) prepare(st upgradeStep) (Action, bool) {
	if !st.forward {
		return Action{}, false
	}
	if !o.Upgrade.SnapshotTaken && o.Upgrade.Backup != nil {
		return backupFirst(st, *o.Upgrade.Backup), true
	}
	if !o.Upgrade.SnapshotTaken {
		from := o.Members[0]
		for _, m := range o.Members {
			if !m.Leader {
				from = m
				break
			}
		}
		return Action{Kind: Snapshot, Member: from.Name, Version: st.desired, Reason: st.reason,
			Message: st.say(fmt.Sprintf("saving a snapshot to the volume of member %s before the first restart", from.Name))}, true
	}
	if !o.Upgrade.RaftSnapshotsForced && st.versionOutdated == len(o.Members) && versions.NeedsFreshRaftSnapshots(st.fromVersion, st.desired) {
		n := o.Upgrade.SnapshotCount + raftSnapshotMargin
		return Action{Kind: ForceRaftSnapshots, Entries: n, Version: st.desired, Reason: st.reason,
			Message: st.say(fmt.Sprintf("appending %d no-op raft entries so that every member takes a raft snapshot: %s cannot replay log entries that releases before it wrote",
				n, st.desired))}, true
	}
	return Action{}, false
}

// restartNext restarts the first outdated follower, or moves leadership away from the
// leader when only it is left (unless it is alone), then restarts it. Leadership goes to a
// member that is already current when there is one.
func (o Observed) restartNext(st upgradeStep) Action {
	next := st.outdated[0]
	for _, m := range st.outdated {
		if !m.Leader {
			next = m
			break
		}
	}
	if next.Leader && len(o.Members) > 1 {
		var successor *Member
		for i, m := range o.Members {
			if m.Leader {
				continue
			}
			if successor == nil || !o.current(*successor, st.desired) && o.current(m, st.desired) {
				successor = &o.Members[i]
			}
		}
		return Action{Kind: MoveLeader, Member: next.Name, MemberID: successor.ID, Reason: st.reason,
			Message: st.say(fmt.Sprintf("moving leadership from %s to %s before restarting it", next.Name, successor.Name))}
	}
	return Action{Kind: RestartMember, Member: next.Name, Version: st.desired, Reason: st.reason,
		Message: st.say("restarting member " + next.Name)}
}

// byOrdinal returns the members sorted by ordinal (etcd lists them by ID).
func (o Observed) byOrdinal() []Member {
	out := append([]Member(nil), o.Members...)
	sort.SliceStable(out, func(i, j int) bool {
		a, _ := o.Cluster.MemberOrdinal(out[i].Name)
		b, _ := o.Cluster.MemberOrdinal(out[j].Name)
		return a < b
	})
	return out
}

// current: m's pod runs desired and is built from the current spec.
func (o Observed) current(m Member, desired string) bool {
	return o.Pods[m.Name].Version == desired && !o.specOutdated(m.Name)
}

// backupFirst takes the snapshot before an upgrade as an EtcdBackup (b): created, waited
// for, and recorded (Snapshot) once it succeeded. A failed one blocks the upgrade until a
// human deletes it (the next pass creates it again) or changes the destination.
func backupFirst(st upgradeStep, b UpgradeBackup) Action {
	switch b.State {
	case BackupMissing:
		return Action{Kind: CreateBackup, Backup: b.Name, Version: st.desired, Reason: st.reason,
			Message: st.say(fmt.Sprintf("backing up to spec.upgradeBackupDestination (EtcdBackup %s) before the first restart", b.Name))}
	case BackupSucceeded:
		return Action{Kind: Snapshot, Backup: b.Name, Version: st.desired, Reason: st.reason,
			Message: st.say(fmt.Sprintf("the snapshot before the first restart is EtcdBackup %s", b.Name))}
	case BackupFailed:
		return Action{Kind: Blocked, Backup: b.Name, Version: st.desired, Reason: etcdv1alpha1.ReasonUpgradeBlocked,
			Message: fmt.Sprintf("the backup before the upgrade to %s, EtcdBackup %s, failed (%s): no member is restarted; correct spec.upgradeBackupDestination (or remove it, to snapshot to a member's volume) and delete EtcdBackup %s to try again",
				st.desired, b.Name, b.Message, b.Name)}
	}
	return Action{Kind: Wait, Backup: b.Name, Version: st.desired, Reason: st.reason,
		Message: st.say(fmt.Sprintf("waiting for EtcdBackup %s, the snapshot before the first restart", b.Name))}
}
