package status

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Event is a Kubernetes event to emit about the EtcdCluster.
type Event struct {
	Type, Reason, Action, Message string
}

// Transitions returns the events that the change from status old to status new deserves:
// the cluster becoming available or losing quorum, becoming degraded, its monitoring objects
// put in place or missing, and each member becoming healthy or unhealthy. Deriving events
// from status transitions, rather than from each code path, emits each exactly once however
// the change came about.
func Transitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	var out []Event
	hibernating := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionHibernated) != nil
	if now, changed := flipped(old, updated, etcdv1alpha1.ConditionAvailable); changed {
		if now.Status == metav1.ConditionTrue {
			out = append(out, Event{corev1.EventTypeNormal, "ClusterAvailable", "Observe", now.Message})
		} else if now.Status == metav1.ConditionFalse && now.Reason != etcdv1alpha1.ReasonBootstrapping && !hibernating {
			out = append(out, Event{corev1.EventTypeWarning, now.Reason, "Observe", now.Message})
		}
	}
	if now, changed := flipped(old, updated, etcdv1alpha1.ConditionDegraded); changed && now.Status == metav1.ConditionTrue {
		out = append(out, Event{corev1.EventTypeWarning, now.Reason, "Observe", now.Message})
	}
	out = append(out, monitoringTransitions(old, updated)...)
	out = append(out, upgradeTransitions(old.Upgrade, updated.Upgrade)...)
	out = append(out, rolloutTransitions(old, updated)...)
	out = append(out, defragmentationTransitions(old, updated)...)
	out = append(out, autopilotTransitions(old, updated)...)
	out = append(out, consistencyTransitions(old, updated)...)
	out = append(out, recoveryTransitions(old.Recovery, updated.Recovery)...)
	out = append(out, authTransitions(old.Auth, updated.Auth)...)
	out = append(out, hibernationTransitions(old, updated)...)
	if hibernating {
		return out // members stop on purpose: no news of their health
	}
	return append(out, memberTransitions(old.Members, updated.Members)...)
}

// memberTransitions: each member becoming healthy, or unhealthy.
func memberTransitions(old, updated []etcdv1alpha1.MemberStatus) []Event {
	var out []Event
	wasHealthy := map[string]bool{}
	for _, m := range old {
		wasHealthy[m.Name] = m.Healthy
	}
	for _, m := range updated {
		switch was, known := wasHealthy[m.Name]; {
		case m.Healthy && !was:
			out = append(out, Event{corev1.EventTypeNormal, "MemberHealthy", "Observe", fmt.Sprintf("Member %s is healthy", m.Name)})
		case !m.Healthy && was && known:
			out = append(out, Event{corev1.EventTypeWarning, "MemberUnhealthy", "Observe", fmt.Sprintf("Member %s is not healthy", m.Name)})
		}
	}
	return out
}

// hibernationTransitions: the cluster hibernated (every member stopped), or it is waking
// (spec.hibernation.enabled false again, the condition gone).
func hibernationTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionHibernated)
	is := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionHibernated)
	switch {
	case is != nil && is.Status == metav1.ConditionTrue && (was == nil || was.Status != metav1.ConditionTrue):
		return []Event{{corev1.EventTypeNormal, etcdv1alpha1.ReasonHibernated, "Hibernate", is.Message}}
	case is == nil && was != nil:
		return []Event{{corev1.EventTypeNormal, "Waking", "Hibernate", "spec.hibernation.enabled is false: the members start again with their data"}}
	}
	return nil
}

// authTransitions: etcd's authentication seen turned on or off.
func authTransitions(old, updated *etcdv1alpha1.AuthStatus) []Event {
	was, is := old != nil && old.Enabled, updated != nil && updated.Enabled
	switch {
	case is && !was:
		return []Event{{corev1.EventTypeNormal, "AuthEnabled", "ConfigureAuth",
			fmt.Sprintf("etcd's authentication is on; users with the root role: %s", strings.Join(updated.RootUsers, ", "))}}
	case was && !is && updated != nil:
		return []Event{{corev1.EventTypeNormal, "AuthDisabled", "ConfigureAuth", "etcd's authentication is off"}}
	}
	return nil
}

// DefragmentedLeaderNote ends the MemberDefragmented event of a member that was the raft
// leader when it was defragmented.
const DefragmentedLeaderNote = "; it was the leader"

// defragmentationTransitions: a member defragmented (a new lastDefragmentation), and the
// NOSPACE alarm gone after it degraded the cluster.
func defragmentationTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	var out []Event
	last := map[string]metav1.Time{}
	for _, m := range old.Members {
		if m.LastDefragmentation != nil {
			last[m.Name] = m.LastDefragmentation.Time
		}
	}
	for _, m := range updated.Members {
		if d := m.LastDefragmentation; d != nil && !d.Time.Equal(ptr(last[m.Name])) {
			msg := fmt.Sprintf("Defragmented member %s: its database file went from %s to %s", m.Name, mebibytes(d.SizeBefore), mebibytes(d.SizeAfter))
			if m.Leader {
				// As the pass observed it, before the defragmentation: a defragmenting
				// leader may well lose leadership, and the next pass report another.
				msg += DefragmentedLeaderNote
			}
			out = append(out, Event{corev1.EventTypeNormal, "MemberDefragmented", "Defragment", msg})
		}
	}
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionDegraded)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionDegraded)
	if was != nil && was.Status == metav1.ConditionTrue && isNoSpace(was.Reason) && (now == nil || !isNoSpace(now.Reason) || now.Status != metav1.ConditionTrue) {
		out = append(out, Event{corev1.EventTypeNormal, "NoSpaceRecovered", "Observe", "The NOSPACE alarm is gone: the cluster accepts writes again"})
	}
	return out
}

