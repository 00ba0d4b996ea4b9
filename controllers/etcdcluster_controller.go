// Package controllers holds the Kubernetes glue of etcdpilot: it observes objects, asks the
// pure packages under internal/ what to do, and applies the answer.
package controllers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Finalizer holds an EtcdCluster until the operator has applied its PVC deletion policy.
const Finalizer = "etcd.etcdpilot.io/cleanup"

// DefaultWorkers is how many clusters are reconciled at once by default. A pass waits on the
// members: a member list that no member answers takes up to etcd.CallTimeout, a member that
// does not answer its status call up to etcd.HealthTimeout. With a single worker every other
// cluster's pass would queue behind such a pass (a cluster being deleted with its namespace,
// one that lost its quorum); passes of the same cluster never run at once whatever the number.
// Two, not more: at 1000 clusters (make bench-scale) four workers raised the operator's RSS
// by 18 MiB per 1000 clusters and doubled the p99 of a steady pass, two by 9 MiB and nothing
// (docs/benchmarks.md).
const DefaultWorkers = 2

// How soon to look again: quickly while a change is under way, and periodically when the
// cluster is steady, to notice unhealthy members (etcd does not emit Kubernetes events).
const (
	requeueProgressing = 2 * time.Second
	// requeueStale is how soon a pass whose status patch met a newer cluster runs again.
	requeueStale  = 200 * time.Millisecond
	requeueSteady = 30 * time.Second
	// requeueRotating is how often a cluster whose CA rotation waits out a phase looks
	// again.
	requeueRotating = 10 * time.Second
)

// EtcdClusterReconciler reconciles EtcdCluster objects.
type EtcdClusterReconciler struct {
	Client client.Client
	// APIReader reads what the cache does not hold (the user's TLS Secrets), and the member
	// pods as they are right before a disruptive action, where the cache may lag.
	APIReader client.Reader
	Scheme    *runtime.Scheme
	Recorder  events.EventRecorder

	// EtcdImages says which image runs each etcd release.
	EtcdImages versions.Images
	// ClusterDomain is the cluster's DNS domain (cluster.local), for certificate names.
	ClusterDomain string
	// NewEtcdClient makes the client the operator talks to members with.
	NewEtcdClient etcd.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Failpoints turns on the crash-test hooks (failpoint.go); Exit is how they exit
	// (os.Exit when nil).
	Failpoints bool
	Exit       func(code int)
	// Exec runs a command in a member's container: etcdctl for the snapshot taken before
	// an upgrade.
	Exec PodExec
	// CAMinPhase is how long each of the first two phases of a CA rotation lasts at least
	// (caMinPhase when zero): long enough for clients mounting the client Secret to see it
	// change.
	CAMinPhase time.Duration
	// Metrics records each pass in the operator's metrics; nil records nothing.
	Metrics *metrics.Recorder
	// AgentImage is the operator's own image, which restores a backup into the first member
	// of a restored cluster (spec.bootstrap.restore).
	AgentImage string
	// Operator is who the operator's pods are: the members' NetworkPolicy admits them to
	// the client and metrics ports (zero outside a pod: its traffic comes from a node).
	Operator resources.Operator

	// PeerRoundTrip reads a member's peer round trips for Auto raft timing (autopilot.go);
	// nil reads its metrics port.
	PeerRoundTrip PeerRoundTripReader
	// Workers is how many clusters are reconciled at once (DefaultWorkers when zero).
	Workers int

	// monitoring is what passes remember of the clusters' monitoring objects (monitoring.go).
	monitoring monitoringState
	// autopilot is what passes remember for Auto raft timing and storage autoscaling.
	autopilot autopilotState
	// zones is what passes remember of the nodes' zones (observe.go).
	zones nodeZones
}

