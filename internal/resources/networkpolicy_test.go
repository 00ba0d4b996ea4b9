package resources_test

import (
	"testing"

	. "github.com/onsi/gomega"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// source is a pod that opens a connection: its namespace (with the labels the API server
// gives every namespace) and its labels.
type source struct {
	namespace string
	labels    map[string]string
}

func matches(sel *metav1.LabelSelector, l map[string]string) bool {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil {
		panic(err)
	}
	return s.Matches(labels.Set(l))
}

// admits says whether np lets src reach a selected pod's port, by the NetworkPolicy rules
// for pod and namespace selectors (what an enforcing network plugin does).
func admits(np *networkingv1.NetworkPolicy, src source, port int32) bool {
	for _, rule := range np.Spec.Ingress {
		portMatches := len(rule.Ports) == 0
		for _, p := range rule.Ports {
			portMatches = portMatches || p.Port.IntVal == port
		}
		if !portMatches {
			continue
		}
		if len(rule.From) == 0 {
			return true
		}
		for _, peer := range rule.From {
			nsLabels := map[string]string{"kubernetes.io/metadata.name": src.namespace}
			switch {
			case peer.NamespaceSelector != nil && !matches(peer.NamespaceSelector, nsLabels):
			case peer.NamespaceSelector == nil && src.namespace != np.Namespace:
			case peer.PodSelector != nil && !matches(peer.PodSelector, src.labels):
			case peer.IPBlock != nil:
			default:
				return true
			}
		}
	}
	return false
}

func TestNetworkPolicyAdmitsOnlyWhoNeedsTheMembers(t *testing.T) {
	operator := resources.Operator{Namespace: "etcdpilot-system", Labels: map[string]string{"control-plane": "controller-manager"}}
	c := newCluster()
	cl := cluster.For(c)
	var (
		member      = source{"db", cl.MemberLabels("main-2")}
		otherMember = source{"db", cluster.Names{Name: "other"}.MemberLabels("other-0")}
		backupJob   = source{"db", map[string]string{cluster.LabelName: "etcdpilot", cluster.LabelManagedBy: "etcdpilot", cluster.LabelComponent: "backup", cluster.LabelCluster: "main", resources.LabelBackup: "nightly"}}
		otherJob    = source{"db", cluster.Names{Name: "other"}.JobSelectorLabels()}
		op          = source{"etcdpilot-system", map[string]string{"control-plane": "controller-manager", "pod-template-hash": "5d8f"}}
		opLookalike = source{"db", map[string]string{"control-plane": "controller-manager"}}
		app         = source{"db", map[string]string{"app": "api"}}
		foreignApp  = source{"shop", map[string]string{"app": "api"}}
		prometheus  = source{"monitoring", map[string]string{"app": "prometheus"}}
	)
	cases := []struct {
		name  string
		spec  etcdv1alpha1.NetworkPolicySpec
		src   source
		port  int32
		admit bool
	}{
		{"a member reaches the peer port", etcdv1alpha1.NetworkPolicySpec{}, member, cluster.PeerPort, true},
		{"another cluster's member does not", etcdv1alpha1.NetworkPolicySpec{}, otherMember, cluster.PeerPort, false},
		{"nor does a pod of the namespace", etcdv1alpha1.NetworkPolicySpec{}, app, cluster.PeerPort, false},
		{"nor the operator", etcdv1alpha1.NetworkPolicySpec{}, op, cluster.PeerPort, false},
		{"the operator reaches the client port", etcdv1alpha1.NetworkPolicySpec{}, op, cluster.ClientPort, true},
		{"the cluster's backup Job does", etcdv1alpha1.NetworkPolicySpec{}, backupJob, cluster.ClientPort, true},
		{"a pod of the namespace does by default", etcdv1alpha1.NetworkPolicySpec{}, app, cluster.ClientPort, true},
		{"a pod of another namespace does not", etcdv1alpha1.NetworkPolicySpec{}, foreignApp, cluster.ClientPort, false},
		{"sameNamespace Denied: a pod of the namespace does not",
			etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, app, cluster.ClientPort, false},
		{"sameNamespace Denied: nor an operator look-alike in it",
			etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, opLookalike, cluster.ClientPort, false},
		{"sameNamespace Denied: nor another cluster's backup Job",
			etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, otherJob, cluster.ClientPort, false},
		{"sameNamespace Denied: the cluster's backup Job still does",
			etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, backupJob, cluster.ClientPort, true},
		{"sameNamespace Denied: the operator still does",
			etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, op, cluster.ClientPort, true},
		{"clientFrom admits a listed namespace's pods", etcdv1alpha1.NetworkPolicySpec{ClientFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}},
			PodSelector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}}, foreignApp, cluster.ClientPort, true},
		{"clientFrom does not open a restricted metrics port", etcdv1alpha1.NetworkPolicySpec{ClientFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}},
			MetricsFrom: []networkingv1.NetworkPolicyPeer{{
				NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}}, foreignApp, cluster.MetricsPort, false},
		{"the operator reaches the metrics port", etcdv1alpha1.NetworkPolicySpec{}, op, cluster.MetricsPort, true},
		{"a pod of the namespace does by default", etcdv1alpha1.NetworkPolicySpec{}, app, cluster.MetricsPort, true},
		{"Prometheus elsewhere does by default", etcdv1alpha1.NetworkPolicySpec{}, prometheus, cluster.MetricsPort, true},
		{"and with sameNamespace Denied", etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied}, prometheus, cluster.MetricsPort, true},
		{"but not the client port by default", etcdv1alpha1.NetworkPolicySpec{}, prometheus, cluster.ClientPort, false},
		{"metricsFrom set: Prometheus elsewhere does not unless listed", etcdv1alpha1.NetworkPolicySpec{MetricsFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}}}, prometheus, cluster.MetricsPort, false},
		{"metricsFrom set: the operator still does", etcdv1alpha1.NetworkPolicySpec{MetricsFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "shop"}}}}}, op, cluster.MetricsPort, true},
		{"metricsFrom names its namespace", etcdv1alpha1.NetworkPolicySpec{MetricsFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}}, prometheus, cluster.MetricsPort, true},
		{"metricsFrom does not open the client port", etcdv1alpha1.NetworkPolicySpec{MetricsFrom: []networkingv1.NetworkPolicyPeer{{
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}}, prometheus, cluster.ClientPort, false},
		{"a backup Job does not reach the metrics port when metricsFrom is set", etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied,
			MetricsFrom: []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}}}}}, backupJob, cluster.MetricsPort, false},
	}
	for _, tc := range cases {
		c.Spec.NetworkPolicy = tc.spec
		np := resources.NetworkPolicy(c, operator)
		if got := admits(np, tc.src, tc.port); got != tc.admit {
			t.Errorf("%s: admitted %v, want %v", tc.name, got, tc.admit)
		}
	}
}

