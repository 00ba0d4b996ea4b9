package monitoring

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// The Prometheus Operator's kinds the operator creates, in group monitoring.coreos.com.
var (
	PodMonitorKind     = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}
	PrometheusRuleKind = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PrometheusRule"}
)

// DashboardLabel is the label Grafana's dashboard sidecar looks for on ConfigMaps (the
// sidecar's default, with the value "1").
const DashboardLabel = "grafana_dashboard"

// AnnotationHash on a monitoring object is a hash of what the operator made it from: an
// object whose hash differs from the desired one is replaced.
const AnnotationHash = "etcd.etcdpilot.io/monitoring-hash"

// clusterMatcher is the matcher every selector of the rules' group "etcd" carries, and that
// ScopedRules replaces with the cluster's own namespace and name (promcheck checks it is on
// every selector).
const clusterMatcher = `etcd_cluster!=""`

// PodMonitorName is the name of the cluster's PodMonitor.
func PodMonitorName(c *etcdv1alpha1.EtcdCluster) string { return c.Name + "-members" }

// PrometheusRuleName is the name of the cluster's PrometheusRule.
func PrometheusRuleName(c *etcdv1alpha1.EtcdCluster) string { return c.Name + "-alerts" }

// DashboardName is the name of the cluster's dashboard ConfigMap.
func DashboardName(c *etcdv1alpha1.EtcdCluster) string { return c.Name + "-dashboard" }

// Objects are a cluster's monitoring objects, as the operator wants them.
type Objects struct {
	PodMonitor     *unstructured.Unstructured
	PrometheusRule *unstructured.Unstructured
	Dashboard      *corev1.ConfigMap
}

// For returns the monitoring objects of cluster c, without owner references. Each carries
// AnnotationHash. dashboard is the dashboard JSON (Dashboard).
func For(c *etcdv1alpha1.EtcdCluster, dashboard []byte) (Objects, error) {
	groups, err := ScopedRules(Rules, c.Namespace, c.Name)
	if err != nil {
		return Objects{}, err
	}
	board, err := ClusterDashboard(dashboard, c.Namespace, c.Name)
	if err != nil {
		return Objects{}, err
	}
	names := cluster.For(c)
	labels := func(component string) map[string]string {
		l := maps.Clone(c.Spec.Monitoring.Labels)
		if l == nil {
			l = map[string]string{}
		}
		maps.Copy(l, names.Labels())
		l[cluster.LabelComponent] = component
		return l
	}

	pm := &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"selector": map[string]any{"matchLabels": map[string]any{
				cluster.LabelCluster: c.Name, cluster.LabelComponent: "member",
			}},
			"podMetricsEndpoints": []any{map[string]any{
				"port":   "metrics",
				"path":   "/metrics",
				"scheme": "http",
				// The rules and the dashboard tell clusters apart by etcd_cluster.
				"relabelings": []any{map[string]any{
					"action":       "replace",
					"sourceLabels": []any{"__meta_kubernetes_pod_label_etcd_etcdpilot_io_cluster"},
					"targetLabel":  "etcd_cluster",
				}},
			}},
		},
	}}
	pm.SetGroupVersionKind(PodMonitorKind)
	setMeta(pm, c.Namespace, PodMonitorName(c), labels("monitoring"))

	pr := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"groups": groups}}}
	pr.SetGroupVersionKind(PrometheusRuleKind)
	setMeta(pr, c.Namespace, PrometheusRuleName(c), labels("monitoring"))

	cmLabels := labels("dashboard")
	cmLabels[DashboardLabel] = "1"
	cm := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: DashboardName(c), Namespace: c.Namespace, Labels: cmLabels},
		Data:       map[string]string{"etcdpilot-" + c.Namespace + "-" + c.Name + ".json": string(board)},
	}
	cm.Annotations = map[string]string{AnnotationHash: hashOf(cm.Labels, cm.Data)}

	for _, u := range []*unstructured.Unstructured{pm, pr} {
		u.SetAnnotations(map[string]string{AnnotationHash: hashOf(u.GetLabels(), u.Object["spec"])})
	}
	return Objects{PodMonitor: pm, PrometheusRule: pr, Dashboard: cm}, nil
}

