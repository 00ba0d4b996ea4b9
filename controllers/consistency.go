package controllers

import (
	"context"
	"slices"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/consistency"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// checkConsistency compares the voting members' hashes (spec.consistencyCheck) once the last
// check is an interval old. It returns the new status.consistency, or nil when no check was
// due or possible (the last stays), and sets next to when the next check is due.
func (r *EtcdClusterReconciler) checkConsistency(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation, next *time.Duration) *etcdv1alpha1.ConsistencyStatus {
	if !resources.ConsistencyCheckEnabled(c) || obs.etcd == nil {
		return nil
	}
	interval, now := resources.ConsistencyInterval(c), r.now()
	if last := c.Status.Consistency; last != nil {
		if wait := last.LastCheckTime.Add(interval).Sub(now); wait > 0 {
			*next = wait
			return nil
		}
	}
	*next = interval
	var revisions []int64
	var voters []uint64
	byID := map[uint64]string{}
	for _, m := range obs.planner.Members {
		if m.Started && !m.Learner {
			voters = append(voters, m.ID)
			byID[m.ID] = m.Name
			revisions = append(revisions, obs.details[m.Name].Revision)
		}
	}
	rev, ok := consistency.CommonRevision(revisions)
	if !ok {
		return nil
	}
	hashes := hashMembers(ctx, obs.etcd, cluster.For(c), voters, byID, rev)
	if ctx.Err() != nil {
		return nil // the pass is ending: no verdict from a check cut short
	}
	var corrupt []uint64
	for _, id := range voters {
		if slices.Contains(obs.details[byID[id]].Alarms, alarmCorrupt) {
			corrupt = append(corrupt, id)
		}
	}
	v := consistency.Judge(len(voters), hashes, corrupt)
	if v.Kind != consistency.Consistent {
		log.FromContext(ctx).Info("Consistency check", "result", v.Kind, "message", v.Message)
	}
	out := &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.NewTime(now), Revision: v.Revision,
		Result: string(v.Kind), Message: v.Message}
	for i, name := range v.Suspects {
		out.Suspects = append(out.Suspects, etcdv1alpha1.SuspectMember{Name: name, ID: strconv.FormatUint(v.SuspectIDs[i], 16)})
	}
	return out
}

// alarmCorrupt is etcd's alarm for a member its own corruption checks found diverged.
const alarmCorrupt = "CORRUPT"

// hashMembers asks each voter for its HashKV at rev; a member that cannot answer has Err set.
func hashMembers(ctx context.Context, cli etcd.Client, names cluster.Cluster, voters []uint64, byID map[uint64]string, rev int64) []consistency.Hash {
	hashes := make([]consistency.Hash, 0, len(voters))
	for _, id := range voters {
		h := consistency.Hash{Member: byID[id], ID: id}
		kv, err := cli.HashKV(ctx, names.ClientURL(h.Member), rev)
		switch {
		case etcd.IsCompacted(err):
			h.Err = "revision " + strconv.FormatInt(rev, 10) + " was compacted during the check"
		case err != nil:
			h.Err = err.Error()
		default:
			h.Revision, h.CompactRevision, h.Value = kv.Revision, kv.CompactRevision, kv.Hash
		}
		hashes = append(hashes, h)
	}
	return hashes
}
