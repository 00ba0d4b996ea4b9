package status

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
)

// Schedule is what one reconcile of an EtcdBackupSchedule learned and did.
type Schedule struct {
	// Invalid is why spec.schedule does not parse (the API refuses such a schedule; an
	// object stored before a stricter rule may have one); nil otherwise. Nothing else is
	// known then.
	Invalid error
	// Backups are the schedule's backups after this pass (created and pruned), as retention
	// sees them.
	Backups []backup.Item
	// Next is the next run; LastSchedule the latest run acted on.
	Next, LastSchedule *metav1.Time
	// LastVerification is the newest ended verification of the schedule's backups
	// (LastVerification); nil when none ended.
	LastVerification *etcdv1alpha1.ScheduleVerification
}

// ComputeSchedule returns the schedule's status after this reconcile: Ready
// (backup.ScheduleReady, or InvalidSchedule), the next and last runs, and the backups'
// summary.
func ComputeSchedule(s *etcdv1alpha1.EtcdBackupSchedule, in Schedule) etcdv1alpha1.EtcdBackupScheduleStatus {
	out := *s.Status.DeepCopy()
	out.ObservedGeneration = s.Generation
	ready := metav1.Condition{Type: etcdv1alpha1.ConditionReady, ObservedGeneration: s.Generation}
	if in.Invalid != nil {
		out.NextScheduleTime = nil
		ready.Status, ready.Reason, ready.Message = metav1.ConditionFalse, etcdv1alpha1.ReasonInvalidSchedule, in.Invalid.Error()
		meta.SetStatusCondition(&out.Conditions, ready)
		return out
	}
	out.NextScheduleTime = in.Next.DeepCopy()
	if s.Spec.Suspend {
		out.NextScheduleTime = nil
	}
	out.LastScheduleTime = in.LastSchedule.DeepCopy()
	out.Backups = int32(len(in.Backups))
	if last := backup.LastSucceeded(in.Backups); last != nil {
		out.LastSuccessfulBackup = last.Name
		out.LastSuccessfulTime = &metav1.Time{Time: last.Completed}
	}
	ready.Status, ready.Reason, ready.Message = backup.ScheduleReady(s.Spec.Suspend, in.Backups)
	if in.LastVerification != nil {
		out.LastVerification = in.LastVerification.DeepCopy()
	}
	// An incomplete verification found nothing wrong: the backup restored.
	if v := in.LastVerification; v != nil && !v.Passed && v.Reason != etcdv1alpha1.ReasonVerificationIncomplete && ready.Status == metav1.ConditionTrue {
		ready.Status, ready.Reason = metav1.ConditionFalse, etcdv1alpha1.ReasonLastVerificationFailed
		ready.Message = fmt.Sprintf("backup %s did not verify (%s: %s); the next verified backup clears this", v.Backup, v.Reason, v.Message)
	}
	meta.SetStatusCondition(&out.Conditions, ready)
	return out
}

// ScheduleTransitions returns the events the change of a schedule's status from old to
// updated deserves: its Ready condition changing reason (a schedule suspended, resumed, its
// last backup or verification failed, its spec.schedule unreadable). The first status of a
// schedule that works is no news.
func ScheduleTransitions(old, updated etcdv1alpha1.EtcdBackupScheduleStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionReady)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionReady)
	switch {
	case now == nil || was != nil && was.Status == now.Status && was.Reason == now.Reason:
		return nil
	case now.Status == metav1.ConditionTrue && was == nil:
		return nil
	case now.Status == metav1.ConditionTrue, now.Reason == etcdv1alpha1.ReasonSuspended:
		return []Event{{corev1.EventTypeNormal, now.Reason, "Schedule", now.Message}}
	}
	return []Event{{corev1.EventTypeWarning, now.Reason, "Schedule", now.Message}}
}