func setMeta(u *unstructured.Unstructured, namespace, name string, labels map[string]string) {
	u.SetNamespace(namespace)
	u.SetName(name)
	u.SetLabels(labels)
}

// hashOf is a short hash of the JSON of its arguments.
func hashOf(parts ...any) string {
	b, err := json.Marshal(parts)
	if err != nil {
		panic(err) // maps of strings and JSON values always marshal
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// scopeFile is a Prometheus rule file, with each rule kept as it is.
type scopeFile struct {
	Groups []struct {
		Name  string           `json:"name"`
		Rules []map[string]any `json:"rules"`
	} `json:"groups"`
}

// ScopedRules returns the rule group "etcd" of the rule file, every expression limited to
// the members of one cluster: each `etcd_cluster!=""` matcher becomes
// `namespace="<namespace>", etcd_cluster="<name>"`. An expression without that matcher is an
// error: it would alert about every cluster from each cluster's rule.
func ScopedRules(file []byte, namespace, name string) ([]any, error) {
	var f scopeFile
	if err := yaml.Unmarshal(file, &f); err != nil {
		return nil, fmt.Errorf("reading the rule file: %w", err)
	}
	scope := fmt.Sprintf(`namespace=%q, etcd_cluster=%q`, namespace, name)
	for _, g := range f.Groups {
		if g.Name != "etcd" {
			continue
		}
		rules := make([]any, 0, len(g.Rules))
		for _, r := range g.Rules {
			expr, _ := r["expr"].(string)
			if !strings.Contains(expr, clusterMatcher) {
				return nil, fmt.Errorf("rule %v of group etcd has no %s matcher to scope", r["alert"], clusterMatcher)
			}
			scoped := maps.Clone(r)
			scoped["expr"] = strings.ReplaceAll(expr, clusterMatcher, scope)
			rules = append(rules, scoped)
		}
		return []any{map[string]any{"name": "etcd", "rules": rules}}, nil
	}
	return nil, fmt.Errorf("the rule file has no group etcd")
}

// OperatorRules returns the rule group "etcdpilot" of the rule file: the alerts on the
// operator's own metrics, about every cluster it runs and about itself. They ship once, next
// to the operator (config/prometheus), not per cluster.
func OperatorRules(file []byte) ([]any, error) {
	var f scopeFile
	if err := yaml.Unmarshal(file, &f); err != nil {
		return nil, fmt.Errorf("reading the rule file: %w", err)
	}
	for _, g := range f.Groups {
		if g.Name == "etcdpilot" {
			rules := make([]any, 0, len(g.Rules))
			for _, r := range g.Rules {
				rules = append(rules, r)
			}
			return []any{map[string]any{"name": "etcdpilot", "rules": rules}}, nil
		}
	}
	return nil, fmt.Errorf("the rule file has no group etcdpilot")
}

// ClusterDashboard returns the dashboard for one cluster: its own uid and title (Grafana
// keys dashboards by uid, so each cluster's ConfigMap must not replace another's), and its
// namespace and cluster variables set to the cluster.
func ClusterDashboard(dashboard []byte, namespace, name string) ([]byte, error) {
	var d map[string]any
	if err := json.Unmarshal(dashboard, &d); err != nil {
		return nil, fmt.Errorf("reading the dashboard: %w", err)
	}
	sum := sha256.Sum256([]byte(namespace + "/" + name))
	d["uid"] = "etcdpilot-" + hex.EncodeToString(sum[:10])
	d["title"] = fmt.Sprintf("etcd %s/%s", namespace, name)
	d["id"] = nil
	if templating, ok := d["templating"].(map[string]any); ok {
		list, _ := templating["list"].([]any)
		for _, v := range list {
			variable, ok := v.(map[string]any)
			if !ok {
				continue
			}
			value := map[string]string{"namespace": namespace, "cluster": name}[fmt.Sprint(variable["name"])]
			if value != "" {
				variable["current"] = map[string]any{"text": value, "value": value, "selected": true}
			}
		}
	}
	return json.Marshal(d)
}
