package status

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

// Reasons of status.raftTiming for the profiles that need no measurement.
const (
	// RaftTimingReasonCustom: etcd.timingProfile Custom, the spec's own values.
	RaftTimingReasonCustom = "Custom"
	// RaftTimingReasonProfile: a fixed profile (Standard, Slower).
	RaftTimingReasonProfile = "Profile"
)

// AutoRaftTiming is status.raftTiming for d, the tuning decision of a pass with profile
// Auto, given last, the status.raftTiming in force, at now. A change is stamped with now
// (whole seconds, as the status stores it). Otherwise the last change's time stays, and so
// does last as a whole, message and measured round trip included, unless d differs from it
// in the timing, in the reason, or in the measured round trip by more than one of etcd's
// buckets (tuning.Moved): d's message carries figures that change with every read (how
// many round trips over how long), and the status changes with the decision, not with
// each read.
func AutoRaftTiming(d tuning.Decision, last *etcdv1alpha1.RaftTimingStatus, now time.Time) *etcdv1alpha1.RaftTimingStatus {
	out := &etcdv1alpha1.RaftTimingStatus{
		Profile:                 etcdv1alpha1.TimingAuto,
		HeartbeatIntervalMillis: d.Target.HeartbeatMillis,
		ElectionTimeoutMillis:   d.Target.ElectionMillis,
		Reason:                  string(d.Reason),
		Message:                 d.Message,
	}
	measured := tuning.RoundTripMillis(d.MeasuredP99)
	if measured > 0 {
		out.MeasuredRoundTripMillis = &measured
	}
	if d.Changed {
		out.LastChangeTime = &metav1.Time{Time: now.Truncate(time.Second)}
		return out
	}
	if last == nil || last.Profile != etcdv1alpha1.TimingAuto {
		return out
	}
	out.LastChangeTime = last.LastChangeTime
	if last.HeartbeatIntervalMillis == out.HeartbeatIntervalMillis && last.ElectionTimeoutMillis == out.ElectionTimeoutMillis &&
		last.Reason == out.Reason && !tuning.Moved(millis(last.MeasuredRoundTripMillis), measured) {
		return last
	}
	return out
}

// AutoscaledStorage is status.storage for d, the storage autoscaling decision of a pass
// under policy p, given size, the volume size the spec sets (nil for ephemeral storage),
// and last, the status.storage in force, at now. A RaiseQuota or GrowVolume sets the new
// quota or volume size and stamps the change with now (whole seconds, as the status stores
// it); any other decision keeps the quota and size in force, the last change's time, and
// says why in reason and message.
func AutoscaledStorage(d autoscale.Decision, p autoscale.Policy, size *resource.Quantity, last *etcdv1alpha1.StorageStatus, now time.Time) *etcdv1alpha1.StorageStatus {
	out := &etcdv1alpha1.StorageStatus{
		QuotaBackendBytes: resource.NewQuantity(p.QuotaBytes, resource.BinarySI),
		Reason:            string(d.Reason),
		Message:           d.Message,
	}
	if size != nil {
		inForce := size.DeepCopy()
		out.Size = &inForce
	}
	if last != nil {
		out.LastChangeTime = last.LastChangeTime
	}
	switch d.Kind {
	case autoscale.RaiseQuota:
		out.QuotaBackendBytes = resource.NewQuantity(d.To, resource.BinarySI)
		out.LastChangeTime = &metav1.Time{Time: now.Truncate(time.Second)}
	case autoscale.GrowVolume:
		out.Size = resource.NewQuantity(d.To, resource.BinarySI)
		out.LastChangeTime = &metav1.Time{Time: now.Truncate(time.Second)}
	}
	return out
}

// RaftTimingUnseen says whether decided, the raft timing change this operator made last,
// is newer than last, the status.raftTiming a pass read: the status patch that recorded it
// has not reached the cache yet, and the pass repeats decided rather than decide afresh from
// a window the change reset. Once the status shows it, the memory of it can go.
func RaftTimingUnseen(decided, last *etcdv1alpha1.RaftTimingStatus) bool {
	if decided == nil {
		return false
	}
	return last == nil || last.LastChangeTime == nil || last.LastChangeTime.Before(decided.LastChangeTime)
}

// SinceRaftTimingChange is how long the timing has been in force, for tuning.Input: since
// the measuring window started (windowStart: this operator's start, or its last change),
// or since the status's last Auto change, whichever is later.
func SinceRaftTimingChange(last *etcdv1alpha1.RaftTimingStatus, windowStart, now time.Time) time.Duration {
	since := now.Sub(windowStart)
	if last != nil && last.Profile == etcdv1alpha1.TimingAuto && last.LastChangeTime != nil {
		since = min(since, now.Sub(last.LastChangeTime.Time))
	}
	return since
}

