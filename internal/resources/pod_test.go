package resources_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// memberPod builds member 0 of a new cluster c.
func memberPod(c *etcdv1alpha1.EtcdCluster) *corev1.Pod {
	return resources.MemberPod(c, resources.MemberConfig{
		Name: "main-0", InitialCluster: initialCluster(c, 3), InitialClusterState: "new",
	}, images)
}

func volume(pod *corev1.Pod, name string) *corev1.Volume {
	for i := range pod.Spec.Volumes {
		if pod.Spec.Volumes[i].Name == name {
			return &pod.Spec.Volumes[i]
		}
	}
	return nil
}

func envMap(ct corev1.Container) map[string]string {
	m := map[string]string{}
	for _, e := range ct.Env {
		m[e.Name] = e.Value
	}
	return m
}

func TestMemberPodIdentity(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	pod := memberPod(c)

	g.Expect(pod.Name).To(Equal("main-0"))
	g.Expect(pod.Namespace).To(Equal("db"))
	labels := cluster.For(c).MemberLabels("main-0")
	labels[cluster.LabelVersion] = versions.Default()
	g.Expect(pod.Labels).To(Equal(labels))
	g.Expect(pod.OwnerReferences).To(ConsistOf(resources.OwnerReference(c)))
	g.Expect(pod.Spec.Hostname).To(Equal("main-0"))
	g.Expect(pod.Spec.Subdomain).To(Equal("main-peer"))
	g.Expect(pod.Spec.Containers).To(HaveLen(1))

	ct := pod.Spec.Containers[0]
	g.Expect(ct.Name).To(Equal("etcd"))
	g.Expect(ct.Image).To(Equal(versions.Image(repo, versions.Default())))
	g.Expect(ct.Command).To(Equal([]string{"/usr/local/bin/etcd"}))
	g.Expect(ct.Args).To(Equal(resources.EtcdArgs(c, resources.MemberConfig{
		Name: "main-0", InitialCluster: initialCluster(c, 3), InitialClusterState: "new",
	})))
	g.Expect(ct.Ports).To(ConsistOf(
		corev1.ContainerPort{Name: "client", ContainerPort: 2379, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{Name: "peer", ContainerPort: 2380, Protocol: corev1.ProtocolTCP},
		corev1.ContainerPort{Name: "metrics", ContainerPort: 2381, Protocol: corev1.ProtocolTCP},
	))
	g.Expect(pod.Spec.TerminationGracePeriodSeconds).To(HaveValue(Equal(int64(30))))
	g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyAlways))
	g.Expect(pod.Spec.EnableServiceLinks).To(HaveValue(BeFalse()))
	g.Expect(pod.Spec.AutomountServiceAccountToken).To(HaveValue(BeFalse()))
}

func TestMemberPodUsesSpecVersionAndResources(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.Version = versions.Supported[0]
	c.Spec.Resources = corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	ct := memberPod(c).Spec.Containers[0]
	g.Expect(ct.Image).To(Equal(versions.Image(repo, versions.Supported[0])))
	g.Expect(ct.Resources).To(Equal(c.Spec.Resources))
}

func TestMemberPodWithTLS(t *testing.T) {
	g := NewWithT(t)
	pod := memberPod(newCluster())
	ct := pod.Spec.Containers[0]

	tls := volume(pod, "tls")
	g.Expect(tls).NotTo(BeNil())
	g.Expect(tls.Secret).NotTo(BeNil())
	g.Expect(tls.Secret.SecretName).To(Equal("main-member-tls"))
	g.Expect(tls.Secret.DefaultMode).To(HaveValue(Equal(int32(0o440))))
	g.Expect(ct.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "tls", MountPath: "/etc/etcd/tls", ReadOnly: true}))

	g.Expect(ct.Args).To(ContainElements(
		"--advertise-client-urls=https://main-0.main-peer.db.svc:2379",
		"--initial-advertise-peer-urls=https://main-0.main-peer.db.svc:2380",
		"--listen-client-urls=https://0.0.0.0:2379",
		"--client-cert-auth=true",
		"--peer-client-cert-auth=true",
	))
	g.Expect(envMap(ct)).To(Equal(map[string]string{
		"ETCDCTL_ENDPOINTS": "https://localhost:2379",
		"ETCDCTL_CACERT":    "/etc/etcd/tls/ca.crt",
		"ETCDCTL_CERT":      "/etc/etcd/tls/tls.crt",
		"ETCDCTL_KEY":       "/etc/etcd/tls/tls.key",
	}))
}

