// Package recovery decides, as a pure function of what the operator observed, how a
// cluster that lost its quorum is recovered (spec.quorumLossRecovery): when the loss is
// declared, which member the cluster is recovered from, whether it may go on without a
// human, and the next step. It never does I/O; every step is decided again from the
// status and the objects, so the operator may stop at any point and go on after a restart.
//
// The steps, one per pass:
//
//  1. QuorumLost: no member knows a leader and fewer than a majority of the voting members
//     answer. Nothing is done until this lasted, without a break, for longer than after.
//  2. The loss is declared: the survivor is the answering voting member with the highest
//     applied raft index. Recovery goes on at once under Automatic when the data of the
//     members that do not answer is gone (their claims deleted), so that they can never
//     come back to make a majority; otherwise it waits for the approval annotation.
//  3. Recovering: a snapshot of the survivor is saved on its volume (SaveSnapshot); every
//     other member is removed (Retire: its pod deleted, its claim deleted or marked
//     removed); the survivor's pod is deleted (StopSurvivor) and made again
//     (StartSurvivor) with an init container that restores the snapshot as a new cluster
//     of one member, every revision raised by RevisionBump.
//  4. Growing: the survivor answers alone; the membership planner grows the cluster back
//     with learners. Succeeded once nothing is left for it to do.
package recovery

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// RevisionBump is what every revision is raised by when a cluster is recovered: far more
// than a cluster writes between its last applied entry and the loss, so that revisions
// only ever move forward for watchers (etcd's own restore documentation uses the same).
const RevisionBump = 1_000_000_000

// IDFormat is the layout of a recovery's ID: the time the loss was declared, in UTC.
const IDFormat = "20060102-150405"

// Pod is a member pod as the recovery sees it.
type Pod struct {
	// Terminating is true once the pod is being deleted.
	Terminating bool
	// Recovery is the ID of the recovery its restore init container carries, "" without.
	Recovery string
	// Init is the status of that init container, nil before the kubelet reports it.
	Init *corev1.ContainerStatus
}

// Backup is a successful EtcdBackup of the cluster.
type Backup struct {
	Name      string
	Completed time.Time
	// Revision is the revision the backup holds.
	Revision int64
}

// Claim is a member claim as the recovery sees it.
type Claim struct {
	// Going is true while the claim is being deleted.
	Going bool
	// Removed is true once its member was removed (deletionPolicy Retain).
	Removed bool
}

// Observed is what Plan decides from.
type Observed struct {
	// Policy and After are spec.quorumLossRecovery, with defaults applied.
	Policy etcdv1alpha1.QuorumLossPolicy
	After  time.Duration
	// Now is the time of the observation.
	Now time.Time
	// Ephemeral is spec.storage.ephemeral: a member's data does not outlive its pod.
	Ephemeral bool
	// Size is spec.size.
	Size int
	// Quorum is true when the member list answered: a leader and a majority.
	Quorum bool
	// Members are the member names of that list (when Quorum).
	Members []string
	// Voters are the voting members as last observed (status.members).
	Voters []string
	// Answering are the members whose pods answered the status call, with the raft index
	// each has applied; LeaderKnown is true when one of them knows a leader.
	Answering   map[string]uint64
	LeaderKnown bool
	// Pods and Claims are the member pods and claims that exist, by member name.
	Pods   map[string]Pod
	Claims map[string]Claim
	// Last is status.recovery.
	Last *etcdv1alpha1.RecoveryStatus
	// Approval is the value of the approval annotation (AnnotationApproveRecovery).
	Approval string
	// Settled is true when the membership planner has nothing left to do.
	Settled bool
	// Backup is the newest successful backup of the cluster, nil when there is none: what
	// the cluster is recovered from when no member survives.
	Backup *Backup
	// MemberName names the member with an ordinal (cluster.Names.MemberName).
	MemberName func(ordinal int) string
	// Seeding is true when the membership planner would start a new, empty cluster: it
	// sees no member data at all.
	Seeding bool
	// Restarting names the member whose missing pod the membership planner makes again on
	// its data (a CreatePod of reason RecreatingPod); "" when it does not.
	Restarting string
}

// Kind is the kind of step Plan chose.
type Kind string

