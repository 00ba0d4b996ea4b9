package levels

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// insightsWait is how long level 4 gives each check of what follows the cluster's status
// a little later (the members' and the operator's metrics, the monitoring objects, the
// events), and insightsPoll how often it looks again within it. prometheusWait bounds each
// check of what Prometheus shows: a new PodMonitor or PrometheusRule reaches Prometheus
// through a Secret or a ConfigMap that the kubelet syncs into its pod about once a minute,
// then a reload (the e2e monitoring spec waits up to 3 minutes for rules). alertWait bounds
// the wait for the alert to go pending or firing after the fault, and to clear after it is
// gone: the operator is scraped and the rules evaluated every 10 s by the local cluster's
// Prometheus, so it takes a few tens of seconds.
var (
	insightsWait   = time.Minute
	prometheusWait = 3 * time.Minute
	alertWait      = 2 * time.Minute
	insightsPoll   = 2 * time.Second
)

const (
	// operatorMetricPrefix starts the names of the operator's own metrics.
	operatorMetricPrefix = "etcdpilot_"
	// leaderMetric is 1 on an etcd member that knows a leader.
	leaderMetric = "etcd_server_has_leader"
	// eventMemberPodCreated and eventClusterAvailable are the reasons of the events the
	// operator records when it creates a member's pod and when the cluster becomes
	// Available (internal/status.Transitions).
	eventMemberPodCreated = "MemberPodCreated"
	eventClusterAvailable = "ClusterAvailable"
)

// deepInsights (level 4): a 1-member cluster made with every monitoring default, once
// Available, is observable, and a real Prometheus proves it. The test needs the Prometheus
// Operator: without its CRDs there is no Prometheus to prove anything against, and it fails
// before creating anything. Then the member serves etcd's metrics on its pod's metrics
// port; the operator's authorized metrics endpoint describes the cluster; the operator keeps
// a PodMonitor, a PrometheusRule and a dashboard ConfigMap for it, with Monitoring=True;
// Prometheus (Config.PrometheusURL) scrapes the operator and the member, up and labelled as
// the rules read them, and evaluates the cluster's rules without error; a backup of the
// cluster that fails raises the shipped alert EtcdBackupFailing, which clears once a backup
// succeeds; and the operator records the events of the cluster's creation. Every check
// runs, and each one that fails is named as missing.
func deepInsights(ctx context.Context, in Input, r *report.Report) {
	svc, err := bundle.MetricsService(in.Bundle.Objects)
	if err != nil {
		r.Fail(err.Error())
		return
	}
	crds, err := in.Env.ServesPrometheusOperator()
	if err != nil {
		r.Fail(fmt.Sprintf("finding out whether the Prometheus Operator's PodMonitor and PrometheusRule are served: %v", err))
		return
	}
	r.Logf("the Prometheus Operator's PodMonitor and PrometheusRule kinds are served: %t", crds)
	if !crds {
		r.Fail("missing: " + prometheusMissing)
		r.Suggest(prometheusSuggestion)
		return
	}
	prom := in.Env.Prometheus(in.Config.PrometheusURL)
	r.Logf("Prometheus's API: %s (%s)", in.Config.PrometheusURL, EnvPrometheusURL)
	c, ok := newCluster(in, r, "sc-l4-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Size = 1
		c.Spec.Monitoring = etcdv1alpha1.MonitoringSpec{} // every default: mode Auto
	})
	if !ok || !runSteps(r, createStep(ctx, in, c), settleStep(ctx, in, c, 1)) {
		return
	}
	insights := deepInsightChecks(ctx, in, r, c, svc, prom)
	for i := range insights {
		insights[i].Problem = r.Step(insights[i].Step, insights[i].check)
		if insights[i].Problem != nil {
			r.Suggest(insights[i].Suggestion)
		}
	}
	for _, m := range DeepInsightsMissing(insights) {
		r.Fail("missing: " + m)
	}
}

