package monitoring_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

var testDashboard = []byte(`{"uid":"etcdpilot-etcdcluster","title":"etcd cluster","id":7,
  "templating":{"list":[{"name":"datasource","type":"datasource"},{"name":"namespace","type":"query"},{"name":"cluster","type":"query"}]},
  "panels":[]}`)

func sample() *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: "shop"},
		Spec: etcdv1alpha1.EtcdClusterSpec{Monitoring: etcdv1alpha1.MonitoringSpec{
			Mode: etcdv1alpha1.MonitoringAuto, Labels: map[string]string{"release": "prometheus"}}},
	}
}

func TestScopedRulesAlertOnlyAboutTheirCluster(t *testing.T) {
	g := NewWithT(t)
	groups, err := monitoring.ScopedRules(monitoring.Rules, "shop", "orders")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(groups).To(HaveLen(1))
	rules := groups[0].(map[string]any)["rules"].([]any)
	g.Expect(len(rules)).To(BeNumerically(">=", 17), "every rule of group etcd")
	for _, r := range rules {
		rule := r.(map[string]any)
		expr := rule["expr"].(string)
		g.Expect(expr).To(ContainSubstring(`namespace="shop", etcd_cluster="orders"`), "rule %v", rule["alert"])
		g.Expect(expr).NotTo(ContainSubstring(`etcd_cluster!=""`), "rule %v", rule["alert"])
		g.Expect(rule["annotations"]).To(HaveKey("runbook_url"))
	}

	_, err = monitoring.ScopedRules([]byte("groups:\n- name: etcd\n  rules:\n  - alert: X\n    expr: up == 0\n"), "shop", "orders")
	g.Expect(err).To(MatchError(ContainSubstring(`rule X of group etcd has no etcd_cluster!="" matcher`)))
}

// The scoped rules are a valid rule file for Prometheus itself: promtool checks them (make
// test sets PROMTOOL).
func TestScopedRulesPassPromtool(t *testing.T) {
	promtool := os.Getenv("PROMTOOL")
	if promtool == "" {
		t.Fatal("PROMTOOL is not set: run these tests with `make test`, which builds promtool")
	}
	g := NewWithT(t)
	objs, err := monitoring.For(sample(), testDashboard)
	g.Expect(err).NotTo(HaveOccurred())
	spec, err := yaml.Marshal(objs.PrometheusRule.Object["spec"])
	g.Expect(err).NotTo(HaveOccurred())
	file := filepath.Join(t.TempDir(), "rules.yaml")
	g.Expect(os.WriteFile(file, spec, 0o600)).To(Succeed())
	out, err := exec.Command(promtool, "check", "rules", file).CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	g.Expect(string(out)).To(ContainSubstring("SUCCESS"))
}

func TestObjectsOfACluster(t *testing.T) {
	g := NewWithT(t)
	objs, err := monitoring.For(sample(), testDashboard)
	g.Expect(err).NotTo(HaveOccurred())

	pm := objs.PodMonitor
	g.Expect(pm.GetAPIVersion()).To(Equal("monitoring.coreos.com/v1"))
	g.Expect(pm.GetKind()).To(Equal("PodMonitor"))
	g.Expect(pm.GetName()).To(Equal("orders-members"))
	g.Expect(pm.GetNamespace()).To(Equal("shop"))
	g.Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "prometheus"))
	g.Expect(pm.GetLabels()).To(HaveKeyWithValue("etcd.etcdpilot.io/cluster", "orders"))
	sel, _, _ := unstructured.NestedStringMap(pm.Object, "spec", "selector", "matchLabels")
	g.Expect(sel).To(Equal(map[string]string{"etcd.etcdpilot.io/cluster": "orders", "app.kubernetes.io/component": "member"}))
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	g.Expect(eps).To(HaveLen(1))
	g.Expect(eps[0]).To(HaveKeyWithValue("port", "metrics"))

	pr := objs.PrometheusRule
	g.Expect(pr.GetKind()).To(Equal("PrometheusRule"))
	g.Expect(pr.GetName()).To(Equal("orders-alerts"))

	cm := objs.Dashboard
	g.Expect(cm.Name).To(Equal("orders-dashboard"))
	g.Expect(cm.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(cm.Data).To(HaveKey("etcdpilot-shop-orders.json"))
	var board map[string]any
	g.Expect(json.Unmarshal([]byte(cm.Data["etcdpilot-shop-orders.json"]), &board)).To(Succeed())
	g.Expect(board["uid"]).To(HavePrefix("etcdpilot-"))
	g.Expect(board["uid"]).NotTo(Equal("etcdpilot-etcdcluster"), "each cluster has its own uid")
	g.Expect(len(board["uid"].(string))).To(BeNumerically("<=", 40), "Grafana's uid limit")
	g.Expect(board["title"]).To(Equal("etcd shop/orders"))
	g.Expect(board["id"]).To(BeNil())
	vars := board["templating"].(map[string]any)["list"].([]any)
	g.Expect(vars[1].(map[string]any)["current"]).To(HaveKeyWithValue("value", "shop"))
	g.Expect(vars[2].(map[string]any)["current"]).To(HaveKeyWithValue("value", "orders"))

	// Another cluster's dashboard has another uid; the hash follows what changes.
	other := sample()
	other.Name = "payments"
	objs2, err := monitoring.For(other, testDashboard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(objs2.Dashboard.Data["etcdpilot-shop-payments.json"]).NotTo(ContainSubstring(board["uid"].(string)))
	for _, pair := range [][2]map[string]string{
		{objs.PodMonitor.GetAnnotations(), objs2.PodMonitor.GetAnnotations()},
		{objs.PrometheusRule.GetAnnotations(), objs2.PrometheusRule.GetAnnotations()},
		{objs.Dashboard.Annotations, objs2.Dashboard.Annotations},
	} {
		g.Expect(pair[0][monitoring.AnnotationHash]).NotTo(BeEmpty())
		g.Expect(pair[0][monitoring.AnnotationHash]).NotTo(Equal(pair[1][monitoring.AnnotationHash]))
	}
	again, err := monitoring.For(sample(), testDashboard)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.PrometheusRule.GetAnnotations()).To(Equal(objs.PrometheusRule.GetAnnotations()), "the hash is stable")
	g.Expect(strings.Count(cm.Data["etcdpilot-shop-orders.json"], "orders")).To(BeNumerically(">=", 2))
}
