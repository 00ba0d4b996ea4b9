package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// clusterPass is what one pass over an EtcdCluster carries from step to step.
type clusterPass struct {
	cluster *etcdv1alpha1.EtcdCluster
	// in is what the status is computed from once the pass ends (internal/status).
	in status.Input
	// tls is the cluster's TLS material, from the first step on.
	tls *tlsState
	// obs is what the observe step saw; nil before it.
	obs *observation
	// requeue is the soonest next pass a step asked for; zero when none did.
	requeue time.Duration
}

// after asks for the next pass within d: of the steps' asks, the soonest wins.
func (p *clusterPass) after(d time.Duration) {
	if d > 0 && (p.requeue == 0 || d < p.requeue) {
		p.requeue = d
	}
}

// idle says that the pass planned no membership change.
func (p *clusterPass) idle() bool { return p.in.Action.Kind == membership.None }

// settled says that the pass planned no membership change and that every member is healthy
// and runs the spec (membership.Observed.Settled).
func (p *clusterPass) settled() bool { return p.idle() && p.obs.membership.Settled() }

// close releases the etcd client the observation made, if any.
func (p *clusterPass) close() {
	if p.obs != nil {
		p.obs.close()
	}
}

func (r *EtcdClusterReconciler) stepEnsureTLS(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	st, err := r.ensureTLS(ctx, p.cluster)
	var waiting *waitingError
	if errors.As(err, &waiting) {
		p.in.Action = membership.Action{Kind: membership.Wait, Reason: waiting.reason, Message: waiting.message}
		p.after(requeueProgressing)
		return endPass, nil
	}
	if err != nil {
		return endPass, err
	}
	p.tls = st
	p.in.TLSSeen, p.in.CARotation, p.in.TLS = true, st.caStatus(), st.tlsStatus()
	return next, nil
}

func (r *EtcdClusterReconciler) stepEnsureServices(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	return next, r.ensureServices(ctx, p.cluster)
}

func (r *EtcdClusterReconciler) stepEnsureMonitoring(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	p.in.Monitoring = r.ensureMonitoring(ctx, p.cluster)
	return next, nil
}

func (r *EtcdClusterReconciler) stepObserve(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	obs, err := r.observe(ctx, p.cluster, p.tls)
	if err != nil {
		return endPass, fmt.Errorf("observing members: %w", err)
	}
	p.obs = obs
	p.in.Seen, p.in.Observed, p.in.Details = true, obs.membership, obs.details
	return next, nil
}

func (r *EtcdClusterReconciler) stepApplyInPlace(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if err := r.recordBootstrapped(ctx, p.obs); err != nil {
		return endPass, fmt.Errorf("recording bootstrapped members: %w", err)
	}
	if err := r.updatePodsInPlace(ctx, p.obs); err != nil {
		return endPass, fmt.Errorf("updating member pods in place: %w", err)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepPlanMembership(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	var err error
	p.in.Action, p.obs.restore, err = r.planRestore(ctx, p.cluster, membership.Plan(p.obs.membership))
	if err != nil {
		return endPass, fmt.Errorf("resolving the restore source: %w", err)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepRecoverQuorum(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if p.obs.membership.Hibernate {
		return next, nil // members stopped on purpose have no quorum to recover
	}
	step, err := r.planRecovery(ctx, p.cluster, p.obs, &p.in)
	if err != nil || !step.Overrides() {
		return next, err
	}
	// Like the membership planner's "Planned": a recovery that waits says on what.
	log.FromContext(ctx).Info("Recovery", "action", step.Kind, "member", step.Member, "message", step.Message)
	p.after(requeueProgressing)
	return endPass, r.recover(ctx, p.cluster, p.obs, step)
}

func (r *EtcdClusterReconciler) stepConfirmDisruption(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	a := p.in.Action
	if !membership.Disruptive(a) {
		return next, nil
	}
	now, err := r.recheck(ctx, p.cluster, p.obs)
	if err != nil {
		return endPass, fmt.Errorf("looking again before %s of member %s: %w", a.Kind, a.Member, err)
	}
	p.in.Action = p.obs.membership.ConfirmDisruption(a, now)
	return next, nil
}

func (r *EtcdClusterReconciler) stepChangeMembership(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	a := p.in.Action
	requeue, err := r.act(ctx, p.cluster, p.obs, a)
	var exists *alreadyCreatedError
	if errors.As(err, &exists) {
		// The cache had not yet shown what an earlier pass created: nothing was done.
		p.in.Action = membership.Action{Kind: membership.Wait, Member: a.Member, Reason: a.Reason, Message: a.Message}
		requeue, err = requeueProgressing, nil
	}
	p.after(requeue)
	if err != nil {
		return endPass, err
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepMaintain(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if !p.idle() || p.obs.membership.Hibernate {
		return next, nil
	}
	out, err := r.maintain(ctx, p.cluster, p.obs)
	p.in.Maintenance = out
	if err != nil {
		return endPass, fmt.Errorf("maintenance: %w", err)
	}
	if k := out.Action.Kind; k != maintenance.None && k != maintenance.CannotRecover {
		// A step was taken: the next pass soon sees what it did.
		p.after(requeueProgressing)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepTuneRaftTiming(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if p.settled() {
		p.in.RaftTiming = r.tune(ctx, p)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepAutoscaleStorage(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if p.settled() {
		p.in.Storage = r.autoscaleStorage(ctx, p.cluster, p.obs)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepCheckConsistency(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if p.settled() {
		p.in.Consistency = r.checkConsistency(ctx, p)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepConfigureAuth(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	if !p.settled() {
		return next, nil
	}
	st, err := r.configureAuth(ctx, p)
	p.in.Auth = st
	if err != nil {
		return endPass, fmt.Errorf("configuring etcd's authentication: %w", err)
	}
	return next, nil
}

// stepFollowDecisions gives the observation the pods of the spec the self-tuning steps
// decided, when it differs from the last (clusterspec.Effective), so that this pass's status
// counts the members that run the decided spec, not the last one.
func (r *EtcdClusterReconciler) stepFollowDecisions(_ context.Context, p *clusterPass) (stepOutcome, error) {
	if p.in.RaftTiming == nil && p.in.Storage == nil {
		return next, nil
	}
	decided := p.cluster.DeepCopy()
	if p.in.RaftTiming != nil {
		decided.Status.RaftTiming = p.in.RaftTiming
	}
	if p.in.Storage != nil {
		decided.Status.Storage = p.in.Storage
	}
	if !equality.Semantic.DeepEqual(clusterspec.Effective(p.cluster), clusterspec.Effective(decided)) {
		r.desiredPods(decided, p.obs)
	}
	return next, nil
}

func (r *EtcdClusterReconciler) stepRotateCA(ctx context.Context, p *clusterPass) (stepOutcome, error) {
	err := r.advanceCARotation(ctx, p.cluster, p.tls, p.settled())
	p.in.CARotation = p.tls.caStatus()
	if err != nil {
		return endPass, err
	}
	if p.tls.rotatingCA() {
		p.after(requeueRotating)
	}
	return next, nil
}
