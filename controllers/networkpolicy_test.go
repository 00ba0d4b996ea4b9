package controllers_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// testOperator is who the envtest operator says its pods are.
var testOperator = resources.Operator{Namespace: "etcdpilot-system", Labels: map[string]string{"control-plane": "controller-manager"}}

// sources lists the sources of the rule for port: "pods" for a pod selector alone,
// "namespace <labels>" for a namespace selector, with "/pods <labels>" when both.
func sources(g Gomega, np *networkingv1.NetworkPolicy, port int32) []string {
	for _, rule := range np.Spec.Ingress {
		if len(rule.Ports) != 1 || rule.Ports[0].Port.IntVal != port {
			continue
		}
		var out []string
		for _, p := range rule.From {
			s := ""
			if p.NamespaceSelector != nil {
				s = "namespace " + metav1.FormatLabelSelector(p.NamespaceSelector) + "/"
			}
			if p.PodSelector != nil {
				s += "pods " + metav1.FormatLabelSelector(p.PodSelector)
			}
			out = append(out, s)
		}
		return out
	}
	g.Expect(port).To(BeZero(), "no rule for port %d", port)
	return nil
}

// The members' NetworkPolicy follows spec.networkPolicy: made by default (admitting the
// operator, the backup Jobs and the namespace to the client port, everyone to the metrics
// port), narrowed to what the user lists, deleted
// when disabled and made again when enabled, with the cluster Ready throughout.
func TestNetworkPolicyFollowsTheSpec(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	readyCluster(g, ns, "np", nil)
	owner := get(g, ns, "np", &etcdv1alpha1.EtcdCluster{})

	operator := "namespace kubernetes.io/metadata.name=etcdpilot-system/pods control-plane=controller-manager"
	jobs := "pods app.kubernetes.io/component=backup,app.kubernetes.io/managed-by=etcdpilot,app.kubernetes.io/name=etcdpilot,etcd.etcdpilot.io/cluster=np"
	namespace := "pods <none>"
	g.Eventually(func(g Gomega) {
		np := get(g, ns, "np-members", &networkingv1.NetworkPolicy{})
		g.Expect(metav1.IsControlledBy(np, owner)).To(BeTrue())
		g.Expect(np.Spec.PodSelector.MatchLabels).To(Equal(map[string]string{"app.kubernetes.io/name": "etcd", "etcd.etcdpilot.io/cluster": "np"}))
		g.Expect(sources(g, np, 2380)).To(Equal([]string{"pods app.kubernetes.io/name=etcd,etcd.etcdpilot.io/cluster=np"}))
		g.Expect(sources(g, np, 2379)).To(Equal([]string{jobs, operator, namespace}))
		g.Expect(sources(g, np, 2381)).To(BeEmpty(), "the metrics port's rule names no source: every source, Prometheus's namespace included")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// In steady state the passes leave it alone: no write.
	version := get(g, ns, "np-members", &networkingv1.NetworkPolicy{}).ResourceVersion
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ns, "np-members", &networkingv1.NetworkPolicy{}).ResourceVersion).To(Equal(version))
	}).WithTimeout(2 * time.Second).WithPolling(interval).Should(Succeed())

	shop := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}}
	monitoring := networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}
	setNetworkPolicy := func(spec etcdv1alpha1.NetworkPolicySpec) {
		c := get(g, ns, "np", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.NetworkPolicy = spec
		g.Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
	}
	setNetworkPolicy(etcdv1alpha1.NetworkPolicySpec{Mode: etcdv1alpha1.NetworkPolicyEnabled, SameNamespace: etcdv1alpha1.NamespaceDenied,
		ClientFrom: []networkingv1.NetworkPolicyPeer{shop}, MetricsFrom: []networkingv1.NetworkPolicyPeer{monitoring}})
	g.Eventually(func(g Gomega) {
		np := get(g, ns, "np-members", &networkingv1.NetworkPolicy{})
		g.Expect(sources(g, np, 2379)).To(Equal([]string{jobs, operator, "namespace team=shop/"}))
		g.Expect(sources(g, np, 2381)).To(Equal([]string{operator, "namespace kubernetes.io/metadata.name=monitoring/"}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	setNetworkPolicy(etcdv1alpha1.NetworkPolicySpec{Mode: etcdv1alpha1.NetworkPolicyDisabled, SameNamespace: etcdv1alpha1.NamespaceAllowed})
	g.Eventually(func(g Gomega) {
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "np-members"}, &networkingv1.NetworkPolicy{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "disabled: the policy is deleted (%v)", err)
		c := get(g, ns, "np", &etcdv1alpha1.EtcdCluster{})
		g.Expect(c.Status.ObservedGeneration).To(Equal(c.Generation))
		g.Expect(condition(c, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	setNetworkPolicy(etcdv1alpha1.NetworkPolicySpec{Mode: etcdv1alpha1.NetworkPolicyEnabled, SameNamespace: etcdv1alpha1.NamespaceAllowed})
	g.Eventually(func(g Gomega) {
		np := get(g, ns, "np-members", &networkingv1.NetworkPolicy{})
		g.Expect(sources(g, np, 2379)).To(Equal([]string{jobs, operator, namespace}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// A NetworkPolicy of the same name that the operator did not make is never deleted.
func TestNetworkPolicyOfSomeoneElseIsKept(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	theirs := &networkingv1.NetworkPolicy{ObjectMeta: metav1.ObjectMeta{Name: "keep-members", Namespace: ns},
		Spec: networkingv1.NetworkPolicySpec{PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}}}
	g.Expect(k8sClient.Create(ctx, theirs)).To(Succeed())
	readyCluster(g, ns, "keep", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.NetworkPolicy.Mode = etcdv1alpha1.NetworkPolicyDisabled
	})
	g.Consistently(func(g Gomega) {
		np := get(g, ns, "keep-members", &networkingv1.NetworkPolicy{})
		g.Expect(np.OwnerReferences).To(BeEmpty())
	}).WithTimeout(2 * time.Second).WithPolling(interval).Should(Succeed())
}