// deepInsightChecks are level 4's checks of c, in the order they run. Those through
// Prometheus that need nothing new of it come first: the operator's target and rules are
// in place before the cluster, while Prometheus loads the cluster's new PodMonitor and
// PrometheusRule a minute or two after they are made, which the fault's minute mostly
// covers. The alert needs the operator's series in Prometheus; without them it is not
// tried.
func deepInsightChecks(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, svc *corev1.Service, prom *framework.Prometheus) []Insight {
	var operatorScraped error
	return []Insight{
		{What: "etcd's metrics from the member pods", Step: "scrape the member pods' metrics port",
			Suggestion: "Declare a container port named metrics on every member and serve etcd's /metrics there (--listen-metrics-urls).",
			check:      func() error { return memberMetrics(ctx, in, r, c) }},
		{What: "the operator's metrics of the cluster", Step: "scrape the operator's metrics endpoint with the test's token",
			Suggestion: "Export gauges per EtcdCluster (labels namespace and name) on the operator's metrics endpoint, readable by identities that may get /metrics.",
			check:      func() error { return operatorMetrics(ctx, in, r, c, svc) }},
		{What: "the cluster's monitoring objects", Step: "check the PodMonitor, PrometheusRule and dashboard ConfigMap",
			Suggestion: "Keep a PodMonitor, a PrometheusRule and a dashboard ConfigMap per cluster, controlled by it, and say so in a Monitoring condition.",
			check:      func() error { return monitoringObjects(ctx, in, r, c) }},
		{What: "the operator's metrics in Prometheus", Step: "find the operator's target up in Prometheus, and the cluster's series",
			Suggestion: "Ship a ServiceMonitor for the operator's metrics Service with honorLabels, so that its series keep the cluster's namespace " +
				"(config/prometheus; `make deploy-monitoring` applies it next to an OLM install), and let Prometheus's token get /metrics (ClusterRole etcdpilot-metrics-reader).",
			check: func() error {
				operatorScraped = prometheusOperator(ctx, in, r, c, svc, prom)
				return operatorScraped
			}},
		{What: "an alert for a real fault", Step: "fail a backup of the cluster: " + framework.AlertBackupFailing + " must go off, then clear once a backup succeeds",
			Suggestion: "Export when the cluster's backups last failed and succeeded, and ship the alert " + framework.AlertBackupFailing +
				" in the operator's PrometheusRule (config/prometheus), loaded by Prometheus.",
			check: func() error {
				if operatorScraped != nil {
					return errors.New("not tried: Prometheus does not have the operator's series of the cluster, which the alert reads")
				}
				return backupFailingAlert(ctx, in, r, c, prom)
			}},
		{What: "the members' metrics in Prometheus", Step: "find the member's target of the cluster's PodMonitor up in Prometheus, and its series",
			Suggestion: "Keep a PodMonitor per cluster that scrapes every member's metrics port and relabels the pod label etcd.etcdpilot.io/cluster into etcd_cluster; " +
				"let the members' NetworkPolicy admit Prometheus to the metrics port.",
			check: func() error { return prometheusMembers(ctx, in, r, c, prom) }},
		{What: "the cluster's alert rules in Prometheus", Step: "find the cluster's rule group loaded in Prometheus, every rule healthy",
			Suggestion: "Keep a PrometheusRule per cluster whose group etcd is scoped to it and evaluates without error.",
			check:      func() error { return clusterRules(ctx, in, r, c, prom) }},
		{What: "Kubernetes events about the EtcdCluster", Step: "look for the events " + eventMemberPodCreated + " and " + eventClusterAvailable + " about EtcdCluster " + c.Name,
			Suggestion: "Record events about what the operator does to a cluster: " + eventMemberPodCreated + " for each member pod it creates, " +
				eventClusterAvailable + " when the cluster becomes Available.",
			check: func() error {
				return waitEventsWithin(ctx, in, r, c, insightsWait, insightsPoll, eventMemberPodCreated, eventClusterAvailable)
			}},
	}
}

// eventually runs check every insightsPoll until it passes or insightsWait is over, and
// returns its last error (see retryFor).
func eventually(ctx context.Context, check func(context.Context) error) error {
	return retryFor(ctx, insightsWait, insightsPoll, check)
}

// memberMetrics GETs http://<pod IP>:<metrics port>/metrics of every member pod of c and
// requires etcd_server_has_leader 1.
func memberMetrics(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	var found []string
	err := eventually(ctx, func(ctx context.Context) error {
		found = found[:0]
		pods, err := in.Env.MemberPods(ctx, c)
		if err != nil {
			return err
		}
		if len(pods) == 0 {
			return fmt.Errorf("EtcdCluster %s has no member pods", c.Name)
		}
		for i := range pods {
			u, err := framework.MemberMetricsURL(&pods[i])
			if err != nil {
				return err
			}
			body, err := in.Env.GetMetrics(ctx, u, false)
			if err != nil {
				return err
			}
			samples := framework.ParseSamples(body)
			leader := framework.Select(samples, leaderMetric, nil)
			if len(leader) != 1 || leader[0].Value != 1 {
				return fmt.Errorf("member %s: %s answers %d samples but not %s 1", pods[i].Name, u, len(samples), leaderMetric)
			}
			found = append(found, fmt.Sprintf("member %s: %s answers %s 1 (%d samples%s)",
				pods[i].Name, u, leaderMetric, len(samples), etcdVersion(samples)))
		}
		return nil
	})
	for _, f := range found {
		r.Logf("%s", f)
	}
	return err
}

