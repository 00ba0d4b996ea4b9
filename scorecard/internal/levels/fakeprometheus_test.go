package levels_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// fakePrometheus plays the Prometheus of `make monitoring-up` over HTTP (an httptest
// server), answering /api/v1/targets, /rules, /alerts and /query from what the fake API
// server holds, as a real one would after scraping and evaluating: it scrapes the member
// pods of every cluster whose PodMonitor exists, and the operator when its ServiceMonitor
// is applied (operatorMonitored); it evaluates the group etcd of every cluster's
// PrometheusRule and, with the operator's ServiceMonitor, the operator's group etcdpilot; and
// EtcdBackupFailing fires for a cluster whose newest finished backup failed. Options of the
// fake operator break each of these. A target, a rule group and an alert of another
// namespace are always there, for the test to tell its own apart.
type fakePrometheus struct {
	o   *fakeOperator
	srv *httptest.Server
}

// otherNamespace holds what the fake Prometheus sees of someone else's cluster.
const otherNamespace = "elsewhere"

func startFakePrometheus(t *testing.T, o *fakeOperator) *fakePrometheus {
	t.Helper()
	p := &fakePrometheus{o: o}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/targets", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"activeTargets": p.targets(r.Context()), "droppedTargets": []any{}})
	})
	mux.HandleFunc("/api/v1/rules", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"groups": p.rules(r.Context())})
	})
	mux.HandleFunc("/api/v1/alerts", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"alerts": p.alerts(r.Context())})
	})
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"resultType": "vector", "result": p.query(r.Context(), r.URL.Query().Get("query"))})
	})
	p.srv = httptest.NewServer(mux)
	t.Cleanup(p.srv.Close)
	return p
}

// reply writes data in Prometheus's envelope.
func reply(w http.ResponseWriter, data any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": data})
}

// clusters lists the EtcdClusters, each with whether its PodMonitor and its PrometheusRule
// exist (and the rule's UID, which names its file).
func (p *fakePrometheus) clusters(ctx context.Context) []clusterView {
	var list etcdv1alpha1.EtcdClusterList
	if p.o.c.List(ctx, &list) != nil {
		return nil
	}
	out := make([]clusterView, 0, len(list.Items))
	for i := range list.Items {
		c := &list.Items[i]
		m := clusterView{c: c}
		pm, pr := &metav1.PartialObjectMetadata{}, &metav1.PartialObjectMetadata{}
		pm.SetGroupVersionKind(monitoring.PodMonitorKind)
		pr.SetGroupVersionKind(monitoring.PrometheusRuleKind)
		m.podMonitor = p.o.c.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: monitoring.PodMonitorName(c)}, pm) == nil
		if p.o.c.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: monitoring.PrometheusRuleName(c)}, pr) == nil {
			m.ruleUID = string(pr.UID)
		}
		out = append(out, m)
	}
	return out
}

type clusterView struct {
	c          *etcdv1alpha1.EtcdCluster
	podMonitor bool
	ruleUID    string // empty: no PrometheusRule
}

func (p *fakePrometheus) memberPods(ctx context.Context, c *etcdv1alpha1.EtcdCluster) []corev1.Pod {
	var pods corev1.PodList
	_ = p.o.c.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels{cluster.LabelCluster: c.Name}, client.HasLabels{cluster.LabelMember})
	return pods.Items
}

func (p *fakePrometheus) targets(ctx context.Context) []framework.Target {
	out := []framework.Target{{Labels: map[string]string{"namespace": otherNamespace, "pod": "other-0", "etcd_cluster": "other", "job": otherNamespace + "/other-members"},
		ScrapePool: "podMonitor/" + otherNamespace + "/other-members/0", ScrapeURL: "http://10.1.0.1:2381/metrics", Health: "up"}}
	for _, m := range p.clusters(ctx) {
		if !m.podMonitor {
			continue
		}
		pm := monitoring.PodMonitorName(m.c)
		for _, pod := range p.memberPods(ctx, m.c) {
			t := framework.Target{Labels: map[string]string{"namespace": pod.Namespace, "pod": pod.Name, "container": "etcd", "endpoint": "metrics",
				"job": pod.Namespace + "/" + pm, "etcd_cluster": m.c.Name},
				ScrapePool: "podMonitor/" + pod.Namespace + "/" + pm + "/0", ScrapeURL: fmt.Sprintf("http://%s:%d/metrics", pod.Status.PodIP, cluster.MetricsPort), Health: "up"}
			if p.o.memberDown {
				t.Health, t.LastError = "down", fmt.Sprintf("Get %q: dial tcp %s:%d: connect: connection refused", t.ScrapeURL, pod.Status.PodIP, cluster.MetricsPort)
			}
			out = append(out, t)
		}
	}
	if p.o.operatorMonitored {
		out = append(out, framework.Target{Labels: map[string]string{"namespace": operatorNamespace, "service": "etcdpilot-controller-manager-metrics-service",
			"job": "etcdpilot-controller-manager-metrics-service", "pod": "etcdpilot-controller-manager-5d9c7-x2x8k"},
			ScrapePool: "serviceMonitor/" + operatorNamespace + "/etcdpilot-controller-manager-metrics-monitor/0", ScrapeURL: "https://10.0.9.9:8443/metrics", Health: "up"})
	}
	return out
}