// millis is a reported round trip; zero for none.
func millis(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// raftTimingStatus is status.raftTiming: with profile Auto what this pass's tuning step
// decided (decided; nil when it did not run, and the last stays, unless the profile just
// became Auto), otherwise the profile's or the spec's values.
func raftTimingStatus(c *etcdv1alpha1.EtcdCluster, decided *etcdv1alpha1.RaftTimingStatus) *etcdv1alpha1.RaftTimingStatus {
	profile := c.Spec.Etcd.TimingProfile
	if profile == "" {
		profile = etcdv1alpha1.TimingCustom
	}
	last := c.Status.RaftTiming
	if profile == etcdv1alpha1.TimingAuto {
		if decided != nil {
			return decided
		}
		if last != nil && last.Profile == etcdv1alpha1.TimingAuto {
			return last
		}
	}
	spec := clusterspec.Effective(c)
	out := &etcdv1alpha1.RaftTimingStatus{
		Profile:                 profile,
		HeartbeatIntervalMillis: spec.Etcd.HeartbeatIntervalMillis,
		ElectionTimeoutMillis:   spec.Etcd.ElectionTimeoutMillis,
		Reason:                  RaftTimingReasonProfile,
	}
	switch profile {
	case etcdv1alpha1.TimingCustom:
		out.Reason = RaftTimingReasonCustom
		out.Message = "etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis"
	case etcdv1alpha1.TimingAuto:
		out.Reason = "Measuring"
		out.Message = "etcd's defaults until the round trips between members are measured"
	default:
		out.Message = fmt.Sprintf("the %s profile", profile)
	}
	if last != nil && *last == *out {
		return last
	}
	return out
}

// storageStatus is status.storage: what this pass's autoscaling step decided (nil when it
// did not run: the last stays), and nothing while storage.autoscaling is off.
func storageStatus(c *etcdv1alpha1.EtcdCluster, decided *etcdv1alpha1.StorageStatus) *etcdv1alpha1.StorageStatus {
	if !clusterspec.AutoscalingEnabled(c) {
		return nil
	}
	if decided != nil {
		return decided
	}
	return c.Status.Storage
}

// storageCeiling is the Degraded condition of a cluster whose storage autoscaling can grow
// nothing more while the data is past its threshold.
func storageCeiling(c *etcdv1alpha1.EtcdCluster, st *etcdv1alpha1.StorageStatus) (metav1.Condition, bool) {
	if st == nil || !clusterspec.AutoscalingEnabled(c) || !StorageAtCeiling(st.Reason) {
		return metav1.Condition{}, false
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonStorageCeilingReached, Message: st.Message}, true
}

// StorageAtCeiling says whether a status.storage reason is one of the autoscaling's
// ceilings (set by the controller from internal/autoscale's reasons).
func StorageAtCeiling(reason string) bool {
	switch reason {
	case StorageReasonQuotaCeiling, StorageReasonVolumeCeiling, StorageReasonVolumeNotExpandable:
		return true
	}
	return false
}

// The reasons of status.storage that mean a ceiling was reached.
const (
	StorageReasonQuotaCeiling        = "QuotaCeiling"
	StorageReasonVolumeCeiling       = "VolumeCeiling"
	StorageReasonVolumeNotExpandable = "VolumeNotExpandable"
)

// autopilotTransitions: the raft timing Auto changed, the quota raised, the volumes grown.
// The ceiling is a Degraded transition, emitted with the others.
func autopilotTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	var out []Event
	if o, n := old.RaftTiming, updated.RaftTiming; o != nil && n != nil && n.Profile == etcdv1alpha1.TimingAuto &&
		(o.HeartbeatIntervalMillis != n.HeartbeatIntervalMillis || o.ElectionTimeoutMillis != n.ElectionTimeoutMillis) {
		out = append(out, Event{corev1.EventTypeNormal, "RaftTimingChanged", "Tune", fmt.Sprintf(
			"Raft timing set to heartbeat %d ms, election timeout %d ms (was %d ms and %d ms): %s",
			n.HeartbeatIntervalMillis, n.ElectionTimeoutMillis, o.HeartbeatIntervalMillis, o.ElectionTimeoutMillis, n.Message)})
	}
	o, n := old.Storage, updated.Storage
	if o == nil || n == nil {
		return out
	}
	if o.QuotaBackendBytes != nil && n.QuotaBackendBytes != nil && n.QuotaBackendBytes.Cmp(*o.QuotaBackendBytes) > 0 {
		out = append(out, Event{corev1.EventTypeNormal, "QuotaRaised", "Autoscale", fmt.Sprintf(
			"Quota raised from %s to %s: %s", o.QuotaBackendBytes, n.QuotaBackendBytes, n.Message)})
	}
	if o.Size != nil && n.Size != nil && n.Size.Cmp(*o.Size) > 0 {
		out = append(out, Event{corev1.EventTypeNormal, "VolumesGrowing", "Autoscale", fmt.Sprintf(
			"Member volumes growing from %s to %s: %s", o.Size, n.Size, n.Message)})
	}
	return out
}
