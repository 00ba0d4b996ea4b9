package framework_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// Answers of a Prometheus 3 server, cut down to what the client reads and a little more.
const (
	targetsAnswer = `{"status":"success","data":{"activeTargets":[{"discoveredLabels":{"__address__":"10.0.0.1:2381"},` +
		`"labels":{"namespace":"ns","pod":"c-0","etcd_cluster":"c","job":"ns/c-members"},"scrapePool":"podMonitor/ns/c-members/0",` +
		`"scrapeUrl":"http://10.0.0.1:2381/metrics","globalUrl":"http://10.0.0.1:2381/metrics","lastError":"","lastScrape":"2026-01-01T00:00:00Z",` +
		`"lastScrapeDuration":0.01,"health":"up","scrapeInterval":"10s","scrapeTimeout":"10s"}],"droppedTargetCounts":{}}}`
	rulesAnswer = `{"status":"success","data":{"groups":[{"name":"etcd","file":"/etc/prometheus/rules/r-0/ns-c-alerts-u.yaml","interval":10,` +
		`"rules":[{"state":"inactive","name":"etcdMembersDown","query":"x","duration":1200,"labels":{},"annotations":{},"alerts":[],` +
		`"health":"ok","evaluationTime":0.001,"lastEvaluation":"2026-01-01T00:00:00Z","type":"alerting"}]}]}}`
	alertsAnswer = `{"status":"success","data":{"alerts":[{"labels":{"alertname":"EtcdBackupFailing","namespace":"ns","name":"c"},` +
		`"annotations":{},"state":"firing","activeAt":"2026-01-01T00:00:00Z","value":"1.767e+09"}]}}`
	queryAnswer = `{"status":"success","data":{"resultType":"vector","result":[` +
		`{"metric":{"__name__":"etcd_server_has_leader","namespace":"ns","pod":"c-0"},"value":[1767225600.5,"1"]},` +
		`{"metric":{"pod":"c-1"},"value":[1767225600.5,"0"]}]}}`
)

// fakeAPI serves Prometheus's API paths with canned answers and records the queries.
func fakeAPI(t *testing.T, answers map[string]string, queries *[]url.Values) *framework.Prometheus {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if queries != nil {
			*queries = append(*queries, r.URL.Query())
		}
		a, ok := answers[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		if a == `{"status":"error","errorType":"bad_data","error":"parse error"}` {
			w.WriteHeader(http.StatusBadRequest)
		}
		_, _ = w.Write([]byte(a))
	}))
	t.Cleanup(srv.Close)
	return &framework.Prometheus{URL: srv.URL + "/"}
}