func etcdVersion(samples []framework.Sample) string {
	for _, s := range framework.Select(samples, "etcd_server_version", nil) {
		if v := s.Labels["server_version"]; v != "" {
			return ", etcd " + v
		}
	}
	return ""
}

// operatorMetrics finds the operator's metrics Service (the bundle's, in whichever
// namespace the operator runs), GETs its /metrics over HTTPS with the test pod's token, and
// requires the operator's series of c, with etcdpilot_cluster_condition{condition=
// "Available"} 1.
func operatorMetrics(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, svc *corev1.Service) error {
	u, err := in.Env.OperatorMetricsURL(ctx, svc, bundle.MetricsPortName)
	if err != nil {
		return err
	}
	r.Logf("the operator's metrics endpoint: %s", u)
	of := map[string]string{"namespace": c.Namespace, "name": c.Name}
	var series []framework.Sample
	err = eventually(ctx, func(ctx context.Context) error {
		body, err := in.Env.GetMetrics(ctx, u, true)
		if err != nil {
			var se *framework.StatusError
			if errors.As(err, &se) && se.Refused() {
				return fmt.Errorf("%w (the test's ServiceAccount must be bound to a ClusterRole that may get /metrics: "+
					"config/scorecard/rbac binds etcdpilot-metrics-reader)", err)
			}
			return err
		}
		all := framework.ParseSamples(body)
		series = series[:0]
		for _, s := range framework.Select(all, "", of) {
			if strings.HasPrefix(s.Name, operatorMetricPrefix) {
				series = append(series, s)
			}
		}
		if len(series) == 0 {
			return fmt.Errorf("%s answers %d samples, none of EtcdCluster %s/%s (%s* with namespace=%q, name=%q)",
				u, len(all), c.Namespace, c.Name, operatorMetricPrefix, c.Namespace, c.Name)
		}
		avail := framework.Select(series, operatorMetricPrefix+"cluster_condition", map[string]string{"condition": etcdv1alpha1.ConditionAvailable})
		if len(avail) != 1 || avail[0].Value != 1 {
			return fmt.Errorf("%s answers %d series of EtcdCluster %s but not %scluster_condition{condition=%q} 1",
				u, len(series), c.Name, operatorMetricPrefix, etcdv1alpha1.ConditionAvailable)
		}
		return nil
	})
	if err == nil {
		r.Logf("%d series of EtcdCluster %s/%s with the test's token: %s", len(series), c.Namespace, c.Name, seriesNames(series))
	}
	return err
}

// seriesNames lists the distinct names of samples, sorted.
func seriesNames(samples []framework.Sample) string {
	seen := map[string]bool{}
	var out []string
	for _, s := range samples {
		if !seen[s.Name] {
			seen[s.Name] = true
			out = append(out, s.Name)
		}
	}
	sort.Strings(out)
	return orNone(out)
}

// monitoringObjects checks c's monitoring objects: its PodMonitor, PrometheusRule and
// dashboard ConfigMap exist, controlled by c, and its Monitoring condition is True. Level 4
// runs only where the Prometheus Operator's CRDs are served.
func monitoringObjects(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	cur := &etcdv1alpha1.EtcdCluster{}
	err := eventually(ctx, func(ctx context.Context) error {
		if err := in.Env.Client.Get(ctx, client.ObjectKeyFromObject(c), cur); err != nil {
			return fmt.Errorf("reading EtcdCluster %s: %w", c.Name, err)
		}
		return joinProblems([]error{in.Env.CheckMonitoringObjects(ctx, cur), framework.CheckMonitoringCondition(cur, true)})
	})
	if err != nil {
		return err
	}
	r.Logf("%s exist, controlled by EtcdCluster %s; %s", joinObjects(framework.MonitoringObjects(cur)), c.Name, monitoringCondition(cur))
	return nil
}

// joinProblems joins the non-nil errors with "; ", or returns nil.
func joinProblems(errs []error) error {
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return errors.New(strings.Join(msgs, "; "))
}

func joinObjects(objs []framework.MonitoringObject) string {
	out := make([]string, len(objs))
	for i, o := range objs {
		out[i] = o.String()
	}
	return strings.Join(out, ", ")
}

func monitoringCondition(c *etcdv1alpha1.EtcdCluster) string {
	for _, cond := range c.Status.Conditions {
		if cond.Type == etcdv1alpha1.ConditionMonitoring {
			return fmt.Sprintf("%s=%s (%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message)
		}
	}
	return "no " + etcdv1alpha1.ConditionMonitoring + " condition"
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
