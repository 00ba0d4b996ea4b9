package status_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// succeededBackup is a backup that stored its artifact, asking to be verified.
func succeededBackup(name string) *etcdv1alpha1.EtcdBackup {
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1}, Spec: etcdv1alpha1.EtcdBackupSpec{Verify: true}}
	b.Status = status.ComputeBackup(b, status.BackupOutcome{Finished: true, Succeeded: true, Reason: etcdv1alpha1.ReasonBackupCompleted,
		Message: "stored", Artifact: &etcdv1alpha1.BackupArtifact{Location: "s3://x/y"}, Snapshot: &etcdv1alpha1.BackupSnapshot{Revision: 9}},
		time.Date(2026, 11, 26, 6, 0, 0, 0, time.UTC))
	return b
}

func TestAVerificationIsRecordedOnceWithItsEvent(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	b := succeededBackup("b")
	g.Expect(status.VerificationWanted(b)).To(BeTrue())
	failedBackup := &etcdv1alpha1.EtcdBackup{Spec: etcdv1alpha1.EtcdBackupSpec{Verify: true}}
	failedBackup.Status = status.ComputeBackup(failedBackup, status.BackupOutcome{Finished: true, Reason: etcdv1alpha1.ReasonBackupTimeout}, now)
	g.Expect(status.VerificationWanted(failedBackup)).To(BeFalse(), "a failed backup has nothing to verify")

	running := status.ComputeVerification(b, status.VerificationOutcome{Reason: etcdv1alpha1.ReasonVerifying, Message: "the verification pod is starting"}, now)
	g.Expect(meta.FindStatusCondition(running.Conditions, etcdv1alpha1.ConditionVerified).Status).To(Equal(metav1.ConditionUnknown))
	g.Expect(running.Verification).To(BeNil(), "nothing found yet")
	g.Expect(status.VerificationTransitions(b.Status, running)).To(BeEmpty())

	b.Status = running
	passed := status.ComputeVerification(b, status.VerificationOutcome{Finished: true, Passed: true, Reason: etcdv1alpha1.ReasonVerificationPassed,
		Message: "restored", Found: &etcdv1alpha1.BackupVerification{RestoredRevision: 42, Keys: ptr.To[int64](7), KVHash: "abc"}}, now)
	g.Expect(meta.IsStatusConditionTrue(passed.Conditions, etcdv1alpha1.ConditionVerified)).To(BeTrue())
	g.Expect(meta.IsStatusConditionTrue(passed.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue(), "a verified backup stays Ready")
	g.Expect(passed.Verification).To(Equal(&etcdv1alpha1.BackupVerification{CompletedAt: metav1.NewTime(now), RestoredRevision: 42, Keys: ptr.To[int64](7), KVHash: "abc"}))
	g.Expect(status.VerificationTransitions(running, passed)).To(Equal([]status.Event{{Type: corev1.EventTypeNormal, Reason: "BackupVerified", Action: "Verify", Message: "restored"}}))

	b.Status = passed
	g.Expect(status.VerificationWanted(b)).To(BeFalse(), "once")
	g.Expect(status.ComputeVerification(b, status.VerificationOutcome{Finished: true, Reason: etcdv1alpha1.ReasonVerificationFailed}, now)).To(Equal(passed),
		"an ended verification never changes")
}

func TestAFailedVerificationMakesTheBackupNotReady(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	b := succeededBackup("b")
	failed := status.ComputeVerification(b, status.VerificationOutcome{Finished: true, Reason: "ChecksumMismatch", Message: "artifact has sha256 x, expected y"}, now)
	verified := meta.FindStatusCondition(failed.Conditions, etcdv1alpha1.ConditionVerified)
	g.Expect(verified.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(verified.Reason).To(Equal("ChecksumMismatch"))
	ready := meta.FindStatusCondition(failed.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Message).To(Equal("the backup did not verify: artifact has sha256 x, expected y"))
	g.Expect(meta.IsStatusConditionTrue(failed.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue(), "the backup itself succeeded")
	g.Expect(status.VerificationTransitions(b.Status, failed)).To(Equal([]status.Event{{Type: corev1.EventTypeWarning, Reason: "BackupVerificationFailed",
		Action: "Verify", Message: "ChecksumMismatch: artifact has sha256 x, expected y"}}))
}

func TestAScheduleKeepsItsNewestVerification(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	older, newer, unverified := succeededBackup("nightly-1"), succeededBackup("nightly-2"), succeededBackup("nightly-3")
	older.Status = status.ComputeVerification(older, status.VerificationOutcome{Finished: true, Passed: true, Reason: etcdv1alpha1.ReasonVerificationPassed, Message: "ok"}, t0)
	newer.Status = status.ComputeVerification(newer, status.VerificationOutcome{Finished: true, Reason: etcdv1alpha1.ReasonVerificationFailed,
		Message: "the restored data holds 6 keys at revision 9, the backup recorded 7"}, t0.Add(time.Hour))
	last := status.LastVerification([]etcdv1alpha1.EtcdBackup{*newer, *unverified, *older})
	g.Expect(last).To(Equal(&etcdv1alpha1.ScheduleVerification{Backup: "nightly-2", CompletedAt: metav1.NewTime(t0.Add(time.Hour)),
		Reason: etcdv1alpha1.ReasonVerificationFailed, Message: "the restored data holds 6 keys at revision 9, the backup recorded 7"}))
	g.Expect(status.LastVerification([]etcdv1alpha1.EtcdBackup{*unverified})).To(BeNil())

	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
	items := []backup.Item{{Name: "nightly-2", Created: t0, Finished: true, Succeeded: true, Completed: t0}}
	st := status.ComputeSchedule(s, status.Schedule{Backups: items, LastVerification: last})
	g.Expect(st.LastVerification).To(Equal(last))
	ready := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonLastVerificationFailed))
	g.Expect(ready.Message).To(Equal("backup nightly-2 did not verify (VerificationFailed: the restored data holds 6 keys at revision 9, the backup recorded 7); the next verified backup clears this"))

	passedLast := status.LastVerification([]etcdv1alpha1.EtcdBackup{*older})
	st = status.ComputeSchedule(s, status.Schedule{Backups: items, LastVerification: passedLast})
	g.Expect(meta.IsStatusConditionTrue(st.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
	g.Expect(st.LastVerification.Passed).To(BeTrue())
}