// The kinds of Step.
const (
	// None: nothing for the recovery to do; the membership planner decides.
	None Kind = "None"
	// Wait: the recovery waits (for the loss to last, for a pod); the planner stands back.
	Wait Kind = "Wait"
	// Blocked: the recovery cannot or may not go on (no survivor, no approval).
	Blocked Kind = "Blocked"
	// SaveSnapshot: save a snapshot of Member, the survivor, to SnapshotPath(ID) on its
	// volume.
	SaveSnapshot Kind = "SaveSnapshot"
	// Retire: remove Member for good: delete its pod, delete its claim or mark it removed.
	Retire Kind = "Retire"
	// StopSurvivor: delete the survivor's pod, to make it again with the restore.
	StopSurvivor Kind = "StopSurvivor"
	// StartSurvivor: create the survivor's pod with the init container that restores the
	// snapshot as a new cluster of one member.
	StartSurvivor Kind = "StartSurvivor"
	// StartFromBackup: create Member, a fresh member whose init container restores the
	// backup as a new cluster of one member (its pod carries the recovery's ID).
	StartFromBackup Kind = "StartFromBackup"
)

// Step is what Plan chose, and what status.recovery becomes.
type Step struct {
	Kind   Kind
	Member string
	// Status is status.recovery after the step (nil: none). A SaveSnapshot that succeeds
	// sets its Snapshot.
	Status *etcdv1alpha1.RecoveryStatus
	// Reason (an etcdv1alpha1.Reason* constant) and Message are for the conditions.
	Reason  string
	Message string
}

// Overrides reports whether the step replaces the membership planner's action: every step
// but None.
func (s Step) Overrides() bool { return s.Kind != None }

// Plan returns the next step of the recovery.
func Plan(o Observed) Step {
	last := o.Last
	if last == nil || last.Phase == etcdv1alpha1.RecoverySucceeded {
		if o.Quorum || !o.lost() {
			return Step{Kind: None, Status: last}
		}
		return o.whileLost(&etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoveryQuorumLost, LostSince: metav1.NewTime(o.Now)})
	}
	st := last.DeepCopy()
	switch st.Phase {
	case etcdv1alpha1.RecoveryQuorumLost, etcdv1alpha1.RecoveryAwaitingApproval, etcdv1alpha1.RecoveryBlocked:
		if o.Quorum || !o.lost() {
			// The members came back by themselves before anything was done.
			return Step{Kind: None}
		}
		return o.whileLost(st)
	case etcdv1alpha1.RecoveryRecovering:
		return o.recovering(st)
	default: // Growing
		if o.Settled {
			st.Phase, st.CompletionTime = etcdv1alpha1.RecoverySucceeded, &metav1.Time{Time: o.Now}
			st.Message = fmt.Sprintf("recovered from member %s; the cluster is back at %d members", st.Survivor, o.Size)
		}
		return Step{Kind: None, Status: st}
	}
}

// quorum is the majority of n voters.
func quorum(n int) int { return n/2 + 1 }

// lost says whether the quorum is lost as far as the members that answer tell: none knows
// a leader and fewer than a majority of the known voting members answer. A cluster whose
// members were never observed has no quorum to lose.
func (o Observed) lost() bool {
	if len(o.Voters) == 0 || o.LeaderKnown {
		return false
	}
	return len(o.answeringVoters()) < quorum(len(o.Voters))
}

func (o Observed) answeringVoters() []string {
	var out []string
	for _, v := range o.Voters {
		if _, ok := o.Answering[v]; ok {
			out = append(out, v)
		}
	}
	return out
}

// silent are the voting members that do not answer, and gone those of them whose data is
// gone: their claim deleted or being deleted (or, ephemeral, their pod).
func (o Observed) silent() (silent, gone []string) {
	for _, v := range o.Voters {
		if _, ok := o.Answering[v]; ok {
			continue
		}
		silent = append(silent, v)
		c, hasClaim := o.Claims[v]
		_, hasPod := o.Pods[v]
		if o.Ephemeral && !hasPod || !o.Ephemeral && (!hasClaim || c.Going || c.Removed) {
			gone = append(gone, v)
		}
	}
	return silent, gone
}

