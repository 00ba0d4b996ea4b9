package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

func monitoringObject(ns, name, kind string) (*unstructured.Unstructured, error) {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(monitoring.PodMonitorKind.GroupVersion().WithKind(kind))
	err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, u)
	return u, err
}

// monitoringTimeout bounds each wait of the monitoring test: the reconciles of the other
// tests' clusters, which no etcd member answers, share the one worker.
const monitoringTimeout = 2 * timeout

// setMonitoring changes the cluster's spec.monitoring, retrying on conflicts.
func setMonitoring(g Gomega, ns, name string, change func(*etcdv1alpha1.MonitoringSpec)) {
	updateCluster(g, ns, name, func(c *etcdv1alpha1.EtcdCluster) { change(&c.Spec.Monitoring) })
}

// With the Prometheus Operator's CRDs installed (the envtest API server has them), a
// cluster gets its PodMonitor, PrometheusRule and dashboard, owned by it and following its
// spec.monitoring; Disabled removes them; an object of the same name that is not the
// cluster's is left alone and reported.
func TestMonitoringObjectsFollowTheCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "mon", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1, Monitoring: etcdv1alpha1.MonitoringSpec{Labels: map[string]string{"release": "prom"}}}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "mon", &etcdv1alpha1.EtcdCluster{})
		mon := condition(got, etcdv1alpha1.ConditionMonitoring)
		g.Expect(mon.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(mon.Reason).To(Equal(etcdv1alpha1.ReasonMonitoringConfigured))
	}).WithTimeout(monitoringTimeout).WithPolling(interval).Should(Succeed())
	owner := get(g, ns, "mon", &etcdv1alpha1.EtcdCluster{})
	g.Expect(owner.Spec.Monitoring.Mode).To(Equal(etcdv1alpha1.MonitoringAuto), "the default")

	pm, err := monitoringObject(ns, "mon-members", "PodMonitor")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(metav1.IsControlledBy(pm, owner)).To(BeTrue())
	g.Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "prom"))
	eps, _, _ := unstructured.NestedSlice(pm.Object, "spec", "podMetricsEndpoints")
	g.Expect(eps).To(HaveLen(1))
	g.Expect(eps[0]).To(HaveKeyWithValue("port", "metrics"), "the API server kept the endpoint as written")

	pr, err := monitoringObject(ns, "mon-alerts", "PrometheusRule")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(metav1.IsControlledBy(pr, owner)).To(BeTrue())
	groups, _, _ := unstructured.NestedSlice(pr.Object, "spec", "groups")
	g.Expect(groups).To(HaveLen(1))
	rules := groups[0].(map[string]any)["rules"].([]any)
	g.Expect(rules[0].(map[string]any)["expr"]).To(ContainSubstring(`namespace="` + ns + `", etcd_cluster="mon"`))

	dash := get(g, ns, "mon-dashboard", &corev1.ConfigMap{})
	g.Expect(metav1.IsControlledBy(dash, owner)).To(BeTrue())
	g.Expect(dash.Labels).To(HaveKeyWithValue("grafana_dashboard", "1"))
	g.Expect(dash.Data).To(HaveKey("etcdpilot-" + ns + "-mon.json"))

	By := func(string) {}
	By("a change of spec.monitoring.labels reaches the objects")
	setMonitoring(g, ns, "mon", func(m *etcdv1alpha1.MonitoringSpec) { m.Labels = map[string]string{"release": "prom2"} })
	g.Eventually(func(g Gomega) {
		pm, err := monitoringObject(ns, "mon-members", "PodMonitor")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pm.GetLabels()).To(HaveKeyWithValue("release", "prom2"))
		g.Expect(get(g, ns, "mon-dashboard", &corev1.ConfigMap{}).Labels).To(HaveKeyWithValue("release", "prom2"))
	}).WithTimeout(monitoringTimeout).WithPolling(interval).Should(Succeed())

	By("Disabled removes them, and says so")
	setMonitoring(g, ns, "mon", func(m *etcdv1alpha1.MonitoringSpec) { m.Mode = etcdv1alpha1.MonitoringDisabled })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "mon", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionMonitoring).Reason).To(Equal(etcdv1alpha1.ReasonMonitoringDisabled))
		_, err := monitoringObject(ns, "mon-members", "PodMonitor")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PodMonitor: %v", err)
		_, err = monitoringObject(ns, "mon-alerts", "PrometheusRule")
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "PrometheusRule: %v", err)
		err = k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mon-dashboard"}, &corev1.ConfigMap{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "dashboard: %v", err)
	}).WithTimeout(monitoringTimeout).WithPolling(interval).Should(Succeed())

	By("someone else's object of the same name is not touched, and the condition says why")
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mon-dashboard", Namespace: ns}, Data: map[string]string{"mine": "yes"}}
	g.Expect(k8sClient.Create(ctx, foreign)).To(Succeed())
	setMonitoring(g, ns, "mon", func(m *etcdv1alpha1.MonitoringSpec) { m.Mode = etcdv1alpha1.MonitoringAuto })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "mon", &etcdv1alpha1.EtcdCluster{})
		mon := condition(got, etcdv1alpha1.ConditionMonitoring)
		g.Expect(mon.Reason).To(Equal(etcdv1alpha1.ReasonMonitoringFailed))
		g.Expect(mon.Message).To(ContainSubstring("ConfigMap mon-dashboard exists and does not belong to this EtcdCluster"))
	}).WithTimeout(monitoringTimeout).WithPolling(interval).Should(Succeed())
	g.Expect(get(g, ns, "mon-dashboard", &corev1.ConfigMap{}).Data).To(Equal(map[string]string{"mine": "yes"}))
	g.Expect(condition(get(g, ns, "mon", &etcdv1alpha1.EtcdCluster{}), etcdv1alpha1.ConditionAvailable).Reason).
		NotTo(Equal(etcdv1alpha1.ReasonNotObserved), "the cluster is managed whatever its monitoring")
}