// RBAC: each verb is what the reconciler does, and nothing more (controllers/rbac_test.go
// fails when the generated role changes).
//
// EtcdClusters: read and watched; updated to add and remove the finalizer, patched by the
// crash-test failpoints; status patched once per pass; finalizers updated so that owned
// objects may block their owner's deletion.
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters/finalizers,verbs=update
//
// Member pods: created, patched in place (labels, annotations), deleted to restart or remove
// a member. Claims: created, patched (annotations, a larger size, owner references dropped
// under Retain), deleted under deletionPolicy Delete. Services: created and patched, never
// deleted (garbage-collected with their EtcdCluster). Secrets: the CA and the certificates,
// created and updated whole (a certificate and its key change together); users' TLS Secrets
// read by name.
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;list;watch;create;update
// The pre-upgrade snapshot runs etcdctl in a member's container.
// +kubebuilder:rbac:groups="",resources=pods/exec,verbs=create
// The PodDisruptionBudget: created and patched, deleted while the cluster hibernates,
// garbage-collected with its EtcdCluster.
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete
// The members' NetworkPolicy: cached by label, created and patched, deleted when
// spec.networkPolicy.mode is Disabled.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// Whether the claims' StorageClass allows expansion, read before growing them.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses,verbs=get
// The zone label of the nodes members run on (status.members[].zone), read by name, once per
// node every 10 minutes.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// Events about what the operator did.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// steps is one pass over an EtcdCluster, in order. The pass ends early when a step says so;
// then the status is patched once from what the steps recorded (finish).
func (r *EtcdClusterReconciler) steps() []step[*clusterPass] {
	return []step[*clusterPass]{
		// The members' and clients' certificates: from the operator's CA, from cert-manager
		// (waiting while it issues them), or the user's own Secrets (tls.go).
		r.stepEnsureTLS,
		// The peer and client Services, the PodDisruptionBudget and the NetworkPolicy.
		r.stepEnsureServices,
		// The monitoring objects spec.monitoring asks for (monitoring.go); a failure goes to
		// the Monitoring condition and does not end the pass.
		r.stepEnsureMonitoring,
		// The member pods and claims, etcd's membership and health, and the pod each
		// member should run (observe.go).
		r.stepObserve,
		// What needs no restart: pod labels and annotations, spec hashes, and the claims
		// of members seen started marked bootstrapped.
		r.stepApplyInPlace,
		// The one membership change of the pass (membership.Plan), with the backup the first
		// member of a restored cluster starts from (internal/restore, restore.go).
		r.stepPlanMembership,
		// A cluster that lost its quorum (recovery.Plan, recovery.go): once the loss has
		// lasted and is approved, the recovery's step replaces the planned change.
		r.stepRecoverQuorum,
		// Before a restart or a removal, a second look: the change goes ahead only if every
		// other voter the plan saw healthy still is (membership.ConfirmDisruption).
		r.stepConfirmDisruption,
		// The planned change carried out: create, add, promote, move leadership, remove,
		// restart, snapshot, expand a claim (act).
		r.stepChangeMembership,
		// With no change to make, one step of spec.maintenance (maintenance.Plan,
		// maintenance.go): defragment one member, or recover from NOSPACE.
		r.stepMaintain,
		// Settled (no change, every member healthy on the spec): the raft timing of
		// timingProfile Auto from the measured round trips (tuning.Plan, autopilot.go).
		r.stepTuneRaftTiming,
		// Settled: storage.autoscaling's quota and volume size (autoscale.PlanAsking,
		// autopilot.go).
		r.stepAutoscaleStorage,
		// Settled, once spec.consistencyCheck.interval has passed: the voters' hashes
		// compared (consistency.Judge, consistency.go); the members that differ are fenced
		// and, under mode Replace, replaced by the next passes.
		r.stepCheckConsistency,
		// Settled: etcd's authentication follows spec.auth (auth.Plan, auth.go): the root
		// users made first, then authentication on; or authentication off.
		r.stepConfigureAuth,
		// The pods the members should run follow what the two self-tuning steps decided
		// (clusterspec.Effective): the next passes roll the change out like a spec change.
		r.stepFollowDecisions,
		// The rotation of the operator's CA moved on (pki.NextRotation, tls.go): started
		// when asked or near expiry, each phase ended once every member runs it; only a
		// settled cluster starts or ends a phase.
		r.stepRotateCA,
	}
}

// Reconcile brings one EtcdCluster towards its spec. A deleted one is finalized (its PVC
// deletion policy applied, finalize); one without the finalizer gets it before anything is
// created. Then one pass runs the steps in order (steps) and patches the status once
// (finish).
func (r *EtcdClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	c := &etcdv1alpha1.EtcdCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, c); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.Forget(req.Namespace, req.Name)
			r.autopilot.Forget(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !c.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, r.finalize(ctx, c)
	}
	if controllerutil.AddFinalizer(c, Finalizer) {
		// The update's watch event brings the next reconcile.
		return reconcile.Result{}, r.Client.Update(ctx, c)
	}
	p := &clusterPass{cluster: c, in: status.Input{Cluster: c}}
	defer p.close()
	err := runSteps(ctx, p, r.steps())
	p.in.Err = err
	return r.finish(ctx, p, err)
}

