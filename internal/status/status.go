// Package status computes an EtcdCluster's status from what the operator observed and
// decided in one reconcile. It is the one place status is decided; the controller only
// patches the result, once per reconcile.
package status

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// Detail is what a member's status call reported, beyond membership (leadership is on
// membership.Member).
type Detail struct {
	Version     string
	DBSize      int64
	DBSizeInUse int64
	// Alarms are the alarms raised on this member (NOSPACE, CORRUPT).
	Alarms []string
	// Revision is the key-value store's revision as the member has applied it.
	Revision int64
}

// Maintenance is what the maintenance step of one pass decided and did.
type Maintenance struct {
	// Action is what maintenance.Plan decided.
	Action maintenance.Action
	// Defragmented is the member this pass defragmented (empty when none) and the record
	// of it.
	Defragmented string
	Record       etcdv1alpha1.DefragmentationRecord
	// RunCompleted is when this pass found a scheduled run complete; zero otherwise.
	RunCompleted time.Time
}

// Input is everything one reconcile learned.
type Input struct {
	// Cluster is the EtcdCluster as read at the start of the reconcile.
	Cluster *etcdv1alpha1.EtcdCluster
	// Seen is true when this reconcile observed the members: Observed and Details hold what
	// it saw. When a step before the observation failed or waits, it is false, and the
	// status keeps what the last observation found instead of inventing an empty cluster.
	Seen bool
	// Observed is what the planner saw; Observed.Members is nil when no member answered.
	Observed membership.Observed
	// Details are the status reports of the members that answered, by member name.
	Details map[string]Detail
	// Action is what the planner decided (zero when the reconcile failed before planning).
	Action membership.Action
	// Err is the error that ended the reconcile, if any.
	Err error
	// TLSSeen is true when this reconcile read the cluster's TLS material: CARotation is then
	// the operator's CA as its Secret says (nil in the other TLS modes), and TLS the member
	// and client certificates as their Secrets hold them after this pass (nil when TLS is
	// disabled). Otherwise the status keeps the last ones.
	TLSSeen    bool
	CARotation *etcdv1alpha1.CARotationStatus
	TLS        *etcdv1alpha1.TLSStatus
	// Monitoring is the Monitoring condition this reconcile found (status, reason and
	// message); nil when it did not look, and the last one stays.
	Monitoring *metav1.Condition
	// Maintenance is what the maintenance step did; nil when it did not run (the cluster
	// had something else to do), and status.maintenance stays as it was.
	Maintenance *Maintenance
	// RaftTiming is what the tuning step decided with etcd.timingProfile Auto; nil when it
	// did not run, and status.raftTiming stays.
	RaftTiming *etcdv1alpha1.RaftTimingStatus
	// Storage is what the storage autoscaling step decided; nil when it did not run, and
	// status.storage stays.
	Storage *etcdv1alpha1.StorageStatus
	// Consistency is what the consistency check found; nil when none ran, and
	// status.consistency stays.
	Consistency *etcdv1alpha1.ConsistencyStatus
	// RecoveryDecided says that the quorum-loss recovery (internal/recovery) decided in
	// this pass, and Recovery is what status.recovery becomes (nil: none). When it did
	// not decide, status.recovery stays.
	RecoveryDecided bool
	Recovery        *etcdv1alpha1.RecoveryStatus
	// Auth is etcd's authentication as the auth step left it; nil when the step did not
	// look, and status.auth stays.
	Auth *etcdv1alpha1.AuthStatus
}

