package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/cron"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// EtcdBackupScheduleReconciler reconciles EtcdBackupSchedules: it creates an EtcdBackup
// at each scheduled time and deletes old ones per the retention policy.
type EtcdBackupScheduleReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Metrics records how far apart each schedule's runs are; nil records nothing.
	Metrics *metrics.Recorder
}

// scheduleGapRuns is how many upcoming runs of a schedule are looked at for the longest gap
// between two of them (a week of daily runs, and more).
const scheduleGapRuns = 16

// EtcdBackupSchedules: read and watched (a schedule has no finalizer, and its backups carry
// its label, not an owner reference); status patched.
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdbackupschedules,verbs=get;list;watch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdbackupschedules/status,verbs=get;update;patch

// schedulePass is what one pass over an EtcdBackupSchedule carries from step to step.
type schedulePass struct {
	schedule *etcdv1alpha1.EtcdBackupSchedule
	now      time.Time
	// sched is spec.schedule parsed, from the first step on.
	sched cron.Schedule
	// backups are the schedule's backups, as created and pruned by the steps.
	backups []etcdv1alpha1.EtcdBackup
	// in is what the status is computed from once the pass ends.
	in status.Schedule
}

// steps is one pass over a schedule, in order; then the status is patched once (finish).
func (r *EtcdBackupScheduleReconciler) steps() []step[*schedulePass] {
	return []step[*schedulePass]{
		// spec.schedule parsed (cron.Parse): one that does not parse ends the
		// pass, and the schedule's Ready says why.
		r.stepParseSchedule,
		// The schedule's backups, by label: a schedule does not own them, so deleting it
		// keeps them and their artifacts.
		r.stepListBackups,
		// When a run is due (cron.Due) and the schedule not suspended, its backup,
		// unless the previous one still runs or the cluster hibernates (that run is
		// skipped). Several missed runs make one backup, not a burst.
		r.stepStartRun,
		// The backups retention no longer keeps (backup.Prune), deleted; each takes its
		// artifact with it.
		r.stepPrune,
	}
}

// Reconcile runs one pass of a schedule (steps), patches its status once and comes back
// at the next run.
func (r *EtcdBackupScheduleReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	s := &etcdv1alpha1.EtcdBackupSchedule{}
	if err := r.Client.Get(ctx, req.NamespacedName, s); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.ForgetSchedule(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !s.DeletionTimestamp.IsZero() {
		r.Metrics.ForgetSchedule(req.Namespace, req.Name)
		return reconcile.Result{}, nil
	}
	p := &schedulePass{schedule: s, now: r.now().UTC(), in: status.Schedule{LastSchedule: s.Status.LastScheduleTime}}
	if err := runSteps(ctx, p, r.steps()); err != nil {
		// What the pass saw is partial: the status keeps the last full look.
		return reconcile.Result{}, err
	}
	return r.finish(ctx, p)
}

// finish patches the status computed from what the pass recorded, emits the events of the
// transitions the patch made, and asks for the pass of the next run.
func (r *EtcdBackupScheduleReconciler) finish(ctx context.Context, p *schedulePass) (reconcile.Result, error) {
	old, changed, err := patchStatus(ctx, r.Client, p.schedule, &p.schedule.Status, status.ComputeSchedule(p.schedule, p.in))
	if changed {
		emit(r.Recorder, p.schedule, status.ScheduleTransitions(old, p.schedule.Status))
	}
	if err != nil || p.in.Invalid != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.in.Next.Sub(p.now) + time.Second}, nil
}

func (r *EtcdBackupScheduleReconciler) stepParseSchedule(_ context.Context, p *schedulePass) (stepOutcome, error) {
	s := p.schedule
	sched, err := cron.Parse(s.Spec.Schedule)
	if err != nil {
		// The API refuses such a schedule; an object stored before a stricter rule may have one.
		r.Metrics.ForgetSchedule(s.Namespace, s.Name)
		p.in.Invalid = err
		return endPass, nil
	}
	p.sched = sched
	r.Metrics.RecordSchedule(s, sched.LongestGap(p.now, scheduleGapRuns))
	return next, nil
}

func (r *EtcdBackupScheduleReconciler) stepListBackups(ctx context.Context, p *schedulePass) (stepOutcome, error) {
	var err error
	p.backups, err = r.backups(ctx, p.schedule)
	return next, err
}