// finish ends a pass: it patches the status computed from what the steps recorded (the
// patch's error becomes the pass's when it had none) and records the pass in the metrics.
// A patch refused because the cluster changed since this pass read it (patchStatus) is no
// error: the pass decided from an old object, and the next, soon, decides again from the
// new one.
func (r *EtcdClusterReconciler) finish(ctx context.Context, p *clusterPass, err error) (reconcile.Result, error) {
	acted := err == nil
	perr := r.patchStatus(ctx, p.cluster, p.in)
	switch {
	case perr == nil || err != nil:
	case apierrors.IsConflict(perr):
		log.FromContext(ctx).V(1).Info("The cluster changed while this pass ran; deciding again")
		p.after(requeueStale)
	default:
		err = perr
	}
	pass := metrics.Pass{Cluster: p.cluster, Seen: p.in.Seen, Action: p.in.Action, Acted: acted, Succeeded: err == nil, Now: r.now()}
	if q := clusterspec.Effective(p.cluster).Etcd.QuotaBackendBytes; q != nil {
		pass.QuotaBytes = q.Value()
	}
	if p.in.Maintenance != nil {
		pass.Maintenance = p.in.Maintenance.Action
	}
	r.Metrics.Record(pass)
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: p.requeue}, nil
}

// act carries out the planned action, at most one membership change, and says how soon to
// look again: soon after a change or while waiting, periodically when there is none.
func (r *EtcdClusterReconciler) act(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, a membership.Action) (time.Duration, error) {
	logger := log.FromContext(ctx)
	if a.Kind == membership.None {
		logger = logger.V(1) // the steady state, every 30 s: only when asked for
	}
	logger.Info("Planned", "action", a.Kind, "member", a.Member, "reason", a.Reason)
	var err error
	switch a.Kind {
	case membership.None, membership.Blocked:
		return requeueSteady, nil
	case membership.Wait:
		return requeueProgressing, nil
	case membership.CreateSeed, membership.CreatePod, membership.AddLearner, membership.Promote:
		err = r.grow(ctx, c, obs, a)
	case membership.MoveLeader, membership.RemoveMember, membership.DeletePod:
		err = r.shrink(ctx, c, obs, a)
	case membership.Snapshot:
		err = r.snapshot(ctx, c, a)
	case membership.CreateBackup:
		err = r.createPlannedBackup(ctx, c, a)
	case membership.ForceRaftSnapshots:
		if err = obs.etcd.AppendNoOps(ctx, a.Entries); err == nil {
			eventf(r.Recorder, c, corev1.EventTypeNormal, "RaftSnapshotsForced", "Upgrade",
				"Appended %d no-op raft entries so that every member takes a raft snapshot before the upgrade to etcd %s", a.Entries, a.Version)
		}
	case membership.RestartMember, membership.StopMember:
		err = r.restartMember(ctx, c, a)
	case membership.ExpandVolume:
		err = r.expandVolume(ctx, c, obs, a)
	case membership.RollBack:
		// Recorded in the status (status.upgrade.rolledBack); the member goes back next pass.
		eventf(r.Recorder, c, corev1.EventTypeWarning, "UpgradeRolledBack", "Upgrade", "%s", a.Message)
	}
	var waiting *waitingError
	if errors.As(err, &waiting) {
		return requeueProgressing, nil
	}
	return requeueProgressing, err
}

