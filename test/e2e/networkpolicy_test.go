package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// The local cluster enforces NetworkPolicy (kube-router's firewall, started by `make
// cluster-up`), so the members' policy is seen to admit and to refuse, not only to exist.
var _ = Describe("the members' NetworkPolicy", longestSpec(70), func() {
	It("admits the operator and the listed namespace to the client port, refuses everyone else, and leaves the metrics port open", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "netpol-")
		allowed := newTestNamespace(ctx, "netpol-allowed-")
		other := newTestNamespace(ctx, "netpol-other-")

		c := newCluster(ns, "fenced", 1)
		c.Spec.NetworkPolicy = etcdv1alpha1.NetworkPolicySpec{
			SameNamespace: etcdv1alpha1.NamespaceDenied,
			ClientFrom:    []networkingv1.NetworkPolicyPeer{namespacePeer(allowed)},
		}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		By("the operator reaches the member through the policy: the cluster gets Ready")
		waitReady(ctx, c)
		Expect(get(ctx, ns, c.Name+"-members", &networkingv1.NetworkPolicy{}).Spec.PolicyTypes).To(ConsistOf(networkingv1.PolicyTypeIngress))
		ip := memberPodIP(ctx, ns, c.Name)

		By("a pod of the namespace clientFrom lists reaches the client port, not the peer port")
		Expect(probe(ctx, allowed, "client", ip, cluster.ClientPort)).To(Equal("open"))
		Expect(probe(ctx, allowed, "peer", ip, cluster.PeerPort)).To(Equal("closed"))
		By("a pod of another namespace, and one of the cluster's own namespace (sameNamespace Denied), are refused")
		Expect(probe(ctx, other, "client", ip, cluster.ClientPort)).To(Equal("closed"))
		Expect(probe(ctx, ns, "client", ip, cluster.ClientPort)).To(Equal("closed"))
		By("the metrics port (no keys or values) admits every source while metricsFrom is empty")
		Expect(probe(ctx, other, "metrics", ip, cluster.MetricsPort)).To(Equal("open"))

		By("with the policy turned off, the operator deletes it and the other namespace gets through")
		cur := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.NetworkPolicy.Mode = etcdv1alpha1.NetworkPolicyDisabled
		Expect(k8sClient.Patch(ctx, cur, patch)).To(Succeed())
		Eventually(func() bool {
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.Name + "-members"}, &networkingv1.NetworkPolicy{})
			return apierrors.IsNotFound(err)
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue())
		Expect(probe(ctx, other, "client-after", ip, cluster.ClientPort)).To(Equal("open"))
	})
})

// namespacePeer admits every pod of namespace ns.
func namespacePeer(ns string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}},
	}
}

// memberPodIP is the address of the one member pod of a cluster.
func memberPodIP(ctx context.Context, ns, name string) string {
	var pods corev1.PodList
	ExpectWithOffset(1, k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name})).To(Succeed())
	ExpectWithOffset(1, pods.Items).To(HaveLen(1))
	ExpectWithOffset(1, pods.Items[0].Status.PodIP).NotTo(BeEmpty())
	return pods.Items[0].Status.PodIP
}

// probe runs a pod in ns that opens a TCP connection to ip:port and says "open" or
// "closed". It tries for about 12 s, starting 2 s after it starts: the enforcement learns a
// new pod's address from the API, so its very first packets may come before that.
// "closed" is said only when every try failed.
func probe(ctx context.Context, ns, name string, ip string, port int32) string {
	name = fmt.Sprintf("probe-%s-%d", name, port)
	podSC, sc := restrictedPod()
	script := fmt.Sprintf(`sleep 2; i=0
while [ $i -lt 4 ]; do
  if nc -w 2 %s %d -e true; then echo open; exit 0; fi
  i=$((i+1)); sleep 1
done
echo closed`, ip, port)
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			SecurityContext:               podSC,
			Containers: []corev1.Container{{
				Name:            "probe",
				Image:           busyboxImage,
				Command:         []string{"/bin/sh", "-c", script},
				SecurityContext: sc,
			}},
		},
	}
	_, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	EventuallyWithOffset(1, func(g Gomega) {
		got, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded), "pod %s/%s", ns, name)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	logs, err := clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	lines := strings.Fields(string(logs))
	ExpectWithOffset(1, lines).NotTo(BeEmpty())
	return lines[len(lines)-1]
}
