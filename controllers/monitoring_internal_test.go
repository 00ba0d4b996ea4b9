package controllers

import (
	"context"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

// countingMapper is a RESTMapper that knows only core and etcdpilot kinds, like an API
// server without the Prometheus Operator, and counts the questions about other kinds.
type countingMapper struct {
	meta.RESTMapper
	asked int
}

func (m *countingMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if gk.Group == "monitoring.coreos.com" {
		m.asked++
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// Without the Prometheus Operator's CRDs nothing is created, the condition says so, and the
// API server is asked about the CRDs at most once a minute, however many passes run.
func TestMonitoringWithoutThePrometheusOperator(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(etcdv1alpha1.AddToScheme(scheme)).To(Succeed())
	base := meta.NewDefaultRESTMapper(nil)
	base.Add(corev1.SchemeGroupVersion.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	mapper := &countingMapper{RESTMapper: base}
	writes, reads := 0, 0
	cli := fake.NewClientBuilder().WithScheme(scheme).WithRESTMapper(mapper).WithInterceptorFuncs(interceptor.Funcs{
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes++
			return c.Create(ctx, obj, opts...)
		},
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			reads++
			return c.Get(ctx, key, obj, opts...)
		},
	}).Build()
	now := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	r := &EtcdClusterReconciler{Client: cli, APIReader: cli, Scheme: scheme, Now: func() time.Time { return now }}
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u1"}}
	c.Spec.Monitoring.Mode = etcdv1alpha1.MonitoringAuto

	cond := r.ensureMonitoring(context.Background(), c)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(etcdv1alpha1.ReasonPrometheusOperatorMissing))
	g.Expect(cond.Message).To(ContainSubstring("port 2381"))
	g.Expect(writes).To(BeZero(), "nothing is created, not even the dashboard")
	asked := mapper.asked
	g.Expect(asked).To(BeNumerically(">", 0))

	for range 10 {
		now = now.Add(5 * time.Second)
		g.Expect(r.ensureMonitoring(context.Background(), c).Reason).To(Equal(etcdv1alpha1.ReasonPrometheusOperatorMissing))
	}
	g.Expect(mapper.asked).To(Equal(asked), "not asked again within a minute")
	now = now.Add(time.Minute)
	r.ensureMonitoring(context.Background(), c)
	g.Expect(mapper.asked).To(BeNumerically(">", asked), "asked again after a minute")

	// Disabled needs no CRDs either.
	c.Spec.Monitoring.Mode = etcdv1alpha1.MonitoringDisabled
	g.Expect(r.ensureMonitoring(context.Background(), c).Reason).To(Equal(etcdv1alpha1.ReasonMonitoringDisabled))
	g.Expect(reads).To(Equal(1), "the dashboard ConfigMap looked for, to delete it")
	g.Expect(r.ensureMonitoring(context.Background(), c).Reason).To(Equal(etcdv1alpha1.ReasonMonitoringDisabled),
		"every pass says it, so that a lost status patch loses nothing")
	g.Expect(reads).To(Equal(1), "nothing looked at again right away")
	g.Expect(writes).To(BeZero())
}

// A steady pass skips building the monitoring objects when monitoringInputs did not change:
// they must change exactly when the objects do.
func TestMonitoringInputsChangeExactlyWhenTheObjectsDo(t *testing.T) {
	base := func(mutate func(*etcdv1alpha1.EtcdCluster)) *etcdv1alpha1.EtcdCluster {
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", UID: "u1"},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, Monitoring: etcdv1alpha1.MonitoringSpec{Labels: map[string]string{"team": "x", "tier": "1"}}}}
		if mutate != nil {
			mutate(c)
		}
		return c
	}
	hashes := func(g Gomega, c *etcdv1alpha1.EtcdCluster) []string {
		objs, err := monitoring.For(c, monitoring.Dashboard)
		g.Expect(err).NotTo(HaveOccurred())
		return []string{objs.PodMonitor.GetAnnotations()[monitoring.AnnotationHash], objs.PrometheusRule.GetAnnotations()[monitoring.AnnotationHash],
			objs.Dashboard.Annotations[monitoring.AnnotationHash]}
	}
	for _, tc := range []struct {
		name    string
		mutate  func(*etcdv1alpha1.EtcdCluster)
		changes bool
	}{
		{"nothing", nil, false},
		{"the size", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 5 }, false},
		{"the version", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "3.6.16" }, false},
		{"the same labels, built in another order", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Monitoring.Labels = map[string]string{"tier": "1", "team": "x"}
		}, false},
		{"a label value", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Monitoring.Labels["team"] = "y" }, true},
		{"no labels", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Monitoring.Labels = nil }, true},
		{"the name", func(c *etcdv1alpha1.EtcdCluster) { c.Name = "b" }, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before, after := base(nil), base(tc.mutate)
			g.Expect(monitoringInputs(after) != monitoringInputs(before)).To(Equal(tc.changes))
			g.Expect(slices.Equal(hashes(g, after), hashes(g, before))).To(Equal(!tc.changes))
		})
	}
}
