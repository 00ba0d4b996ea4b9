package backup

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// ScheduleReady is the Ready condition of an EtcdBackupSchedule whose schedule parsed,
// given spec.suspend and the schedule's backups:
//
//   - False, Suspended, when suspended: no backup will be created, whatever the last one
//     did;
//   - False, LastBackupFailed, when the newest finished backup failed; the message names
//     it, with its reason and message ("backup b failed (Timeout: ...); the next run tries
//     again"). The condition clears by itself when the next run succeeds. Running backups are not looked at: they have no outcome yet;
//   - True, Scheduled, otherwise (the last backup succeeded, or none finished yet).
func ScheduleReady(suspended bool, items []Item) (status metav1.ConditionStatus, reason, message string) {
	if suspended {
		return metav1.ConditionFalse, etcdv1alpha1.ReasonSuspended, "spec.suspend is set: no backup is created"
	}
	last := LastFinished(items)
	switch {
	case last == nil:
		return metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled, "no backup has finished yet"
	case !last.Succeeded:
		why := last.Reason
		if last.Message != "" && why != "" {
			why += ": "
		}
		why += last.Message
		msg := fmt.Sprintf("backup %s failed", last.Name)
		if why != "" {
			msg += " (" + why + ")"
		}
		return metav1.ConditionFalse, etcdv1alpha1.ReasonLastBackupFailed, msg + "; the next run tries again"
	default:
		return metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled, fmt.Sprintf("backup %s succeeded", last.Name)
	}
}