func TestMemberPodWithoutTLS(t *testing.T) {
	g := NewWithT(t)
	pod := memberPod(plainCluster())
	ct := pod.Spec.Containers[0]

	g.Expect(volume(pod, "tls")).To(BeNil())
	g.Expect(pod.Spec.Volumes).To(HaveLen(1))
	g.Expect(ct.VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "data", MountPath: "/var/lib/etcd"}}))
	for _, a := range ct.Args {
		g.Expect(a).NotTo(ContainSubstring("https://"))
		g.Expect(a).NotTo(ContainSubstring("/etc/etcd/tls"))
	}
	g.Expect(ct.Args).To(ContainElement("--advertise-client-urls=http://main-0.main-peer.db.svc:2379"))
	g.Expect(envMap(ct)).To(Equal(map[string]string{"ETCDCTL_ENDPOINTS": "http://localhost:2379"}))
}

func TestMemberPodDataVolume(t *testing.T) {
	g := NewWithT(t)
	pod := memberPod(newCluster())
	data := volume(pod, "data")
	g.Expect(data).NotTo(BeNil())
	g.Expect(data.PersistentVolumeClaim).NotTo(BeNil())
	g.Expect(data.PersistentVolumeClaim.ClaimName).To(Equal("main-0-data"))
	g.Expect(data.EmptyDir).To(BeNil())
	g.Expect(pod.Spec.Containers[0].VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "data", MountPath: "/var/lib/etcd"}))
	g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--data-dir=/var/lib/etcd/data"))
}

func TestMemberPodEphemeral(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.Storage = etcdv1alpha1.StorageSpec{Ephemeral: true, Size: ptr.To(resource.MustParse("1Gi"))}
	pod := memberPod(c)

	data := volume(pod, "data")
	g.Expect(data).NotTo(BeNil())
	g.Expect(data.EmptyDir).NotTo(BeNil())
	g.Expect(data.EmptyDir.SizeLimit).To(HaveValue(Equal(resource.MustParse("1Gi"))))
	for _, v := range pod.Spec.Volumes {
		g.Expect(v.PersistentVolumeClaim).To(BeNil(), "volume %s", v.Name)
	}
}