// grow carries out the actions that create or add members.
func (r *EtcdClusterReconciler) grow(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, a membership.Action) error {
	switch a.Kind {
	case membership.CreateSeed:
		if err := r.createInitialMembers(ctx, c, a, obs.trustHash, obs.restore); err != nil {
			return err
		}
	case membership.CreatePod:
		created, err := r.createMember(ctx, c, a, obs.trustHash, obs.restore)
		if err != nil {
			return fmt.Errorf("creating the pod of member %s: %w", a.Member, err)
		}
		if !created {
			return &alreadyCreatedError{what: "the pod of member " + a.Member}
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberPodCreated", "CreatePod", "Created the pod of member %s (%s)", a.Member, a.Message)
	case membership.AddLearner:
		_, _, err := obs.etcd.MemberAddAsLearner(ctx, []string{a.PeerURL})
		if etcd.IsUnhealthyCluster(err) {
			// etcd refuses a new member until every member has been connected for a while
			// (strict reconfiguration check): a reason to wait, not a failure.
			return &waitingError{reason: a.Reason, message: err.Error()}
		}
		if err != nil {
			return fmt.Errorf("adding member %s as a learner: %w", a.Member, err)
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberAdded", "AddMember", "Added member %s as a learner", a.Member)
		r.crashAfter(ctx, c, a.Kind)
		if _, err := r.createMember(ctx, c, a, obs.trustHash, nil); err != nil {
			return fmt.Errorf("creating the pod of member %s: %w", a.Member, err)
		}
	case membership.Promote:
		err := obs.etcd.MemberPromote(ctx, a.MemberID)
		if etcd.IsLearnerNotReady(err) || etcd.IsNotSupportedForLearner(err) {
			return &waitingError{reason: a.Reason, message: err.Error()}
		}
		if err != nil {
			return fmt.Errorf("promoting learner %s: %w", a.Member, err)
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "LearnerPromoted", "PromoteMember", "Promoted learner %s to a voting member", a.Member)
	}
	return nil
}

// shrink carries out the actions that remove members.
func (r *EtcdClusterReconciler) shrink(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, a membership.Action) error {
	switch a.Kind {
	case membership.MoveLeader:
		if err := obs.etcd.MoveLeader(ctx, a.MemberID); err != nil {
			return fmt.Errorf("moving leadership away from %s: %w", a.Member, err)
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "LeaderMoved", "MoveLeader", "Moved leadership away from member %s (%s)", a.Member, a.Message)
	case membership.RemoveMember:
		err := obs.etcd.MemberRemove(ctx, a.MemberID)
		if etcd.IsUnhealthyCluster(err) {
			return &waitingError{reason: a.Reason, message: err.Error()}
		}
		if err != nil && !etcd.IsMemberNotFound(err) {
			return fmt.Errorf("removing member %s: %w", a.Member, err)
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberRemoved", "RemoveMember", "Removed member %s (%s)", a.Member, a.Message)
		r.crashAfter(ctx, c, a.Kind)
		return r.deleteMember(ctx, c, obs, a.Member)
	case membership.DeletePod:
		return r.deleteMember(ctx, c, obs, a.Member)
	}
	return nil
}

// snapshotTimeout bounds the pre-upgrade snapshot (etcdctl snapshot save in a member).
const snapshotTimeout = 5 * time.Minute

// snapshot saves a snapshot of the cluster's data to a member's volume, with etcdctl in the
// member's container (preconfigured to reach the member with its certificate), before an
// upgrade restarts the first member. The status records it once this succeeds.
func (r *EtcdClusterReconciler) snapshot(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) error {
	if a.Backup != "" {
		eventf(r.Recorder, c, corev1.EventTypeNormal, "SnapshotTaken", "Upgrade", "EtcdBackup %s holds the snapshot taken before upgrading to etcd %s", a.Backup, a.Version)
		return nil
	}
	if err := r.saveSnapshot(ctx, c, a.Member, resources.PreUpgradeSnapshotPath); err != nil {
		return fmt.Errorf("saving the pre-upgrade snapshot: %w", err)
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "SnapshotTaken", "Upgrade", "Saved a snapshot to %s on member %s's volume before upgrading to etcd %s",
		resources.PreUpgradeSnapshotPath, a.Member, a.Version)
	return nil
}

// saveSnapshot saves a snapshot of the cluster's data to path on a member's volume, with
// etcdctl in the member's container (preconfigured to reach the member with its
// certificate), within snapshotTimeout.
func (r *EtcdClusterReconciler) saveSnapshot(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member, path string) error {
	if r.Exec == nil {
		return errors.New("this operator cannot run commands in pods")
	}
	sctx, cancel := context.WithTimeout(ctx, snapshotTimeout)
	defer cancel()
	cmd := []string{resources.EtcdctlBinary, "snapshot", "save", path}
	if _, stderr, err := r.Exec(sctx, c.Namespace, member, resources.ContainerName, cmd); err != nil {
		return fmt.Errorf("on member %s: %w (%s)", member, err, strings.TrimSpace(stderr))
	}
	return nil
}

// createPlannedBackup creates the EtcdBackup the planner waits for: the snapshot before an
// upgrade, to spec.upgradeBackupDestination, or the final backup before hibernation, to
// spec.hibernation.backupDestination. It belongs to no one: like any backup it outlives the
// upgrade, the hibernation and the cluster.
func (r *EtcdClusterReconciler) createPlannedBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) error {
	dest, why, event := c.Spec.UpgradeBackupDestination, "before upgrading to etcd "+a.Version, "UpgradeBackupCreated"
	if a.Reason == etcdv1alpha1.ReasonHibernating {
		dest, why, event = c.Spec.Hibernation.BackupDestination, "before its members stop to hibernate", "FinalBackupCreated"
	}
	if dest == nil {
		return nil // the spec changed since the observation: the next pass decides again
	}
	b := &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: a.Backup, Namespace: c.Namespace, Labels: map[string]string{cluster.LabelCluster: c.Name}},
		Spec:       etcdv1alpha1.EtcdBackupSpec{ClusterName: c.Name, Destination: *dest.DeepCopy()},
	}
	if err := r.Client.Create(ctx, b); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil
		}
		return fmt.Errorf("creating EtcdBackup %s %s: %w", a.Backup, why, err)
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, event, a.Reason, "Created EtcdBackup %s to back the cluster up %s", a.Backup, why)
	return nil
}