// ruleFile is where the Prometheus Operator puts the rules of PrometheusRule namespace/name.
func ruleFile(namespace, name, uid string) string {
	return fmt.Sprintf("/etc/prometheus/rules/prometheus-prometheus-rulefiles-0/%s-%s-%s.yaml", namespace, name, uid)
}

func (p *fakePrometheus) rules(ctx context.Context) []framework.RuleGroup {
	out := []framework.RuleGroup{{Name: "etcd", File: ruleFile(otherNamespace, "other-alerts", "u0"),
		Rules: []framework.Rule{{Name: "etcdMembersDown", Type: "alerting", Health: "ok", State: "inactive"}}}}
	for _, m := range p.clusters(ctx) {
		if m.ruleUID == "" || p.o.rulesNotLoaded {
			continue
		}
		names, err := framework.ClusterRuleNames(m.c)
		if err != nil {
			panic(err)
		}
		g := framework.RuleGroup{Name: "etcd", File: ruleFile(m.c.Namespace, monitoring.PrometheusRuleName(m.c), m.ruleUID)}
		for _, n := range names {
			g.Rules = append(g.Rules, framework.Rule{Name: n, Type: "alerting", Health: "ok", State: "inactive"})
		}
		if p.o.ruleBroken {
			g.Rules[0].Health, g.Rules[0].LastError = "err", "found duplicate series for the match group {namespace=\"scorecard\"} on the right hand-side of the operation"
		}
		out = append(out, g)
	}
	if p.o.operatorMonitored {
		groups, err := monitoring.OperatorRules(monitoring.Rules)
		if err != nil {
			panic(err)
		}
		g := framework.RuleGroup{Name: "etcdpilot", File: ruleFile(operatorNamespace, "etcdpilot-operator-alerts", "u1")}
		for _, r := range groups[0].(map[string]any)["rules"].([]any) {
			g.Rules = append(g.Rules, framework.Rule{Name: r.(map[string]any)["alert"].(string), Type: "alerting", Health: "ok", State: "inactive"})
		}
		out = append(out, g)
	}
	return out
}

func (p *fakePrometheus) alerts(ctx context.Context) []framework.Alert {
	out := []framework.Alert{{Labels: map[string]string{"alertname": framework.AlertBackupFailing, "namespace": otherNamespace, "name": "other", "severity": "warning"}, State: "firing"}}
	if !p.o.operatorMonitored || p.o.alertSilent {
		return out
	}
	for _, m := range p.clusters(ctx) {
		if p.backupFailing(ctx, m.c) {
			out = append(out, framework.Alert{Labels: map[string]string{"alertname": framework.AlertBackupFailing, "namespace": m.c.Namespace, "name": m.c.Name,
				"severity": "warning"}, State: "firing"})
		}
	}
	return out
}

// backupFailing is EtcdBackupFailing's condition for c: a backup of c failed, and none
// succeeded since (by the times of their Succeeded conditions, to the second, as the
// operator's timestamps are).
func (p *fakePrometheus) backupFailing(ctx context.Context, c *etcdv1alpha1.EtcdCluster) bool {
	var backups etcdv1alpha1.EtcdBackupList
	if p.o.c.List(ctx, &backups, client.InNamespace(c.Namespace)) != nil {
		return false
	}
	var failed, succeeded int64 = -1, -1
	for _, b := range backups.Items {
		cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
		if b.Spec.ClusterName != c.Name || cond == nil {
			continue
		}
		at := cond.LastTransitionTime.Unix()
		switch cond.Status {
		case metav1.ConditionFalse:
			failed = max(failed, at)
		case metav1.ConditionTrue:
			succeeded = max(succeeded, at)
		}
	}
	return failed >= 0 && (succeeded < failed || p.o.alertStuck)
}

// query answers the queries level 4 makes of a cluster: etcd_server_has_leader of its
// scraped members, and the operator's Available condition when it is scraped. Any other
// query has no series.
func (p *fakePrometheus) query(ctx context.Context, q string) []map[string]any {
	out := []map[string]any{}
	sample := func(labels map[string]string, v float64) map[string]any {
		return map[string]any{"metric": labels, "value": []any{1767225600.0, fmt.Sprint(v)}}
	}
	for _, m := range p.clusters(ctx) {
		switch {
		case q == framework.LeaderQuery(m.c) && m.podMonitor && !p.o.memberDown:
			for _, pod := range p.memberPods(ctx, m.c) {
				out = append(out, sample(map[string]string{"__name__": "etcd_server_has_leader", "namespace": pod.Namespace, "pod": pod.Name,
					"etcd_cluster": m.c.Name}, 1))
			}
		case q == framework.AvailableQuery(m.c) && p.o.operatorMonitored:
			v := 0.0
			if meta.IsStatusConditionTrue(m.c.Status.Conditions, etcdv1alpha1.ConditionAvailable) {
				v = 1
			}
			out = append(out, sample(map[string]string{"__name__": "etcdpilot_cluster_condition", "namespace": m.c.Namespace, "name": m.c.Name,
				"condition": etcdv1alpha1.ConditionAvailable}, v))
		}
	}
	return out
}
