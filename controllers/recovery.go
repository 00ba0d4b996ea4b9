package controllers

import (
	"context"
	"fmt"
	"path"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/recovery"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// planRecovery asks internal/recovery what a cluster that lost its quorum needs, from the
// observation and the last status.recovery, given the action the membership planner chose
// (a). It records the decision in the status input, and returns the step; when the step
// overrides the planner, in.Action says what it does.
func (r *EtcdClusterReconciler) planRecovery(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, in *status.Input) (recovery.Step, error) {
	o := recoveryObserved(c, obs, in)
	if obs.membership.Members == nil || c.Status.Recovery != nil {
		// The newest backup matters only while the quorum is lost.
		b, err := r.newestBackup(ctx, c)
		if err != nil {
			return recovery.Step{}, err
		}
		if b != nil {
			o.Backup = &recovery.Backup{Name: b.Name, Completed: b.Status.CompletedAt.Time, Revision: b.Status.Snapshot.Revision}
		}
	}
	step := recovery.Plan(o)
	in.RecoveryDecided, in.Recovery = true, step.Status
	if step.Overrides() {
		kind := membership.Wait
		if step.Kind == recovery.Blocked {
			kind = membership.Blocked
		}
		in.Action = membership.Action{Kind: kind, Member: step.Member, Reason: step.Reason, Message: step.Message}
	} else if st := step.Status; st != nil && st.Phase == etcdv1alpha1.RecoveryQuorumLost && in.Action.Kind == membership.Wait {
		// The planner waits for members to start; the cluster has lost its quorum.
		in.Action.Reason, in.Action.Message = etcdv1alpha1.ReasonQuorumLost, st.Message
	}
	return step, nil
}

// recoveryObserved is what internal/recovery decides from: the spec, the last status, the
// members that answered, and the member pods and claims.
func recoveryObserved(c *etcdv1alpha1.EtcdCluster, obs *observation, in *status.Input) recovery.Observed {
	policy, after := clusterspec.QuorumLossRecovery(c)
	o := recovery.Observed{
		Policy: policy, After: after, Now: obs.membership.Now, Ephemeral: c.Spec.Storage.Ephemeral, Size: int(c.Spec.Size),
		Quorum: obs.membership.Members != nil, Answering: obs.answering, LeaderKnown: obs.leaderKnown,
		Pods: map[string]recovery.Pod{}, Claims: map[string]recovery.Claim{},
		Last: c.Status.Recovery, Approval: c.Annotations[etcdv1alpha1.AnnotationApproveRecovery],
		Settled: in.Action.Kind == membership.None, MemberName: obs.membership.Cluster.MemberName,
		Seeding: in.Action.Kind == membership.CreateSeed,
	}
	if in.Action.Kind == membership.CreatePod && in.Action.Reason == etcdv1alpha1.ReasonRecreatingPod {
		o.Restarting = in.Action.Member
	}
	for _, m := range obs.membership.Members {
		o.Members = append(o.Members, m.Name)
	}
	for _, m := range c.Status.Members {
		if !m.Learner {
			o.Voters = append(o.Voters, m.Name)
		}
	}
	for name, p := range obs.pods {
		rp := recovery.Pod{Terminating: p.DeletionTimestamp != nil, Recovery: p.Annotations[resources.AnnotationRecovery]}
		for i, s := range p.Status.InitContainerStatuses {
			if s.Name == resources.RecoveryContainerName || s.Name == resources.RestoreContainerName {
				rp.Init = &p.Status.InitContainerStatuses[i]
			}
		}
		o.Pods[name] = rp
	}
	for name, pvc := range obs.pvcs {
		o.Claims[name] = recovery.Claim{Going: pvc.DeletionTimestamp != nil, Removed: pvc.Annotations[annotationRemoved] == "true"}
	}
	return o
}

// newestBackup is the cluster's newest successful EtcdBackup, nil when it has none.
func (r *EtcdClusterReconciler) newestBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*etcdv1alpha1.EtcdBackup, error) {
	var list etcdv1alpha1.EtcdBackupList
	if err := r.Client.List(ctx, &list, client.InNamespace(c.Namespace)); err != nil {
		return nil, fmt.Errorf("listing the cluster's backups: %w", err)
	}
	var newest *etcdv1alpha1.EtcdBackup
	for i := range list.Items {
		b := &list.Items[i]
		if b.Spec.ClusterName != c.Name || !status.BackupSucceeded(b) || b.Status.CompletedAt == nil || b.Status.Snapshot == nil {
			continue
		}
		if newest == nil || b.Status.CompletedAt.After(newest.Status.CompletedAt.Time) {
			newest = b
		}
	}
	return newest, nil
}

