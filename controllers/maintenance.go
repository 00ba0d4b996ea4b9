package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// maintain is the maintenance step of a pass that has no membership change to make: it
// plans one step of spec.maintenance (internal/maintenance) from what the pass observed and
// carries it out. The NOSPACE recovery compacts first (to keep the history, then to the
// current revision when the history does not fit), then defragments: a pass that finds a
// revision already compacted goes on to the next step at once. The outcome goes to the
// status, which records the defragmentation and the completed scheduled run. It is nil
// only with an error: the status then keeps the last.
func (r *EtcdClusterReconciler) maintain(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation) (*status.Maintenance, error) {
	now := r.now()
	policy, err := maintenance.PolicyFor(c, now)
	if err != nil {
		return nil, err
	}
	observed := maintenanceObserved(c, obs, now)
	a := maintenance.Plan(policy, observed)
	out := &status.Maintenance{Action: a}
	if a.Kind != maintenance.None {
		log.FromContext(ctx).Info("Maintenance", "action", a.Kind, "member", a.Member, "reason", a.Reason)
	}
	if compacted, err := r.maintenanceCompact(ctx, c, obs, policy, observed, out); compacted || err != nil {
		return out, err
	}
	if a := out.Action; a.Kind == maintenance.None {
		if a.Reason == maintenance.ReasonRunComplete && policy.ScheduledRunDue {
			out.RunCompleted = now
		}
		return out, nil
	}
	return out, r.maintenanceStep(ctx, c, obs, out, now)
}

// maxCompactionsPerPass bounds the compactions one pass tries: the NOSPACE recovery plans
// two at most (one that keeps the history, one to the current revision), each to a
// revision above the one the plan knows compacted, so a third is never planned. Were it
// planned, the pass would leave it to the next one.
const maxCompactionsPerPass = 3

// maintenanceCompact carries out out.Action while it is a compaction. One that etcd
// carries out is the pass's step (compacted is true): the sizes this pass saw are from
// before it, and the next pass sees what it freed. One that etcd refuses because the
// revision is already compacted was done by an earlier pass (or further, by etcd's
// auto-compaction): what this pass saw is after it, so observed learns the revision and
// the next step is planned at once into out.Action, which may be another compaction.
func (r *EtcdClusterReconciler) maintenanceCompact(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation,
	policy maintenance.Policy, observed maintenance.Observed, out *status.Maintenance) (compacted bool, err error) {
	for range maxCompactionsPerPass {
		a := out.Action
		if a.Kind != maintenance.Compact {
			return false, nil
		}
		err = obs.etcd.Compact(ctx, a.Revision)
		switch {
		case err == nil:
			eventf(r.Recorder, c, corev1.EventTypeNormal, "Compacted", "Maintenance", "%s", a.Message)
			return true, nil
		case !etcd.IsCompacted(err):
			return false, fmt.Errorf("compacting to revision %d: %w", a.Revision, err)
		}
		observed.CompactedRevision = a.Revision
		out.Action = maintenance.Plan(policy, observed)
	}
	return false, nil
}

// maintenanceStep carries out out.Action when it is a defragmentation or the disarming of
// NOSPACE, and records the defragmentation in out.
func (r *EtcdClusterReconciler) maintenanceStep(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, out *status.Maintenance, now time.Time) error {
	a := out.Action
	switch a.Kind {
	case maintenance.Defragment:
		endpoint := cluster.For(c).ClientURL(a.Member)
		before := obs.details[a.Member].DBSize
		if err := obs.etcd.Defragment(ctx, endpoint); err != nil {
			eventf(r.Recorder, c, corev1.EventTypeWarning, "DefragmentationFailed", "Maintenance", "Defragmenting member %s failed: %v", a.Member, err)
			return err
		}
		// The size after is what the member reports right after: the record says only what
		// was observed.
		after, err := obs.etcd.Status(ctx, endpoint)
		if err != nil {
			return fmt.Errorf("member %s was defragmented but did not answer its status call right after: %w", a.Member, err)
		}
		out.Defragmented = a.Member
		out.Record = etcdv1alpha1.DefragmentationRecord{Time: metav1.NewTime(now), SizeBefore: before, SizeAfter: after.DBSize}
	case maintenance.Disarm:
		for _, m := range obs.membership.Members {
			if !slices.Contains(obs.details[m.Name].Alarms, etcd.AlarmNoSpace) {
				continue
			}
			if err := obs.etcd.AlarmDisarm(ctx, m.ID, etcd.AlarmNoSpace); err != nil {
				return err
			}
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "NoSpaceDisarmed", "Maintenance", "%s", a.Message)
	}
	return nil
}

// storageMembers is what storage autoscaling weighs of the members that answered this
// pass (autoscale.Member): their databases' sizes, and whether maintenance defragments
// them in this pass or the next ones (maintenance.Defragmenting), so that the quota is
// raised for a file at the threshold only when no defragmentation brings it back under.
// Maintenance plans from the same observation earlier in the pass, so a member it
// defragmented in this pass counts as defragmenting. A policy that cannot be read (a bad
// schedule) counts no member as defragmenting: maintenance does nothing then.
func storageMembers(c *etcdv1alpha1.EtcdCluster, obs *observation, now time.Time) []autoscale.Member {
	var defragmenting map[string]bool
	if policy, err := maintenance.PolicyFor(c, now); err == nil {
		defragmenting = maintenance.Defragmenting(policy, maintenanceObserved(c, obs, now))
	}
	out := make([]autoscale.Member, 0, len(obs.details))
	for _, name := range sortedKeys(obs.details) {
		d := obs.details[name]
		out = append(out, autoscale.Member{Name: name, DBSize: d.DBSize, DBSizeInUse: d.DBSizeInUse, Defragmenting: defragmenting[name]})
	}
	return out
}

// maintenanceObserved is what maintenance.Plan needs of this pass's observation.
func maintenanceObserved(c *etcdv1alpha1.EtcdCluster, obs *observation, now time.Time) maintenance.Observed {
	o := maintenance.Observed{Size: int(clusterspec.WithDefaults(c.Spec).Size), Alarms: map[uint64][]string{}}
	last := map[string]time.Time{}
	for _, m := range c.Status.Members {
		if m.LastDefragmentation != nil {
			last[m.Name] = m.LastDefragmentation.Time.Time
		}
	}
	for _, m := range obs.membership.Members {
		d, answered := obs.details[m.Name]
		o.Members = append(o.Members, maintenance.Member{
			Name: m.Name, ID: m.ID, Learner: m.Learner, Leader: m.Leader, Reachable: answered,
			Healthy: m.Healthy && m.Ready, DBSize: d.DBSize, DBSizeInUse: d.DBSizeInUse,
			RecentlyDefragmented: now.Sub(last[m.Name]) < maintenance.MinInterval, LastDefragmented: last[m.Name],
		})
		if len(d.Alarms) > 0 {
			o.Alarms[m.ID] = d.Alarms
		}
		o.Revision = max(o.Revision, d.Revision)
	}
	return o
}
