package framework

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// sha256Hex is what status.artifact.sha256 must look like to be of use: 64 lowercase hex
// digits, the form a restore source's sha256 takes.
var sha256Hex = regexp.MustCompile(`^[0-9a-f]{64}$`)

// BackupClaim returns a ReadWriteOnce claim of size for backup artifacts, labelled as the
// scorecard's, in the default StorageClass (it names none). Nothing waits for it to bind:
// under a WaitForFirstConsumer class it binds only when the backup pod is scheduled.
func BackupClaim(name, namespace string, size resource.Quantity) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: withPartOf(nil)},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: size}},
		},
	}
}

// NewBackup returns an EtcdBackup of c to the root of claim, labelled as the scorecard's.
// Its deletionPolicy is Delete, so deleting it deletes the artifact too; past timeout the
// operator fails it with reason Timeout.
func NewBackup(name string, c *etcdv1alpha1.EtcdCluster, claim string, timeout time.Duration) *etcdv1alpha1.EtcdBackup {
	return &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace, Labels: withPartOf(nil)},
		Spec: etcdv1alpha1.EtcdBackupSpec{
			ClusterName:    c.Name,
			Destination:    etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: claim}},
			DeletionPolicy: etcdv1alpha1.BackupDeletionPolicyDelete,
			Timeout:        &metav1.Duration{Duration: timeout},
		},
	}
}