// restartMember deletes a member's pod so that it comes back at the version the action names,
// built from the current spec (the next pass creates it, with the member's claim and
// identity): one step of an upgrade or a rollout. For StopMember, it comes back only when
// the cluster wakes from hibernation.
func (r *EtcdClusterReconciler) restartMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: a.Member, Namespace: c.Namespace}}
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, pod)); err != nil {
		return fmt.Errorf("restarting member %s: %w", a.Member, err)
	}
	if a.Kind == membership.StopMember {
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberStopped", a.Reason, "Stopped member %s; its claim keeps its data (%s)", a.Member, a.Message)
	} else {
		eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberRestarted", a.Reason, "Restarting member %s at etcd %s (%s)", a.Member, a.Version, a.Message)
	}
	r.crashAfter(ctx, c, a.Kind)
	return nil
}

// updatePodsInPlace gives running member pods the labels and annotations of the current spec
// (spec.podTemplate), which need no restart, and records the spec hash on pods made before
// the operator recorded it (resources.InPlace).
func (r *EtcdClusterReconciler) updatePodsInPlace(ctx context.Context, obs *observation) error {
	for _, member := range sortedKeys(obs.pods) {
		pod := obs.pods[member]
		if !pod.DeletionTimestamp.IsZero() {
			continue
		}
		labels, annotations, changed := resources.InPlace(pod, obs.desired[member])
		if !changed {
			continue
		}
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Labels, pod.Annotations = labels, annotations
		if err := r.Client.Patch(ctx, pod, patch); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("pod %s: %w", pod.Name, err)
		}
		if p, ok := obs.membership.Pods[member]; ok && p.SpecHash == "" {
			p.SpecHash = annotations[resources.AnnotationSpecHash]
			obs.membership.Pods[member] = p
		}
	}
	return nil
}

// expandVolume raises the storage request of a member's claim to spec.storage.size; the
// storage provider grows the volume, and the status follows it.
func (r *EtcdClusterReconciler) expandVolume(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, a membership.Action) error {
	pvc, ok := obs.pvcs[a.Member]
	if !ok {
		return fmt.Errorf("expanding the claim of member %s: it is gone", a.Member)
	}
	size := obs.membership.Storage.Size
	patch := client.MergeFrom(pvc.DeepCopy())
	if pvc.Spec.Resources.Requests == nil {
		pvc.Spec.Resources.Requests = corev1.ResourceList{}
	}
	pvc.Spec.Resources.Requests[corev1.ResourceStorage] = size
	if err := r.Client.Patch(ctx, pvc, patch); err != nil {
		return fmt.Errorf("expanding the claim of member %s to %s: %w", a.Member, size.String(), err)
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "VolumeExpanding", "ExpandVolume", "Expanding the claim %s of member %s to %s", pvc.Name, a.Member, size.String())
	return nil
}

// createMember creates a member's claim (unless ephemeral, or it exists) and its pod, which
// starts with the TLS material trustHash names.
func (r *EtcdClusterReconciler) createMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action, trustHash string, restore *resources.RestoreSource) (created bool, err error) {
	if a.OnExistingClaim {
		if err := r.claimStillThere(ctx, c, a.Member); err != nil {
			return false, err
		}
	} else if err := r.createClaim(ctx, c, a.Member, nil); err != nil {
		return false, err
	}
	return r.createPod(ctx, c, a, trustHash, restore)
}

