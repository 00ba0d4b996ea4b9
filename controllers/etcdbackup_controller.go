package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// BackupFinalizer holds an EtcdBackup with deletionPolicy Delete until its artifact is
// deleted.
const BackupFinalizer = "etcd.etcdpilot.io/delete-artifact"

// requeueBackup is how soon a running backup or artifact deletion is looked at again when
// no Job event arrives first.
const requeueBackup = 10 * time.Second

// EtcdBackupReconciler reconciles EtcdBackup objects: each is taken once, by a Job running
// the operator's agent.
type EtcdBackupReconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold: the user's Secrets and claims.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// AgentImage is the operator's own image, which the backup Jobs run.
	AgentImage string
	// EtcdImages says which image runs each etcd release: a verification starts a
	// throwaway member of the release its backup was taken from.
	EtcdImages versions.Images
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Metrics counts each backup that ends and keeps the timestamps of finished ones; nil
	// records nothing.
	Metrics *metrics.Recorder
}

// EtcdBackups: read and watched; updated to add and remove the finalizer; created and
// deleted by schedules (their runs, their retention); status patched; finalizers updated so
// that a backup's Jobs may block its deletion. Jobs run the agent: created, deleted once
// their backup is gone.
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdbackups,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdbackups/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdbackups/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete

// backupPass is what one pass over an EtcdBackup carries from step to step: where the
// backup stands, or where its verification stands, whichever the pass looked at.
type backupPass struct {
	backup       *etcdv1alpha1.EtcdBackup
	outcome      *status.BackupOutcome
	verification *status.VerificationOutcome
}

// steps is one pass over a backup that is not being deleted, in order; then the status is
// patched once (finish).
func (r *EtcdBackupReconciler) steps() []step[*backupPass] {
	return []step[*backupPass]{
		// The artifact-deletion finalizer on exactly the backups with deletionPolicy Delete.
		r.stepSyncFinalizer,
		// Unfinished: the preflight (the cluster, the credentials and the claim exist, or the
		// backup fails at once with the reason), then the Job created, or its outcome read
		// from the agent's termination message. A backup is never retried.
		r.stepTakeBackup,
		// Finished: its timestamps go to the cluster's metrics on every pass, so that they
		// come back after an operator restart.
		r.stepRecordMetrics,
		// Succeeded with spec.verify: verified once, in a throwaway member (verification).
		r.stepVerify,
	}
}

// Reconcile takes one backup through its steps (steps); a deleted one with deletionPolicy
// Delete has its artifact deleted by a Job first (finalize).
func (r *EtcdBackupReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	b := &etcdv1alpha1.EtcdBackup{}
	if err := r.Client.Get(ctx, req.NamespacedName, b); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, b)
	}
	p := &backupPass{backup: b}
	if err := runSteps(ctx, p, r.steps()); err != nil {
		return reconcile.Result{}, err
	}
	return r.finish(ctx, p)
}

// finish patches the status computed from what the pass learned of the backup or of its
// verification, emits the events of the transitions the patch made, and comes back soon
// while either runs.
func (r *EtcdBackupReconciler) finish(ctx context.Context, p *backupPass) (reconcile.Result, error) {
	b := p.backup
	var desired etcdv1alpha1.EtcdBackupStatus
	var running bool
	transitions, record := status.BackupTransitions, r.Metrics.RecordBackup
	switch {
	case p.outcome != nil:
		desired, running = status.ComputeBackup(b, *p.outcome, r.now()), !p.outcome.Finished
	case p.verification != nil:
		desired, running = status.ComputeVerification(b, *p.verification, r.now()), !p.verification.Finished
		transitions, record = status.VerificationTransitions, r.Metrics.RecordVerification
	default:
		return reconcile.Result{}, nil
	}
	old, changed, err := patchStatus(ctx, r.Client, b, &b.Status, desired)
	if changed {
		emit(r.Recorder, b, transitions(old, b.Status))
		record(b, old, b.Status)
	}
	if err != nil || !running {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: requeueBackup}, nil
}

