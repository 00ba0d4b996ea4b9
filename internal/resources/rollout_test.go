package resources_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

func specHash(c *etcdv1alpha1.EtcdCluster, m resources.MemberConfig) string {
	return resources.MemberPod(c, m, images).Annotations[resources.AnnotationSpecHash]
}

// Every change that needs a restart changes the hash; what etcd reads only at its first
// start, and what is changed in place, does not.
func TestSpecHashFollowsWhatNeedsARestart(t *testing.T) {
	base := resources.MemberConfig{Name: "main-1", InitialCluster: []string{"main-0=https://x"}, InitialClusterState: "existing"}
	before := specHash(newCluster(), base)

	changes := map[string]func(c *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig){
		"resources": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
		},
		"an etcd option": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) { c.Spec.Etcd.SnapshotCount = 5000 },
		"the quota": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("1Gi"))
		},
		"the heartbeat": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.Etcd.HeartbeatIntervalMillis = 200
		},
		"a node selector": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.PodTemplate.NodeSelector = map[string]string{"disk": "ssd"}
		},
		"a toleration": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.PodTemplate.Tolerations = []corev1.Toleration{{Key: "etcd"}}
		},
		"a priority class": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.PodTemplate.PriorityClassName = "high"
		},
		"the TLS secrets": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeSecrets, Secrets: &etcdv1alpha1.TLSSecrets{MemberSecretName: "m2", ClientSecretName: "c2"}}
		},
		"the release":                     func(_ *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig) { m.Version = "3.5.35" },
		"the image":                       func(_ *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig) { m.Image = "localhost:5000/etcd:broken" },
		"the trusted CAs (a CA rotation)": func(_ *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig) { m.TrustHash = "0123abcd" },
	}
	for name, change := range changes {
		t.Run(name, func(t *testing.T) {
			c, m := newCluster(), base
			change(c, &m)
			NewWithT(t).Expect(specHash(c, m)).NotTo(Equal(before))
		})
	}

	same := map[string]func(c *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig){
		"the initial cluster": func(_ *etcdv1alpha1.EtcdCluster, m *resources.MemberConfig) {
			m.InitialCluster = []string{"main-0=https://x", "main-1=https://y", "main-2=https://z"}
			m.InitialClusterState = "new"
		},
		"pod labels": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.PodTemplate.Labels = map[string]string{"team": "a"}
		},
		"pod annotations": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.PodTemplate.Annotations = map[string]string{"a": "b"}
		},
		"the size": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) { c.Spec.Size = 5 },
		"the storage size": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) {
			c.Spec.Storage.Size = ptr.To(resource.MustParse("100Gi"))
		},
		"the replace bound": func(c *etcdv1alpha1.EtcdCluster, _ *resources.MemberConfig) { c.Spec.ReplaceUnhealthyMemberAfter = nil },
	}
	for name, change := range same {
		t.Run(name, func(t *testing.T) {
			c, m := newCluster(), base
			change(c, &m)
			NewWithT(t).Expect(specHash(c, m)).To(Equal(before))
		})
	}
}

func TestSpecHashIgnoresTheRestoreInitContainer(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	m := resources.MemberConfig{Name: "main-0"}
	pod := resources.MemberPod(c, m, images)
	pod.Spec.InitContainers = []corev1.Container{{Name: "restore", Image: "agent"}}
	g.Expect(resources.SpecHash(withoutSpread(pod))).To(Equal(specHash(c, m)))
}

func TestInPlaceSetsTemplateMetadataWithoutTouchingTheSpecHash(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	m := resources.MemberConfig{Name: "main-0"}
	live := resources.MemberPod(c, m, images)
	live.Labels["kubelet-added"] = "x"
	oldHash := live.Annotations[resources.AnnotationSpecHash]

	_, _, changed := resources.InPlace(live, resources.MemberPod(c, m, images))
	g.Expect(changed).To(BeFalse(), "a pod built from the current spec needs nothing")

	c.Spec.PodTemplate.Labels = map[string]string{"team": "storage"}
	c.Spec.PodTemplate.Annotations = map[string]string{"example.com/scrape": "true"}
	c.Spec.Etcd.SnapshotCount = 777 // needs a restart: the hash on the live pod must stay
	labels, annotations, changed := resources.InPlace(live, resources.MemberPod(c, m, images))
	g.Expect(changed).To(BeTrue())
	g.Expect(labels).To(HaveKeyWithValue("team", "storage"))
	g.Expect(labels).To(HaveKeyWithValue("kubelet-added", "x"), "labels of others are kept")
	g.Expect(annotations).To(HaveKeyWithValue("example.com/scrape", "true"))
	g.Expect(annotations).To(HaveKeyWithValue(resources.AnnotationSpecHash, oldHash), "the hash says what the containers run")

	// A new trust bundle (a CA rotation) needs a restart too: the pod keeps what it started with.
	trusted := m
	trusted.TrustHash = "new-trust"
	_, annotations, _ = resources.InPlace(live, resources.MemberPod(c, trusted, images))
	g.Expect(annotations).To(HaveKeyWithValue(resources.AnnotationSpecHash, oldHash))
	g.Expect(annotations).NotTo(HaveKey(resources.AnnotationTrustHash))
}

func TestInPlaceAdoptsAPodWithoutASpecHashAtTheDesiredRelease(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	desired := resources.MemberPod(c, resources.MemberConfig{Name: "main-0"}, images)
	legacy := desired.DeepCopy()
	delete(legacy.Annotations, resources.AnnotationSpecHash)

	_, annotations, changed := resources.InPlace(legacy, desired)
	g.Expect(changed).To(BeTrue())
	g.Expect(annotations).To(HaveKeyWithValue(resources.AnnotationSpecHash, desired.Annotations[resources.AnnotationSpecHash]))

	older := legacy.DeepCopy()
	older.Labels[cluster.LabelVersion] = "3.5.35"
	labels, annotations, _ := resources.InPlace(older, desired)
	g.Expect(annotations).NotTo(HaveKey(resources.AnnotationSpecHash), "a pod at another release is restarted by the upgrade anyway")
	g.Expect(labels).To(HaveKeyWithValue(cluster.LabelVersion, "3.5.35"), "the release label changes only with a restart")
}