// CreateClaim creates pvc and remembers it for Cleanup.
func (e *Env) CreateClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	if err := e.Client.Create(ctx, pvc); err != nil {
		return fmt.Errorf("creating PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	e.track(pvc)
	class := "the default StorageClass"
	if pvc.Spec.StorageClassName != nil {
		class = "StorageClass " + *pvc.Spec.StorageClassName
	}
	size := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	e.Report.Logf("created PersistentVolumeClaim %s/%s: %s, %v, %s", pvc.Namespace, pvc.Name, size.String(), pvc.Spec.AccessModes, class)
	return nil
}

// CreateBackup creates b and remembers it for Cleanup.
func (e *Env) CreateBackup(ctx context.Context, b *etcdv1alpha1.EtcdBackup) error {
	if err := e.Client.Create(ctx, b); err != nil {
		return fmt.Errorf("creating EtcdBackup %s: %w", b.Name, err)
	}
	e.track(b)
	to := "?"
	if p := b.Spec.Destination.PVC; p != nil {
		to = "claim " + p.ClaimName
	}
	timeout := "default"
	if b.Spec.Timeout != nil {
		timeout = b.Spec.Timeout.Duration.String()
	}
	e.Report.Logf("created EtcdBackup %s/%s of EtcdCluster %s to %s: deletionPolicy %s, timeout %s",
		b.Namespace, b.Name, b.Spec.ClusterName, to, b.Spec.DeletionPolicy, timeout)
	return nil
}

// WaitForBackup polls b until it has succeeded or failed, or ctx ends; b then holds the
// last state seen, and every change of it is logged. A failed backup is an error with the
// reason and message of its Succeeded condition.
func (e *Env) WaitForBackup(ctx context.Context, b *etcdv1alpha1.EtcdBackup) error {
	return e.waitForOutcome(ctx, b, etcdv1alpha1.ConditionSucceeded, "to finish", "failed", BackupFinished)
}

// WaitForVerification waits until b's verification (spec.verify) ended, and fails unless
// it passed, with the Verified condition's reason and message.
func (e *Env) WaitForVerification(ctx context.Context, b *etcdv1alpha1.EtcdBackup) error {
	return e.waitForOutcome(ctx, b, etcdv1alpha1.ConditionVerified, "to be verified", "did not verify", VerificationFinished)
}

// waitForOutcome waits until done says b's condition cond ended, and fails (saying
// failed, the reason and the message) unless it is True.
func (e *Env) waitForOutcome(ctx context.Context, b *etcdv1alpha1.EtcdBackup, cond, waitingTo, failed string,
	done func(*etcdv1alpha1.EtcdBackup) (bool, string)) error {
	if err := waitFor(ctx, e, "EtcdBackup", b, "EtcdBackup "+b.Name+" "+waitingTo, done); err != nil {
		return err
	}
	c := meta.FindStatusCondition(b.Status.Conditions, cond)
	if c.Status != metav1.ConditionTrue {
		return fmt.Errorf("EtcdBackup %s %s: %s: %s", b.Name, failed, c.Reason, c.Message)
	}
	return nil
}

// VerificationFinished is true once b's Verified condition is True or False, or Unknown
// for good (VerificationIncomplete: the key count or the hash was not compared).
func VerificationFinished(b *etcdv1alpha1.EtcdBackup) (done bool, state string) {
	cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
	if cond == nil {
		return false, "no Verified condition yet"
	}
	return cond.Status != metav1.ConditionUnknown || cond.Reason == etcdv1alpha1.ReasonVerificationIncomplete,
		fmt.Sprintf("Verified=%s (%s: %s)", cond.Status, cond.Reason, cond.Message)
}

// BackupFinished is true once b's Succeeded condition is True or False. A backup is never
// retried, so either is final.
func BackupFinished(b *etcdv1alpha1.EtcdBackup) (done bool, state string) {
	cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	return cond != nil && cond.Status != metav1.ConditionUnknown, DescribeBackup(b)
}

// DescribeBackup summarises a backup's status in one line: its Succeeded condition, with
// reason and message.
func DescribeBackup(b *etcdv1alpha1.EtcdBackup) string {
	cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	if cond == nil {
		return "no Succeeded condition yet"
	}
	return fmt.Sprintf("Succeeded=%s (%s: %s)", cond.Status, cond.Reason, cond.Message)
}

// CheckBackup says what is wrong with the status of b, a successful backup of c to claim.
// The artifact must be on claim, with a size and a SHA-256 a restore can verify; the
// snapshot must be at a revision, and come from a member of c (by name, and by ID when
// the backup gives one).
func CheckBackup(b *etcdv1alpha1.EtcdBackup, c *etcdv1alpha1.EtcdCluster, claim string) error {
	problems := append(artifactProblems(b.Status.Artifact, claim), snapshotProblems(b.Status.Snapshot, c)...)
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

func artifactProblems(a *etcdv1alpha1.BackupArtifact, claim string) []string {
	if a == nil {
		return []string{"no status.artifact"}
	}
	var out []string
	if !sha256Hex.MatchString(a.SHA256) {
		out = append(out, fmt.Sprintf("status.artifact.sha256 %q is not 64 lowercase hex digits", a.SHA256))
	}
	if a.Size <= 0 {
		out = append(out, fmt.Sprintf("status.artifact.size is %d", a.Size))
	}
	if !strings.HasPrefix(a.Location, "pvc://"+claim+"/") {
		out = append(out, fmt.Sprintf("status.artifact.location %q is not on claim %s", a.Location, claim))
	}
	return out
}

func snapshotProblems(s *etcdv1alpha1.BackupSnapshot, c *etcdv1alpha1.EtcdCluster) []string {
	if s == nil {
		return []string{"no status.snapshot"}
	}
	var out []string
	if s.Revision <= 0 {
		out = append(out, fmt.Sprintf("status.snapshot.revision is %d", s.Revision))
	}
	var names []string
	for _, m := range c.Status.Members {
		names = append(names, m.Name)
		if m.Name == s.Member {
			if s.MemberID != "" && s.MemberID != m.ID {
				out = append(out, fmt.Sprintf("status.snapshot.memberID %s is not the ID of member %s (%s)", s.MemberID, m.Name, m.ID))
			}
			return out
		}
	}
	return append(out, fmt.Sprintf("status.snapshot.member %q is not a member of EtcdCluster %s (%s)", s.Member, c.Name, strings.Join(names, ", ")))
}

// deleteBackup deletes b and waits until it is gone, and with it the pods of its Jobs. The
// operator deletes the artifact first (deletionPolicy Delete), with a Job of its own; b's
// finalizers are removed when it does not finish in time (see release). b is deleted in
// the background: in the foreground, the garbage collector would take the operator's
// deletion Job, created after the deletion began, for one more dependent to delete.
func (e *Env) deleteBackup(ctx context.Context, b *etcdv1alpha1.EtcdBackup) error {
	start := time.Now()
	if err := e.release(ctx, "EtcdBackup", b, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		return err
	}
	var left []string
	err := wait.PollUntilContextCancel(ctx, e.poll(), true, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods, client.InNamespace(b.Namespace), client.MatchingLabels{resources.LabelBackup: b.Name}); err != nil {
			left = []string{err.Error()}
			return false, nil // the API server may be busy: try again
		}
		left = left[:0]
		for i := range pods.Items {
			left = append(left, "Pod "+pods.Items[i].Name)
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("the Jobs' pods of EtcdBackup %s are not gone (%w): %v", b.Name, err, left)
	}
	e.Report.Logf("deleted EtcdBackup %s and its Jobs' pods in %s", b.Name, time.Since(start).Round(time.Millisecond))
	return nil
}

// deleteClaim deletes pvc and waits until it is gone. Its finalizer
// (kubernetes.io/pvc-protection) is left alone: it holds the claim while a pod uses it,
// and the pods that do (a restored cluster's first member, the backup's Jobs) are deleted
// before, as they were created after.
func (e *Env) deleteClaim(ctx context.Context, pvc *corev1.PersistentVolumeClaim) error {
	start := time.Now()
	if err := e.Client.Delete(ctx, pvc); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	if err := e.waitGone(ctx, pvc); err != nil {
		return fmt.Errorf("PersistentVolumeClaim %s is not gone: %w", pvc.Name, err)
	}
	e.Report.Logf("deleted PersistentVolumeClaim %s in %s", pvc.Name, time.Since(start).Round(time.Millisecond))
	return nil
}