func (r *EtcdBackupScheduleReconciler) stepStartRun(ctx context.Context, p *schedulePass) (stepOutcome, error) {
	s := p.schedule
	var last *time.Time
	if s.Status.LastScheduleTime != nil {
		last = &s.Status.LastScheduleTime.Time
	}
	run, due, nextRun := cron.Due(p.sched, s.CreationTimestamp.UTC(), last, p.now)
	p.in.Next = &metav1.Time{Time: nextRun}
	if !due || s.Spec.Suspend {
		return next, nil
	}
	var err error
	if p.backups, err = r.startRun(ctx, s, p.backups, run); err != nil {
		return endPass, err
	}
	p.in.LastSchedule = &metav1.Time{Time: run}
	return next, nil
}

func (r *EtcdBackupScheduleReconciler) stepPrune(ctx context.Context, p *schedulePass) (stepOutcome, error) {
	var err error
	if p.backups, err = r.prune(ctx, p.schedule, p.backups, p.now); err != nil {
		return endPass, err
	}
	p.in.Backups = items(p.backups)
	p.in.LastVerification = status.LastVerification(p.backups)
	return next, nil
}

// startRun creates the backup of the run at time run, unless an earlier run's backup still
// runs (the run is skipped, and an event says so), and returns the schedule's backups with
// it.
func (r *EtcdBackupScheduleReconciler) startRun(ctx context.Context, s *etcdv1alpha1.EtcdBackupSchedule, backups []etcdv1alpha1.EtcdBackup, run time.Time) ([]etcdv1alpha1.EtcdBackup, error) {
	switch running := unfinished(backups); {
	case running != nil && running.Name == backup.NameForRun(s.Name, run):
		// This run's backup: an earlier pass created it, and its status patch (the new
		// lastScheduleTime) has not reached the cache yet. Nothing is skipped.
		return backups, nil
	case running != nil:
		eventf(r.Recorder, s, corev1.EventTypeWarning, "RunSkipped", "Backup", "Skipped the run of %s: backup %s is still running", run.Format(time.RFC3339), running.Name)
		return backups, nil
	}
	if hibernates, err := r.clusterHibernates(ctx, s); err != nil || hibernates {
		if hibernates {
			eventf(r.Recorder, s, corev1.EventTypeNormal, "RunSkipped", "Backup", "Skipped the run of %s: EtcdCluster %s hibernates (spec.hibernation.enabled), and its data cannot change",
				run.Format(time.RFC3339), s.Spec.BackupTemplate.ClusterName)
		}
		return backups, err
	}
	b, err := r.createBackup(ctx, s, run)
	if err != nil {
		return nil, err
	}
	// An earlier pass may have created it already (its status not seen yet), and the list
	// may hold it: counted twice, it would push an older backup out of retention.
	if !slices.ContainsFunc(backups, func(x etcdv1alpha1.EtcdBackup) bool { return x.Name == b.Name }) {
		backups = append(backups, *b)
	}
	return backups, nil
}

// clusterHibernates says whether the schedule's cluster is asked to hibernate: its members
// stop, so a backup would fail, and their data cannot change meanwhile. A missing cluster
// does not: its backup fails with ClusterNotFound, which is what the user needs to see.
func (r *EtcdBackupScheduleReconciler) clusterHibernates(ctx context.Context, s *etcdv1alpha1.EtcdBackupSchedule) (bool, error) {
	c := &etcdv1alpha1.EtcdCluster{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: s.Namespace, Name: s.Spec.BackupTemplate.ClusterName}, c)
	if err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return c.Spec.Hibernation.Enabled, nil
}

// backups lists the schedule's backups.
func (r *EtcdBackupScheduleReconciler) backups(ctx context.Context, s *etcdv1alpha1.EtcdBackupSchedule) ([]etcdv1alpha1.EtcdBackup, error) {
	var list etcdv1alpha1.EtcdBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.Namespace), client.MatchingLabels{resources.LabelBackupSchedule: s.Name}); err != nil {
		return nil, err
	}
	var out []etcdv1alpha1.EtcdBackup
	for _, b := range list.Items {
		if b.DeletionTimestamp.IsZero() {
			out = append(out, b)
		}
	}
	return out, nil
}

