package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/restore"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// planRestore gathers what internal/restore decides a restored cluster's start from (the
// source, once the first member is to be created; its restore init container, while it
// starts) and returns the adjusted action, with the source the first member's pod restores
// from when the action creates it.
func (r *EtcdClusterReconciler) planRestore(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) (membership.Action, *resources.RestoreSource, error) {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return a, nil, nil
	}
	o := restore.Observed{FirstMember: cluster.For(c).MemberName(0)}
	var src *resources.RestoreSource
	switch {
	case restore.CreatesFirstMember(a):
		var err error
		if src, o.NotReady, err = r.restoreSource(ctx, c); err != nil {
			return a, nil, err
		}
		if src != nil {
			o.Source = describeSource(c.Spec.Bootstrap.Restore, src)
		}
	case restore.WaitsForFirstMember(a):
		if err := r.observeRestoreInit(ctx, c.Namespace, &o); err != nil {
			return a, nil, err
		}
	}
	if src != nil && c.Spec.Bootstrap.Restore.BumpRevision != nil {
		// CEL: bumpRevision comes with markCompacted (etcdutl bumps only while marking).
		src.BumpRevision = c.Spec.Bootstrap.Restore.BumpRevision
	}
	return restore.Plan(a, o), src, nil
}

// observeRestoreInit reads the first member's restore init container, if its pod has one.
func (r *EtcdClusterReconciler) observeRestoreInit(ctx context.Context, namespace string, o *restore.Observed) error {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: o.FirstMember}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	for _, ic := range pod.Spec.InitContainers {
		o.HasInit = o.HasInit || ic.Name == resources.RestoreContainerName
	}
	for i, s := range pod.Status.InitContainerStatuses {
		if s.Name == resources.RestoreContainerName {
			o.Init = &pod.Status.InitContainerStatuses[i]
		}
	}
	return nil
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
	return backupSource(b), "", nil
}

// backupSource is the artifact of a successful backup, as a restore source.
func backupSource(b *etcdv1alpha1.EtcdBackup) *resources.RestoreSource {
	src := &resources.RestoreSource{Key: b.Status.Artifact.Key, SHA256: b.Status.Artifact.SHA256, Compression: b.Status.Artifact.Compression}
	if d := b.Spec.Destination; d.S3 != nil {
		src.S3 = &d.S3.S3Bucket
	} else {
		src.Claim = d.PVC.ClaimName
	}
	return src
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
