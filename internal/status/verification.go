package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// VerificationOutcome is where the verification of one backup (spec.verify) stands, as the
// controller observed it.
type VerificationOutcome struct {
	// Finished is true once the verification passed or failed for good; Passed when it
	// passed.
	Finished, Passed bool
	// Reason is an API reason constant (Verifying, Passed, VerificationFailed, or the
	// failure's reason) and Message says what happened.
	Reason, Message string
	// Found is what the member restored from the artifact held, when the agent reported it.
	Found *etcdv1alpha1.BackupVerification
}

// VerificationWanted reports whether backup b asks for a verification that has not ended,
// and succeeded: a failed backup has nothing to verify (its failure is its outcome).
func VerificationWanted(b *etcdv1alpha1.EtcdBackup) bool {
	return b.Spec.Verify && BackupSucceeded(b) && b.Status.Snapshot != nil && !VerificationFinished(b)
}

// VerificationFinished reports whether b's Verified condition is True or False.
func VerificationFinished(b *etcdv1alpha1.EtcdBackup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
	return c != nil && c.Status != metav1.ConditionUnknown
}

// ComputeVerification returns b's status with its verification's outcome: the Verified
// condition, status.verification once it ended, and Ready False when it failed (a backup
// that does not restore is no backup to rely on). An ended verification never changes.
func ComputeVerification(b *etcdv1alpha1.EtcdBackup, o VerificationOutcome, now time.Time) etcdv1alpha1.EtcdBackupStatus {
	out := *b.Status.DeepCopy()
	if VerificationFinished(b) {
		return out
	}
	verified := metav1.ConditionUnknown
	if o.Finished {
		verified = metav1.ConditionFalse
		if o.Passed {
			verified = metav1.ConditionTrue
		}
		found := etcdv1alpha1.BackupVerification{}
		if o.Found != nil {
			found = *o.Found.DeepCopy()
		}
		found.CompletedAt = metav1.Time{Time: now}
		out.Verification = &found
	}
	meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionVerified, Status: verified,
		Reason: o.Reason, Message: o.Message, ObservedGeneration: b.Generation})
	if o.Finished && !o.Passed {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: o.Reason, Message: "the backup did not verify: " + o.Message, ObservedGeneration: b.Generation})
	}
	return out
}

// VerificationTransitions returns the events the end of a verification deserves, once.
func VerificationTransitions(old, updated etcdv1alpha1.EtcdBackupStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionVerified)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionVerified)
	if now == nil || now.Status == metav1.ConditionUnknown || was != nil && was.Status == now.Status {
		return nil
	}
	if now.Status == metav1.ConditionTrue {
		return []Event{{corev1.EventTypeNormal, "BackupVerified", "Verify", now.Message}}
	}
	return []Event{{corev1.EventTypeWarning, "BackupVerificationFailed", "Verify", now.Reason + ": " + now.Message}}
}

// LastVerification is the newest ended verification among backups: which backup, when,
// and how it went; nil when none ended.
func LastVerification(backups []etcdv1alpha1.EtcdBackup) *etcdv1alpha1.ScheduleVerification {
	var last *etcdv1alpha1.ScheduleVerification
	for i := range backups {
		b := &backups[i]
		c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
		if c == nil || c.Status == metav1.ConditionUnknown || b.Status.Verification == nil {
			continue
		}
		at := b.Status.Verification.CompletedAt
		if last != nil && !at.After(last.CompletedAt.Time) {
			continue
		}
		last = &etcdv1alpha1.ScheduleVerification{Backup: b.Name, CompletedAt: at, Passed: c.Status == metav1.ConditionTrue}
		if !last.Passed {
			last.Reason, last.Message = c.Reason, c.Message
		}
	}
	return last
}