// createBackup creates the backup of the run at time run. Its name comes from the run, so
// a pass repeated after a crash finds it instead of taking a second one.
func (r *EtcdBackupScheduleReconciler) createBackup(ctx context.Context, s *etcdv1alpha1.EtcdBackupSchedule, run time.Time) (*etcdv1alpha1.EtcdBackup, error) {
	t := s.Spec.BackupTemplate
	b := &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{
			Name: backup.NameForRun(s.Name, run), Namespace: s.Namespace,
			Labels:      map[string]string{resources.LabelBackupSchedule: s.Name},
			Annotations: map[string]string{annotationScheduledAt: run.UTC().Format(time.RFC3339)},
		},
		Spec: etcdv1alpha1.EtcdBackupSpec{
			ClusterName: t.ClusterName, Destination: *t.Destination.DeepCopy(),
			DeletionPolicy: etcdv1alpha1.BackupDeletionPolicyDelete, Timeout: t.Timeout.DeepCopy(),
			Compression: t.Compression, Verify: t.Verify,
		},
	}
	err := r.Client.Create(ctx, b)
	if apierrors.IsAlreadyExists(err) {
		return b, r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Name}, b)
	}
	if err != nil {
		return nil, fmt.Errorf("creating backup %s: %w", b.Name, err)
	}
	eventf(r.Recorder, s, corev1.EventTypeNormal, "BackupCreated", "Backup", "Created backup %s for the run of %s", b.Name, run.Format(time.RFC3339))
	return b, nil
}

// prune deletes the backups retention no longer keeps and returns the rest.
func (r *EtcdBackupScheduleReconciler) prune(ctx context.Context, s *etcdv1alpha1.EtcdBackupSchedule, backups []etcdv1alpha1.EtcdBackup, now time.Time) ([]etcdv1alpha1.EtcdBackup, error) {
	policy := etcdv1alpha1.BackupRetention{}
	if s.Spec.Retention != nil {
		policy = *s.Spec.Retention
	}
	gone := map[string]bool{}
	for _, name := range backup.Prune(items(backups), policy, now) {
		b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: name}}
		if err := r.Client.Delete(ctx, b); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting backup %s: %w", name, err)
		}
		eventf(r.Recorder, s, corev1.EventTypeNormal, "BackupPruned", "Delete", "Deleted backup %s and its artifact (retention)", name)
		gone[name] = true
	}
	var kept []etcdv1alpha1.EtcdBackup
	for _, b := range backups {
		if !gone[b.Name] {
			kept = append(kept, b)
		}
	}
	return kept, nil
}

// annotationScheduledAt records the run a schedule's backup is for. Retention ranks backups
// by it: several runs may be created within the same second (after the operator was down),
// and creation timestamps only have seconds.
const annotationScheduledAt = "etcd.etcdpilot.io/scheduled-at"

// scheduledAt is the run time of a schedule's backup, or its creation time.
func scheduledAt(b *etcdv1alpha1.EtcdBackup) time.Time {
	if t, err := time.Parse(time.RFC3339, b.Annotations[annotationScheduledAt]); err == nil {
		return t
	}
	return b.CreationTimestamp.Time
}

// unfinished returns a backup still running, if any.
func unfinished(backups []etcdv1alpha1.EtcdBackup) *etcdv1alpha1.EtcdBackup {
	for i := range backups {
		if !status.BackupFinished(&backups[i]) {
			return &backups[i]
		}
	}
	return nil
}

// items are the schedule's backups as retention and the status see them.
func items(backups []etcdv1alpha1.EtcdBackup) []backup.Item {
	out := make([]backup.Item, 0, len(backups))
	for i := range backups {
		b := &backups[i]
		it := backup.Item{Name: b.Name, Created: scheduledAt(b), Finished: status.BackupFinished(b), Succeeded: status.BackupSucceeded(b)}
		if b.Status.CompletedAt != nil {
			it.Completed = b.Status.CompletedAt.Time
		}
		if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded); c != nil && it.Finished {
			it.Reason, it.Message = c.Reason, c.Message
		}
		out = append(out, it)
	}
	return out
}

func (r *EtcdBackupScheduleReconciler) now() time.Time { return nowOf(r.Now) }

// SetupWithManager registers the reconciler: it watches schedules, and the backups they
// created (found by label), so a finished backup updates its schedule at once.
func (r *EtcdBackupScheduleReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&etcdv1alpha1.EtcdBackupSchedule{}).
		Watches(&etcdv1alpha1.EtcdBackup{}, handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
			name, ok := o.GetLabels()[resources.LabelBackupSchedule]
			if !ok {
				return nil
			}
			return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
		})).
		Named("etcdbackupschedule").
		Complete(r)
}