func (r *EtcdBackupReconciler) stepSyncFinalizer(ctx context.Context, p *backupPass) (stepOutcome, error) {
	return next, r.syncFinalizer(ctx, p.backup)
}

func (r *EtcdBackupReconciler) stepTakeBackup(ctx context.Context, p *backupPass) (stepOutcome, error) {
	if status.BackupFinished(p.backup) {
		return next, nil
	}
	o, err := r.observe(ctx, p.backup)
	if err != nil {
		return endPass, err
	}
	p.outcome = &o
	return endPass, nil
}

func (r *EtcdBackupReconciler) stepRecordMetrics(ctx context.Context, p *backupPass) (stepOutcome, error) {
	r.observeMetrics(ctx, p.backup)
	return next, nil
}

func (r *EtcdBackupReconciler) stepVerify(ctx context.Context, p *backupPass) (stepOutcome, error) {
	if !status.VerificationWanted(p.backup) {
		return endPass, nil
	}
	o, err := r.verification(ctx, p.backup)
	if err != nil {
		return endPass, err
	}
	p.verification = &o
	return next, nil
}

// observeMetrics sets the cluster's backup timestamps from a finished backup (an operator
// that restarts reconciles every backup again, and the counters start from zero). A backup
// whose EtcdCluster is gone sets none: the cluster's series went with it.
func (r *EtcdBackupReconciler) observeMetrics(ctx context.Context, b *etcdv1alpha1.EtcdBackup) {
	if r.Metrics == nil {
		return
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.ClusterName}, &etcdv1alpha1.EtcdCluster{}); err == nil {
		r.Metrics.ObserveBackup(b)
	}
}

// verification creates the verification Job when there is none yet and returns where the
// verification stands.
func (r *EtcdBackupReconciler) verification(ctx context.Context, b *etcdv1alpha1.EtcdBackup) (status.VerificationOutcome, error) {
	done := func(reason, format string, args ...any) (status.VerificationOutcome, error) {
		return status.VerificationOutcome{Finished: true, Reason: reason, Message: fmt.Sprintf(format, args...)}, nil
	}
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: resources.VerifyJobName(b.Name)}, job)
	if apierrors.IsNotFound(err) {
		if reason, msg, err := r.preflight(ctx, b.Namespace, b.Spec.Destination); err != nil || reason != "" {
			if err != nil {
				return status.VerificationOutcome{}, err
			}
			return done(reason, "%s", msg)
		}
		if r.AgentImage == "" {
			return done(etcdv1alpha1.ReasonBackupPodFailed, "the operator does not know its own image, which verifications run: set ETCDPILOT_AGENT_IMAGE")
		}
		release := b.Status.Snapshot.EtcdVersion
		if !versions.IsSupported(release) {
			release = versions.Default() // a newer etcd reads an older one's data
		}
		if err := r.Client.Create(ctx, resources.VerifyJob(b, r.AgentImage, r.EtcdImages.For(release))); err != nil && !apierrors.IsAlreadyExists(err) {
			return status.VerificationOutcome{}, fmt.Errorf("creating verification job: %w", err)
		}
		eventf(r.Recorder, b, corev1.EventTypeNormal, "VerificationStarted", "Verify", "Restoring %s into a throwaway member to verify it", b.Status.Artifact.Location)
		return status.VerificationOutcome{Reason: etcdv1alpha1.ReasonVerifying, Message: "the verification pod is starting"}, nil
	}
	if err != nil {
		return status.VerificationOutcome{}, err
	}
	return r.verificationOutcome(ctx, b, job)
}