// claimStillThere reads, from the API server rather than the cache, the claim a member's
// pod is made on with the member's data (Action.OnExistingClaim). When it is gone or going,
// the pass ends without making anything: the cache saw the claim a moment ago, and the next
// pass sees the member's data lost.
func (r *EtcdClusterReconciler) claimStillThere(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string) error {
	pvc := &corev1.PersistentVolumeClaim{}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(resources.MemberPVC(c, member)), pvc)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && pvc.DeletionTimestamp != nil):
		return &waitingError{reason: etcdv1alpha1.ReasonMemberDataLost,
			message: fmt.Sprintf("the claim of member %s, which holds its data, is gone: its pod is not made on a new one", member)}
	case err != nil:
		return fmt.Errorf("reading the claim of member %s: %w", member, err)
	}
	return nil
}

// alreadyCreatedError says that what an action creates exists already: an earlier pass made
// it and the cache does not show it yet. Nothing was done; the pass waits.
type alreadyCreatedError struct{ what string }

func (e *alreadyCreatedError) Error() string { return e.what + " exists already" }

// createInitialMembers starts a new cluster (CreateSeed): every initial member's claim
// first, each recording the initial cluster when there are several (a static bootstrap),
// then their pods. The restore source, if any, is the first member's.
func (r *EtcdClusterReconciler) createInitialMembers(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action, trustHash string, restore *resources.RestoreSource) error {
	members := a.Members
	if len(members) == 0 {
		members = []string{a.Member}
	}
	var static []string
	if len(members) > 1 {
		static = a.InitialCluster
	}
	for _, m := range members {
		if err := r.createClaim(ctx, c, m, static); err != nil {
			return fmt.Errorf("creating the claim of initial member %s: %w", m, err)
		}
	}
	created := 0
	for i, m := range members {
		one := a
		one.Member = m
		if i > 0 {
			restore = nil
		}
		ok, err := r.createPod(ctx, c, one, trustHash, restore)
		if err != nil {
			return fmt.Errorf("creating the pod of initial member %s: %w", m, err)
		}
		if ok {
			created++
			eventf(r.Recorder, c, corev1.EventTypeNormal, "MemberPodCreated", "CreatePod", "Created the pod of member %s (%s)", m, a.Message)
			r.crashAfter(ctx, c, "CreateInitialMember")
		}
	}
	if created == 0 {
		return &alreadyCreatedError{what: "the pods of the initial members"}
	}
	return nil
}

// createClaim creates a member's claim, unless its data is ephemeral or it exists; a claim
// of a static bootstrap records the initial cluster.
func (r *EtcdClusterReconciler) createClaim(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string, initialCluster []string) error {
	if c.Spec.Storage.Ephemeral {
		return nil
	}
	pvc := resources.MemberPVC(c, member)
	if len(initialCluster) > 0 {
		if pvc.Annotations == nil {
			pvc.Annotations = map[string]string{}
		}
		pvc.Annotations[annotationInitialCluster] = strings.Join(initialCluster, ",")
	}
	if err := r.Client.Create(ctx, pvc); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// createPod creates a member's pod from the action's flags and version; created is false
// when it exists already.
func (r *EtcdClusterReconciler) createPod(ctx context.Context, c *etcdv1alpha1.EtcdCluster, a membership.Action, trustHash string, restore *resources.RestoreSource) (created bool, err error) {
	m := r.memberConfig(c, a.Member, a.Version, trustHash)
	m.InitialCluster, m.InitialClusterState = a.InitialCluster, a.InitialClusterState
	pod := resources.MemberPod(c, m, r.EtcdImages)
	if restore != nil {
		if r.AgentImage == "" {
			return false, fmt.Errorf("cannot restore: the operator does not know its own image (ETCDPILOT_AGENT_IMAGE)")
		}
		resources.WithRestore(pod, c, m, *restore, r.AgentImage)
	}
	if err := r.Client.Create(ctx, pod); apierrors.IsAlreadyExists(err) {
		return false, nil
	} else if err != nil {
		return false, err
	}
	return true, nil
}

// memberConfig is what a member's pod is built from: its name, its release (and the
// image, which the crash tests can break), and the TLS material it starts with.
func (r *EtcdClusterReconciler) memberConfig(c *etcdv1alpha1.EtcdCluster, member, version, trustHash string) resources.MemberConfig {
	return resources.MemberConfig{Name: member, Version: version, Image: r.brokenImage(c, version), TrustHash: trustHash}
}

// soloMemberConfig is memberConfig for a member that starts a new cluster of its own (a
// recovery's): at the release the cluster should run.
func (r *EtcdClusterReconciler) soloMemberConfig(c *etcdv1alpha1.EtcdCluster, obs *observation, member string) resources.MemberConfig {
	m := r.memberConfig(c, member, obs.membership.Upgrade.Desired(), obs.trustHash)
	m.InitialCluster = []string{member + "=" + obs.membership.Cluster.PeerURL(member)}
	m.InitialClusterState = "new"
	return m
}

// deleteMember deletes the pod of a member that is no longer in the cluster, and applies the
// deletion policy to its claim: deleted, or kept and marked so that it never starts a member
// again. The claim is handled first: should the operator stop in between, the pod still
// exists and the next pass comes back here.
func (r *EtcdClusterReconciler) deleteMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, member string) error {
	if pvc, ok := obs.pvcs[member]; ok {
		var err error
		if c.Spec.DeletionPolicy == etcdv1alpha1.DeletionPolicyDelete {
			err = client.IgnoreNotFound(r.Client.Delete(ctx, pvc))
		} else if pvc.Annotations[annotationRemoved] != "true" {
			err = r.annotate(ctx, pvc, annotationRemoved)
		}
		if err != nil {
			return fmt.Errorf("applying the deletion policy to the claim of removed member %s: %w", member, err)
		}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: c.Namespace}}
	if err := client.IgnoreNotFound(r.Client.Delete(ctx, pod)); err != nil {
		return fmt.Errorf("deleting the pod of removed member %s: %w", member, err)
	}
	return nil
}

