package resources

import (
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
)

// PodDisruptionBudget returns the budget that lets voluntary disruptions (node drains,
// cluster upgrades) take one member at a time: an eviction is refused while another member
// is not Ready (evicted and not back yet, restarting, or a learner catching up). One at a
// time, not down to the quorum: a 5-member cluster drained two members at once would be
// one failure from losing its quorum. A single-member cluster has no member to spare, so
// its budget blocks every eviction: draining its node must be a deliberate act. A cluster
// asked to hibernate has none (nil): its members stop on purpose, and a budget with no pod
// would only tell whatever watches budgets that members are missing.
func PodDisruptionBudget(c *etcdv1alpha1.EtcdCluster) *policyv1.PodDisruptionBudget {
	if c.Spec.Hibernation.Enabled {
		return nil
	}
	spec := clusterspec.WithDefaults(c.Spec)
	cl := cluster.For(c)
	minAvailable := intstr.FromInt32(max(spec.Size-1, 1))
	return &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: objectMeta(c, cl.PodDisruptionBudget(), cl.Labels()),
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &minAvailable,
			Selector:     &metav1.LabelSelector{MatchLabels: cl.SelectorLabels()},
		},
	}
}
