package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// BackupOutcome is where one backup stands, as the controller observed it.
type BackupOutcome struct {
	// Finished is true once the backup succeeded or failed for good.
	Finished bool
	// Succeeded is true when the artifact is stored (Finished too).
	Succeeded bool
	// Reason is an API reason constant: Pending, Running, Completed or a failure's.
	Reason string
	// Message says what happened, for a person.
	Message string
	// StartedAt is when the backup pod started, if it did.
	StartedAt *metav1.Time
	// Artifact and Snapshot describe a successful backup.
	Artifact *etcdv1alpha1.BackupArtifact
	Snapshot *etcdv1alpha1.BackupSnapshot
}

// ComputeBackup returns a backup's status after this reconcile. A finished backup's
// status never changes again: the outcome of a reconcile after the end is ignored.
func ComputeBackup(b *etcdv1alpha1.EtcdBackup, o BackupOutcome, now time.Time) etcdv1alpha1.EtcdBackupStatus {
	out := *b.Status.DeepCopy()
	if BackupFinished(b) {
		return out
	}
	out.ObservedGeneration = b.Generation
	if o.StartedAt != nil && out.StartedAt == nil {
		out.StartedAt = o.StartedAt.DeepCopy()
	}
	succeeded := metav1.ConditionUnknown
	ready := metav1.ConditionFalse
	if o.Finished {
		out.CompletedAt = &metav1.Time{Time: now}
		succeeded = metav1.ConditionFalse
		if o.Succeeded {
			succeeded, ready = metav1.ConditionTrue, metav1.ConditionTrue
			out.Artifact = o.Artifact.DeepCopy()
			out.Snapshot = o.Snapshot.DeepCopy()
		}
	}
	for _, t := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{etcdv1alpha1.ConditionSucceeded, succeeded}, {etcdv1alpha1.ConditionReady, ready}} {
		meta.SetStatusCondition(&out.Conditions, metav1.Condition{
			Type: t.typ, Status: t.status, Reason: o.Reason, Message: o.Message, ObservedGeneration: b.Generation,
		})
	}
	return out
}

// BackupFinished reports whether a backup's status says it succeeded or failed for good.
func BackupFinished(b *etcdv1alpha1.EtcdBackup) bool {
	c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	return c != nil && c.Status != metav1.ConditionUnknown
}

// BackupSucceeded reports whether a backup's status says its artifact is stored.
func BackupSucceeded(b *etcdv1alpha1.EtcdBackup) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded) && b.Status.Artifact != nil
}

// BackupTransitions returns the events the change from status old to status updated of a
// backup deserves: its end, once, as it was stored.
func BackupTransitions(old, updated etcdv1alpha1.EtcdBackupStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionSucceeded)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionSucceeded)
	if now == nil || now.Status == metav1.ConditionUnknown || was != nil && was.Status == now.Status {
		return nil
	}
	if now.Status == metav1.ConditionTrue {
		return []Event{{corev1.EventTypeNormal, "BackupCompleted", "Backup", now.Message}}
	}
	return []Event{{corev1.EventTypeWarning, "BackupFailed", "Backup", now.Reason + ": " + now.Message}}
}
