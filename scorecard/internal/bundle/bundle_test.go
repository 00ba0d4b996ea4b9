package bundle_test

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/versions"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
)

// The repository's own bundle is what the test image reads in a real run.
func TestTheRepositoryBundle(t *testing.T) {
	g := NewWithT(t)
	b, err := bundle.Load(filepath.Join("..", "..", "..", "bundle"))
	g.Expect(err).NotTo(HaveOccurred())

	example, err := bundle.EtcdClusterExample(b.CSV)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(example.Name).NotTo(BeEmpty())

	var got []string
	for _, v := range bundle.SupportedVersions(b.CSV) {
		got = append(got, v.String())
	}
	g.Expect(got).To(Equal(versions.Supported))

	svc, err := bundle.MetricsService(b.Objects)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.Name).To(Equal("etcdpilot-controller-manager-metrics-service"))
	g.Expect(svc.Spec.Ports).To(ConsistOf(HaveField("Port", BeEquivalentTo(8443))))
}

func TestLoadMissingBundle(t *testing.T) {
	g := NewWithT(t)
	_, err := bundle.Load(t.TempDir())
	g.Expect(err).To(MatchError(ContainSubstring("unable to find a csv")))
}

func csvWithExamples(examples string) *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	csv.Name = "etcdpilot.v9.9.9"
	if examples != "" {
		csv.Annotations = map[string]string{"alm-examples": examples}
	}
	return csv
}

func TestEtcdClusterExample(t *testing.T) {
	cases := []struct {
		name     string
		examples string
		wantErr  string
		wantName string
		wantSize int32
	}{
		{name: "no annotation", wantErr: "has no alm-examples annotation"},
		{name: "not JSON", examples: `{`, wantErr: "is not a JSON array"},
		{name: "no EtcdCluster", examples: `[{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}]`,
			wantErr: "have no etcd.etcdpilot.io/v1alpha1 EtcdCluster"},
		{name: "other group", examples: `[{"apiVersion":"etcd.example.com/v1","kind":"EtcdCluster","metadata":{"name":"x"}}]`,
			wantErr: "have no etcd.etcdpilot.io/v1alpha1 EtcdCluster"},
		{name: "unknown field", examples: `[{"apiVersion":"etcd.etcdpilot.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"x"},"spec":{"replicas":3}}]`,
			wantErr: `unknown field "replicas"`},
		{name: "first EtcdCluster wins", examples: `[
			{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm"}},
			{"apiVersion":"etcd.etcdpilot.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"a"},"spec":{"size":5}},
			{"apiVersion":"etcd.etcdpilot.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"b"}}]`,
			wantName: "a", wantSize: 5},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, err := bundle.EtcdClusterExample(csvWithExamples(tc.examples))
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(c.Name).To(Equal(tc.wantName))
			g.Expect(c.Spec.Size).To(Equal(tc.wantSize))
		})
	}
}