func isNoSpace(reason string) bool {
	return reason == etcdv1alpha1.ReasonNoSpace || reason == etcdv1alpha1.ReasonNoSpaceDataDoesNotFit
}

func ptr(t metav1.Time) *metav1.Time { return &t }

// mebibytes shows a size in MiB with one decimal.
func mebibytes(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// monitoringTransitions: the monitoring objects put in place, unavailable without the
// Prometheus Operator, or failing. Disabling them is the user's own doing, and no news.
func monitoringTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	now, changed := flipped(old, updated, etcdv1alpha1.ConditionMonitoring)
	switch {
	case !changed:
		return nil
	case now.Status == metav1.ConditionTrue:
		return []Event{{corev1.EventTypeNormal, "MonitoringConfigured", "Monitoring", now.Message}}
	case now.Reason == etcdv1alpha1.ReasonPrometheusOperatorMissing:
		return []Event{{corev1.EventTypeNormal, "MonitoringUnavailable", "Monitoring", now.Message}}
	case now.Reason == etcdv1alpha1.ReasonMonitoringFailed:
		return []Event{{corev1.EventTypeWarning, "MonitoringFailed", "Monitoring", now.Message}}
	}
	return nil
}

// recoveryEvents are the events of the phases a quorum-loss recovery enters: a warning while
// the cluster is without quorum, a normal event once a survivor or a backup serves again.
// The recovery's first phase, QuorumLost, starts its clock at the first look that finds no
// leader and no majority answering: that is not yet a confirmed loss, which the Available
// condition's transition tells (event QuorumLost, Transitions).
var recoveryEvents = map[etcdv1alpha1.RecoveryPhase]struct{ kind, reason string }{
	etcdv1alpha1.RecoveryAwaitingApproval: {corev1.EventTypeWarning, etcdv1alpha1.ReasonRecoveryAwaitingApproval},
	etcdv1alpha1.RecoveryBlocked:          {corev1.EventTypeWarning, etcdv1alpha1.ReasonRecoveryBlocked},
	etcdv1alpha1.RecoveryRecovering:       {corev1.EventTypeWarning, etcdv1alpha1.ReasonRecoveringQuorum},
	etcdv1alpha1.RecoveryGrowing:          {corev1.EventTypeNormal, "RecoveredSurvivor"},
	etcdv1alpha1.RecoverySucceeded:        {corev1.EventTypeNormal, "RecoverySucceeded"},
}

// recoveryTransitions: the quorum-loss recovery entered a phase. A recovery that ends
// (status.recovery cleared) is no news: its Succeeded phase said so.
func recoveryTransitions(old, updated *etcdv1alpha1.RecoveryStatus) []Event {
	if updated == nil || old != nil && old.Phase == updated.Phase {
		return nil
	}
	e, ok := recoveryEvents[updated.Phase]
	if !ok {
		return nil
	}
	return []Event{{e.kind, e.reason, "Recover", updated.Message}}
}

// flipped returns the new condition of type t when its status or reason changed.
func flipped(old, updated etcdv1alpha1.EtcdClusterStatus, t string) (metav1.Condition, bool) {
	now := meta.FindStatusCondition(updated.Conditions, t)
	if now == nil {
		return metav1.Condition{}, false
	}
	before := meta.FindStatusCondition(old.Conditions, t)
	if before != nil && before.Status == now.Status && before.Reason == now.Reason {
		return *now, false
	}
	return *now, true
}

// upgradeTransitions: an upgrade started or completed (a rollback shows as Degraded).
func upgradeTransitions(old, updated *etcdv1alpha1.UpgradeStatus) []Event {
	if updated == nil {
		return nil
	}
	if old == nil || old.ToVersion != updated.ToVersion || !old.StartedAt.Equal(updated.StartedAt) {
		return []Event{{corev1.EventTypeNormal, "UpgradeStarted", "Upgrade",
			fmt.Sprintf("Upgrading etcd from %s to %s, one member at a time", updated.FromVersion, updated.ToVersion)}}
	}
	if old.CompletedAt == nil && updated.CompletedAt != nil {
		return []Event{{corev1.EventTypeNormal, "UpgradeCompleted", "Upgrade",
			fmt.Sprintf("Every member runs etcd %s", updated.ToVersion)}}
	}
	return nil
}

// rolloutTransitions: a rollout of a changed spec started (Progressing turned RollingOut),
// or completed (it no longer is, and every member runs the current spec).
func rolloutTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionProgressing)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionProgressing)
	rolling := func(c *metav1.Condition) bool {
		return c != nil && c.Status == metav1.ConditionTrue && c.Reason == etcdv1alpha1.ReasonRollingOut
	}
	switch {
	case rolling(now) && !rolling(was):
		return []Event{{corev1.EventTypeNormal, "RolloutStarted", "Rollout", now.Message}}
	case rolling(was) && !rolling(now) && int(updated.UpdatedMembers) == len(updated.Members):
		return []Event{{corev1.EventTypeNormal, "RolloutCompleted", "Rollout",
			fmt.Sprintf("Every member runs the current spec (%d of %d members updated)", updated.UpdatedMembers, len(updated.Members))}}
	}
	return nil
}