// verificationOutcome reads where the verification Job stands: the agent's result once its
// container ended, the Job's failure (deadline) otherwise.
func (r *EtcdBackupReconciler) verificationOutcome(ctx context.Context, b *etcdv1alpha1.EtcdBackup, job *batchv1.Job) (status.VerificationOutcome, error) {
	out := status.VerificationOutcome{Reason: etcdv1alpha1.ReasonVerifying, Message: "the verification pod is starting"}
	term, running, err := verifyTermination(ctx, r.Client, job)
	if err != nil {
		return out, err
	}
	if running {
		out.Message = "restoring the artifact into a throwaway member"
	}
	failed := jobFailed(job)
	switch {
	case failed != nil && failed.Reason == batchv1.JobReasonDeadlineExceeded:
		out.Finished, out.Reason = true, etcdv1alpha1.ReasonBackupTimeout
		out.Message = "the verification did not finish within spec.timeout"
	case term != nil:
		return verificationResult(b, term), nil
	case failed != nil:
		out.Finished, out.Reason, out.Message = true, etcdv1alpha1.ReasonBackupPodFailed, "the verification job failed: "+failed.Message
	}
	return out, nil
}

// verificationResult turns the verify agent's termination message into the outcome.
func verificationResult(b *etcdv1alpha1.EtcdBackup, term *corev1.ContainerStateTerminated) status.VerificationOutcome {
	out := status.VerificationOutcome{Finished: true}
	res, ok := result.Parse(term.Message)
	switch {
	case !ok:
		out.Reason = etcdv1alpha1.ReasonBackupPodFailed
		out.Message = fmt.Sprintf("the verification pod ended (exit code %d, %s) without a result: %s", term.ExitCode, term.Reason, result.LastLine(term.Message))
	case term.ExitCode != 0:
		out.Reason, out.Message = res.Reason, res.Error
		if out.Reason == "" {
			out.Reason = etcdv1alpha1.ReasonVerificationFailed
		}
	default:
		return status.CheckedVerification(status.CheckReport{
			Location: b.Status.Artifact.Location, Revision: res.Revision, RestoredRevision: res.RestoredRevision,
			Found:        &etcdv1alpha1.BackupVerification{RestoredRevision: res.RestoredRevision, Keys: res.Keys, KVHash: res.KVHash},
			KeysCompared: res.KeysChecked, HashCompared: res.HashChecked, HashNotCompared: res.HashNotCompared,
		})
	}
	return out
}

// observe creates the backup Job when there is none yet and returns where the backup
// stands.
func (r *EtcdBackupReconciler) observe(ctx context.Context, b *etcdv1alpha1.EtcdBackup) (status.BackupOutcome, error) {
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: resources.BackupJobName(b.Name)}, job)
	if apierrors.IsNotFound(err) {
		return r.start(ctx, b)
	}
	if err != nil {
		return status.BackupOutcome{}, err
	}
	return r.jobOutcome(ctx, b, job)
}

// start checks what the backup needs and creates its Job.
func (r *EtcdBackupReconciler) start(ctx context.Context, b *etcdv1alpha1.EtcdBackup) (status.BackupOutcome, error) {
	fail := func(reason, format string, args ...any) (status.BackupOutcome, error) {
		return status.BackupOutcome{Finished: true, Reason: reason, Message: fmt.Sprintf(format, args...)}, nil
	}
	c := &etcdv1alpha1.EtcdCluster{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.ClusterName}, c); err != nil {
		if apierrors.IsNotFound(err) {
			return fail(etcdv1alpha1.ReasonClusterNotFound, "EtcdCluster %s does not exist in namespace %s", b.Spec.ClusterName, b.Namespace)
		}
		return status.BackupOutcome{}, err
	}
	if reason, msg, err := r.preflight(ctx, b.Namespace, b.Spec.Destination); err != nil || reason != "" {
		if err != nil {
			return status.BackupOutcome{}, err
		}
		return fail(reason, "%s", msg)
	}
	endpoints := backup.Sources(c.Status.Members, status.Suspects(c))
	if len(endpoints) == 0 {
		return fail(etcdv1alpha1.ReasonClusterNotAvailable, "no member of EtcdCluster %s is healthy (status.members)", c.Name)
	}
	if r.AgentImage == "" {
		return fail(etcdv1alpha1.ReasonBackupPodFailed, "the operator does not know its own image, which backups run: set ETCDPILOT_AGENT_IMAGE")
	}
	key, _ := backup.ArtifactOf(b, backup.CompressionOf(b.Spec))
	job := resources.BackupJob(b, c, endpoints, key, r.AgentImage)
	if err := r.Client.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
		return status.BackupOutcome{}, fmt.Errorf("creating backup job: %w", err)
	}
	eventf(r.Recorder, b, corev1.EventTypeNormal, "BackupStarted", "Backup", "Backing up EtcdCluster %s from one of %d healthy members", c.Name, len(endpoints))
	return status.BackupOutcome{Reason: etcdv1alpha1.ReasonBackupPending, Message: "the backup pod is starting"}, nil
}