// Compute returns the status the cluster should have after this reconcile. Existing
// conditions keep their lastTransitionTime when their status does not change.
// observedGeneration advances only when the spec is in force: the reconcile succeeded and
// saw every member run the current spec, at the desired size and version, with the claims
// at their size (membership.Observed.SpecInForce), so that `kubectl wait` and GitOps health
// checks see a change as done only when it is done. A member that falls sick later does not
// hold it back: that is what Available and Degraded say.
func Compute(in Input) etcdv1alpha1.EtcdClusterStatus {
	c := in.Cluster
	names := cluster.For(c)
	out := *c.Status.DeepCopy()
	if in.Auth != nil {
		out.Auth = in.Auth.DeepCopy()
	}
	if in.Err == nil && in.Seen && in.Observed.SpecInForce() && authInForce(c, out.Auth) {
		out.ObservedGeneration = c.Generation
	}
	out.Selector = labels.SelectorFromSet(names.SelectorLabels()).String()
	out.ClientService = names.ClientService()
	out.ClientSecret = ""
	if names.TLS {
		out.ClientSecret = names.ClientTLSSecret()
	}
	if in.TLSSeen {
		out.CARotation = in.CARotation
		out.TLS = in.TLS.DeepCopy()
	}
	set := func(cond metav1.Condition) {
		cond.ObservedGeneration = c.Generation
		meta.SetStatusCondition(&out.Conditions, cond)
	}
	if in.Monitoring != nil {
		cond := *in.Monitoring
		cond.Type = etcdv1alpha1.ConditionMonitoring
		set(cond)
	}
	out.RaftTiming = raftTimingStatus(c, in.RaftTiming)
	out.Storage = storageStatus(c, in.Storage)
	out.Consistency = consistencyStatus(c, in.Consistency)
	if in.RecoveryDecided {
		out.Recovery = in.Recovery.DeepCopy()
	}
	if !in.Seen {
		// Nothing was observed: members, versions and availability stay as last observed,
		// Available with the generation it was observed for.
		available := notObserved(out.Conditions)
		progressing := progressingCondition(in.Action)
		degraded := degradedCondition(in, out)
		if meta.FindStatusCondition(out.Conditions, etcdv1alpha1.ConditionAvailable) == nil {
			set(available)
		}
		set(progressing)
		set(degraded)
		set(readyCondition(available, progressing, degraded, int(out.ReadyMembers), int(out.UpdatedMembers), int(c.Spec.Size)))
		return out
	}

	out.Maintenance = maintenanceStatus(out.Maintenance, in.Maintenance)
	observedMembers(in, names, &out)
	out.Upgrade = upgradeStatus(in, out.Upgrade, out.Members)
	voters, healthy := countVoters(out.Members)
	out.ReadyMembers = int32(readyVoters(in.Observed.Members))

	available := availableCondition(in, voters, healthy)
	progressing := configuringAuth(rotatingCA(stillRollingOut(progressingCondition(in.Action), c.Status.Conditions, in.Observed), out.CARotation), c, out.Auth)
	degraded := suspectedLoss(in, available, out.Conditions, degradedCondition(in, out))
	meta.RemoveStatusCondition(&out.Conditions, etcdv1alpha1.ConditionHibernated)
	var hibernated *metav1.Condition
	if in.Observed.Hibernate {
		h := hibernatedCondition(in)
		set(h)
		hibernated, available, degraded = hibernating(in, h, available, degraded)
	}
	ready := readyCondition(available, progressing, degraded, int(out.ReadyMembers), int(out.UpdatedMembers), int(c.Spec.Size))
	if hibernated != nil {
		ready = asHibernated(ready, *hibernated)
	}
	set(available)
	set(progressing)
	set(degraded)
	set(ready)
	return out
}

// hibernatedCondition says how far the hibernation spec.hibernation asks for got: False
// while the final backup is taken and the members stop (or the backup failed), True once
// the planner found no member pod left.
func hibernatedCondition(in Input) metav1.Condition {
	a := in.Action
	if a.Reason != etcdv1alpha1.ReasonHibernated {
		return metav1.Condition{Type: etcdv1alpha1.ConditionHibernated, Status: metav1.ConditionFalse, Reason: a.Reason, Message: a.Message}
	}
	msg := a.Message
	if b := in.Observed.FinalBackup; b != nil {
		msg = fmt.Sprintf("%s; the final backup is EtcdBackup %s", msg, b.Name)
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionHibernated, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonHibernated, Message: msg}
}

