package resources

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// Operator is who the operator's pods are, for the members' NetworkPolicy: their
// namespace and labels. The zero value is an operator outside the cluster (`make run`),
// whose traffic comes from a node: the policy names no pod for it.
type Operator struct {
	Namespace string
	Labels    map[string]string
}

// namespaceNameLabel is the label the API server puts on every namespace: its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// peer returns the NetworkPolicyPeer of the operator's pods, nil when unknown.
func (o Operator) peer() *networkingv1.NetworkPolicyPeer {
	if o.Namespace == "" || len(o.Labels) == 0 {
		return nil
	}
	return &networkingv1.NetworkPolicyPeer{
		NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: o.Namespace}},
		PodSelector:       &metav1.LabelSelector{MatchLabels: maps.Clone(o.Labels)},
	}
}

// NetworkPolicy returns the members' NetworkPolicy of c (spec.networkPolicy), nil when its
// mode is Disabled. Ingress only, one rule per port: the peer port from the cluster's
// members; the client port from the operator, the cluster's backup Jobs, the namespace's
// pods (sameNamespace Allowed) and clientFrom; the metrics port from everyone unless
// metricsFrom is set, then from the operator, the namespace's pods and metricsFrom. The
// metrics port serves etcd's metrics and health and no keys or values, so that a Prometheus
// in any namespace scrapes a cluster made with every default. Egress is not restricted:
// members reach each other, and backup Jobs their destination.
func NetworkPolicy(c *etcdv1alpha1.EtcdCluster, operator Operator) *networkingv1.NetworkPolicy {
	spec := c.Spec.NetworkPolicy
	if spec.Mode == etcdv1alpha1.NetworkPolicyDisabled {
		return nil
	}
	cl := cluster.For(c)
	selector := func(l map[string]string) *metav1.LabelSelector { return &metav1.LabelSelector{MatchLabels: l} }
	var trusted []networkingv1.NetworkPolicyPeer
	if p := operator.peer(); p != nil {
		trusted = append(trusted, *p)
	}
	if spec.SameNamespace != etcdv1alpha1.NamespaceDenied {
		trusted = append(trusted, networkingv1.NetworkPolicyPeer{PodSelector: &metav1.LabelSelector{}})
	}
	client := append([]networkingv1.NetworkPolicyPeer{{PodSelector: selector(cl.JobSelectorLabels())}}, trusted...)
	client = append(client, deepCopyPeers(spec.ClientFrom)...)
	var metrics []networkingv1.NetworkPolicyPeer // a rule with no source admits everyone
	if len(spec.MetricsFrom) > 0 {
		metrics = append(append(metrics, trusted...), deepCopyPeers(spec.MetricsFrom)...)
	}
	rule := func(port int32, from []networkingv1.NetworkPolicyPeer) networkingv1.NetworkPolicyIngressRule {
		tcp, p := corev1.ProtocolTCP, intstr.FromInt32(port)
		return networkingv1.NetworkPolicyIngressRule{Ports: []networkingv1.NetworkPolicyPort{{Protocol: &tcp, Port: &p}}, From: from}
	}
	ingress := []networkingv1.NetworkPolicyIngressRule{
		rule(cluster.PeerPort, []networkingv1.NetworkPolicyPeer{{PodSelector: selector(cl.SelectorLabels())}}),
		rule(cluster.ClientPort, client),
		rule(cluster.MetricsPort, metrics),
	}
	return &networkingv1.NetworkPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "networking.k8s.io/v1", Kind: "NetworkPolicy"},
		ObjectMeta: objectMeta(c, cl.NetworkPolicy(), cl.Labels()),
		Spec: networkingv1.NetworkPolicySpec{
			PodSelector: *selector(cl.SelectorLabels()),
			PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
			Ingress:     ingress,
		},
	}
}

func deepCopyPeers(peers []networkingv1.NetworkPolicyPeer) []networkingv1.NetworkPolicyPeer {
	out := make([]networkingv1.NetworkPolicyPeer, len(peers))
	for i := range peers {
		peers[i].DeepCopyInto(&out[i])
	}
	return out
}
