package controllers

import (
	"context"
	"slices"
	"strconv"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/consistency"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// checkConsistency compares the voting members' hashes (spec.consistencyCheck) once the last
// check is an interval old (consistency.Due, consistency.Plan, consistency.Judge). It
// returns the new status.consistency, or nil when no check was due or possible (the last
// stays), and asks for the next pass when the next check is due.
func (r *EtcdClusterReconciler) checkConsistency(ctx context.Context, p *clusterPass) *etcdv1alpha1.ConsistencyStatus {
	c, obs := p.cluster, p.obs
	if !clusterspec.ConsistencyCheckEnabled(c) || obs.etcd == nil {
		return nil
	}
	now := r.now()
	var last time.Time
	if c.Status.Consistency != nil {
		last = c.Status.Consistency.LastCheckTime.Time
	}
	due, wait := consistency.Due(last, clusterspec.ConsistencyInterval(c), now)
	p.after(wait)
	if !due {
		return nil
	}
	members := make([]consistency.Member, 0, len(obs.membership.Members))
	for _, m := range obs.membership.Members {
		d := obs.details[m.Name]
		members = append(members, consistency.Member{Name: m.Name, ID: m.ID, Started: m.Started, Learner: m.Learner,
			Revision: d.Revision, Corrupt: slices.Contains(d.Alarms, etcd.AlarmCorrupt)})
	}
	check, ok := consistency.Plan(members)
	if !ok {
		return nil
	}
	hashes := hashMembers(ctx, obs.etcd, cluster.For(c), check)
	if ctx.Err() != nil {
		return nil // the pass is ending: no verdict from a check cut short
	}
	v := consistency.Judge(len(check.Voters), hashes, check.Corrupt)
	if v.Kind != consistency.Consistent {
		log.FromContext(ctx).Info("Consistency check", "result", v.Kind, "message", v.Message)
	}
	return status.ConsistencyChecked(v, now)
}

// hashMembers asks each voter of the check for its HashKV at the check's revision; a member
// that cannot answer has Err set.
func hashMembers(ctx context.Context, cli etcd.Client, names cluster.Names, check consistency.Check) []consistency.Hash {
	hashes := make([]consistency.Hash, 0, len(check.Voters))
	for _, m := range check.Voters {
		h := consistency.Hash{Member: m.Name, ID: m.ID}
		kv, err := cli.HashKV(ctx, names.ClientURL(m.Name), check.Revision)
		switch {
		case etcd.IsCompacted(err):
			h.Err = "revision " + strconv.FormatInt(check.Revision, 10) + " was compacted during the check"
		case err != nil:
			h.Err = err.Error()
		default:
			h.Revision, h.CompactRevision, h.Value = kv.Revision, kv.CompactRevision, kv.Hash
		}
		hashes = append(hashes, h)
	}
	return hashes
}