func csvWithEnv(names ...string) *operatorsv1alpha1.ClusterServiceVersion {
	var env []corev1.EnvVar
	for _, n := range names {
		env = append(env, corev1.EnvVar{Name: n, Value: "img"})
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	spec := operatorsv1alpha1.StrategyDeploymentSpec{Name: "manager"}
	spec.Spec.Template.Spec.Containers = []corev1.Container{{Name: "manager", Env: env}}
	csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs = []operatorsv1alpha1.StrategyDeploymentSpec{spec}
	return csv
}

func TestSupportedVersionsAndUpgradePair(t *testing.T) {
	cases := []struct {
		name      string
		env       []string
		supported []string
		from, to  string
		wantErr   bool
	}{
		{name: "none", env: []string{"WATCH_NAMESPACE"}, wantErr: true},
		{name: "one release", env: []string{"RELATED_IMAGE_ETCD_V3_6_16"}, supported: []string{"3.6.16"}, wantErr: true},
		{name: "one minor", env: []string{"RELATED_IMAGE_ETCD_V3_6_16", "RELATED_IMAGE_ETCD_V3_6_9"},
			supported: []string{"3.6.9", "3.6.16"}, wantErr: true},
		{name: "today's bundle", env: []string{"ETCD_IMAGE_REPOSITORY", "RELATED_IMAGE_ETCD_V3_5_35", "RELATED_IMAGE_ETCD_V3_6_16", "RELATED_IMAGE_ETCD_V3_7_3"},
			supported: []string{"3.5.35", "3.6.16", "3.7.3"}, from: "3.6.16", to: "3.7.3"},
		{name: "numeric, not lexical, order; newest patch of the previous minor",
			env:       []string{"RELATED_IMAGE_ETCD_V3_10_1", "RELATED_IMAGE_ETCD_V3_9_2", "RELATED_IMAGE_ETCD_V3_9_10", "RELATED_IMAGE_ETCD_V3_10_0"},
			supported: []string{"3.9.2", "3.9.10", "3.10.0", "3.10.1"}, from: "3.9.10", to: "3.10.1"},
		{name: "across a major", env: []string{"RELATED_IMAGE_ETCD_V4_0_0", "RELATED_IMAGE_ETCD_V3_7_3"},
			supported: []string{"3.7.3", "4.0.0"}, from: "3.7.3", to: "4.0.0"},
		{name: "duplicates and look-alikes", env: []string{"RELATED_IMAGE_ETCD_V3_7_3", "RELATED_IMAGE_ETCD_V3_7_3", "RELATED_IMAGE_ETCD_V3_7", "RELATED_IMAGE_ETCD_V3_6_16_X"},
			supported: []string{"3.7.3"}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			vs := bundle.SupportedVersions(csvWithEnv(tc.env...))
			var got []string
			for _, v := range vs {
				got = append(got, v.String())
			}
			g.Expect(got).To(Equal(tc.supported))

			from, to, err := bundle.UpgradePair(vs)
			if tc.wantErr {
				g.Expect(err).To(MatchError(bundle.ErrOneMinor))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(from.String()).To(Equal(tc.from))
			g.Expect(to.String()).To(Equal(tc.to))
		})
	}
}

func service(name string, ports ...string) *unstructured.Unstructured {
	var ps []any
	for _, p := range ports {
		ps = append(ps, map[string]any{"name": p, "port": int64(8443)})
	}
	o := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"ports": ps}}}
	o.SetAPIVersion("v1")
	o.SetKind("Service")
	o.SetName(name)
	o.SetLabels(map[string]string{"control-plane": "controller-manager"})
	return o
}

func TestMetricsService(t *testing.T) {
	g := NewWithT(t)
	csv := &unstructured.Unstructured{}
	csv.SetKind("ClusterServiceVersion")
	svc, err := bundle.MetricsService([]*unstructured.Unstructured{csv, service("webhook", "webhook"), service("metrics", "https")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(svc.Name).To(Equal("metrics"))
	g.Expect(svc.Labels).To(Equal(map[string]string{"control-plane": "controller-manager"}))
	g.Expect(svc.Spec.Ports[0].Port).To(BeEquivalentTo(8443))

	_, err = bundle.MetricsService([]*unstructured.Unstructured{csv, service("webhook", "webhook")})
	g.Expect(err).To(MatchError("the bundle ships 0 Services with a port named https; the operator's metrics Service must be the one"))
	_, err = bundle.MetricsService([]*unstructured.Unstructured{service("a", "https"), service("b", "https")})
	g.Expect(err).To(MatchError(ContainSubstring("ships 2 Services")))
}

// The example is the typed object, so the tests can change it with the API's own types.
func TestExampleIsTyped(t *testing.T) {
	g := NewWithT(t)
	c, err := bundle.EtcdClusterExample(csvWithExamples(
		`[{"apiVersion":"etcd.etcdpilot.io/v1alpha1","kind":"EtcdCluster","metadata":{"name":"a","labels":{"k":"v"}},"spec":{"tls":{"mode":"Disabled"}}}]`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Spec.TLS.Mode).To(Equal(etcdv1alpha1.TLSModeDisabled))
	g.Expect(c.ObjectMeta).To(Equal(metav1.ObjectMeta{Name: "a", Labels: map[string]string{"k": "v"}}))
}