// ensureServices creates or corrects the peer and client Services and the
// PodDisruptionBudget, copying only the fields the operator owns.
func (r *EtcdClusterReconciler) ensureServices(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	for _, desired := range []*corev1.Service{resources.PeerService(c), resources.ClientService(c)} {
		svc := &corev1.Service{ObjectMeta: desired.ObjectMeta}
		if _, err := controllerutil.CreateOrPatch(ctx, r.Client, svc, func() error {
			svc.Labels, svc.OwnerReferences = desired.Labels, desired.OwnerReferences
			svc.Spec.Selector, svc.Spec.Ports = desired.Spec.Selector, desired.Spec.Ports
			svc.Spec.PublishNotReadyAddresses = desired.Spec.PublishNotReadyAddresses
			if svc.CreationTimestamp.IsZero() {
				svc.Spec.ClusterIP = desired.Spec.ClusterIP
			}
			return nil
		}); err != nil {
			return fmt.Errorf("ensuring service %s: %w", desired.Name, r.foreign(ctx, err, svc, "Service"))
		}
	}
	if err := r.ensurePodDisruptionBudget(ctx, c); err != nil {
		return err
	}
	return r.ensureNetworkPolicy(ctx, c)
}

// ensurePodDisruptionBudget creates or corrects the members' budget, or deletes it while the
// cluster hibernates (resources.PodDisruptionBudget).
func (r *EtcdClusterReconciler) ensurePodDisruptionBudget(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	desired := resources.PodDisruptionBudget(c)
	if desired == nil {
		name := cluster.For(c).PodDisruptionBudget()
		err := r.deleteOwned(ctx, c, &policyv1.PodDisruptionBudget{}, name)
		if err != nil {
			return fmt.Errorf("deleting pod disruption budget %s (the cluster hibernates): %w", name, err)
		}
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: desired.ObjectMeta}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, pdb, func() error {
		pdb.Labels, pdb.OwnerReferences, pdb.Spec = desired.Labels, desired.OwnerReferences, desired.Spec
		return nil
	}); err != nil {
		return fmt.Errorf("ensuring pod disruption budget %s: %w", desired.Name, r.foreign(ctx, err, pdb, "PodDisruptionBudget"))
	}
	return nil
}

// deleteOwned deletes the object of that name the cluster controls, if there is one (read
// from the cache first: no request when there is nothing to delete).
func (r *EtcdClusterReconciler) deleteOwned(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obj client.Object, name string) error {
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err == nil && metav1.IsControlledBy(obj, c) {
		err = client.IgnoreNotFound(r.Client.Delete(ctx, obj))
	}
	return err
}