// hibernating adjusts Available and Degraded to the hibernation h says: once hibernated
// (returned, nil before), both False with reason Hibernated; while the members stop, Degraded
// is not raised for them, stopped on purpose, unless the pass failed.
func hibernating(in Input, h, available, degraded metav1.Condition) (*metav1.Condition, metav1.Condition, metav1.Condition) {
	switch {
	case h.Status == metav1.ConditionTrue:
		return &h, asHibernated(available, h), asHibernated(degraded, h)
	case h.Reason == etcdv1alpha1.ReasonHibernating && in.Err == nil:
		degraded = metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse, Reason: h.Reason, Message: h.Message}
	}
	return nil, available, degraded
}

// asHibernated turns Available, Degraded or Ready False with reason Hibernated: a cluster
// whose members were stopped on purpose serves nothing, and nothing is wrong with it.
func asHibernated(c, hibernated metav1.Condition) metav1.Condition {
	c.Status, c.Reason, c.Message = metav1.ConditionFalse, etcdv1alpha1.ReasonHibernated, hibernated.Message
	return c
}

// observedMembers sets what this pass observed of the members in out: each member with the
// version it was last seen to run, the lowest of them, and how many are updated; or, when
// nobody answered, the members as last known, none of them healthy.
func observedMembers(in Input, names cluster.Names, out *etcdv1alpha1.EtcdClusterStatus) {
	c := in.Cluster
	if in.Observed.Members != nil {
		out.Members = members(names, in.Observed.Members, in.Details, defragmentations(c.Status.Members, in.Maintenance))
		seenVersions(out.Members, c.Status.Members, in.Observed.Pods)
		if v := lowestVersion(out.Members); v != "" {
			out.CurrentVersion = v
		}
		out.UpdatedMembers = int32(updatedMembers(in.Observed, in.Details))
		placed(out.Members, in.Observed.Pods)
		return
	}
	for i := range out.Members {
		m := &out.Members[i]
		m.Healthy, m.Leader = false, false
		if m.UnhealthySince == nil && !in.Observed.Now.IsZero() {
			m.UnhealthySince = &metav1.Time{Time: in.Observed.Now}
		}
	}
	placed(out.Members, in.Observed.Pods)
}

// placed sets where each member runs: its pod's node and that node's zone, as observed in
// this pass; both empty for a member without a pod, or whose pod is not placed yet.
func placed(ms []etcdv1alpha1.MemberStatus, pods map[string]membership.Pod) {
	for i := range ms {
		p := pods[ms[i].Name]
		ms[i].Node, ms[i].Zone = p.Node, p.Zone
	}
}

// suspectedLoss is the Degraded condition of a pass: degraded, unless the member list
// failed and the loss of quorum is only suspected (Available QuorumUnconfirmed), which says
// nothing new about health: the last Degraded stays, with no QuorumLost from the recovery's
// first look and no event, until the loss is confirmed.
func suspectedLoss(in Input, available metav1.Condition, conds []metav1.Condition, degraded metav1.Condition) metav1.Condition {
	last := meta.FindStatusCondition(conds, etcdv1alpha1.ConditionDegraded)
	if last != nil && in.Observed.Members == nil && available.Reason == etcdv1alpha1.ReasonQuorumUnconfirmed && in.Err == nil {
		return *last
	}
	return degraded
}

// notObserved is the Available condition of a pass that did not observe the members: the
// last one, or Unknown when there is none.
func notObserved(conds []metav1.Condition) metav1.Condition {
	if last := meta.FindStatusCondition(conds, etcdv1alpha1.ConditionAvailable); last != nil {
		return *last
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionUnknown,
		Reason: etcdv1alpha1.ReasonNotObserved, Message: "the members have not been observed yet"}
}

