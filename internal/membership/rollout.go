package membership

import (
	"fmt"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Rollouts. Every member pod records the hash of the spec it was built from (Pod.SpecHash);
// SpecHashes holds, per member, the hash the current spec gives. A member whose hash differs
// (resources, podTemplate scheduling, an etcd option, the TLS Secrets), or whose claim waits
// for a restart to finish growing its file system, is outdated. Outdated members are
// restarted by the same machinery as upgrades (upgrade.go: rollOut), under the same gates:
// every member healthy, Ready and caught up, followers first, leadership moved away before
// the leader restarts, one member per pass. Two exceptions keep a bad spec from holding the
// cluster hostage:
//
//   - an outdated member that is not healthy anyway (a pod that cannot be scheduled, a crash
//     loop) is restarted with the current spec at once: it serves nobody, so restarting it
//     costs no availability (repairOutdated); this is how a correction reaches a member that
//     a bad change broke;
//   - a member restarted with the current spec that is still not healthy after
//     Upgrade.MemberTimeout, while other members are outdated, stops the rollout: Blocked
//     with ReasonRolloutStuck, nothing else is restarted, and the status says what to fix
//     (rolloutStuck).

// specOutdated: the member's pod was built from another spec than the current one, or its
// claim waits for the pod to restart to finish growing its file system.
func (o Observed) specOutdated(member string) bool {
	if o.PVCs[member].Volume.FileSystemResizePending {
		return true
	}
	have, want := o.Pods[member].SpecHash, o.SpecHashes[member]
	return have != "" && want != "" && have != want
}

// UpToDate says whether member's pod runs the desired release and the current spec.
func (o Observed) UpToDate(member string) bool {
	p, ok := o.Pods[member]
	return ok && p.Version == o.Upgrade.Desired() && !o.specOutdated(member)
}

// Updated counts the members of the membership whose pods are up to date.
func (o Observed) Updated() int {
	n := 0
	for _, m := range o.Members {
		if o.UpToDate(m.Name) {
			n++
		}
	}
	return n
}

// duringRollout: between its restarts, an upgrade or a rollout waits for the restarted
// member's pod to be created and to become healthy and Ready. While another member's pod
// still runs an older release or spec, those steps belong to the upgrade or rollout and say
// so: Progressing keeps its reason (Upgrading, RollingOut) and how far it got. After the last
// restart the observation cannot tell an upgrade or rollout from a deleted pod; the last
// status can, and internal/status keeps the reason until that member is back.
func (o Observed) duringRollout(a Action) Action {
	if o.Members == nil || a.Reason != etcdv1alpha1.ReasonWaitingForMembers && a.Reason != etcdv1alpha1.ReasonRecreatingPod {
		return a
	}
	st := upgradeStep{desired: o.Upgrade.Desired()}
	for _, m := range o.byOrdinal() {
		p, ok := o.Pods[m.Name]
		switch {
		case !ok || p.Version == "":
			st.absent++
		case p.Version != st.desired:
			st.outdated = append(st.outdated, m)
			st.versionOutdated++
			if st.fromVersion == "" {
				st.fromVersion = p.Version
			}
		case o.specOutdated(m.Name):
			st.outdated = append(st.outdated, m)
		}
	}
	if st.desired == "" || len(st.outdated) == 0 {
		return a
	}
	o.describe(&st)
	a.Reason, a.Message = st.reason, st.say(a.Message)
	return a
}

// SpecInForce says whether the spec is in force: the membership has spec.size voting
// members, every one's pod runs the desired release and the current spec, and no claim is
// smaller than spec.storage.size asks; or, for a cluster asked to hibernate, no member pod
// is left. A sick member does not make it so or not: that is health (Available, Degraded),
// not the spec.
func (o Observed) SpecInForce() bool {
	if o.Hibernate {
		return len(o.Pods) == 0
	}
	if o.Members == nil || len(o.Members) != o.Size || o.Updated() != len(o.Members) {
		return false
	}
	for _, m := range o.Members {
		if m.Learner {
			return false
		}
		if v := o.PVCs[m.Name].Volume; !o.Ephemeral && (o.Storage.NeedsToGrow(v) || growing(v)) {
			return false
		}
	}
	return true
}

// Settled says that the spec is in force and every member is healthy and Ready: what a
// change that must reach every member before the next (a phase of a CA rotation) waits for.
func (o Observed) Settled() bool {
	if o.Hibernate || !o.SpecInForce() {
		return false
	}
	for _, m := range o.Members {
		if !m.Healthy || !m.Ready {
			return false
		}
	}
	return true
}

// repairOutdated restarts at once an outdated voting member that is not healthy, when its
// pod already runs the desired release (version changes keep the upgrade's own gates).
func (o Observed) repairOutdated() (Action, bool) {
	desired := o.Upgrade.Desired()
	for _, m := range o.Members {
		p := o.Pods[m.Name]
		if m.Learner || !m.Started || m.Healthy || p.Terminating || p.Version != desired || !o.specOutdated(m.Name) {
			continue
		}
		return Action{Kind: RestartMember, Member: m.Name, Version: desired, Reason: etcdv1alpha1.ReasonRollingOut,
			Message: fmt.Sprintf("rolling out the new spec: %d of %d members updated; restarting member %s at once: it is not healthy, so restarting it costs no availability",
				o.Updated(), len(o.Members), m.Name)}, true
	}
	return Action{}, false
}

// rolloutStuck stops a rollout when a member already restarted with the current spec has not
// been healthy for longer than Upgrade.MemberTimeout since its restart, while other members
// still wait for theirs.
func (o Observed) rolloutStuck() (Action, bool) {
	timeout := o.Upgrade.MemberTimeout
	if timeout <= 0 || o.Updated() == len(o.Members) {
		return Action{}, false
	}
	for _, m := range o.Members {
		pod := o.Pods[m.Name]
		if m.Learner || !m.Started || m.Healthy || !o.UpToDate(m.Name) || m.UnhealthySince.IsZero() {
			continue
		}
		since := m.UnhealthySince
		if pod.Created.After(since) {
			since = pod.Created
		}
		if o.Now.Sub(since) <= timeout {
			continue
		}
		return Action{Kind: Blocked, Member: m.Name, Reason: etcdv1alpha1.ReasonRolloutStuck,
			Message: fmt.Sprintf("the rollout stopped at %d of %d members updated: member %s has not been healthy since %s, longer than spec.memberUpgradeTimeout (%s), "+
				"after its restart with the current spec; no other member is restarted. Check its pod (kubectl describe pod %s) and correct the spec: "+
				"the next change restarts %s at once", o.Updated(), len(o.Members), m.Name, since.UTC().Format(time.RFC3339), timeout, m.Name, m.Name)}, true
	}
	return Action{}, false
}
