package status

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// VerificationOutcome is where the verification of one backup (spec.verify) stands, as the
// controller observed it.
type VerificationOutcome struct {
	// Finished is true once the verification ended for good: passed, failed, or incomplete
	// (Reason VerificationIncomplete); Passed when it passed.
	Finished, Passed bool
	// Reason is an API reason constant (Verifying, Passed, VerificationFailed,
	// VerificationIncomplete, or the failure's reason) and Message says what happened.
	Reason, Message string
	// Found is what the member restored from the artifact held, when the agent reported it.
	Found *etcdv1alpha1.BackupVerification
}

// CheckReport is what the verification's check (the agent's check command) reported when it
// found no difference between the restored member and what the backup recorded.
type CheckReport struct {
	// Location is the artifact's location.
	Location string
	// Revision is the revision the backup recorded; RestoredRevision the restored member's.
	Revision, RestoredRevision int64
	// Found is what the restored member held.
	Found *etcdv1alpha1.BackupVerification
	// KeysCompared and HashCompared say which of the key count and the hash the backup
	// recorded were compared; HashNotCompared says why the hash was not (empty from a check
	// that does not say).
	KeysCompared, HashCompared bool
	HashNotCompared            string
}

// CheckedVerification is the outcome of a verification whose check found no difference. It
// passes only when both the key count and the hash were compared: a check that compared
// less proves less than Verified=True says, and ends VerificationIncomplete, its message
// naming what was not compared and why.
func CheckedVerification(r CheckReport) VerificationOutcome {
	out := VerificationOutcome{Finished: true, Found: r.Found}
	out.Message = fmt.Sprintf("%s restored into a throwaway member at revision %d (the backup recorded %d)", r.Location, r.RestoredRevision, r.Revision)
	if r.KeysCompared && r.HashCompared {
		out.Passed, out.Reason = true, etcdv1alpha1.ReasonVerificationPassed
		out.Message += fmt.Sprintf("; at revision %d its key count and hash are the ones the backup recorded", r.Revision)
		return out
	}
	out.Reason = etcdv1alpha1.ReasonVerificationIncomplete
	out.Message += "; its checksum and revision were checked"
	var missing []string
	if r.KeysCompared {
		out.Message += fmt.Sprintf(", and at revision %d its key count is the one the backup recorded", r.Revision)
	} else {
		missing = append(missing, "the key count (the backup recorded none)")
	}
	if !r.HashCompared {
		why := r.HashNotCompared
		if why == "" {
			why = "the check did not say why"
		}
		missing = append(missing, "the hash ("+why+")")
	}
	out.Message += "; not compared: " + strings.Join(missing, " and ")
	return out
}

// VerificationWanted reports whether backup b asks for a verification that has not ended,
// and succeeded: a failed backup has nothing to verify (its failure is its outcome).
func VerificationWanted(b *etcdv1alpha1.EtcdBackup) bool {
	return b.Spec.Verify && BackupSucceeded(b) && b.Status.Snapshot != nil && !VerificationFinished(b)
}

// VerificationFinished reports whether b's Verified condition says its verification ended:
// True, False, or Unknown for good (VerificationIncomplete).
func VerificationFinished(b *etcdv1alpha1.EtcdBackup) bool {
	return verificationEnded(meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified))
}

// verificationEnded reports whether the Verified condition c says its verification ended.
func verificationEnded(c *metav1.Condition) bool {
	return c != nil && (c.Status != metav1.ConditionUnknown || c.Reason == etcdv1alpha1.ReasonVerificationIncomplete)
}

// ComputeVerification returns b's status with its verification's outcome: the Verified
// condition, status.verification once it ended, and Ready False when it failed (a backup
// that does not restore is no backup to rely on; one whose verification is incomplete
// restored, and stays Ready). An ended verification never changes.
func ComputeVerification(b *etcdv1alpha1.EtcdBackup, o VerificationOutcome, now time.Time) etcdv1alpha1.EtcdBackupStatus {
	out := *b.Status.DeepCopy()
	if VerificationFinished(b) {
		return out
	}
	verified := metav1.ConditionUnknown
	failed := o.Finished && !o.Passed && o.Reason != etcdv1alpha1.ReasonVerificationIncomplete
	if o.Finished {
		switch {
		case o.Passed:
			verified = metav1.ConditionTrue
		case failed:
			verified = metav1.ConditionFalse
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
	if failed {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse,
			Reason: o.Reason, Message: "the backup did not verify: " + o.Message, ObservedGeneration: b.Generation})
	}
	return out
}

// VerificationTransitions returns the events the end of a verification deserves, once.
func VerificationTransitions(old, updated etcdv1alpha1.EtcdBackupStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionVerified)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionVerified)
	if !verificationEnded(now) || verificationEnded(was) {
		return nil
	}
	switch now.Status {
	case metav1.ConditionTrue:
		return []Event{{corev1.EventTypeNormal, "BackupVerified", "Verify", now.Message}}
	case metav1.ConditionUnknown:
		return []Event{{corev1.EventTypeWarning, "BackupVerificationIncomplete", "Verify", now.Message}}
	}
	return []Event{{corev1.EventTypeWarning, "BackupVerificationFailed", "Verify", now.Reason + ": " + now.Message}}
}

// LastVerification is the newest ended verification among backups: which backup, when,
// and how it went (an incomplete one did not pass, with its reason); nil when none ended.
func LastVerification(backups []etcdv1alpha1.EtcdBackup) *etcdv1alpha1.ScheduleVerification {
	var last *etcdv1alpha1.ScheduleVerification
	for i := range backups {
		b := &backups[i]
		c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
		if !verificationEnded(c) || b.Status.Verification == nil {
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
