package status_test

import (
	"testing"
	"time"

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

func TestDefragmentationAndNoSpaceTransitionsAreToldOnce(t *testing.T) {
	g := NewWithT(t)
	at := func(day int) *etcdv1alpha1.DefragmentationRecord {
		return &etcdv1alpha1.DefragmentationRecord{Time: metav1.NewTime(time.Date(2026, 11, day, 0, 0, 0, 0, time.UTC)), SizeBefore: 300 << 20, SizeAfter: 100 << 20}
	}
	with := func(defrag *etcdv1alpha1.DefragmentationRecord, degraded metav1.ConditionStatus, reason string) etcdv1alpha1.EtcdClusterStatus {
		return etcdv1alpha1.EtcdClusterStatus{
			Members:    []etcdv1alpha1.MemberStatus{{Name: "e-0", Healthy: true, LastDefragmentation: defrag}},
			Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionDegraded, Status: degraded, Reason: reason, Message: reason}},
		}
	}
	defragmented := status.Event{Type: "Normal", Reason: "MemberDefragmented", Action: "Defragment",
		Message: "Defragmented member e-0: its database file went from 300.0 MiB to 100.0 MiB"}
	ok := etcdv1alpha1.ReasonAsExpected

	g.Expect(status.Transitions(with(nil, metav1.ConditionFalse, ok), with(at(1), metav1.ConditionFalse, ok))).To(ConsistOf(defragmented))
	g.Expect(status.Transitions(with(at(1), metav1.ConditionFalse, ok), with(at(1), metav1.ConditionFalse, ok))).To(BeEmpty(), "told once")
	g.Expect(status.Transitions(with(at(1), metav1.ConditionFalse, ok), with(at(2), metav1.ConditionFalse, ok))).To(ConsistOf(defragmented))
	leader := with(at(3), metav1.ConditionFalse, ok)
	leader.Members[0].Leader = true
	g.Expect(status.Transitions(with(at(2), metav1.ConditionFalse, ok), leader)).To(ConsistOf(status.Event{Type: "Normal", Reason: "MemberDefragmented", Action: "Defragment",
		Message: "Defragmented member e-0: its database file went from 300.0 MiB to 100.0 MiB; it was the leader"}), "the leader, as the pass observed it")

	full := with(at(2), metav1.ConditionTrue, etcdv1alpha1.ReasonNoSpace)
	g.Expect(status.Transitions(with(at(2), metav1.ConditionFalse, ok), full)).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonNoSpace, Action: "Observe", Message: etcdv1alpha1.ReasonNoSpace}))
	g.Expect(status.Transitions(full, with(at(2), metav1.ConditionTrue, etcdv1alpha1.ReasonNoSpaceDataDoesNotFit))).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonNoSpaceDataDoesNotFit, Action: "Observe", Message: etcdv1alpha1.ReasonNoSpaceDataDoesNotFit}))
	g.Expect(status.Transitions(full, with(at(2), metav1.ConditionFalse, ok))).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "NoSpaceRecovered", Action: "Observe", Message: "The NOSPACE alarm is gone: the cluster accepts writes again"}))
}

func TestRecoveryPhasesAreToldOnceAfterThePatch(t *testing.T) {
	g := NewWithT(t)
	with := func(phase etcdv1alpha1.RecoveryPhase) etcdv1alpha1.EtcdClusterStatus {
		if phase == "" {
			return etcdv1alpha1.EtcdClusterStatus{}
		}
		return etcdv1alpha1.EtcdClusterStatus{Recovery: &etcdv1alpha1.RecoveryStatus{Phase: phase, Message: string(phase) + " message"}}
	}
	lost, recovering := with(etcdv1alpha1.RecoveryQuorumLost), with(etcdv1alpha1.RecoveryRecovering)
	growing, done := with(etcdv1alpha1.RecoveryGrowing), with(etcdv1alpha1.RecoverySucceeded)

	g.Expect(status.Transitions(with(""), lost)).To(BeEmpty(), "the recovery's first look is no confirmed loss")
	g.Expect(status.Transitions(lost, with(etcdv1alpha1.RecoveryAwaitingApproval))).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonRecoveryAwaitingApproval, Action: "Recover", Message: "AwaitingApproval message"}))
	g.Expect(status.Transitions(lost, with(etcdv1alpha1.RecoveryBlocked))).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonRecoveryBlocked, Action: "Recover", Message: "Blocked message"}))
	g.Expect(status.Transitions(lost, recovering)).To(ConsistOf(
		status.Event{Type: "Warning", Reason: etcdv1alpha1.ReasonRecoveringQuorum, Action: "Recover", Message: "Recovering message"}))
	g.Expect(status.Transitions(recovering, recovering)).To(BeEmpty(), "a phase is told once")
	g.Expect(status.Transitions(recovering, growing)).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "RecoveredSurvivor", Action: "Recover", Message: "Growing message"}))
	g.Expect(status.Transitions(growing, done)).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "RecoverySucceeded", Action: "Recover", Message: "Succeeded message"}))
	g.Expect(status.Transitions(done, with(""))).To(BeEmpty(), "the end of a recovery was told by its Succeeded phase")
}