// maintenanceStatus is status.maintenance after a pass whose maintenance step did m (nil:
// none ran, and the last stays).
func maintenanceStatus(last *etcdv1alpha1.MaintenanceStatus, m *Maintenance) *etcdv1alpha1.MaintenanceStatus {
	if m == nil {
		return last
	}
	out := &etcdv1alpha1.MaintenanceStatus{Reason: string(m.Action.Reason), Message: m.Action.Message}
	if last != nil {
		out.LastScheduledRun = last.LastScheduledRun
	}
	if !m.RunCompleted.IsZero() {
		out.LastScheduledRun = &metav1.Time{Time: m.RunCompleted}
	}
	return out
}

// defragmentations are the members' last defragmentations: those the status showed, and the
// one of this pass.
func defragmentations(last []etcdv1alpha1.MemberStatus, m *Maintenance) map[string]*etcdv1alpha1.DefragmentationRecord {
	out := map[string]*etcdv1alpha1.DefragmentationRecord{}
	for _, ms := range last {
		if ms.LastDefragmentation != nil {
			out[ms.Name] = ms.LastDefragmentation.DeepCopy()
		}
	}
	if m != nil && m.Defragmented != "" {
		out[m.Defragmented] = m.Record.DeepCopy()
	}
	return out
}

func members(names cluster.Names, in []membership.Member, details map[string]Detail, defrags map[string]*etcdv1alpha1.DefragmentationRecord) []etcdv1alpha1.MemberStatus {
	out := make([]etcdv1alpha1.MemberStatus, 0, len(in))
	var highest uint64
	for _, m := range in {
		if _, answered := details[m.Name]; answered && m.RaftIndex > highest {
			highest = m.RaftIndex
		}
	}
	for _, m := range in {
		d, answered := details[m.Name]
		var lag int64
		if answered {
			lag = int64(highest - m.RaftIndex)
		}
		var since *metav1.Time
		if !m.UnhealthySince.IsZero() {
			since = &metav1.Time{Time: m.UnhealthySince}
		}
		out = append(out, etcdv1alpha1.MemberStatus{
			UnhealthySince:       since,
			Name:                 m.Name,
			ID:                   strconv.FormatUint(m.ID, 16),
			PeerURL:              m.PeerURL,
			ClientURL:            names.ClientURL(m.Name),
			Leader:               m.Leader,
			Learner:              m.Learner,
			Healthy:              m.Healthy,
			Version:              d.Version,
			DBSize:               d.DBSize,
			DBSizeInUse:          d.DBSizeInUse,
			FragmentationPercent: maintenance.FragmentationPercent(d.DBSize, d.DBSizeInUse),
			RaftIndexLag:         lag,
			Alarms:               d.Alarms,
			LastDefragmentation:  defrags[m.Name],
		})
	}
	return out
}

// seenVersions fills in the version of each member that did not answer in this pass: the
// one it reported when it last answered (last status), else its pod's. A member that is
// restarting into a new release counts with the release it last ran, so currentVersion
// never says an upgrade is done before every member has answered with the new release.
func seenVersions(ms, last []etcdv1alpha1.MemberStatus, pods map[string]membership.Pod) {
	before := make(map[string]string, len(last))
	for _, m := range last {
		before[m.Name] = m.Version
	}
	for i := range ms {
		m := &ms[i]
		switch {
		case m.Version != "":
		case before[m.Name] != "":
			m.Version = before[m.Name]
		default:
			m.Version = pods[m.Name].Version
		}
	}
}

// updatedMembers counts the members whose pods run the desired release and the current
// spec and that answered in this pass with that release (or with none: a status that
// carries no version is judged by the pod's): a pod made at the new release whose etcd has
// not started yet is not updated.
func updatedMembers(o membership.Observed, details map[string]Detail) int {
	n := 0
	for _, m := range o.Members {
		d, answered := details[m.Name]
		if o.UpToDate(m.Name) && answered && (d.Version == "" || d.Version == o.Upgrade.Desired()) {
			n++
		}
	}
	return n
}

func countVoters(ms []etcdv1alpha1.MemberStatus) (voters, healthy int) {
	for _, m := range ms {
		if m.Learner {
			continue
		}
		voters++
		if m.Healthy {
			healthy++
		}
	}
	return voters, healthy
}