// preflight returns a failure reason and message when the destination cannot work: a
// missing credentials Secret or key, CA Secret, or claim. The agent would fail on those
// too, but only after its pod failed to start.
func (r *EtcdBackupReconciler) preflight(ctx context.Context, namespace string, d etcdv1alpha1.BackupDestination) (string, string, error) {
	if d.PVC != nil {
		pvc := &corev1.PersistentVolumeClaim{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: d.PVC.ClaimName}, pvc)
		if apierrors.IsNotFound(err) {
			return etcdv1alpha1.ReasonDestinationNotFound, fmt.Sprintf("PersistentVolumeClaim %s does not exist", d.PVC.ClaimName), nil
		}
		return "", "", err
	}
	return secretPreflight(ctx, r.APIReader, namespace, &d.S3.S3Bucket)
}

// secretPreflight checks the Secrets an S3 bucket needs.
func secretPreflight(ctx context.Context, reader client.Reader, namespace string, s3 *etcdv1alpha1.S3Bucket) (string, string, error) {
	need := map[string][]string{s3.CredentialsSecretName: {resources.S3AccessKeyIDKey, resources.S3SecretAccessKeyKey}}
	if s3.CASecretName != "" {
		need[s3.CASecretName] = append(need[s3.CASecretName], resources.S3CAKey)
	}
	for name, keys := range need {
		sec := &corev1.Secret{}
		err := reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, sec)
		if apierrors.IsNotFound(err) {
			return etcdv1alpha1.ReasonCredentialsNotFound, fmt.Sprintf("Secret %s does not exist", name), nil
		}
		if err != nil {
			return "", "", err
		}
		for _, k := range keys {
			if len(sec.Data[k]) == 0 {
				return etcdv1alpha1.ReasonCredentialsNotFound, fmt.Sprintf("Secret %s has no key %s", name, k), nil
			}
		}
	}
	return "", "", nil
}

// jobOutcome reads where the backup Job stands: the agent's result once its container
// ended, the Job's failure (deadline) otherwise.
func (r *EtcdBackupReconciler) jobOutcome(ctx context.Context, b *etcdv1alpha1.EtcdBackup, job *batchv1.Job) (status.BackupOutcome, error) {
	out := status.BackupOutcome{Reason: etcdv1alpha1.ReasonBackupPending, Message: "the backup pod is starting", StartedAt: job.Status.StartTime}
	term, running, err := agentTermination(ctx, r.Client, job)
	if err != nil {
		return out, err
	}
	if running {
		out.Reason, out.Message = etcdv1alpha1.ReasonBackupRunning, "streaming the snapshot"
	}
	failed := jobFailed(job)
	switch {
	case failed != nil && failed.Reason == batchv1.JobReasonDeadlineExceeded:
		// The Job killed the agent: whatever it said last is not the result.
		out.Finished = true
		out.Reason = etcdv1alpha1.ReasonBackupTimeout
		out.Message = fmt.Sprintf("the backup did not finish within spec.timeout (%s); nothing was stored", b.Spec.Timeout.Duration)
	case term != nil:
		return resultOutcome(b, out, term), nil
	case failed != nil:
		out.Finished = true
		out.Reason, out.Message = etcdv1alpha1.ReasonBackupPodFailed, "the backup job failed: "+failed.Message
	default:
		return out, nil
	}
	return out, nil
}