// whileLost decides while the quorum is lost and no recovery has begun: wait for the loss
// to last, then declare it and choose the survivor, then wait for approval.
func (o Observed) whileLost(st *etcdv1alpha1.RecoveryStatus) Step {
	silent, gone := o.silent()
	declareAt := st.LostSince.Add(o.After)
	if o.Now.Before(declareAt) {
		st.Phase = etcdv1alpha1.RecoveryQuorumLost
		st.Message = fmt.Sprintf("no leader, and %d of %d voting members answer (silent: %s); the loss is declared if this lasts until %s",
			len(o.answeringVoters()), len(o.Voters), strings.Join(silent, ", "), declareAt.UTC().Format(time.RFC3339))
		if o.Seeding && !o.Ephemeral {
			// Every member's data is gone. An empty cluster in its place would serve
			// revisions from 1 again to clients that saw higher ones: never without a
			// decision (a backup, or a new EtcdCluster).
			st.Message += "; every member's data is gone, and no empty cluster is started in its place"
			return Step{Kind: Wait, Status: st, Reason: etcdv1alpha1.ReasonQuorumLost, Message: st.Message}
		}
		return Step{Kind: None, Status: st}
	}
	plan, ok := o.source(st, silent)
	if !ok {
		why := fmt.Sprintf("no voting member answers (silent: %s)", strings.Join(silent, ", "))
		if o.Ephemeral {
			why = "the members' data is ephemeral: no member can be restarted from its data"
		}
		return blocked(st, fmt.Sprintf("the quorum is lost and %s, and the cluster has no successful EtcdBackup to recover from: bring a member back, or restore a backup into a new EtcdCluster (spec.bootstrap.restore)", why))
	}
	// Automatic goes on alone only when what it would throw away can never come back: from
	// a survivor, when the others' data is gone so far that they can never form a majority
	// again; from a backup, when every member's data is gone (one that only does not
	// answer may hold writes the backup lacks).
	left := len(o.Voters) - len(gone)
	automatic := o.Policy == etcdv1alpha1.QuorumLossAutomatic && (st.Backup == "" && left < quorum(len(o.Voters)) || st.Backup != "" && left == 0)
	if automatic || o.Approval == st.ID {
		st.Phase, st.Approved = etcdv1alpha1.RecoveryRecovering, true
		how := "approved"
		if automatic && o.Approval != st.ID {
			how = "automatic: the data of " + strings.Join(gone, ", ") + " is gone"
		}
		st.Message = fmt.Sprintf("quorum lost since %s; %s (%s)", st.LostSince.UTC().Format(time.RFC3339), plan, how)
		return o.recovering(st)
	}
	return o.awaitApproval(st, plan, silent)
}

// awaitApproval records in st that the declared loss waits for approval of plan, and why;
// the planner goes on making again a silent member's pod on its data meanwhile.
func (o Observed) awaitApproval(st *etcdv1alpha1.RecoveryStatus, plan string, silent []string) Step {
	st.Phase = etcdv1alpha1.RecoveryAwaitingApproval
	why := "spec.quorumLossRecovery.policy is Manual"
	if o.Policy == etcdv1alpha1.QuorumLossAutomatic {
		why = "the data of members that do not answer still exists and may come back"
	}
	st.Message = fmt.Sprintf("quorum lost since %s; awaiting approval (%s) of the %s. Approve with: kubectl annotate etcdcluster <name> %s=%s",
		st.LostSince.UTC().Format(time.RFC3339), why, plan, etcdv1alpha1.AnnotationApproveRecovery, st.ID)
	if o.restartsOnData(silent) {
		// A silent member whose pod is gone but whose data is not comes back as it was
		// once its pod is made again, and may bring the quorum back with it: the planner
		// goes on making it while the recovery waits for approval.
		return Step{Kind: None, Status: st}
	}
	return Step{Kind: Blocked, Status: st, Reason: etcdv1alpha1.ReasonRecoveryAwaitingApproval, Message: st.Message}
}

// restartsOnData says whether the membership planner is making again the pod of one of the
// silent members on data that still exists (its claim there and not going; never for
// ephemeral data, which its pod took with it).
func (o Observed) restartsOnData(silent []string) bool {
	if o.Restarting == "" || o.Ephemeral || !slices.Contains(silent, o.Restarting) {
		return false
	}
	c, ok := o.Claims[o.Restarting]
	return ok && !c.Going && !c.Removed
}