// readyVoters counts the voting members that are healthy and whose pods are Ready: the
// members the client Service sends clients to.
func readyVoters(ms []membership.Member) int {
	n := 0
	for _, m := range ms {
		if !m.Learner && m.Healthy && m.Ready {
			n++
		}
	}
	return n
}

func availableCondition(in Input, voters, healthy int) metav1.Condition {
	last := meta.FindStatusCondition(in.Cluster.Status.Conditions, etcdv1alpha1.ConditionAvailable)
	switch {
	case in.Observed.Members != nil && voters > 0 && healthy >= voters/2+1:
		return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue,
			Reason:  etcdv1alpha1.ReasonQuorumAvailable,
			Message: fmt.Sprintf("%d of %d voting members are healthy", healthy, voters)}
	case in.Observed.Members != nil && voters > 0:
		// The member list is a linearizable read: it answered, so a quorum committed it.
		return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionUnknown,
			Reason: etcdv1alpha1.ReasonQuorumUnconfirmed,
			Message: fmt.Sprintf("%d of %d voting members answered their status in time, but the member list, a linearizable read that needs a quorum, answered",
				healthy, voters)}
	case voters > 0 && !lossConfirmed(last, in.Observed.Now):
		return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionUnknown,
			Reason: etcdv1alpha1.ReasonQuorumUnconfirmed,
			Message: fmt.Sprintf("%d of %d voting members are healthy and the member list did not answer; the loss of quorum is declared if it still does not answer %s after the first failure",
				healthy, voters, QuorumLossConfirmAfter)}
	case in.Action.Reason == etcdv1alpha1.ReasonBootstrapping, voters == 0 && in.Action.Reason != "":
		// A cluster none of whose members was ever seen (bootstrapping, or waiting for the
		// backup it restores) has no quorum to lose: it says what it waits for.
		return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionFalse,
			Reason: in.Action.Reason, Message: in.Action.Message}
	default:
		return metav1.Condition{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionFalse,
			Reason: etcdv1alpha1.ReasonQuorumLost,
			Message: fmt.Sprintf("%d of %d voting members are healthy; a quorum needs %d, so the cluster refuses writes",
				healthy, voters, voters/2+1)}
	}
}

// QuorumLossConfirmAfter is how long the member list (a linearizable read) must keep
// failing, with fewer than a quorum of voting members healthy, before the loss of quorum is
// declared (Available=False/QuorumLost and its event). On a loaded node a pass can see every
// call time out while clients are served; the operator looks again every 2 seconds
// meanwhile, and a pass that reads the member list ends the suspicion.
const QuorumLossConfirmAfter = 10 * time.Second

// lossConfirmed says whether a loss of quorum seen in this pass is confirmed: it was already
// declared, or Available has said QuorumUnconfirmed, without a break, since at least
// QuorumLossConfirmAfter before now.
func lossConfirmed(last *metav1.Condition, now time.Time) bool {
	switch {
	case last == nil:
		return false
	case last.Reason == etcdv1alpha1.ReasonQuorumLost:
		return true
	case last.Status != metav1.ConditionUnknown || last.Reason != etcdv1alpha1.ReasonQuorumUnconfirmed:
		return false
	}
	return !now.IsZero() && now.Sub(last.LastTransitionTime.Time) >= QuorumLossConfirmAfter
}

// progressingCondition is True for every action but None and Blocked: the operator is
// changing the cluster, or waiting for a change to take effect.
func progressingCondition(a membership.Action) metav1.Condition {
	switch a.Kind {
	case membership.None, membership.Blocked, "":
		return metav1.Condition{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse,
			Reason: etcdv1alpha1.ReasonAsExpected, Message: "no change under way"}
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: a.Reason, Message: a.Message}
}

// authInForce says whether etcd's authentication, as last seen (nil: never looked), is what
// spec.auth asks. A cluster that never had auth asked for is taken at its word: the operator
// looks only once auth was asked for (internal/auth.Look).
func authInForce(c *etcdv1alpha1.EtcdCluster, seen *etcdv1alpha1.AuthStatus) bool {
	return c.Spec.Auth.Enabled == (seen != nil && seen.Enabled)
}