// resultOutcome turns the agent's termination message into the outcome.
func resultOutcome(b *etcdv1alpha1.EtcdBackup, out status.BackupOutcome, term *corev1.ContainerStateTerminated) status.BackupOutcome {
	out.Finished = true
	res, ok := result.Parse(term.Message)
	if !ok {
		out.Reason = etcdv1alpha1.ReasonBackupPodFailed
		out.Message = fmt.Sprintf("the backup pod ended (exit code %d, %s) without a result: %s", term.ExitCode, term.Reason, result.LastLine(term.Message))
		return out
	}
	if term.ExitCode != 0 {
		out.Reason, out.Message = res.Reason, res.Error
		if out.Reason == "" {
			out.Reason = etcdv1alpha1.ReasonBackupPodFailed
		}
		return out
	}
	compression := backup.ReportedCompression(res.Compression)
	key, location := backup.ArtifactOf(b, compression)
	out.Succeeded = true
	out.Reason = etcdv1alpha1.ReasonBackupCompleted
	out.Artifact = &etcdv1alpha1.BackupArtifact{
		Location: location, Key: key, Compression: compression,
		SHA256: res.SHA256, Size: res.Size, SnapshotSize: res.SnapshotSize,
	}
	out.Snapshot = &etcdv1alpha1.BackupSnapshot{
		Member: res.Member, MemberID: res.MemberID, Revision: res.Revision, EtcdVersion: res.EtcdVersion, ClusterID: res.ClusterID,
		Keys: res.Keys, KVHash: res.KVHash, HashCompactRevision: res.HashCompactRevision,
	}
	out.Message = fmt.Sprintf("stored %s (%d bytes, revision %d, from member %s)", out.Artifact.Location, res.Size, res.Revision, res.Member)
	return out
}

// verifyTermination is agentTermination for a verification Job, whose restore init
// container ends the pod when it fails (a checksum that differs, an artifact that cannot be
// read): that failure is the outcome.
func verifyTermination(ctx context.Context, c client.Client, job *batchv1.Job) (*corev1.ContainerStateTerminated, bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, false, err
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.InitContainerStatuses {
			if s.Name == resources.VerifyRestoreContainerName && s.State.Terminated != nil && s.State.Terminated.ExitCode != 0 {
				return s.State.Terminated, false, nil
			}
		}
	}
	return agentTermination(ctx, c, job)
}

// jobFailed returns job's Failed condition when it is True, nil otherwise.
func jobFailed(job *batchv1.Job) *batchv1.JobCondition {
	for i, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobFailed && cond.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// agentTermination returns the terminated state of the agent container of job's pod, if
// it ended, and whether it is running.
func agentTermination(ctx context.Context, c client.Client, job *batchv1.Job) (*corev1.ContainerStateTerminated, bool, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return nil, false, err
	}
	running := false
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if s.Name != resources.AgentContainerName {
				continue
			}
			if s.State.Terminated != nil {
				return s.State.Terminated, false, nil
			}
			running = running || s.State.Running != nil
		}
	}
	return nil, running, nil
}

// syncFinalizer keeps the artifact-deletion finalizer on exactly the backups whose
// artifact is deleted with them.
func (r *EtcdBackupReconciler) syncFinalizer(ctx context.Context, b *etcdv1alpha1.EtcdBackup) error {
	want := b.Spec.DeletionPolicy == etcdv1alpha1.BackupDeletionPolicyDelete
	if want == controllerutil.ContainsFinalizer(b, BackupFinalizer) {
		return nil
	}
	if want {
		controllerutil.AddFinalizer(b, BackupFinalizer)
	} else {
		controllerutil.RemoveFinalizer(b, BackupFinalizer)
	}
	return r.Client.Update(ctx, b)
}

