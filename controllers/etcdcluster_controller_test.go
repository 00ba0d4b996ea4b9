package controllers_test

import (
	"context"
	"crypto/x509"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

const (
	timeout  = 30 * time.Second
	interval = 100 * time.Millisecond
)

// newNamespace creates a namespace of its own for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "etcdcluster-test-"}}
	NewWithT(t).Expect(k8sClient.Create(context.Background(), ns)).To(Succeed())
	return ns.Name
}

func keyOf(o client.Object) client.ObjectKey { return client.ObjectKeyFromObject(o) }

func get[T client.Object](g Gomega, ns, name string, obj T) T {
	g.ExpectWithOffset(1, k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// updateCluster applies change to the EtcdCluster ns/name and updates it, reading it again
// on a conflict: the controller writes the object too (its status, its finalizer). It
// returns the cluster as updated.
func updateCluster(g Gomega, ns, name string, change func(*etcdv1alpha1.EtcdCluster)) *etcdv1alpha1.EtcdCluster {
	var c *etcdv1alpha1.EtcdCluster
	g.EventuallyWithOffset(1, func() error {
		c = &etcdv1alpha1.EtcdCluster{}
		if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
			return err
		}
		change(c)
		return k8sClient.Update(context.Background(), c)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return c
}

func condition(c *etcdv1alpha1.EtcdCluster, t string) metav1.Condition {
	if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil {
		return *cond
	}
	return metav1.Condition{}
}

func TestBootstrapCreatesOwnedObjectsAndTheSeedOnly(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "boot", Namespace: ns}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "boot", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Finalizers).To(ContainElement(controllers.Finalizer))
		g.Expect(got.Status.ObservedGeneration).To(BeZero(), "the spec is not in force while the cluster bootstraps")
		g.Expect(got.Status.ClientService).To(Equal("boot-client"))
		g.Expect(got.Status.ClientSecret).To(Equal("boot-client-tls"))
		g.Expect(got.Status.Selector).To(Equal("app.kubernetes.io/name=etcd,etcd.etcdpilot.io/cluster=boot"))
		g.Expect(condition(got, etcdv1alpha1.ConditionAvailable).Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
		g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	owner := get(g, ns, "boot", &etcdv1alpha1.EtcdCluster{})
	ownedByCluster := func(o client.Object) {
		g.ExpectWithOffset(1, o.GetOwnerReferences()).To(ContainElement(HaveField("UID", owner.UID)), o.GetName())
	}

	By := func(string) {}
	By("the CA signs the member certificate, which covers every member name")
	ca := get(g, ns, "boot-ca", &corev1.Secret{})
	ownedByCluster(ca)
	authority, err := pki.LoadCA(pki.KeyPair{CertPEM: ca.Data["ca.crt"], KeyPEM: ca.Data["ca.key"]})
	g.Expect(err).NotTo(HaveOccurred())
	member := get(g, ns, "boot-member-tls", &corev1.Secret{})
	g.Expect(member.Type).To(Equal(corev1.SecretTypeTLS))
	g.Expect(authority.Verify(member.Data["tls.crt"], "boot-4.boot-peer."+ns+".svc", x509.ExtKeyUsageServerAuth, time.Now())).To(Succeed())
	g.Expect(authority.Verify(member.Data["tls.crt"], "boot-client."+ns+".svc", x509.ExtKeyUsageServerAuth, time.Now())).To(Succeed())
	clientSecret := get(g, ns, "boot-client-tls", &corev1.Secret{})
	g.Expect(authority.Verify(clientSecret.Data["tls.crt"], "", x509.ExtKeyUsageClientAuth, time.Now())).To(Succeed())
	g.Expect(clientSecret.Data["ca.crt"]).To(Equal(ca.Data["ca.crt"]))

	By("status.tls and the certificate metric say when the certificates it issued expire")
	g.Eventually(func(g Gomega) {
		expectCertificatesReported(g, ns, "boot", "boot-member-tls", "boot-client-tls")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	By("services and the disruption budget")
	peer := get(g, ns, "boot-peer", &corev1.Service{})
	g.Expect(peer.Spec.ClusterIP).To(Equal(corev1.ClusterIPNone))
	g.Expect(peer.Spec.PublishNotReadyAddresses).To(BeTrue())
	ownedByCluster(peer)
	ownedByCluster(get(g, ns, "boot-client", &corev1.Service{}))
	pdb := get(g, ns, "boot", &policyv1.PodDisruptionBudget{})
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(2))

	By("the three initial members together, each with the same static initial cluster")
	var pods corev1.PodList
	g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(3))
	initial := fmt.Sprintf("boot-0=https://boot-0.boot-peer.%[1]s.svc:2380,boot-1=https://boot-1.boot-peer.%[1]s.svc:2380,boot-2=https://boot-2.boot-peer.%[1]s.svc:2380", ns)
	for i := range pods.Items {
		pod := &pods.Items[i]
		g.Expect(pod.Name).To(Equal(fmt.Sprintf("boot-%d", i)))
		ownedByCluster(pod)
		g.Expect(pod.Spec.Containers[0].Image).To(Equal(testImageRepository + ":v3.7.3"))
		g.Expect(pod.Spec.Containers[0].Args).To(ContainElements(
			"--initial-cluster-state=new",
			"--initial-cluster="+initial,
			"--initial-cluster-token=boot-"+string(owner.UID),
		))
		pvc := get(g, ns, pod.Name+"-data", &corev1.PersistentVolumeClaim{})
		ownedByCluster(pvc)
		g.Expect(pvc.Annotations).To(HaveKeyWithValue("etcd.etcdpilot.io/initial-cluster", initial),
			"the claim records the initial cluster, so that only its member may start with it")
	}
}

// An ephemeral cluster starts from one member, and every other member joins as a learner, as
// every member added to a running cluster does.
func TestMembersJoinAsLearnersOneAtATime(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	names := func(m string) (peer, client string) {
		return "https://" + m + ".grow-peer." + ns + ".svc:2380", "https://" + m + ".grow-peer." + ns + ".svc:2379"
	}
	seedPeer, seedClient := names("grow-0")
	etcdFake := fake.New(etcd.Member{ID: 1, Name: "grow-0", PeerURLs: []string{seedPeer}, ClientURLs: []string{seedClient}})
	fakeEtcd.register(ns, etcdFake)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Storage: etcdv1alpha1.StorageSpec{Ephemeral: true}}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	// The fake answers as soon as the seed pod exists; once that pod is Ready (there is no
	// kubelet in envtest: the test plays it), the operator adds grow-1 as a learner and
	// creates its pod.
	g.Consistently(etcdFake.MembershipChanges).WithTimeout(2*time.Second).Should(BeEmpty(), "the seed is not Ready yet")
	markPodReady(g, ns, "grow-0")
	g.Eventually(func(g Gomega) {
		get(g, ns, "grow-1", &corev1.Pod{})
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(etcdFake.MembershipChanges()).To(Equal([]string{"MemberAddAsLearner " + must(names("grow-1"))}))
	pod := get(g, ns, "grow-1", &corev1.Pod{})
	g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--initial-cluster-state=existing"))

	// While grow-1 has not started, nothing else changes.
	g.Consistently(etcdFake.MembershipChanges).WithTimeout(2 * time.Second).Should(HaveLen(1))
	got := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{})
	g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonPromotingLearner))
	g.Expect(condition(got, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))

	// Once it starts, it is promoted, and the next member is added.
	learner := etcdFake.Members()[1]
	_, client1 := names("grow-1")
	g.Expect(etcdFake.StartMember(learner.ID, "grow-1", client1)).To(Succeed())
	g.Eventually(etcdFake.MembershipChanges).WithTimeout(timeout).Should(Equal([]string{
		"MemberAddAsLearner " + must(names("grow-1")),
		"MemberPromote 2",
	}))
	// The promoted member must be Ready before the next one is added.
	g.Consistently(etcdFake.MembershipChanges).WithTimeout(2 * time.Second).Should(HaveLen(2))
	markPodReady(g, ns, "grow-1")
	g.Eventually(etcdFake.MembershipChanges).WithTimeout(timeout).Should(Equal([]string{
		"MemberAddAsLearner " + must(names("grow-1")),
		"MemberPromote 2",
		"MemberAddAsLearner " + must(names("grow-2")),
	}))
	third := etcdFake.Members()[2]
	_, client2 := names("grow-2")
	g.Expect(etcdFake.StartMember(third.ID, "grow-2", client2)).To(Succeed())
	g.Eventually(etcdFake.MembershipChanges).WithTimeout(timeout).Should(HaveLen(4))
	markPodReady(g, ns, "grow-2")

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
		g.Expect(got.Status.ReadyMembers).To(Equal(int32(3)))
		g.Expect(got.Status.Members).To(HaveLen(3))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(etcdFake.MembershipChanges()).To(HaveLen(4), "exactly one add and one promote per member")

	// The operator's metrics say the same, and count what it did.
	g.Eventually(func(g Gomega) {
		g.Expect(metricValue(g, "etcdpilot_cluster_ready_members", clusterSeries(ns, "grow"))).To(Equal(3.0))
		g.Expect(metricValue(g, "etcdpilot_cluster_healthy_members", clusterSeries(ns, "grow"))).To(Equal(3.0))
		g.Expect(metricValue(g, "etcdpilot_cluster_quorum_margin", clusterSeries(ns, "grow"))).To(Equal(1.0))
		g.Expect(metricValue(g, "etcdpilot_cluster_condition", clusterSeries(ns, "grow", "condition", "Ready"))).To(Equal(1.0))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(metricValue(g, "etcdpilot_cluster_actions_total", clusterSeries(ns, "grow", "action", "AddLearner"))).To(Equal(2.0))
	g.Expect(metricValue(g, "etcdpilot_cluster_actions_total", clusterSeries(ns, "grow", "action", "Promote"))).To(Equal(2.0))
}

func must(peer, _ string) string { return peer }

// markPodReady plays the kubelet: it reports the pod Ready, as etcd's /readyz would make it.
func markPodReady(g Gomega, ns, name string) {
	pod := get(g, ns, name, &corev1.Pod{})
	pod.Status.Phase = corev1.PodRunning
	pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	g.ExpectWithOffset(1, k8sClient.Status().Update(context.Background(), pod)).To(Succeed())
}

func TestDeletionAppliesThePVCPolicy(t *testing.T) {
	for _, policy := range []etcdv1alpha1.DeletionPolicy{etcdv1alpha1.DeletionPolicyRetain, etcdv1alpha1.DeletionPolicyDelete} {
		t.Run(string(policy), func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			ns := newNamespace(t)
			c := &etcdv1alpha1.EtcdCluster{
				ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: ns},
				Spec:       etcdv1alpha1.EtcdClusterSpec{DeletionPolicy: policy},
			}
			g.Expect(k8sClient.Create(ctx, c)).To(Succeed())
			g.Eventually(func(g Gomega) { get(g, ns, "gone-0-data", &corev1.PersistentVolumeClaim{}) }).
				WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			g.Eventually(func(g Gomega) []float64 {
				return seriesOf(g, "etcdpilot_cluster_desired_members", clusterSeries(ns, "gone"))
			}).WithTimeout(timeout).WithPolling(interval).Should(Equal([]float64{3}), "the default size")

			g.Expect(k8sClient.Delete(ctx, c)).To(Succeed())

			g.Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, keyOf(c), &etcdv1alpha1.EtcdCluster{}))
			}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue(), "the finalizer must let the cluster go")
			g.Eventually(func(g Gomega) []float64 {
				return seriesOf(g, "etcdpilot_cluster_desired_members", clusterSeries(ns, "gone"))
			}).WithTimeout(timeout).WithPolling(interval).Should(BeEmpty(), "a deleted cluster's series go with it")
			pvc := get(g, ns, "gone-0-data", &corev1.PersistentVolumeClaim{})
			if policy == etcdv1alpha1.DeletionPolicyRetain {
				g.Expect(pvc.OwnerReferences).To(BeEmpty(), "a retained claim must not be garbage-collected")
				g.Expect(pvc.DeletionTimestamp).To(BeNil())
			} else {
				// envtest runs no controller-manager, so the claim's protection finalizer
				// keeps it visible; it is being deleted.
				g.Expect(pvc.DeletionTimestamp).NotTo(BeNil())
			}
		})
	}
}
