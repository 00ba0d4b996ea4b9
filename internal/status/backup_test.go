package status_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// A backup's end is one event, derived from the status the patch stored: completed or failed
// with its reason; a running backup and a status that does not change say nothing.
func TestBackupTransitions(t *testing.T) {
	g := NewWithT(t)
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Generation: 1}}
	now := time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)
	running := status.ComputeBackup(b, status.BackupOutcome{Reason: etcdv1alpha1.ReasonBackupRunning, Message: "streaming the snapshot"}, now)
	g.Expect(status.BackupTransitions(etcdv1alpha1.EtcdBackupStatus{}, running)).To(BeEmpty())

	b.Status = running
	done := status.ComputeBackup(b, status.BackupOutcome{Finished: true, Succeeded: true, Reason: etcdv1alpha1.ReasonBackupCompleted,
		Message: "stored s3://x/y", Artifact: &etcdv1alpha1.BackupArtifact{Location: "s3://x/y"}}, now)
	g.Expect(status.BackupTransitions(running, done)).To(Equal([]status.Event{
		{Type: corev1.EventTypeNormal, Reason: "BackupCompleted", Action: "Backup", Message: "stored s3://x/y"}}))
	g.Expect(status.BackupTransitions(done, done)).To(BeEmpty(), "once")

	failed := status.ComputeBackup(b, status.BackupOutcome{Finished: true, Reason: etcdv1alpha1.ReasonDestinationUnreachable,
		Message: "dial tcp 10.0.0.1:9000: connection refused"}, now)
	g.Expect(status.BackupTransitions(running, failed)).To(Equal([]status.Event{
		{Type: corev1.EventTypeWarning, Reason: "BackupFailed", Action: "Backup", Message: "DestinationUnreachable: dial tcp 10.0.0.1:9000: connection refused"}}))
	g.Expect(status.BackupTransitions(etcdv1alpha1.EtcdBackupStatus{}, failed)).To(HaveLen(1), "a preflight failure too")
}

func TestComputeSchedule(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 24, 2, 0, 0, 0, time.UTC)
	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "nightly", Generation: 2}}
	next, last := &metav1.Time{Time: t0.Add(24 * time.Hour)}, &metav1.Time{Time: t0}
	items := []backup.Item{
		{Name: "nightly-1", Created: t0.Add(-24 * time.Hour), Finished: true, Succeeded: true, Completed: t0.Add(-23 * time.Hour)},
		{Name: "nightly-2", Created: t0, Finished: true, Reason: etcdv1alpha1.ReasonDestinationUnreachable, Message: "connection refused", Completed: t0.Add(time.Minute)},
	}

	st := status.ComputeSchedule(s, status.Schedule{Backups: items, Next: next, LastSchedule: last})
	g.Expect(st.ObservedGeneration).To(Equal(int64(2)))
	g.Expect(st.NextScheduleTime).To(Equal(next))
	g.Expect(st.LastScheduleTime).To(Equal(last))
	g.Expect(st.Backups).To(Equal(int32(2)))
	g.Expect(st.LastSuccessfulBackup).To(Equal("nightly-1"))
	g.Expect(st.LastSuccessfulTime.Time).To(Equal(t0.Add(-23 * time.Hour)))
	ready := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonLastBackupFailed))
	g.Expect(ready.Message).To(Equal("backup nightly-2 failed (DestinationUnreachable: connection refused); the next run tries again"))

	s.Spec.Suspend = true
	st = status.ComputeSchedule(s, status.Schedule{Backups: items, Next: next, LastSchedule: last})
	g.Expect(st.NextScheduleTime).To(BeNil(), "no next run while suspended")
	g.Expect(meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionReady).Reason).To(Equal(etcdv1alpha1.ReasonSuspended))

	s.Status = st
	invalid := status.ComputeSchedule(s, status.Schedule{Invalid: errors.New(`expected 5 fields, found 2: "* *"`)})
	g.Expect(invalid.Backups).To(Equal(int32(2)), "what was known of the backups stays")
	ready = meta.FindStatusCondition(invalid.Conditions, etcdv1alpha1.ConditionReady)
	g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonInvalidSchedule))
	g.Expect(ready.Message).To(ContainSubstring("expected 5 fields"))
}

// A schedule's Ready condition changing its reason is one event; the first status of a
// schedule that works, and a status that does not change, say nothing.
func TestScheduleTransitions(t *testing.T) {
	g := NewWithT(t)
	with := func(s metav1.ConditionStatus, reason string) etcdv1alpha1.EtcdBackupScheduleStatus {
		return etcdv1alpha1.EtcdBackupScheduleStatus{Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionReady, Status: s, Reason: reason, Message: reason + " message"}}}
	}
	scheduled := with(metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled)
	failed := with(metav1.ConditionFalse, etcdv1alpha1.ReasonLastBackupFailed)
	suspended := with(metav1.ConditionFalse, etcdv1alpha1.ReasonSuspended)
	unverified := with(metav1.ConditionFalse, etcdv1alpha1.ReasonLastVerificationFailed)
	invalid := with(metav1.ConditionFalse, etcdv1alpha1.ReasonInvalidSchedule)

	g.Expect(status.ScheduleTransitions(etcdv1alpha1.EtcdBackupScheduleStatus{}, scheduled)).To(BeEmpty(), "a new schedule that works is no news")
	g.Expect(status.ScheduleTransitions(scheduled, scheduled)).To(BeEmpty(), "no change, no event")
	g.Expect(status.ScheduleTransitions(scheduled, failed)).To(ConsistOf(
		status.Event{Type: corev1.EventTypeWarning, Reason: etcdv1alpha1.ReasonLastBackupFailed, Action: "Schedule", Message: "LastBackupFailed message"}))
	g.Expect(status.ScheduleTransitions(failed, failed)).To(BeEmpty(), "told once")
	g.Expect(status.ScheduleTransitions(failed, unverified)).To(ConsistOf(
		status.Event{Type: corev1.EventTypeWarning, Reason: etcdv1alpha1.ReasonLastVerificationFailed, Action: "Schedule", Message: "LastVerificationFailed message"}),
		"a new reason is news, though Ready stays False")
	g.Expect(status.ScheduleTransitions(unverified, scheduled)).To(ConsistOf(
		status.Event{Type: corev1.EventTypeNormal, Reason: etcdv1alpha1.ReasonScheduled, Action: "Schedule", Message: "Scheduled message"}))
	g.Expect(status.ScheduleTransitions(scheduled, suspended)).To(ConsistOf(
		status.Event{Type: corev1.EventTypeNormal, Reason: etcdv1alpha1.ReasonSuspended, Action: "Schedule", Message: "Suspended message"}))
	g.Expect(status.ScheduleTransitions(etcdv1alpha1.EtcdBackupScheduleStatus{}, invalid)).To(ConsistOf(
		status.Event{Type: corev1.EventTypeWarning, Reason: etcdv1alpha1.ReasonInvalidSchedule, Action: "Schedule", Message: "InvalidSchedule message"}))
}