// source chooses what the cluster is recovered from, into st, and says what the recovery
// would do: the survivor, or with none (or ephemeral data) the newest backup. A new choice
// gets a new ID.
func (o Observed) source(st *etcdv1alpha1.RecoveryStatus, silent []string) (string, bool) {
	survivor, applied, ok := o.survivor()
	ok = ok && !o.Ephemeral
	if !ok && o.Backup == nil {
		return "", false
	}
	st.LostMembers, st.RevisionBump = silent, RevisionBump
	if ok {
		if st.ID == "" || st.Survivor != survivor || st.Backup != "" {
			st.ID = o.Now.UTC().Format(IDFormat)
		}
		st.Survivor, st.SurvivorAppliedIndex, st.Backup = survivor, int64(applied), ""
		return fmt.Sprintf("recovery from member %s (applied raft index %d): remove %s, start %s alone from a snapshot of its data with every revision raised by %d, grow back to %d members; what only %s held is lost",
			survivor, applied, strings.Join(o.others(survivor), ", "), survivor, RevisionBump, o.Size, strings.Join(silent, ", ")), true
	}
	if st.ID == "" || st.Backup != o.Backup.Name {
		st.ID = o.Now.UTC().Format(IDFormat)
	}
	st.Survivor, st.SurvivorAppliedIndex, st.Backup = "", 0, o.Backup.Name
	return fmt.Sprintf("recovery from EtcdBackup %s (revision %d, completed %s), as no member survives: remove every member, start one member from the backup with every revision raised by %d, grow back to %d members; every write after the backup is lost",
		o.Backup.Name, o.Backup.Revision, o.Backup.Completed.UTC().Format(time.RFC3339), RevisionBump, o.Size), true
}

func blocked(st *etcdv1alpha1.RecoveryStatus, msg string) Step {
	st.Phase, st.Message = etcdv1alpha1.RecoveryBlocked, msg
	return Step{Kind: Blocked, Status: st, Reason: etcdv1alpha1.ReasonRecoveryBlocked, Message: msg}
}

// survivor is the answering voting member with the highest applied raft index (the first
// by name among equals): the one that holds the most of what the cluster committed.
func (o Observed) survivor() (string, uint64, bool) {
	best, applied, ok := "", uint64(0), false
	for _, v := range o.answeringVoters() {
		idx := o.Answering[v]
		if !ok || idx > applied || idx == applied && v < best {
			best, applied, ok = v, idx, true
		}
	}
	return best, applied, ok
}

