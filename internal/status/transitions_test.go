package status_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

func withAvailable(s metav1.ConditionStatus, reason string, members ...etcdv1alpha1.MemberStatus) etcdv1alpha1.EtcdClusterStatus {
	return etcdv1alpha1.EtcdClusterStatus{
		Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionAvailable, Status: s, Reason: reason, Message: reason}},
		Members:    members,
	}
}

func TestTransitions(t *testing.T) {
	g := NewWithT(t)
	healthy := etcdv1alpha1.MemberStatus{Name: "e-0", Healthy: true}
	sick := etcdv1alpha1.MemberStatus{Name: "e-0"}

	boot := withAvailable(metav1.ConditionFalse, etcdv1alpha1.ReasonBootstrapping)
	up := withAvailable(metav1.ConditionTrue, etcdv1alpha1.ReasonQuorumAvailable, healthy)
	down := withAvailable(metav1.ConditionFalse, etcdv1alpha1.ReasonQuorumLost, sick)

	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{}, boot)).To(BeEmpty(), "bootstrapping is not news")
	g.Expect(status.Transitions(boot, up)).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "ClusterAvailable", Action: "Observe", Message: etcdv1alpha1.ReasonQuorumAvailable},
		status.Event{Type: "Normal", Reason: "MemberHealthy", Action: "Observe", Message: "Member e-0 is healthy"},
	))
	g.Expect(status.Transitions(up, up)).To(BeEmpty(), "no change, no event")
	g.Expect(status.Transitions(up, down)).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonQuorumLost, Action: "Observe", Message: etcdv1alpha1.ReasonQuorumLost},
		status.Event{Type: "Warning", Reason: "MemberUnhealthy", Action: "Observe", Message: "Member e-0 is not healthy"},
	))
}

func TestMonitoringTransitionsAreToldOnce(t *testing.T) {
	g := NewWithT(t)
	with := func(s metav1.ConditionStatus, reason string) etcdv1alpha1.EtcdClusterStatus {
		return etcdv1alpha1.EtcdClusterStatus{Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionMonitoring, Status: s, Reason: reason, Message: reason}}}
	}
	missing := with(metav1.ConditionFalse, etcdv1alpha1.ReasonPrometheusOperatorMissing)
	configured := with(metav1.ConditionTrue, etcdv1alpha1.ReasonMonitoringConfigured)
	disabled := with(metav1.ConditionFalse, etcdv1alpha1.ReasonMonitoringDisabled)

	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{}, missing)).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "MonitoringUnavailable", Action: "Monitoring", Message: etcdv1alpha1.ReasonPrometheusOperatorMissing}))
	g.Expect(status.Transitions(missing, missing)).To(BeEmpty(), "said once")
	g.Expect(status.Transitions(missing, configured)).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "MonitoringConfigured", Action: "Monitoring", Message: etcdv1alpha1.ReasonMonitoringConfigured}))
	g.Expect(status.Transitions(configured, disabled)).To(BeEmpty(), "the user's own choice is no news")
	failed := with(metav1.ConditionFalse, etcdv1alpha1.ReasonMonitoringFailed)
	g.Expect(status.Transitions(configured, failed)).To(ConsistOf(
		status.Event{Type: "Warning", Reason: "MonitoringFailed", Action: "Monitoring", Message: etcdv1alpha1.ReasonMonitoringFailed}))
}
