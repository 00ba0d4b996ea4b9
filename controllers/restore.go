package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// A cluster with spec.bootstrap.restore starts from a backup: its first member's pod gets
// an init container that fetches the artifact, verifies its checksum and restores it into
// the member's data directory with the new cluster's identity; the other members then join
// as usual and copy the data from it. Only a first member that starts a new cluster (its
// data directory empty) is restored; once it holds data, nothing here applies.

// restoring reports whether action a creates the pod of a restored cluster's first member.
func restoring(c *etcdv1alpha1.EtcdCluster, a membership.Action) bool {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return false
	}
	return a.Kind == membership.CreateSeed || a.Kind == membership.CreatePod && a.InitialClusterState == "new"
}

// planRestore adjusts the planned action of a restored cluster: it waits while the backup
// has not succeeded, reports a failing restore as Blocked (Degraded/RestoreFailed), and
// otherwise returns the source the first member's pod restores from.
func (r *EtcdClusterReconciler) planRestore(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) (membership.Action, *resources.RestoreSource, error) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return a, nil, nil
	}
	if !restoring(c, a) {
		if a.Kind == membership.Wait && a.Reason == etcdv1alpha1.ReasonBootstrapping {
			return r.restoreProgress(ctx, c, a)
		}
		return a, nil, nil
	}
	src, waitMsg, err := r.restoreSource(ctx, c)
	if err != nil {
		return a, nil, err
	}
	if src == nil {
		return membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonRestoreSourceNotReady, Message: waitMsg}, nil, nil
	}
	a.Reason = etcdv1alpha1.ReasonRestoring
	a.Message = fmt.Sprintf("creating the first member %s, restored from %s", a.Member, describeSource(c.Spec.Bootstrap.Restore, src))
	return a, src, nil
}

// restoreProgress looks at the first member's restore init container while the cluster
// waits for it: running, it says so; failed, the cluster is Degraded with the agent's words.
func (r *EtcdClusterReconciler) restoreProgress(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) (membership.Action, *resources.RestoreSource, error) {
	first := cluster.For(c).MemberName(0)
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: first}, pod)
	if apierrors.IsNotFound(err) {
		return a, nil, nil
	}
	if err != nil {
		return a, nil, err
	}
	hasRestore := false
	for _, ic := range pod.Spec.InitContainers {
		hasRestore = hasRestore || ic.Name == resources.RestoreContainerName
	}
	if !hasRestore {
		return a, nil, nil
	}
	restoringNow := a
	restoringNow.Reason, restoringNow.Message = etcdv1alpha1.ReasonRestoring, fmt.Sprintf("the first member %s is restoring the backup", first)
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name != resources.RestoreContainerName {
			continue
		}
		var term *corev1.ContainerStateTerminated
		switch now, last := s.State.Terminated, s.LastTerminationState.Terminated; {
		case now != nil && now.ExitCode == 0:
			return a, nil, nil // restored; etcd is starting
		case now != nil:
			term = now
		case last != nil && last.ExitCode != 0:
			term = last
		default:
			return restoringNow, nil, nil
		}
		msg := term.Message
		if res, ok := agent.ParseResult(term.Message); ok && res.Error != "" {
			msg = res.Error
		}
		return membership.Action{Kind: membership.Blocked, Reason: etcdv1alpha1.ReasonRestoreFailed,
			Message: fmt.Sprintf("the first member %s could not restore the backup (it retries with a growing back-off): %s", first, lastLine(msg))}, nil, nil
	}
	return restoringNow, nil, nil // the kubelet has not reported the init container yet
}

// restoreSource resolves spec.bootstrap.restore to an artifact and its checksum. It
// returns nil and the reason to wait while the named backup has not succeeded.
func (r *EtcdClusterReconciler) restoreSource(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*resources.RestoreSource, string, error) {
	spec := c.Spec.Bootstrap.Restore
	if spec.Source != nil {
		if spec.Source.S3 != nil {
			return &resources.RestoreSource{S3: &spec.Source.S3.S3Bucket, Key: spec.Source.S3.Key, SHA256: spec.Source.SHA256}, "", nil
		}
		return &resources.RestoreSource{Claim: spec.Source.PVC.ClaimName, Key: spec.Source.PVC.Path, SHA256: spec.Source.SHA256}, "", nil
	}
	b := &etcdv1alpha1.EtcdBackup{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: c.Namespace, Name: spec.BackupName}, b)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Sprintf("EtcdBackup %s does not exist; no member starts until it has succeeded", spec.BackupName), nil
	}
	if err != nil {
		return nil, "", err
	}
	if !status.BackupSucceeded(b) {
		return nil, fmt.Sprintf("EtcdBackup %s has not succeeded; no member starts until it has", spec.BackupName), nil
	}
	src := &resources.RestoreSource{Key: b.Status.Artifact.Key, SHA256: b.Status.Artifact.SHA256}
	if d := b.Spec.Destination; d.S3 != nil {
		src.S3 = &d.S3.S3Bucket
	} else {
		src.Claim = d.PVC.ClaimName
	}
	return src, "", nil
}

func describeSource(spec *etcdv1alpha1.RestoreSpec, src *resources.RestoreSource) string {
	where := "claim " + src.Claim + " at " + src.Key
	if src.S3 != nil {
		where = "s3://" + src.S3.Bucket + "/" + src.Key
	}
	if spec.BackupName != "" {
		return "backup " + spec.BackupName + " (" + where + ")"
	}
	return where
}