func TestMemberPodProbes(t *testing.T) {
	g := NewWithT(t)
	ct := memberPod(newCluster()).Spec.Containers[0]

	for _, p := range []*corev1.Probe{ct.StartupProbe, ct.LivenessProbe, ct.ReadinessProbe} {
		g.Expect(p).NotTo(BeNil())
		g.Expect(p.HTTPGet).NotTo(BeNil())
		g.Expect(p.HTTPGet.Port.String()).To(Equal("metrics"))
		g.Expect(p.HTTPGet.Scheme).To(Equal(corev1.URISchemeHTTP))
	}
	g.Expect(ct.StartupProbe.HTTPGet.Path).To(Equal("/livez"))
	g.Expect(ct.StartupProbe.PeriodSeconds * ct.StartupProbe.FailureThreshold).To(Equal(int32(300)))
	g.Expect(ct.LivenessProbe.HTTPGet.Path).To(Equal("/livez"))
	g.Expect(ct.LivenessProbe.PeriodSeconds).To(Equal(int32(10)))
	g.Expect(ct.LivenessProbe.FailureThreshold).To(Equal(int32(6)))
	g.Expect(ct.LivenessProbe.TimeoutSeconds).To(Equal(int32(5)))
	g.Expect(ct.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(ct.StartupProbe.PeriodSeconds).To(Equal(int32(1)), "a started member is seen within a second")
	g.Expect(ct.ReadinessProbe.PeriodSeconds).To(Equal(int32(2)), "a ready member is seen within two seconds")
	g.Expect(ct.ReadinessProbe.PeriodSeconds * ct.ReadinessProbe.FailureThreshold).To(Equal(int32(10)))
	g.Expect(ct.ReadinessProbe.TimeoutSeconds).To(Equal(int32(5)))
	g.Expect(ct.Args).To(ContainElement("--listen-metrics-urls=http://0.0.0.0:2381"))
}

func TestMemberPodIsRestricted(t *testing.T) {
	g := NewWithT(t)
	pod := memberPod(newCluster())

	psc := pod.Spec.SecurityContext
	g.Expect(psc).NotTo(BeNil())
	g.Expect(psc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(psc.RunAsUser).To(HaveValue(Equal(int64(65532))))
	g.Expect(psc.RunAsGroup).To(HaveValue(Equal(int64(65532))))
	g.Expect(psc.FSGroup).To(HaveValue(Equal(int64(65532))))
	g.Expect(psc.FSGroupChangePolicy).To(HaveValue(Equal(corev1.FSGroupChangeOnRootMismatch)))
	g.Expect(psc.SeccompProfile).To(Equal(&corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}))

	csc := pod.Spec.Containers[0].SecurityContext
	g.Expect(csc).NotTo(BeNil())
	g.Expect(csc.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(csc.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(csc.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(csc.Capabilities).NotTo(BeNil())
	g.Expect(csc.Capabilities.Drop).To(Equal([]corev1.Capability{"ALL"}))
	g.Expect(csc.Capabilities.Add).To(BeEmpty())
	g.Expect(csc.Privileged).To(BeNil())
}

func TestMemberPodOperatorLabelsWin(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.PodTemplate.Labels = map[string]string{
		cluster.LabelCluster: "someone-else",
		cluster.LabelMember:  "main-9",
		"team":               "storage",
	}
	c.Spec.PodTemplate.Annotations = map[string]string{"example.com/scrape": "true"}
	pod := memberPod(c)

	g.Expect(pod.Labels).To(HaveKeyWithValue(cluster.LabelCluster, "main"))
	g.Expect(pod.Labels).To(HaveKeyWithValue(cluster.LabelMember, "main-0"))
	g.Expect(pod.Labels).To(HaveKeyWithValue("team", "storage"))
	g.Expect(pod.Annotations).To(HaveKeyWithValue("example.com/scrape", "true"))
	g.Expect(pod.Annotations).To(HaveKeyWithValue(resources.AnnotationSpecHash, resources.SpecHash(withoutSpread(pod))))
	g.Expect(pod.Annotations).To(HaveLen(2))
}

func TestMemberPodDefaultAffinity(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	aff := memberPod(c).Spec.Affinity

	g.Expect(aff).NotTo(BeNil())
	g.Expect(aff.PodAntiAffinity).NotTo(BeNil())
	g.Expect(aff.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution).To(BeEmpty())
	g.Expect(aff.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution).To(Equal([]corev1.WeightedPodAffinityTerm{{
		Weight: 100,
		PodAffinityTerm: corev1.PodAffinityTerm{
			LabelSelector: &metav1.LabelSelector{MatchLabels: cluster.For(c).SelectorLabels()},
			TopologyKey:   "kubernetes.io/hostname",
		},
	}}))
}

func TestMemberPodDefaultSpread(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	pod := memberPod(c)
	honor := corev1.NodeInclusionPolicyHonor
	selector := &metav1.LabelSelector{MatchLabels: cluster.For(c).SelectorLabels()}

	g.Expect(pod.Spec.TopologySpreadConstraints).To(Equal([]corev1.TopologySpreadConstraint{
		{MaxSkew: 1, TopologyKey: "kubernetes.io/hostname", WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: selector,
			NodeAffinityPolicy: &honor, NodeTaintsPolicy: &honor},
		{MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway, LabelSelector: selector,
			NodeAffinityPolicy: &honor, NodeTaintsPolicy: &honor},
	}))

	g.Expect(pod.Annotations[resources.AnnotationSpecHash]).To(Equal(resources.SpecHash(withoutSpread(pod))),
		"the default spread is not in the spec hash: changing it restarts no member")
	g.Expect(resources.SpecHash(pod)).NotTo(Equal(resources.SpecHash(withoutSpread(pod))), "SpecHash itself sees the constraints")

	c.Spec.PodTemplate.TopologySpreadConstraints = resources.DefaultSpread(cluster.For(c))
	user := memberPod(c)
	g.Expect(user.Spec.TopologySpreadConstraints).To(Equal(pod.Spec.TopologySpreadConstraints))
	g.Expect(user.Annotations[resources.AnnotationSpecHash]).NotTo(Equal(pod.Annotations[resources.AnnotationSpecHash]),
		"constraints the user sets are in the hash: setting them rolls the members out")
}

func TestMemberPodUserAffinityReplacesDefault(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	user := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "disk", Operator: corev1.NodeSelectorOpIn, Values: []string{"ssd"}}},
		}}},
	}}
	c.Spec.PodTemplate.Affinity = user
	aff := memberPod(c).Spec.Affinity

	g.Expect(aff).To(Equal(user))
	g.Expect(aff.PodAntiAffinity).To(BeNil())
	g.Expect(aff).NotTo(BeIdenticalTo(user), "the pod must not share the user's affinity")
}