// recover carries out a recovery step (internal/recovery). A SaveSnapshot that succeeds records the snapshot in the step's status.
func (r *EtcdClusterReconciler) recover(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, step recovery.Step) error {
	st := step.Status
	switch step.Kind {
	case recovery.SaveSnapshot:
		key := recovery.SnapshotKey(st.ID)
		if err := r.saveSnapshot(ctx, c, step.Member, path.Join(resources.DataMountPath, key)); err != nil {
			return fmt.Errorf("saving the recovery's snapshot: %w", err)
		}
		st.Snapshot = key
		eventf(r.Recorder, c, corev1.EventTypeNormal, "RecoverySnapshotSaved", "Recover", "Saved a snapshot of member %s to %s on its volume", step.Member, key)
		r.crashAfter(ctx, c, "RecoverySnapshot")
	case recovery.Retire:
		if err := r.deleteMember(ctx, c, obs, step.Member); err != nil {
			return err
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberRetired", "Recover", "Removed member %s, lost with the quorum (recovery %s)", step.Member, st.ID)
	case recovery.StopSurvivor:
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: step.Member, Namespace: c.Namespace}}
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, pod)); err != nil {
			return fmt.Errorf("stopping member %s: %w", step.Member, err)
		}
	case recovery.StartSurvivor:
		return r.startSurvivor(ctx, c, obs, st)
	case recovery.StartFromBackup:
		return r.startFromBackup(ctx, c, obs, step)
	}
	return nil
}

// startSurvivor creates the survivor's pod with the init container that restores its
// snapshot as a new cluster of one member.
func (r *EtcdClusterReconciler) startSurvivor(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, st *etcdv1alpha1.RecoveryStatus) error {
	if r.AgentImage == "" {
		return fmt.Errorf("cannot recover: the operator does not know its own image (ETCDPILOT_AGENT_IMAGE)")
	}
	m := r.soloMemberConfig(c, obs, st.Survivor)
	pod := resources.MemberPod(c, m, r.EtcdImages)
	resources.WithRecovery(pod, c, m, st.ID, st.Snapshot, st.RevisionBump, r.AgentImage)
	if err := r.Client.Create(ctx, pod); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberPodCreated", "Recover", "Created the pod of member %s, which starts alone from the snapshot %s (recovery %s)", st.Survivor, st.Snapshot, st.ID)
	return nil
}

// startFromBackup creates the claim and pod of a fresh member whose init container restores
// the recovery's backup as a new cluster of one member, revisions raised; its pod carries
// the recovery's ID, which is how later passes know it.
func (r *EtcdClusterReconciler) startFromBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, step recovery.Step) error {
	st := step.Status
	if r.AgentImage == "" {
		return fmt.Errorf("cannot recover: the operator does not know its own image (ETCDPILOT_AGENT_IMAGE)")
	}
	b := &etcdv1alpha1.EtcdBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: st.Backup}, b); err != nil {
		return fmt.Errorf("reading EtcdBackup %s to recover from: %w", st.Backup, err)
	}
	if !status.BackupSucceeded(b) {
		return fmt.Errorf("EtcdBackup %s, chosen to recover from, no longer holds a successful backup", st.Backup)
	}
	src := backupSource(b)
	src.BumpRevision = &st.RevisionBump
	if err := r.createClaim(ctx, c, step.Member, nil); err != nil {
		return err
	}
	m := r.soloMemberConfig(c, obs, step.Member)
	pod := resources.MemberPod(c, m, r.EtcdImages)
	resources.WithRestore(pod, c, m, *src, r.AgentImage)
	pod.Annotations[resources.AnnotationRecovery] = st.ID
	if err := r.Client.Create(ctx, pod); err != nil {
		return client.IgnoreAlreadyExists(err)
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberPodCreated", "Recover", "Created the pod of member %s, which starts alone from EtcdBackup %s (recovery %s)", step.Member, st.Backup, st.ID)
	return nil
}
