package levels

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
)

// eventsWait is how long level 4 waits, after the cluster became Available, for an event
// about it: events are sent asynchronously, after the status they describe.
const eventsWait = 30 * time.Second

// deepInsights (level 4): the bundle ships alert rules (a PrometheusRule) and scraping of
// the etcd members' metrics (a ServiceMonitor or PodMonitor), and the operator records
// Kubernetes events about an EtcdCluster it creates. It fails listing what is missing.
func deepInsights(ctx context.Context, in Input, r *report.Report) {
	alerts := bundle.AlertRules(in.Bundle.Objects)
	monitors := bundle.OperandMonitors(in.Bundle.Objects)
	r.Logf("alert rules in the bundle: %s", orNone(alerts))
	r.Logf("etcd metrics monitors in the bundle: %s", orNone(monitors))

	events, checked := clusterEvents(ctx, in, r)
	for _, m := range DeepInsightsMissing(alerts, monitors, len(events), checked) {
		r.Fail("missing: " + m)
	}
	if len(alerts) == 0 || len(monitors) == 0 {
		r.Suggest("Ship a PrometheusRule with etcd's alerts (no leader, frequent leader changes, NOSPACE, slow fsync) and a PodMonitor for the members' metrics port 2381.")
	}
}

// clusterEvents creates a 1-member cluster, waits until it is Available, and returns the
// events about it. checked is false when the cluster never became Available; the test
// has failed then.
func clusterEvents(ctx context.Context, in Input, r *report.Report) (events []corev1.Event, checked bool) {
	c, ok := newCluster(in, r, "sc-l4-", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 1 })
	if !ok || !runSteps(r, createStep(ctx, in, c), settleStep(ctx, in, c, 1)) {
		return nil, false
	}
	err := r.Step("look for events about EtcdCluster "+c.Name, func() error {
		return wait.PollUntilContextTimeout(ctx, time.Second, eventsWait, true, func(ctx context.Context) (bool, error) {
			var err error
			events, err = in.Env.EventsFor(ctx, c)
			return err == nil && len(events) > 0, nil
		})
	})
	if err != nil && len(events) == 0 {
		r.Logf("no events about EtcdCluster %s", c.Name)
		return nil, true
	}
	r.Logf("events about EtcdCluster %s: %s", c.Name, SummarizeEvents(events))
	return events, true
}

// SummarizeEvents lists the type and reason of events with how often each occurred, such
// as "Normal CertificateIssued x3, Normal MemberPodCreated x1", sorted.
func SummarizeEvents(events []corev1.Event) string {
	counts := map[string]int32{}
	for _, e := range events {
		n := e.Count
		if n == 0 {
			n = 1 // events.k8s.io events count their repeats in series, not in count
		}
		counts[e.Type+" "+e.Reason] += n
	}
	out := make([]string, 0, len(counts))
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%s x%d", k, n))
	}
	sort.Strings(out)
	return orNone(out)
}

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