func TestNetworkPolicySelectsTheMembersOnly(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	cl := cluster.For(c)
	np := resources.NetworkPolicy(c, resources.Operator{})
	g.Expect(np.Name).To(Equal("main-members"))
	g.Expect(np.Spec.PolicyTypes).To(Equal([]networkingv1.PolicyType{networkingv1.PolicyTypeIngress}), "egress is not restricted")
	g.Expect(matches(&np.Spec.PodSelector, cl.MemberLabels("main-0"))).To(BeTrue())
	g.Expect(matches(&np.Spec.PodSelector, cl.JobSelectorLabels())).To(BeFalse(), "backup Jobs are not members")
	g.Expect(matches(&np.Spec.PodSelector, cluster.Names{Name: "other"}.MemberLabels("other-0"))).To(BeFalse())
}

// Without a known operator pod and with the namespace denied, the peer and client ports
// admit only named sources, and so does the metrics port once metricsFrom is set: only an
// empty metricsFrom leaves a rule with an empty source list (which admits every source).
func TestNetworkPolicyAdmitsEveryoneOnlyToTheMetricsPortByDefault(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.NetworkPolicy.SameNamespace = etcdv1alpha1.NamespaceDenied
	open := func(np *networkingv1.NetworkPolicy) (ports []int32) {
		for _, rule := range np.Spec.Ingress {
			if len(rule.From) == 0 {
				ports = append(ports, rule.Ports[0].Port.IntVal)
			}
		}
		return ports
	}
	np := resources.NetworkPolicy(c, resources.Operator{})
	g.Expect(open(np)).To(Equal([]int32{cluster.MetricsPort}))

	c.Spec.NetworkPolicy.MetricsFrom = []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "prometheus"}}}}
	np = resources.NetworkPolicy(c, resources.Operator{})
	g.Expect(open(np)).To(BeEmpty())
	g.Expect(admits(np, source{"db", map[string]string{"app": "api"}}, cluster.MetricsPort)).To(BeFalse())
}

func TestNetworkPolicyDisabled(t *testing.T) {
	c := newCluster()
	c.Spec.NetworkPolicy.Mode = etcdv1alpha1.NetworkPolicyDisabled
	NewWithT(t).Expect(resources.NetworkPolicy(c, resources.Operator{})).To(BeNil())
}

// The policy holds copies of the user's peers: changing it never changes the spec.
func TestNetworkPolicyCopiesTheUsersPeers(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.NetworkPolicy.ClientFrom = []networkingv1.NetworkPolicyPeer{{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}}
	np := resources.NetworkPolicy(c, resources.Operator{})
	for i := range np.Spec.Ingress {
		for j := range np.Spec.Ingress[i].From {
			if p := np.Spec.Ingress[i].From[j].PodSelector; p != nil && p.MatchLabels != nil {
				p.MatchLabels["app"] = "changed"
			}
		}
	}
	g.Expect(c.Spec.NetworkPolicy.ClientFrom[0].PodSelector.MatchLabels).To(HaveKeyWithValue("app", "api"))
}
