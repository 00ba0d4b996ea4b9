package maintenance

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/cron"
)

// PolicyFor reads the Policy of cluster c at now from its spec.maintenance (fields left
// empty, as in a cluster stored before they existed, take their defaults), the history
// etcd's auto-compaction keeps in mode revision (spec.etcd.autoCompactionRetention, a
// count of revisions; a retention that is not one counts as none), whether storage
// autoscaling can still raise its quota (below the ceiling of the quota), and, for mode
// Schedule, whether a run is due: a scheduled time passed since the last run completed
// (status.maintenance.lastScheduledRun), or since the cluster was created when none has.
// It reads the request of etcd.etcdpilot.io/defragment-at (requestOf). It fails only on a
// schedule the API's validation should have refused.
func PolicyFor(c *etcdv1alpha1.EtcdCluster, now time.Time) (Policy, error) {
	spec := c.Spec.Maintenance
	p := Policy{
		Mode:                    Auto,
		MinFragmentationPercent: spec.Defragmentation.MinFragmentationPercent,
		RecoverFromNoSpace:      spec.NoSpaceRecovery != etcdv1alpha1.NoSpaceRecoveryDisabled,
	}
	if q := spec.Defragmentation.MinReclaimable; q != nil {
		p.MinReclaimableBytes = q.Value()
	}
	opts := clusterspec.Effective(c).Etcd
	if q := opts.QuotaBackendBytes; q != nil {
		p.QuotaBytes = q.Value()
	}
	if opts.AutoCompactionMode == etcdv1alpha1.AutoCompactionRevision {
		if n, err := strconv.ParseInt(opts.AutoCompactionRetention, 10, 64); err == nil && n > 0 {
			p.HistoryRevisions = n
		}
	}
	if clusterspec.AutoscalingEnabled(c) {
		quota := p.withDefaults().QuotaBytes
		p.QuotaAutoscaled = quota < min(clusterspec.MaxQuotaBytes(c), autoscale.EtcdMaxQuotaBytes)
	}
	p.Request, p.RequestError = requestOf(c.Annotations, now)
	switch spec.Defragmentation.Mode {
	case etcdv1alpha1.DefragmentationDisabled:
		p.Mode = Disabled
	case etcdv1alpha1.DefragmentationSchedule:
		p.Mode = Schedule
		s, err := cron.Parse(spec.Defragmentation.Schedule)
		if err != nil {
			return Policy{}, fmt.Errorf("spec.maintenance.defragmentation.schedule: %w", err)
		}
		var last *time.Time
		if st := c.Status.Maintenance; st != nil && st.LastScheduledRun != nil {
			last = &st.LastScheduledRun.Time
		}
		_, p.ScheduledRunDue, _ = cron.Due(s, c.CreationTimestamp.Time, last, now)
	}
	return p, nil
}

// requestOf reads the defragmentation request of a cluster's annotations at now
// (etcdv1alpha1.AnnotationDefragmentAt and AnnotationDefragmentMembers): none when there is
// no annotation or its time is still to come, and why it cannot be read when it cannot.
func requestOf(annotations map[string]string, now time.Time) (*Request, string) {
	value, ok := annotations[etcdv1alpha1.AnnotationDefragmentAt]
	if !ok {
		return nil, ""
	}
	at, err := time.Parse(time.RFC3339, value)
	if err != nil {
		return nil, fmt.Sprintf("annotation %s is %q, not a time such as %s: no defragmentation is requested",
			etcdv1alpha1.AnnotationDefragmentAt, value, now.UTC().Format(time.RFC3339))
	}
	if at.After(now) {
		return nil, ""
	}
	r := &Request{At: at}
	if names := annotations[etcdv1alpha1.AnnotationDefragmentMembers]; names != "" {
		for _, n := range strings.Split(names, ",") {
			if n = strings.TrimSpace(n); n != "" {
				r.Members = append(r.Members, n)
			}
		}
	}
	return r, ""
}