// configuringAuth makes Progressing True while etcd's authentication is not what spec.auth
// asks and no other change is under way.
func configuringAuth(p metav1.Condition, c *etcdv1alpha1.EtcdCluster, seen *etcdv1alpha1.AuthStatus) metav1.Condition {
	if p.Status == metav1.ConditionTrue || authInForce(c, seen) {
		return p
	}
	msg := "turning etcd's authentication off"
	if c.Spec.Auth.Enabled {
		msg = "turning etcd's authentication on, once every member is healthy and runs the spec"
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonConfiguringAuth, Message: msg}
}

// caPhases say what each phase of a CA rotation means.
var caPhases = map[string]string{
	"TrustingNew": "phase 1 of 3, members and clients trust the old and the new CA; certificates are issued by the new CA next",
	"ServingNew":  "phase 2 of 3, certificates are issued by the new CA; the old CA is no longer trusted next",
	"DroppingOld": "phase 3 of 3, only the new CA is trusted",
}

// rotatingCA keeps Progressing True while the CA is rotated: when no other change is under
// way, the rotation waits for its phase to be seen by clients or for the members to settle.
func rotatingCA(p metav1.Condition, rot *etcdv1alpha1.CARotationStatus) metav1.Condition {
	if p.Status == metav1.ConditionTrue || rot == nil || rot.Phase == "" {
		return p
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonRotatingCA, Message: "rotating the CA: " + caPhases[rot.Phase]}
}

// stillRollingOut keeps Progressing at Upgrading, UpgradeRolledBack or RollingOut while the last restarted
// member of an upgrade or rollout comes back (its pod created again, then waited for): the
// planner cannot tell that from a deleted pod, the last status can.
func stillRollingOut(p metav1.Condition, last []metav1.Condition, o membership.Observed) metav1.Condition {
	was := meta.FindStatusCondition(last, etcdv1alpha1.ConditionProgressing)
	if was == nil || was.Status != metav1.ConditionTrue ||
		p.Reason != etcdv1alpha1.ReasonRecreatingPod && p.Reason != etcdv1alpha1.ReasonWaitingForMembers {
		return p
	}
	switch was.Reason {
	case etcdv1alpha1.ReasonRollingOut:
		p.Message = fmt.Sprintf("rolling out the new spec: %d of %d members updated; %s", o.Updated(), len(o.Members), p.Message)
	case etcdv1alpha1.ReasonUpgrading, etcdv1alpha1.ReasonUpgradeRolledBack:
		desired := o.Upgrade.Desired()
		verb, _, ok := strings.Cut(was.Message, ":")
		if !ok {
			verb = "upgrading to " + desired
		}
		at := 0
		for _, m := range o.Members {
			if pod, ok := o.Pods[m.Name]; ok && pod.Version == desired {
				at++
			}
		}
		p.Message = fmt.Sprintf("%s: %d/%d members at %s; %s", verb, at, len(o.Members), desired, p.Message)
	default:
		return p
	}
	p.Reason = was.Reason
	return p
}

func degradedCondition(in Input, st etcdv1alpha1.EtcdClusterStatus) metav1.Condition {
	ms := st.Members
	degraded := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
	}
	if in.Err != nil {
		msg := in.Err.Error()
		if !in.Seen {
			msg += " (the members were not observed in this pass: members and availability are as last observed)"
		}
		return degraded(etcdv1alpha1.ReasonReconcileFailed, msg)
	}
	if !in.Seen {
		// Waiting before the observation (certificates): say nothing new about health.
		if last := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionDegraded); last != nil {
			return *last
		}
	}
	if c, ok := blockedOrRecovering(in.Action, st.Recovery); ok {
		return c
	}
	if st.Upgrade != nil && st.Upgrade.RolledBack != nil {
		return degraded(etcdv1alpha1.ReasonUpgradeRolledBack, st.Upgrade.RolledBack.Reason)
	}
	if c, ok := outOfSpace(in, st); ok {
		return c
	}
	if c, ok := unschedulable(in.Observed); ok {
		return c
	}
	if sick := sickVoters(in.Observed); len(sick) > 0 {
		return degraded(etcdv1alpha1.ReasonMembersUnhealthy, fmt.Sprintf("members not healthy: %s", strings.Join(sick, ", ")))
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionFalse,
		Reason: etcdv1alpha1.ReasonAsExpected, Message: fmt.Sprintf("%d members observed", len(ms))}
}

