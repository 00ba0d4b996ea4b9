package framework_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

func TestParseSamplesAndSelect(t *testing.T) {
	g := NewWithT(t)
	samples := framework.ParseSamples(`# HELP etcd_server_has_leader Whether or not a leader exists.
# TYPE etcd_server_has_leader gauge
etcd_server_has_leader 1
etcd_server_version{server_version="3.6.16"} 1
etcdpilot_cluster_condition{condition="Available",name="c",namespace="ns"} 1
etcdpilot_cluster_condition{condition="Degraded",name="c",namespace="ns"} 0 1700000000000
odd{msg="a \"quoted\", {braced} \\ value\nnext",le="+Inf"} +Inf

not a sample
broken{a="b" 1
`)
	g.Expect(samples).To(HaveLen(5))
	g.Expect(samples[0]).To(Equal(framework.Sample{Name: "etcd_server_has_leader", Labels: map[string]string{}, Value: 1}))
	g.Expect(samples[3].Labels).To(Equal(map[string]string{"condition": "Degraded", "name": "c", "namespace": "ns"}))
	g.Expect(samples[4].Labels).To(Equal(map[string]string{"msg": "a \"quoted\", {braced} \\ value\nnext", "le": "+Inf"}))

	g.Expect(framework.Select(samples, "etcd_server_has_leader", nil)).To(HaveLen(1))
	g.Expect(framework.Select(samples, "", map[string]string{"namespace": "ns", "name": "c"})).To(HaveLen(2))
	avail := framework.Select(samples, "etcdpilot_cluster_condition", map[string]string{"condition": "Available"})
	g.Expect(avail).To(ConsistOf(HaveField("Value", 1.0)))
	g.Expect(framework.Select(samples, "etcdpilot_cluster_condition", map[string]string{"name": "d"})).To(BeEmpty())
}

func memberPod(ip string, ports ...corev1.ContainerPort) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "c-0"},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "etcd", Ports: ports}}},
		Status: corev1.PodStatus{PodIP: ip}}
}

func TestMemberMetricsURL(t *testing.T) {
	g := NewWithT(t)
	ports := []corev1.ContainerPort{{Name: "client", ContainerPort: 2379}, {Name: "metrics", ContainerPort: 2381}}
	u, err := framework.MemberMetricsURL(memberPod("10.244.0.7", ports...))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u).To(Equal("http://10.244.0.7:2381/metrics"))
	u, _ = framework.MemberMetricsURL(memberPod("fd00::7", ports...))
	g.Expect(u).To(Equal("http://[fd00::7]:2381/metrics"))

	_, err = framework.MemberMetricsURL(memberPod("", ports...))
	g.Expect(err).To(MatchError("pod c-0 has no IP yet"))
	_, err = framework.MemberMetricsURL(memberPod("10.244.0.7", ports[0]))
	g.Expect(err).To(MatchError("pod c-0 has no container port named metrics"))
}

// roundTripper answers requests in-process, without a network.
type roundTripper func(*http.Request) *http.Response

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r), nil }

func serve(h http.HandlerFunc) roundTripper {
	return func(r *http.Request) *http.Response {
		w := httptest.NewRecorder()
		h(w, r)
		return w.Result()
	}
}

func TestGetMetrics(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	env := newEnv(t)
	env.Token = func() (string, error) { return "t0ken", nil }
	env.HTTP = serve(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		if r.URL.Scheme == "https" && r.Header.Get("Authorization") != "Bearer t0ken" {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("up 1\n"))
	})

	body, err := env.GetMetrics(ctx, "http://10.0.0.1:2381/metrics", false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(Equal("up 1\n"))
	body, err = env.GetMetrics(ctx, "https://m.ns.svc:8443/metrics", true)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(body).To(Equal("up 1\n"))

	_, err = env.GetMetrics(ctx, "https://m.ns.svc:8443/metrics", false)
	var se *framework.StatusError
	g.Expect(errors.As(err, &se)).To(BeTrue())
	g.Expect(se.Refused()).To(BeTrue())
	g.Expect(err).To(MatchError("GET https://m.ns.svc:8443/metrics: 401 Unauthorized: Unauthorized"))

	_, err = env.GetMetrics(ctx, "http://10.0.0.1:2381/other", false)
	g.Expect(errors.As(err, &se)).To(BeTrue())
	g.Expect(se.Refused()).To(BeFalse())

	env.Token = func() (string, error) { return "", errors.New("no token") }
	_, err = env.GetMetrics(ctx, "https://m.ns.svc:8443/metrics", true)
	g.Expect(err).To(MatchError("no token"))
}

// In a pod, the token is the ServiceAccount's, read from its file each time.
func TestNewEnvToken(t *testing.T) {
	g := NewWithT(t)
	file := filepath.Join(t.TempDir(), "token")
	g.Expect(os.WriteFile(file, []byte("first\n"), 0o600)).To(Succeed())
	env, err := framework.NewEnv(&rest.Config{Host: "https://127.0.0.1:1", BearerTokenFile: file}, ns, &logBook{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(env.HTTP).NotTo(BeNil())
	g.Expect(env.Token()).To(Equal("first"))
	g.Expect(os.WriteFile(file, []byte("rotated"), 0o600)).To(Succeed())
	g.Expect(env.Token()).To(Equal("rotated"))

	env, err = framework.NewEnv(&rest.Config{Host: "https://127.0.0.1:1"}, ns, &logBook{})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = env.Token()
	g.Expect(err).To(MatchError(ContainSubstring("no bearer token")))
}

func metricsService(namespace string, labels map[string]string) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "etcdpilot-controller-manager-metrics-service", Labels: labels},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 8443}}}}
}

