package resources_test

import (
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

func TestOwnerReference(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	ref := resources.OwnerReference(c)

	g.Expect(ref).To(Equal(metav1.OwnerReference{
		APIVersion:         "etcd.etcdpilot.io/v1alpha1",
		Kind:               "EtcdCluster",
		Name:               "main",
		UID:                c.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}))
	g.Expect(ref.APIVersion).To(Equal(etcdv1alpha1.GroupVersion.String()))
}

func TestEveryObjectIsOwnedAndLabelled(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	cl := cluster.For(c)
	for _, obj := range []metav1.Object{
		memberPod(c),
		resources.MemberPVC(c, "main-0"),
		resources.PeerService(c),
		resources.ClientService(c),
		resources.PodDisruptionBudget(c),
		resources.NetworkPolicy(c, resources.Operator{}),
	} {
		g.Expect(obj.GetNamespace()).To(Equal("db"), obj.GetName())
		g.Expect(obj.GetOwnerReferences()).To(Equal([]metav1.OwnerReference{resources.OwnerReference(c)}), obj.GetName())
		for k, v := range cl.Labels() {
			g.Expect(obj.GetLabels()).To(HaveKeyWithValue(k, v), obj.GetName())
		}
	}
}

func TestMemberPVC(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	pvc := resources.MemberPVC(c, "main-1")

	g.Expect(pvc.Name).To(Equal("main-1-data"))
	g.Expect(pvc.Labels).To(Equal(cluster.For(c).MemberLabels("main-1")))
	g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect(pvc.Spec.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceStorage, resource.MustParse("4Gi")))
	g.Expect(pvc.Spec.StorageClassName).To(BeNil(), "no class: the cluster's default StorageClass")

	c.Spec.Storage = etcdv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("20Gi")), StorageClassName: ptr.To("fast")}
	pvc = resources.MemberPVC(c, "main-1")
	g.Expect(pvc.Spec.Resources.Requests).To(HaveKeyWithValue(corev1.ResourceStorage, resource.MustParse("20Gi")))
	g.Expect(pvc.Spec.StorageClassName).To(HaveValue(Equal("fast")))
	g.Expect(pvc.Spec.StorageClassName).NotTo(BeIdenticalTo(c.Spec.Storage.StorageClassName))
}

func TestPeerService(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	svc := resources.PeerService(c)

	g.Expect(svc.Name).To(Equal("main-peer"))
	g.Expect(svc.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(svc.Spec.PublishNotReadyAddresses).To(BeTrue())
	g.Expect(svc.Spec.Selector).To(Equal(cluster.For(c).SelectorLabels()))
	g.Expect(svc.Spec.Ports).To(ConsistOf(
		corev1.ServicePort{Name: "peer", Port: 2380, TargetPort: intstr.FromString("peer"), Protocol: corev1.ProtocolTCP},
		corev1.ServicePort{Name: "client", Port: 2379, TargetPort: intstr.FromString("client"), Protocol: corev1.ProtocolTCP},
	))
}

func TestClientService(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	svc := resources.ClientService(c)

	g.Expect(svc.Name).To(Equal("main-client"))
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.ClusterIP).To(BeEmpty(), "the API server allocates a cluster IP")
	g.Expect(svc.Spec.PublishNotReadyAddresses).To(BeFalse(), "only ready members get client traffic")
	g.Expect(svc.Spec.Selector).To(Equal(cluster.For(c).SelectorLabels()))
	g.Expect(svc.Spec.Ports).To(Equal([]corev1.ServicePort{
		{Name: "client", Port: 2379, TargetPort: intstr.FromString("client"), Protocol: corev1.ProtocolTCP},
	}))
}

func TestServicesSelectMemberPods(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	pod := memberPod(c)
	for _, svc := range []*corev1.Service{resources.PeerService(c), resources.ClientService(c)} {
		for k, v := range svc.Spec.Selector {
			g.Expect(pod.Labels).To(HaveKeyWithValue(k, v), svc.Name)
		}
	}
	for k, v := range resources.PodDisruptionBudget(c).Spec.Selector.MatchLabels {
		g.Expect(pod.Labels).To(HaveKeyWithValue(k, v))
	}
}

// The budget lets one member go at a time, whatever the size (not down to the quorum), and
// none of a single member.
func TestPodDisruptionBudgetLetsOneMemberGoAtATime(t *testing.T) {
	g := NewWithT(t)
	for size, want := range map[int32]int{1: 1, 3: 2, 5: 4, 7: 6} {
		c := newCluster()
		c.Spec.Size = size
		pdb := resources.PodDisruptionBudget(c)
		g.Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(int32(want)))), "size %d", size)
		g.Expect(pdb.Spec.MaxUnavailable).To(BeNil())
	}

	c := newCluster()
	pdb := resources.PodDisruptionBudget(c)
	g.Expect(pdb.Name).To(Equal("main"))
	g.Expect(pdb.Spec.MinAvailable).To(HaveValue(Equal(intstr.FromInt32(2))), "size defaults to 3")
	g.Expect(pdb.Spec.Selector).To(Equal(&metav1.LabelSelector{MatchLabels: cluster.For(c).SelectorLabels()}))

	c.Spec.Hibernation.Enabled = true
	g.Expect(resources.PodDisruptionBudget(c)).To(BeNil(), "no budget for members stopped on purpose")
}

func TestBuildersAreDeterministic(t *testing.T) {
	g := NewWithT(t)
	c := richCluster()
	g.Expect(resources.MemberPVC(c, "main-0")).To(Equal(resources.MemberPVC(c, "main-0")))
	g.Expect(resources.PeerService(c)).To(Equal(resources.PeerService(c)))
	g.Expect(resources.ClientService(c)).To(Equal(resources.ClientService(c)))
	g.Expect(resources.PodDisruptionBudget(c)).To(Equal(resources.PodDisruptionBudget(c)))
}