func TestPrometheusClient(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	var queries []url.Values
	p := fakeAPI(t, map[string]string{"/api/v1/targets": targetsAnswer, "/api/v1/rules": rulesAnswer,
		"/api/v1/alerts": alertsAnswer, "/api/v1/query": queryAnswer}, &queries)

	targets, err := p.Targets(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(targets).To(Equal([]framework.Target{{Labels: map[string]string{"namespace": "ns", "pod": "c-0", "etcd_cluster": "c", "job": "ns/c-members"},
		ScrapePool: "podMonitor/ns/c-members/0", ScrapeURL: "http://10.0.0.1:2381/metrics", Health: "up"}}))
	g.Expect(queries[0].Get("state")).To(Equal("active"))

	groups, err := p.Rules(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groups).To(Equal([]framework.RuleGroup{{Name: "etcd", File: "/etc/prometheus/rules/r-0/ns-c-alerts-u.yaml",
		Rules: []framework.Rule{{Name: "etcdMembersDown", Type: "alerting", Health: "ok", State: "inactive"}}}}))

	alerts, err := p.Alerts(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(alerts).To(Equal([]framework.Alert{{Labels: map[string]string{"alertname": "EtcdBackupFailing", "namespace": "ns", "name": "c"}, State: "firing"}}))

	samples, err := p.Query(ctx, `etcd_server_has_leader{namespace="ns"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(samples).To(Equal([]framework.Sample{
		{Name: "etcd_server_has_leader", Labels: map[string]string{"namespace": "ns", "pod": "c-0"}, Value: 1},
		{Labels: map[string]string{"pod": "c-1"}, Value: 0}}))
	g.Expect(queries[len(queries)-1].Get("query")).To(Equal(`etcd_server_has_leader{namespace="ns"}`))
}

func TestPrometheusClientErrors(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	p := fakeAPI(t, map[string]string{
		"/api/v1/query":   `{"status":"error","errorType":"bad_data","error":"parse error"}`,
		"/api/v1/rules":   `<html>Prometheus</html>`,
		"/api/v1/targets": `{"status":"success"}`,
	}, nil)

	_, err := p.Query(ctx, "up{")
	var apiErr *framework.APIError
	g.Expect(errors.As(err, &apiErr)).To(BeTrue(), "%v", err)
	g.Expect(err).To(MatchError(MatchRegexp(`^GET http://127\.0\.0\.1:\d+/api/v1/query\?query=up%7B: 400 Bad Request: bad_data: parse error$`)))

	_, err = p.Alerts(ctx)
	var se *framework.StatusError
	g.Expect(errors.As(err, &se)).To(BeTrue(), "%v", err)
	g.Expect(se.Code).To(Equal(http.StatusNotFound))

	_, err = p.Rules(ctx)
	g.Expect(err).To(MatchError(ContainSubstring(`the answer is not Prometheus's API ("<html>Prometheus</html>"): is the URL a Prometheus server?`)))
	_, err = p.Targets(ctx)
	g.Expect(err).To(MatchError(HaveSuffix("the answer has no data")))

	matrix := fakeAPI(t, map[string]string{"/api/v1/query": `{"status":"success","data":{"resultType":"matrix","result":[]}}`}, nil)
	_, err = matrix.Query(ctx, "up[1m]")
	g.Expect(err).To(MatchError("the query up[1m] gave a matrix, not a vector"))

	_, err = (&framework.Prometheus{URL: "http://127.0.0.1:1"}).Targets(ctx)
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
}

// testCluster is the EtcdCluster c of namespace ns the tests' series and targets belong to.
func testCluster() *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
}

func memberTarget(pod, health string) framework.Target {
	return framework.Target{Labels: map[string]string{"namespace": ns, "pod": pod, "etcd_cluster": "c"},
		ScrapePool: "podMonitor/scorecard/c-members/0", ScrapeURL: "http://" + pod + ":2381/metrics", Health: health}
}

func TestCheckMemberTargets(t *testing.T) {
	g := NewWithT(t)
	c := testCluster()
	up := []framework.Target{memberTarget("c-0", "up"), memberTarget("c-1", "up")}
	found, err := framework.CheckMemberTargets(up, c, []string{"c-0", "c-1"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal("targets of PodMonitor scorecard/c-members: c-0 http://c-0:2381/metrics up, c-1 http://c-1:2381/metrics up"))

	down := memberTarget("c-1", "down")
	down.LastError = "connection refused"
	_, err = framework.CheckMemberTargets([]framework.Target{up[0], down}, c, []string{"c-0", "c-1"})
	g.Expect(err).To(MatchError("member pod c-1: target http://c-1:2381/metrics is down: connection refused"))

	_, err = framework.CheckMemberTargets(up[:1], c, []string{"c-0", "c-1"})
	g.Expect(err).To(MatchError("no target of PodMonitor scorecard/c-members for member pod c-1 (Prometheus scrapes 1 targets)"))

	// The same pod scraped by another monitor is not the cluster's PodMonitor at work.
	other := memberTarget("c-0", "up")
	other.ScrapePool = "podMonitor/scorecard/hand-made/0"
	_, err = framework.CheckMemberTargets([]framework.Target{other}, c, []string{"c-0"})
	g.Expect(err).To(MatchError(HavePrefix("no target of PodMonitor scorecard/c-members for member pod c-0")))
	elsewhere := memberTarget("c-0", "up")
	elsewhere.Labels["namespace"] = "other"
	_, err = framework.CheckMemberTargets([]framework.Target{elsewhere}, c, []string{"c-0"})
	g.Expect(err).To(HaveOccurred())

	unlabelled := memberTarget("c-0", "up")
	delete(unlabelled.Labels, "etcd_cluster")
	_, err = framework.CheckMemberTargets([]framework.Target{unlabelled}, c, []string{"c-0"})
	g.Expect(err).To(MatchError(`member pod c-0: target http://c-0:2381/metrics is labelled etcd_cluster="", not "c": the rules and the dashboard do not see it`))

	_, err = framework.CheckMemberTargets(up, c, nil)
	g.Expect(err).To(MatchError("EtcdCluster c has no member pods"))
}

func TestCheckOperatorTargets(t *testing.T) {
	g := NewWithT(t)
	target := func(namespace, health string) framework.Target {
		return framework.Target{Labels: map[string]string{"namespace": namespace, "service": "op-metrics"}, ScrapeURL: "https://" + namespace + ":8443/metrics",
			Health: health, LastError: map[string]string{"down": "server returned HTTP status 403 Forbidden"}[health]}
	}
	found, err := framework.CheckOperatorTargets([]framework.Target{target("sys", "down"), target("sys", "up"), target("other", "up")}, "sys", "op-metrics")
	g.Expect(err).NotTo(HaveOccurred(), "one up is enough")
	g.Expect(found).To(Equal("targets of the operator's metrics Service sys/op-metrics: https://sys:8443/metrics up, " +
		"https://sys:8443/metrics down: server returned HTTP status 403 Forbidden"))

	_, err = framework.CheckOperatorTargets([]framework.Target{target("sys", "down")}, "sys", "op-metrics")
	g.Expect(err).To(MatchError("no target of the operator's metrics Service sys/op-metrics is up: https://sys:8443/metrics down: server returned HTTP status 403 Forbidden"))
	_, err = framework.CheckOperatorTargets([]framework.Target{target("other", "up")}, "sys", "op-metrics")
	g.Expect(err).To(MatchError("no target of the operator's metrics Service sys/op-metrics among the 1 targets Prometheus scrapes: nothing tells it to scrape the operator"))
}

func TestClusterRuleNames(t *testing.T) {
	g := NewWithT(t)
	names, err := framework.ClusterRuleNames(testCluster())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(HaveLen(17), "the group etcd of internal/monitoring/rules.yaml")
	g.Expect(names[0]).To(Equal("etcdMembersDown"))
	g.Expect(names).NotTo(ContainElement(framework.AlertBackupFailing), "the operator's group is not the cluster's")
}

func TestCheckClusterRules(t *testing.T) {
	g := NewWithT(t)
	c := testCluster()
	want := []string{"a", "b", "b"}
	group := func(name, file string, rules ...framework.Rule) framework.RuleGroup {
		return framework.RuleGroup{Name: name, File: file, Rules: rules}
	}
	ok := func(name string) framework.Rule { return framework.Rule{Name: name, Type: "alerting", Health: "ok"} }
	const uid = "0f3a6c1e-8b7d-4a51-9d0c-2f4e6a8b1c3d"
	g.Expect(framework.RuleFile(c, uid)).To(Equal("scorecard-c-alerts-" + uid + ".yaml"))
	file := "/etc/prometheus/rules/prometheus-r-0/" + framework.RuleFile(c, uid)
	others := []framework.RuleGroup{
		group("etcd", "/etc/prometheus/rules/prometheus-r-0/scorecard-c-alerts-extra-"+uid+".yaml", ok("x")), // PrometheusRule c-alerts-extra
		group("etcd", "/etc/prometheus/rules/prometheus-r-0/scorecard-c-alerts-1b2c.yaml", ok("x")),          // a replaced PrometheusRule c-alerts
		group("etcd", "/etc/prometheus/rules/prometheus-r-0/other-c-alerts-"+uid+".yaml", ok("x")),           // another namespace
		group("etcdpilot", file, ok("x")),
	}

	found, err := framework.CheckClusterRules(append(others, group("etcd", file, ok("a"), ok("b"), ok("b"))), c, uid, want)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(Equal("rule group etcd of " + file + ": 3 rules, each evaluated without error"))

	_, err = framework.CheckClusterRules(others, c, uid, want)
	g.Expect(err).To(MatchError("the rule group etcd of PrometheusRule scorecard/c-alerts (file scorecard-c-alerts-" + uid + ".yaml) is not loaded " +
		"(Prometheus evaluates 4 groups)"))

	broken, unknown := ok("b"), ok("b")
	broken.Health, broken.LastError = "err", "vector cannot contain metrics with the same labelset"
	unknown.Health = "unknown"
	_, err = framework.CheckClusterRules([]framework.RuleGroup{group("etcd", file, ok("a"), broken, unknown)}, c, uid, want)
	g.Expect(err).To(MatchError("rule group etcd of " + file + ": rule b is err: vector cannot contain metrics with the same labelset; rule b is unknown"))

	_, err = framework.CheckClusterRules([]framework.RuleGroup{group("etcd", file, ok("a"), ok("b"), ok("z"))}, c, uid, want)
	g.Expect(err).To(MatchError("rule group etcd of " + file + ": the group holds other rules than the PrometheusRule's (missing: b; not in it: z)"))
}

func TestFindRuleAndAlertStates(t *testing.T) {
	g := NewWithT(t)
	groups := []framework.RuleGroup{
		{Name: "recorded", Rules: []framework.Rule{{Name: framework.AlertBackupFailing, Type: "recording"}}},
		{Name: "etcdpilot", File: "f", Rules: []framework.Rule{{Name: "EtcdBackupTooOld", Type: "alerting"}, {Name: framework.AlertBackupFailing, Type: "alerting", Health: "ok"}}},
	}
	gr, r, ok := framework.FindRule(groups, framework.AlertBackupFailing)
	g.Expect(ok).To(BeTrue())
	g.Expect(gr.Name).To(Equal("etcdpilot"))
	g.Expect(r.Health).To(Equal("ok"))
	_, _, ok = framework.FindRule(groups, "etcdNoLeader")
	g.Expect(ok).To(BeFalse())

	alert := func(name, namespace, cluster, state string) framework.Alert {
		return framework.Alert{Labels: map[string]string{"alertname": name, "namespace": namespace, "name": cluster, "severity": "warning"}, State: state}
	}
	alerts := []framework.Alert{
		alert(framework.AlertBackupFailing, ns, "c", "pending"), alert(framework.AlertBackupFailing, ns, "d", "firing"),
		alert(framework.AlertBackupFailing, "other", "c", "firing"), alert("EtcdBackupTooOld", ns, "c", "firing"),
	}
	mine := framework.ClusterSeriesLabels(testCluster())
	g.Expect(framework.AlertStates(alerts, framework.AlertBackupFailing, mine)).To(Equal([]string{"pending"}))
	g.Expect(framework.Active([]string{"pending"})).To(BeTrue())
	g.Expect(framework.Active([]string{"firing"})).To(BeTrue())
	g.Expect(framework.AlertStates(alerts[1:], framework.AlertBackupFailing, mine)).To(BeEmpty())
	g.Expect(framework.Active(nil)).To(BeFalse())
}

func TestQueries(t *testing.T) {
	g := NewWithT(t)
	c := testCluster()
	g.Expect(framework.LeaderQuery(c)).To(Equal(`etcd_server_has_leader{namespace="scorecard", etcd_cluster="c"}`))
	g.Expect(framework.AvailableQuery(c)).To(Equal(`etcdpilot_cluster_condition{namespace="scorecard", name="c", condition="Available"}`))
	g.Expect(framework.BackupTimestampsQuery(c)).To(Equal(
		`{__name__=~"etcdpilot_backup_last_(failure|success)_timestamp_seconds", namespace="scorecard", name="c"}`))

	leader := func(pod string, v float64) framework.Sample {
		return framework.Sample{Name: "etcd_server_has_leader", Labels: map[string]string{"pod": pod}, Value: v}
	}
	g.Expect(framework.CheckLeaderSeries([]framework.Sample{leader("c-0", 1), leader("c-1", 1)}, []string{"c-0", "c-1"})).To(Succeed())
	g.Expect(framework.CheckLeaderSeries([]framework.Sample{leader("c-0", 0), leader("c-2", 1)}, []string{"c-0", "c-1"})).To(MatchError(
		"etcd_server_has_leader is not one series at 1 per member: member pod c-0: 0; member pod c-1: none"))

	g.Expect(framework.CheckAvailableSeries([]framework.Sample{{Value: 0}, {Value: 1}})).To(Succeed(), "an old operator pod's series may linger")
	g.Expect(framework.CheckAvailableSeries(nil)).To(MatchError(
		"no series at 1 (0 series): the operator's series of the cluster do not reach Prometheus with the cluster's namespace"))
}