// sickVoters says of each started voting member that answered unhealthy what sickMember
// says; none when no member answered.
func sickVoters(o membership.Observed) []string {
	var sick []string
	for _, m := range o.Members {
		if m.Started && !m.Learner && !m.Healthy {
			sick = append(sick, sickMember(o, m))
		}
	}
	return sick
}

// UnschedulableAfter is how long a member pod may wait for a node before the cluster says so
// (Degraded, MemberUnschedulable): long enough that a pod waiting for its volume to be made
// does not count, short enough that nobody waits on a Pending pod in silence.
const UnschedulableAfter = 30 * time.Second

// unschedulable is the Degraded condition of a cluster with member pods the scheduler could
// place on no node for UnschedulableAfter or more, in member order, with the scheduler's
// words for each. The message gives when each began to wait, not for how long, so that it
// stays the same from one pass to the next.
func unschedulable(o membership.Observed) (metav1.Condition, bool) {
	var stuck []string
	for _, name := range o.PodNames() {
		p := o.Pods[name]
		if p.Unschedulable == "" || p.Terminating || o.Now.Sub(p.UnschedulableSince) < UnschedulableAfter {
			continue
		}
		stuck = append(stuck, fmt.Sprintf("member %s has waited for a node since %s: %s", name,
			p.UnschedulableSince.UTC().Format(time.RFC3339), p.Unschedulable))
	}
	if len(stuck) == 0 {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonMemberUnschedulable, Message: strings.Join(stuck, "; ")}, true
}

// blockedOrRecovering is the Degraded condition of a pass whose action is Blocked (a
// declared quorum loss that waits is one), or of a cluster that lost its quorum, before the
// loss is declared or while it is recovered.
func blockedOrRecovering(a membership.Action, r *etcdv1alpha1.RecoveryStatus) (metav1.Condition, bool) {
	if a.Kind == membership.Blocked {
		return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: a.Reason, Message: a.Message}, true
	}
	if r == nil || r.Phase != etcdv1alpha1.RecoveryQuorumLost && r.Phase != etcdv1alpha1.RecoveryRecovering {
		return metav1.Condition{}, false
	}
	reason := etcdv1alpha1.ReasonQuorumLost
	if r.Phase == etcdv1alpha1.RecoveryRecovering {
		reason = etcdv1alpha1.ReasonRecoveringQuorum
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: r.Message}, true
}

// outOfSpace is the Degraded condition of a cluster out of space (noSpace) or about to be
// with nothing left to grow (storageCeiling), or, after those, of one with members whose
// data differs from the majority's (corruptMembers).
func outOfSpace(in Input, st etcdv1alpha1.EtcdClusterStatus) (metav1.Condition, bool) {
	if c, ok := noSpace(in); ok {
		return c, true
	}
	if c, ok := storageCeiling(in.Cluster, st.Storage); ok {
		return c, true
	}
	return corruptMembers(in, st.Consistency)
}