// ensureNetworkPolicy creates or corrects the members' NetworkPolicy, or deletes it when
// spec.networkPolicy.mode is Disabled (read from the cache first: no request when there is
// nothing to delete).
func (r *EtcdClusterReconciler) ensureNetworkPolicy(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	desired := resources.NetworkPolicy(c, r.Operator)
	if desired == nil {
		name := cluster.For(c).NetworkPolicy()
		if err := r.deleteOwned(ctx, c, &networkingv1.NetworkPolicy{}, name); err != nil {
			return fmt.Errorf("deleting network policy %s (spec.networkPolicy.mode is Disabled): %w", name, err)
		}
		return nil
	}
	np := &networkingv1.NetworkPolicy{ObjectMeta: desired.ObjectMeta}
	if _, err := controllerutil.CreateOrPatch(ctx, r.Client, np, func() error {
		np.Labels, np.OwnerReferences, np.Spec = desired.Labels, desired.OwnerReferences, desired.Spec
		return nil
	}); err != nil {
		return fmt.Errorf("ensuring network policy %s: %w", desired.Name, r.foreign(ctx, err, np, "NetworkPolicy"))
	}
	return nil
}

// foreign explains the failure to create one of the cluster's objects whose name is taken.
// The cache holds only objects with the operator's label, so an object of that name made by
// someone else is invisible to it, and every pass would fail the same way on "already
// exists": when the object in the API server lacks the label, the error says so and what to
// do. Otherwise (an object this operator made that the cache does not show yet) err stays.
func (r *EtcdClusterReconciler) foreign(ctx context.Context, err error, obj client.Object, kind string) error {
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	current, ok := obj.DeepCopyObject().(client.Object)
	if !ok || r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), current) != nil ||
		current.GetLabels()[cluster.LabelManagedBy] == cluster.ManagedBy {
		return err
	}
	return fmt.Errorf("a %s named %s already exists in namespace %s, not made by etcdpilot (it lacks the label %s=%s): "+
		"the cluster needs that name; rename or delete that %s, or give the EtcdCluster another name",
		kind, obj.GetName(), obj.GetNamespace(), cluster.LabelManagedBy, cluster.ManagedBy, kind)
}

// finalize applies the PVC deletion policy, then lets the EtcdCluster go. Retained claims
// lose their owner reference, so the garbage collector leaves them (and the data) alone.
func (r *EtcdClusterReconciler) finalize(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	if !controllerutil.ContainsFinalizer(c, Finalizer) {
		return nil
	}
	r.monitoring.forget(c.UID)
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.Client.List(ctx, &pvcs, client.InNamespace(c.Namespace), client.MatchingLabels(cluster.For(c).SelectorLabels())); err != nil {
		return err
	}
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if c.Spec.DeletionPolicy == etcdv1alpha1.DeletionPolicyDelete {
			if err := r.Client.Delete(ctx, pvc); client.IgnoreNotFound(err) != nil {
				return err
			}
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		var kept []metav1.OwnerReference
		for _, ref := range pvc.OwnerReferences {
			if ref.UID != c.UID {
				kept = append(kept, ref)
			}
		}
		pvc.OwnerReferences = kept
		if err := r.Client.Patch(ctx, pvc, patch); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	verb := "Kept"
	if c.Spec.DeletionPolicy == etcdv1alpha1.DeletionPolicyDelete {
		verb = "Deleted"
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "Finalized", "Delete", "%s %d member volume claims (deletionPolicy %s)", verb, len(pvcs.Items), c.Spec.DeletionPolicy)
	controllerutil.RemoveFinalizer(c, Finalizer)
	return r.Client.Update(ctx, c)
}

// patchStatus computes the status, patches it if it changed, then emits events for the
// transitions between the old status and the new.
func (r *EtcdClusterReconciler) patchStatus(ctx context.Context, c *etcdv1alpha1.EtcdCluster, in status.Input) error {
	old, changed, err := patchStatus(ctx, r.Client, c, &c.Status, status.Compute(in))
	if changed {
		emit(r.Recorder, c, status.Transitions(old, c.Status))
	}
	return err
}

func (r *EtcdClusterReconciler) now() time.Time { return nowOf(r.Now) }

// SetupWithManager registers the reconciler with the manager: it watches EtcdClusters and
// everything they own.
func (r *EtcdClusterReconciler) SetupWithManager(mgr manager.Manager) error {
	workers := r.Workers
	if workers == 0 {
		workers = DefaultWorkers
	}
	return builder.ControllerManagedBy(mgr).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		For(&etcdv1alpha1.EtcdCluster{}).
		Owns(&corev1.Pod{}).
		Owns(&corev1.PersistentVolumeClaim{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.Secret{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Named("etcdcluster").
		Complete(r)
}
