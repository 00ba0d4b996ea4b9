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

func TestAVerificationIsTrueOnlyWhenTheKeyCountAndTheHashWereCompared(t *testing.T) {
	now := time.Date(2026, 11, 26, 7, 0, 0, 0, time.UTC)
	report := func(keys, hash bool, why string) status.CheckReport {
		return status.CheckReport{Location: "s3://x/y", Revision: 42, RestoredRevision: 43, Found: &etcdv1alpha1.BackupVerification{RestoredRevision: 43},
			KeysCompared: keys, HashCompared: hash, HashNotCompared: why}
	}

	t.Run("both compared", func(t *testing.T) {
		g := NewWithT(t)
		o := status.CheckedVerification(report(true, true, ""))
		g.Expect(o).To(Equal(status.VerificationOutcome{Finished: true, Passed: true, Reason: etcdv1alpha1.ReasonVerificationPassed,
			Message: "s3://x/y restored into a throwaway member at revision 43 (the backup recorded 42); at revision 42 its key count and hash are the ones the backup recorded",
			Found:   &etcdv1alpha1.BackupVerification{RestoredRevision: 43}}))
		st := status.ComputeVerification(succeededBackup("b"), o, now)
		g.Expect(meta.IsStatusConditionTrue(st.Conditions, etcdv1alpha1.ConditionVerified)).To(BeTrue())
	})

	const compaction = "the backup's hash covers the history from its beginning (no compaction), the restored member's from the compaction at revision 30: " +
		"hashes from different compactions do not compare"
	for _, tc := range []struct {
		name       string
		keys, hash bool
		why        string
		message    string
	}{
		{"the hash not compared", true, false, compaction,
			"; its checksum and revision were checked, and at revision 42 its key count is the one the backup recorded; not compared: the hash (" + compaction + ")"},
		{"the key count not compared", false, true, "",
			"; its checksum and revision were checked; not compared: the key count (the backup recorded none)"},
		{"neither compared", false, false, "the backup recorded no hash",
			"; its checksum and revision were checked; not compared: the key count (the backup recorded none) and the hash (the backup recorded no hash)"},
		{"the hash not compared, by a check that does not say why", true, false, "",
			"; its checksum and revision were checked, and at revision 42 its key count is the one the backup recorded; not compared: the hash (the check did not say why)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := status.CheckedVerification(report(tc.keys, tc.hash, tc.why))
			g.Expect(o.Finished).To(BeTrue())
			g.Expect(o.Passed).To(BeFalse())
			g.Expect(o.Reason).To(Equal(etcdv1alpha1.ReasonVerificationIncomplete))
			g.Expect(o.Message).To(Equal("s3://x/y restored into a throwaway member at revision 43 (the backup recorded 42)" + tc.message))

			b := succeededBackup("b")
			running := status.ComputeVerification(b, status.VerificationOutcome{Reason: etcdv1alpha1.ReasonVerifying}, now)
			b.Status = running
			st := status.ComputeVerification(b, o, now)
			verified := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionVerified)
			g.Expect(verified.Status).To(Equal(metav1.ConditionUnknown), "never True: not everything was compared; not False: nothing differed")
			g.Expect(verified.Reason).To(Equal(etcdv1alpha1.ReasonVerificationIncomplete))
			g.Expect(verified.Message).To(Equal(o.Message))
			g.Expect(meta.IsStatusConditionTrue(st.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue(), "the backup restored: it stays Ready")
			g.Expect(st.Verification).To(Equal(&etcdv1alpha1.BackupVerification{CompletedAt: metav1.NewTime(now), RestoredRevision: 43}))
			g.Expect(status.VerificationTransitions(running, st)).To(Equal([]status.Event{{Type: corev1.EventTypeWarning, Reason: "BackupVerificationIncomplete",
				Action: "Verify", Message: o.Message}}))

			b.Status = st
			g.Expect(status.VerificationFinished(b)).To(BeTrue(), "over, though Unknown")
			g.Expect(status.VerificationWanted(b)).To(BeFalse(), "not run again")
			g.Expect(status.VerificationTransitions(st, st)).To(BeEmpty(), "once")
			g.Expect(status.ComputeVerification(b, status.CheckedVerification(report(true, true, "")), now)).To(Equal(st), "an ended verification never changes")
		})
	}
}

func TestAScheduleWhoseNewestVerificationIsIncompleteStaysReady(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 26, 2, 0, 0, 0, time.UTC)
	older, newer := succeededBackup("nightly-1"), succeededBackup("nightly-2")
	older.Status = status.ComputeVerification(older, status.CheckedVerification(status.CheckReport{KeysCompared: true, HashCompared: true}), t0)
	incomplete := status.CheckedVerification(status.CheckReport{Location: "s3://x/y", Revision: 9, RestoredRevision: 9, KeysCompared: true,
		HashNotCompared: "the backup recorded no hash"})
	newer.Status = status.ComputeVerification(newer, incomplete, t0.Add(time.Hour))
	last := status.LastVerification([]etcdv1alpha1.EtcdBackup{*older, *newer})
	g.Expect(last).To(Equal(&etcdv1alpha1.ScheduleVerification{Backup: "nightly-2", CompletedAt: metav1.NewTime(t0.Add(time.Hour)),
		Reason: etcdv1alpha1.ReasonVerificationIncomplete, Message: incomplete.Message}), "the newest, which did not pass")

	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 1}}
	items := []backup.Item{{Name: "nightly-2", Created: t0, Finished: true, Succeeded: true, Completed: t0}}
	st := status.ComputeSchedule(s, status.Schedule{Backups: items, LastVerification: last})
	g.Expect(st.LastVerification).To(Equal(last))
	g.Expect(meta.IsStatusConditionTrue(st.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue(), "nothing was found wrong")
}