// noSpace is the Degraded condition of a cluster with a NOSPACE alarm raised on a member it
// observed in this pass: what the maintenance step is doing about it, that the data does not
// fit, or that recovery is left to a human.
func noSpace(in Input) (metav1.Condition, bool) {
	var full []string
	for name, d := range in.Details {
		if slices.Contains(d.Alarms, etcd.AlarmNoSpace) {
			full = append(full, name)
		}
	}
	if len(full) == 0 {
		return metav1.Condition{}, false
	}
	sort.Strings(full)
	msg := fmt.Sprintf("the NOSPACE alarm is raised on %s: the database reached etcd.quotaBackendBytes and the cluster accepts only reads and deletes", strings.Join(full, ", "))
	reason := etcdv1alpha1.ReasonNoSpace
	switch m := in.Maintenance; {
	case m == nil:
		msg += "; recovery waits until the cluster has nothing else to do"
	case m.Action.Kind == maintenance.CannotRecover:
		reason = etcdv1alpha1.ReasonNoSpaceDataDoesNotFit
		msg += "; " + m.Action.Message + ": raise spec.etcd.quotaBackendBytes, or delete data"
	case in.Cluster.Spec.Maintenance.NoSpaceRecovery == etcdv1alpha1.NoSpaceRecoveryDisabled:
		msg += "; automatic recovery is off (spec.maintenance.noSpaceRecovery: Disabled): compact, defragment and disarm by hand"
	default:
		msg += "; recovering: " + m.Action.Message
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: reason, Message: msg}, true
}

// sickMember describes an unhealthy member for the Degraded message: where, since when,
// whether its node is lost, and when the operator replaces it if it stays so (the planner's
// own ReplaceAt).
func sickMember(o membership.Observed, m membership.Member) string {
	pod := o.Pods[m.Name]
	name := m.Name + where(pod)
	if m.UnhealthySince.IsZero() {
		return name
	}
	since := m.UnhealthySince.UTC().Format(time.RFC3339)
	if pod.LostNode.Node != "" {
		since += "; " + pod.LostNode.String()
	}
	at, _, ok := o.ReplaceAt(m)
	if !ok {
		return fmt.Sprintf("%s (since %s; replacement is off)", name, since)
	}
	return fmt.Sprintf("%s (since %s; replaced at %s if still unhealthy)", name, since, at.UTC().Format(time.RFC3339))
}

// where says where a member pod runs, for a message: " on node N" (and " in zone Z"), or
// nothing when it is not placed.
func where(p membership.Pod) string {
	switch {
	case p.Node == "":
		return ""
	case p.Zone == "":
		return " on node " + p.Node
	}
	return " on node " + p.Node + " in zone " + p.Zone
}

func readyCondition(available, progressing, degraded metav1.Condition, ready, updated, size int) metav1.Condition {
	notReady := func(reason, msg string) metav1.Condition {
		return metav1.Condition{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	switch {
	case available.Status != metav1.ConditionTrue:
		return notReady(etcdv1alpha1.ReasonNotAvailable, available.Message)
	case degraded.Status == metav1.ConditionTrue:
		return notReady(etcdv1alpha1.ReasonDegraded, degraded.Message)
	case progressing.Status == metav1.ConditionTrue:
		return notReady(etcdv1alpha1.ReasonProgressing, progressing.Message)
	case ready != size:
		return notReady(etcdv1alpha1.ReasonProgressing, fmt.Sprintf("%d of %d members are ready voting members", ready, size))
	case updated != size:
		return notReady(etcdv1alpha1.ReasonProgressing, fmt.Sprintf("%d of %d members run the current spec", updated, size))
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonReady, Message: fmt.Sprintf("%d of %d members are ready", ready, size)}
}

// lowestVersion is the lowest version any member reports: the version the cluster as a
// whole can be relied on to support.
func lowestVersion(ms []etcdv1alpha1.MemberStatus) string {
	lowest := ""
	for _, m := range ms {
		if m.Version == "" {
			continue
		}
		if lowest == "" || versionLess(m.Version, lowest) {
			lowest = m.Version
		}
	}
	return lowest
}

// versionLess compares dotted numeric versions ("3.5.35" < "3.6.2").
func versionLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < len(as) && i < len(bs); i++ {
		x, _ := strconv.Atoi(as[i])
		y, _ := strconv.Atoi(bs[i])
		if x != y {
			return x < y
		}
	}
	return len(as) < len(bs)
}