func TestMemberPodScheduling(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	own := &metav1.LabelSelector{MatchLabels: map[string]string{"x": "y"}}
	c.Spec.PodTemplate = etcdv1alpha1.PodTemplate{
		Tolerations:       []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "etcd", Effect: corev1.TaintEffectNoSchedule}},
		NodeSelector:      map[string]string{"pool": "etcd"},
		PriorityClassName: "system-cluster-critical",
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{
			{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway},
			{MaxSkew: 1, TopologyKey: corev1.LabelHostname, WhenUnsatisfiable: corev1.DoNotSchedule, LabelSelector: own},
		},
	}
	spec := memberPod(c).Spec

	g.Expect(spec.Tolerations).To(Equal(c.Spec.PodTemplate.Tolerations))
	g.Expect(spec.NodeSelector).To(Equal(map[string]string{"pool": "etcd"}))
	g.Expect(spec.PriorityClassName).To(Equal("system-cluster-critical"))
	g.Expect(spec.TopologySpreadConstraints).To(HaveLen(2))
	g.Expect(spec.TopologySpreadConstraints[0].LabelSelector).To(Equal(&metav1.LabelSelector{MatchLabels: cluster.For(c).SelectorLabels()}))
	g.Expect(spec.TopologySpreadConstraints[1].LabelSelector).To(Equal(own))
	g.Expect(c.Spec.PodTemplate.TopologySpreadConstraints[0].LabelSelector).To(BeNil(), "the EtcdCluster must not change")
}

// richCluster sets every map and list a builder copies, with enough keys that map
// iteration order would show up in any output built from it.
func richCluster() *etcdv1alpha1.EtcdCluster {
	c := newCluster()
	c.Spec.Size = 5
	c.Spec.Storage.StorageClassName = ptr.To("fast")
	pt := &c.Spec.PodTemplate
	pt.Labels, pt.Annotations, pt.NodeSelector = map[string]string{}, map[string]string{}, map[string]string{}
	for _, k := range []string{"a", "b", "c", "d", "e", "f", "g", "h"} {
		pt.Labels["l-"+k], pt.Annotations["a-"+k], pt.NodeSelector["n-"+k] = k, k, k
	}
	pt.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}}
	pt.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.DoNotSchedule}}
	return c
}

func TestMemberPodIsDeterministic(t *testing.T) {
	g := NewWithT(t)
	c := richCluster()
	m := resources.MemberConfig{Name: "main-3", InitialCluster: initialCluster(c, 4), InitialClusterState: "existing"}

	first := resources.MemberPod(c, m, images)
	for range 20 {
		g.Expect(resources.MemberPod(c, m, images)).To(Equal(first))
		g.Expect(resources.MemberPod(c.DeepCopy(), m, images)).To(Equal(first))
	}
}

func TestMemberPodDoesNotAliasTheCluster(t *testing.T) {
	g := NewWithT(t)
	c := richCluster()
	before := c.DeepCopy()
	pod := memberPod(c)

	pod.Labels["l-a"] = "changed"
	pod.Annotations["a-a"] = "changed"
	pod.Spec.NodeSelector["n-a"] = "changed"
	pod.Spec.Tolerations[0].Key = "changed"
	pod.Spec.TopologySpreadConstraints[0].TopologyKey = "changed"
	g.Expect(c).To(Equal(before))
}

// A member put back on the previous release during a rolled-back upgrade runs that
// release: its image, its flags and its version label.
func TestMemberPodAtAnotherVersion(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.Version = "3.6.16"
	pod := resources.MemberPod(c, resources.MemberConfig{Name: "main-0", Version: "3.5.35"}, versions.Images{Repository: repo})
	g.Expect(pod.Labels).To(HaveKeyWithValue(cluster.LabelVersion, "3.5.35"))
	g.Expect(pod.Spec.Containers[0].Image).To(Equal(versions.Image(repo, "3.5.35")))
	g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--experimental-peer-skip-client-san-verification=true"))
	g.Expect(c.Spec.Version).To(Equal("3.6.16"), "the cluster is not modified")

	broken := resources.MemberPod(c, resources.MemberConfig{Name: "main-0", Image: "x/broken:v0"}, versions.Images{Repository: repo})
	g.Expect(broken.Spec.Containers[0].Image).To(Equal("x/broken:v0"))
	g.Expect(broken.Labels).To(HaveKeyWithValue(cluster.LabelVersion, "3.6.16"))
}

// withoutSpread is pod without its topology spread constraints: what the spec hash of a pod
// with the default spread covers.
func withoutSpread(pod *corev1.Pod) *corev1.Pod {
	p := pod.DeepCopy()
	p.Spec.TopologySpreadConstraints = nil
	return p
}