func TestOperatorMetricsURL(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	labels := map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "etcdpilot"}
	want := metricsService("", labels)

	env := newEnv(t, metricsService("etcdpilot-system", labels),
		metricsService("other", map[string]string{"control-plane": "controller-manager"})) // not the bundle's labels
	u, err := env.OperatorMetricsURL(ctx, want, "https")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(u).To(Equal("https://etcdpilot-controller-manager-metrics-service.etcdpilot-system.svc:8443/metrics"))
	_, err = env.OperatorMetricsURL(ctx, want, "metrics")
	g.Expect(err).To(MatchError("the Service etcdpilot-system/etcdpilot-controller-manager-metrics-service has no port named metrics"))

	_, err = newEnv(t).OperatorMetricsURL(ctx, want, "https")
	g.Expect(err).To(MatchError("no Service etcdpilot-controller-manager-metrics-service labelled " +
		"app.kubernetes.io/name=etcdpilot,control-plane=controller-manager in any namespace: is the operator installed?"))

	_, err = newEnv(t, metricsService("a", labels), metricsService("b", labels)).OperatorMetricsURL(ctx, want, "https")
	g.Expect(err).To(MatchError(ContainSubstring("is in several namespaces (a, b)")))
}

func TestMonitoringObjects(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", UID: "u1"}}
	objs := framework.MonitoringObjects(c)
	var names []string
	for _, o := range objs {
		names = append(names, o.String())
	}
	g.Expect(names).To(Equal([]string{"PodMonitor c-members", "PrometheusRule c-alerts", "ConfigMap c-dashboard"}))
	g.Expect(objs[0].Kind.GroupVersion().String()).To(Equal("monitoring.coreos.com/v1"))

	controlled := func(kind, name string, uid string) *metav1.ObjectMeta {
		return &metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "etcd.etcdpilot.io/v1alpha1", Kind: kind, Name: name, UID: k8stypes.UID(uid), Controller: ptr.To(true)}}}
	}
	g.Expect(framework.CheckMonitoringObject(objs[0], controlled("EtcdCluster", "c", "u1"), c)).To(Succeed())
	g.Expect(framework.CheckMonitoringObject(objs[0], &metav1.ObjectMeta{}, c)).To(MatchError("PodMonitor c-members has no controller owner reference"))
	g.Expect(framework.CheckMonitoringObject(objs[1], controlled("EtcdCluster", "c", "old"), c)).To(MatchError(
		"PrometheusRule c-alerts is controlled by EtcdCluster c, not by EtcdCluster c"))

	dashboard := controlled("EtcdCluster", "c", "u1")
	g.Expect(framework.CheckMonitoringObject(objs[2], dashboard, c)).To(MatchError(`ConfigMap c-dashboard lacks the label grafana_dashboard: "1"`))
	dashboard.Labels = map[string]string{"grafana_dashboard": "1"}
	g.Expect(framework.CheckMonitoringObject(objs[2], dashboard, c)).To(Succeed())
	g.Expect(framework.CheckMonitoringObject(objs[2], &metav1.ObjectMeta{}, c)).To(MatchError(
		`ConfigMap c-dashboard has no controller owner reference and lacks the label grafana_dashboard: "1"`))
}

func TestCheckMonitoringCondition(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "c"}}
	g.Expect(framework.CheckMonitoringCondition(c, true)).To(MatchError("EtcdCluster c has no Monitoring condition"))
	g.Expect(framework.CheckMonitoringCondition(c, false)).To(MatchError("EtcdCluster c has no Monitoring condition"))

	set := func(s metav1.ConditionStatus, reason string) {
		c.Status.Conditions = []metav1.Condition{{Type: "Monitoring", Status: s, Reason: reason, Message: "m"}}
	}
	set(metav1.ConditionTrue, etcdv1alpha1.ReasonMonitoringConfigured)
	g.Expect(framework.CheckMonitoringCondition(c, true)).To(Succeed())
	g.Expect(framework.CheckMonitoringCondition(c, false)).To(MatchError(
		"the CRDs are not installed but the condition is Monitoring=True (Configured: m), not False with reason PrometheusOperatorMissing"))
	set(metav1.ConditionFalse, etcdv1alpha1.ReasonPrometheusOperatorMissing)
	g.Expect(framework.CheckMonitoringCondition(c, false)).To(Succeed())
	g.Expect(framework.CheckMonitoringCondition(c, true)).To(MatchError(
		"the CRDs are installed but the condition is Monitoring=False (PrometheusOperatorMissing: m), not True"))
	set(metav1.ConditionFalse, etcdv1alpha1.ReasonMonitoringFailed)
	g.Expect(framework.CheckMonitoringCondition(c, false)).To(MatchError(ContainSubstring("Monitoring=False (Failed: m)")))
}
