package framework

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

// MonitoringObject is one of the objects the operator keeps for a cluster with
// spec.monitoring.mode Auto.
type MonitoringObject struct {
	Kind schema.GroupVersionKind
	Name string
	// Labels the object must carry.
	Labels map[string]string
}

func (o MonitoringObject) String() string { return o.Kind.Kind + " " + o.Name }

// MonitoringObjects are c's monitoring objects: PodMonitor <name>-members, PrometheusRule
// <name>-alerts and ConfigMap <name>-dashboard, the last labelled grafana_dashboard: "1"
// so that Grafana's sidecar loads it.
func MonitoringObjects(c *etcdv1alpha1.EtcdCluster) []MonitoringObject {
	return []MonitoringObject{
		{Kind: monitoring.PodMonitorKind, Name: monitoring.PodMonitorName(c)},
		{Kind: monitoring.PrometheusRuleKind, Name: monitoring.PrometheusRuleName(c)},
		{Kind: schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, Name: monitoring.DashboardName(c),
			Labels: map[string]string{monitoring.DashboardLabel: "1"}},
	}
}

// PrometheusOperatorKinds are the Prometheus Operator's kinds whose CRDs make the operator
// keep monitoring objects: without both, it keeps none.
var PrometheusOperatorKinds = []schema.GroupVersionKind{monitoring.PodMonitorKind, monitoring.PrometheusRuleKind}

// ServesPrometheusOperator reports whether the API server serves the PodMonitor and the
// PrometheusRule kinds (monitoring.coreos.com).
func (e *Env) ServesPrometheusOperator() (bool, error) {
	for _, k := range PrometheusOperatorKinds {
		ok, err := e.Serves(k.Group, k.Kind)
		if err != nil || !ok {
			return false, err
		}
	}
	return true, nil
}

// CheckMonitoringObjects reads c's monitoring objects (their metadata) and says what is
// wrong with them: each must exist, be controlled by c and carry its labels.
func (e *Env) CheckMonitoringObjects(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	var problems []string
	for _, want := range MonitoringObjects(c) {
		obj := &metav1.PartialObjectMetadata{}
		obj.SetGroupVersionKind(want.Kind)
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: want.Name}, obj); err != nil {
			problems = append(problems, fmt.Sprintf("reading %s: %v", want, err))
			continue
		}
		if err := CheckMonitoringObject(want, obj, c); err != nil {
			problems = append(problems, err.Error())
		}
	}
	if len(problems) > 0 {
		return errors.New(strings.Join(problems, "; "))
	}
	return nil
}

// PrometheusRuleUID reads the UID of c's PrometheusRule, which names the file its rules
// reach Prometheus in (RuleFile).
func (e *Env) PrometheusRuleUID(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (string, error) {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(monitoring.PrometheusRuleKind)
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: monitoring.PrometheusRuleName(c)}, obj); err != nil {
		return "", fmt.Errorf("reading PrometheusRule %s: %w", monitoring.PrometheusRuleName(c), err)
	}
	return string(obj.UID), nil
}

// CheckMonitoringObject says what is wrong with obj, the monitoring object want of c: it
// must be controlled by c (deleted with it) and carry want's labels.
func CheckMonitoringObject(want MonitoringObject, obj metav1.Object, c *etcdv1alpha1.EtcdCluster) error {
	var problems []string
	owner := metav1.GetControllerOf(obj)
	switch {
	case owner == nil:
		problems = append(problems, "has no controller owner reference")
	case owner.UID != c.UID || owner.Kind != "EtcdCluster":
		problems = append(problems, fmt.Sprintf("is controlled by %s %s, not by EtcdCluster %s", owner.Kind, owner.Name, c.Name))
	}
	for k, v := range want.Labels {
		if got, ok := obj.GetLabels()[k]; !ok || got != v {
			problems = append(problems, fmt.Sprintf("lacks the label %s: %q", k, v))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%s %s", want, strings.Join(problems, " and "))
	}
	return nil
}

// CheckMonitoringCondition says what is wrong with c's Monitoring condition: True when the
// Prometheus Operator's CRDs are served (crds), else False with reason
// PrometheusOperatorMissing, which tells the user why nothing is monitored.
func CheckMonitoringCondition(c *etcdv1alpha1.EtcdCluster, crds bool) error {
	cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionMonitoring)
	if cond == nil {
		return fmt.Errorf("EtcdCluster %s has no %s condition", c.Name, etcdv1alpha1.ConditionMonitoring)
	}
	got := fmt.Sprintf("%s=%s (%s: %s)", cond.Type, cond.Status, cond.Reason, cond.Message)
	switch {
	case crds && cond.Status != metav1.ConditionTrue:
		return fmt.Errorf("the CRDs are installed but the condition is %s, not True", got)
	case !crds && (cond.Status != metav1.ConditionFalse || cond.Reason != etcdv1alpha1.ReasonPrometheusOperatorMissing):
		return fmt.Errorf("the CRDs are not installed but the condition is %s, not False with reason %s",
			got, etcdv1alpha1.ReasonPrometheusOperatorMissing)
	}
	return nil
}
