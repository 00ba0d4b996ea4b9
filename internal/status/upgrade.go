package status

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// upgradeStatus returns status.upgrade after this reconcile, from the last one (in the
// status being built), the planned action and the members' versions:
//
//   - the snapshot before the first restart towards a new spec.version starts a record:
//     from the lowest version the members run, to the target, now, where the snapshot is
//     (a first restart without one starts a record too);
//   - RollBack records the failed member and why;
//   - when nothing is left to do and every member runs the target, the record is completed;
//   - a record whose target is no longer spec.version (cancelled, or replaced by the next
//     upgrade) is dropped once no member needs to move.
func upgradeStatus(in Input, last *etcdv1alpha1.UpgradeStatus, ms []etcdv1alpha1.MemberStatus) *etcdv1alpha1.UpgradeStatus {
	now := metav1.NewTime(in.Observed.Now)
	a := in.Action
	u := last.DeepCopy()
	if u != nil && u.ToVersion != in.Observed.Upgrade.Target && a.Kind == membership.None {
		return nil
	}
	switch {
	case startsUpgrade(in, u, ms):
		u = &etcdv1alpha1.UpgradeStatus{FromVersion: lowestVersion(ms), ToVersion: a.Version, StartedAt: &now}
		switch {
		case a.Kind == membership.Snapshot && a.Backup != "":
			u.Snapshot = &etcdv1alpha1.UpgradeSnapshot{Backup: a.Backup, TakenAt: now}
		case a.Kind == membership.Snapshot:
			u.Snapshot = &etcdv1alpha1.UpgradeSnapshot{Member: a.Member, Path: resources.PreUpgradeSnapshotPath, TakenAt: now}
		}
	case u != nil:
		advance(in, u, ms, now)
	}
	return u
}

// advance records the later steps of an upgrade on its record u.
func advance(in Input, u *etcdv1alpha1.UpgradeStatus, ms []etcdv1alpha1.MemberStatus, now metav1.Time) {
	a := in.Action
	switch {
	case a.Kind == membership.ForceRaftSnapshots && in.Err == nil && u.ToVersion == a.Version:
		u.RaftSnapshotsForcedAt = &now
	case a.Kind == membership.RollBack && u.RolledBack == nil:
		u.RolledBack = &etcdv1alpha1.UpgradeRollback{Member: a.Member, Reason: a.Message, At: now}
	case a.Kind == membership.None && u.RolledBack == nil && u.CompletedAt == nil && allAt(ms, u.ToVersion):
		u.CompletedAt = &now
	}
}

// startsUpgrade: the action is the first step of an upgrade to a newer release (its
// snapshot, done; or a restart when no record exists for that release yet).
func startsUpgrade(in Input, u *etcdv1alpha1.UpgradeStatus, ms []etcdv1alpha1.MemberStatus) bool {
	a := in.Action
	switch {
	case a.Kind == membership.Snapshot:
		return in.Err == nil && isUpgrade(lowestVersion(ms), a.Version)
	case a.Kind == membership.RestartMember && a.Reason == etcdv1alpha1.ReasonUpgrading:
		return (u == nil || u.ToVersion != a.Version) && isUpgrade(lowestVersion(ms), a.Version)
	}
	return false
}

// isUpgrade: from -> to is a step up (going back to what members still run is not).
func isUpgrade(from, to string) bool {
	return from != "" && from != to && versions.CheckUpgrade(from, to) == nil
}

func allAt(ms []etcdv1alpha1.MemberStatus, version string) bool {
	for _, m := range ms {
		if m.Version != version {
			return false
		}
	}
	return len(ms) > 0
}