// others are the members other than the survivor that still have a pod or a claim in use,
// sorted: those Retire removes.
func (o Observed) others(survivor string) []string {
	set := map[string]bool{}
	for n, p := range o.Pods {
		if n != survivor && !p.Terminating {
			set[n] = true
		}
	}
	for n, c := range o.Claims {
		if n != survivor && !c.Going && !c.Removed {
			set[n] = true
		}
	}
	for _, v := range o.Voters {
		if v != survivor {
			set[v] = true // named in the plan even when nothing of it is left
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// recovering is the next step of an approved recovery: snapshot, retire the others, stop
// the survivor, start it from the snapshot, wait for it to answer alone.
func (o Observed) recovering(st *etcdv1alpha1.RecoveryStatus) Step {
	s := st.Survivor
	step := func(k Kind, member, msg string) Step {
		return Step{Kind: k, Member: member, Status: st, Reason: etcdv1alpha1.ReasonRecoveringQuorum, Message: msg}
	}
	if st.Backup != "" {
		return o.fromBackup(st, step)
	}
	pod, hasPod := o.Pods[s]
	if st.Snapshot == "" {
		if _, answers := o.Answering[s]; !answers || !hasPod || pod.Terminating {
			return step(Wait, s, fmt.Sprintf("waiting for member %s to answer, to save a snapshot of its data before anything is changed", s))
		}
		return step(SaveSnapshot, s, fmt.Sprintf("saving a snapshot of member %s to its volume", s))
	}
	if n, ok := o.toRetire(s); ok {
		return step(Retire, n, fmt.Sprintf("removing member %s, lost with the quorum", n))
	}
	return o.restartSurvivor(st, step)
}

// restartSurvivor stops the survivor, starts it alone from the snapshot, and waits for it
// to answer alone: then the cluster grows.
func (o Observed) restartSurvivor(st *etcdv1alpha1.RecoveryStatus, step func(Kind, string, string) Step) Step {
	s := st.Survivor
	pod, hasPod := o.Pods[s]
	switch {
	case hasPod && pod.Recovery != st.ID && pod.Terminating:
		return step(Wait, s, fmt.Sprintf("waiting for the pod of member %s to stop", s))
	case hasPod && pod.Recovery != st.ID:
		return step(StopSurvivor, s, fmt.Sprintf("stopping member %s, to start it alone from the snapshot", s))
	case !hasPod:
		if c, ok := o.Claims[s]; !ok || c.Going {
			return blocked(st, fmt.Sprintf("the claim of member %s, which holds the snapshot %s, is gone: restore a backup into a new EtcdCluster (spec.bootstrap.restore)", s, st.Snapshot))
		}
		return step(StartSurvivor, s, fmt.Sprintf("starting member %s alone from the snapshot %s, revisions raised by %d", s, st.Snapshot, st.RevisionBump))
	}
	// The restored survivor answers with a quorum: Growing. It started a cluster of its own,
	// so any other member is one the growing has added already: the pass that first saw it
	// alone may have added a learner and then lost its status patch (a conflict, a crash),
	// and the next must not wait for it to be alone again.
	if o.Quorum && slices.Contains(o.Members, s) {
		st.Phase = etcdv1alpha1.RecoveryGrowing
		st.Message = fmt.Sprintf("member %s serves again, restored from %s; growing back to %d members", s, st.Snapshot, o.Size)
		return Step{Kind: None, Status: st}
	}
	if t := failed(pod.Init); t != nil {
		return step(Wait, s, fmt.Sprintf("member %s could not restore the snapshot (it retries with a growing back-off): %s", s, lastLine(t.Message)))
	}
	return step(Wait, s, fmt.Sprintf("waiting for member %s to restore the snapshot and start alone", s))
}

// fromBackup is the next step of a recovery from a backup: every member removed, then one
// fresh member that restores the backup (the pod that carries the recovery's ID), then wait
// for it to answer alone.
func (o Observed) fromBackup(st *etcdv1alpha1.RecoveryStatus, step func(Kind, string, string) Step) Step {
	for name, p := range o.Pods {
		if p.Recovery != st.ID || p.Terminating {
			continue
		}
		st.Survivor = name
		if o.Quorum && slices.Contains(o.Members, name) { // as in restartSurvivor
			st.Phase = etcdv1alpha1.RecoveryGrowing
			st.Message = fmt.Sprintf("member %s serves again, restored from EtcdBackup %s; growing back to %d members", name, st.Backup, o.Size)
			return Step{Kind: None, Status: st}
		}
		if t := failed(p.Init); t != nil {
			return step(Wait, name, fmt.Sprintf("member %s could not restore EtcdBackup %s (it retries with a growing back-off): %s", name, st.Backup, lastLine(t.Message)))
		}
		return step(Wait, name, fmt.Sprintf("waiting for member %s to restore EtcdBackup %s and start alone", name, st.Backup))
	}
	if n, ok := o.toRetire(""); ok {
		return step(Retire, n, fmt.Sprintf("removing member %s, lost with the quorum", n))
	}
	name := o.freeName()
	return step(StartFromBackup, name, fmt.Sprintf("starting member %s alone from EtcdBackup %s, revisions raised by %d", name, st.Backup, st.RevisionBump))
}

// freeName is the first member name with neither pod nor claim.
func (o Observed) freeName() string {
	for i := 0; ; i++ {
		n := o.MemberName(i)
		_, hasPod := o.Pods[n]
		_, hasClaim := o.Claims[n]
		if !hasPod && !hasClaim {
			return n
		}
	}
}

// toRetire is the first member other than the survivor that still has a running pod or a
// claim in use.
func (o Observed) toRetire(survivor string) (string, bool) {
	for _, n := range o.others(survivor) {
		p, hasPod := o.Pods[n]
		c, hasClaim := o.Claims[n]
		if hasPod && !p.Terminating || hasClaim && !c.Going && !c.Removed {
			return n, true
		}
	}
	return "", false
}

// failed is the failed termination of the restore init container, now or in its last run.
func failed(s *corev1.ContainerStatus) *corev1.ContainerStateTerminated {
	if s == nil {
		return nil
	}
	if t := s.State.Terminated; t != nil && t.ExitCode != 0 {
		return t
	}
	if t := s.LastTerminationState.Terminated; t != nil && t.ExitCode != 0 && s.State.Terminated == nil {
		return t
	}
	return nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndex(s, "\n"); i >= 0 {
		return s[i+1:]
	}
	return s
}

// SnapshotKey is where the snapshot of recovery id is saved, relative to the member's
// volume.
func SnapshotKey(id string) string { return "recovery-" + id + ".db" }