// finalize deletes the artifact of a deleted backup with deletionPolicy Delete, through a
// Job (a claim can only be reached from a pod), then lets the backup go. A backup that
// never stored an artifact has nothing to delete; a running one has its Job (and pod)
// removed with it, and an unfinished upload never becomes a visible object. In a namespace
// being deleted no Job can be created: the artifact is then kept, with a warning event.
func (r *EtcdBackupReconciler) finalize(ctx context.Context, b *etcdv1alpha1.EtcdBackup) (reconcile.Result, error) {
	if !controllerutil.ContainsFinalizer(b, BackupFinalizer) {
		return reconcile.Result{}, nil
	}
	if b.Status.Artifact != nil {
		done, err := r.deleteArtifact(ctx, b)
		switch {
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			// The namespace is being deleted: it accepts no new Job, so the artifact can no
			// longer be deleted, and holding the backup would hold the namespace forever.
			// The event is refused too, in a namespace being deleted: the log keeps the location.
			log.FromContext(ctx).Info("Kept the artifact of a deleted backup: its namespace is being deleted", "location", b.Status.Artifact.Location)
			eventf(r.Recorder, b, corev1.EventTypeWarning, "ArtifactRetained", "Delete",
				"Kept %s: namespace %s is being deleted, so no Job can run in it to delete the artifact", b.Status.Artifact.Location, b.Namespace)
		case err != nil || !done:
			return reconcile.Result{RequeueAfter: requeueBackup}, err
		default:
			eventf(r.Recorder, b, corev1.EventTypeNormal, "ArtifactDeleted", "Delete", "Deleted %s", b.Status.Artifact.Location)
		}
	}
	controllerutil.RemoveFinalizer(b, BackupFinalizer)
	return reconcile.Result{}, r.Client.Update(ctx, b)
}

// deleteArtifact runs the deletion Job and reports whether it succeeded. A failed Job is
// removed, so the next attempt (after requeueBackup) starts a fresh one.
func (r *EtcdBackupReconciler) deleteArtifact(ctx context.Context, b *etcdv1alpha1.EtcdBackup) (bool, error) {
	job := &batchv1.Job{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: b.Namespace, Name: resources.DeleteJobName(b.Name)}, job)
	if apierrors.IsNotFound(err) {
		if r.AgentImage == "" {
			return false, fmt.Errorf("cannot delete %s: the operator does not know its own image (ETCDPILOT_AGENT_IMAGE)", b.Status.Artifact.Location)
		}
		err = r.Client.Create(ctx, resources.DeleteJob(b, b.Status.Artifact.Key, r.AgentImage))
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
		return false, err
	}
	if err != nil {
		return false, err
	}
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		switch cond.Type {
		case batchv1.JobComplete:
			return true, nil
		case batchv1.JobFailed:
			msg := cond.Message
			if term, _, err := agentTermination(ctx, r.Client, job); err == nil && term != nil {
				if res, ok := result.Parse(term.Message); ok && res.Error != "" {
					msg = res.Reason + ": " + res.Error
				}
			}
			eventf(r.Recorder, b, corev1.EventTypeWarning, "ArtifactDeletionFailed", "Delete", "Deleting %s failed, retrying: %s", b.Status.Artifact.Location, msg)
			return false, client.IgnoreNotFound(r.Client.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
		}
	}
	if job.Status.Active > 0 {
		return false, nil // its pod is deleting the artifact
	}
	// No pod yet. A Job the API server admitted just as the namespace began terminating
	// (its admission works from a cache) never gets one, and the namespace's deletion may
	// come back for it only much later: ask the API server, without writing anything,
	// whether the namespace still accepts a Job. It answers AlreadyExists while it does,
	// and the namespace-terminating refusal finalize lets the backup go on.
	err = r.Client.Create(ctx, resources.DeleteJob(b, b.Status.Artifact.Key, r.AgentImage), client.DryRunAll)
	if apierrors.IsAlreadyExists(err) {
		err = nil
	}
	return false, err
}

func (r *EtcdBackupReconciler) now() time.Time { return nowOf(r.Now) }

// SetupWithManager registers the reconciler: it watches EtcdBackups and their Jobs (the
// Jobs' pods carry the Job's labels, and a Job's status changes when its pod ends).
func (r *EtcdBackupReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&etcdv1alpha1.EtcdBackup{}).
		Owns(&batchv1.Job{}).
		Named("etcdbackup").
		Complete(r)
}
