package status_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

func autopilotCluster(mutate func(c *etcdv1alpha1.EtcdCluster)) *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: 1},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestRaftTimingStatus(t *testing.T) {
	g := NewWithT(t)
	compute := func(c *etcdv1alpha1.EtcdCluster, decided *etcdv1alpha1.RaftTimingStatus) *etcdv1alpha1.RaftTimingStatus {
		return status.Compute(status.Input{Cluster: c, RaftTiming: decided}).RaftTiming
	}
	g.Expect(compute(autopilotCluster(nil), nil)).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingCustom,
		HeartbeatIntervalMillis: 100, ElectionTimeoutMillis: 1000, Reason: "Custom",
		Message: "etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis"}), "a cluster stored before the profile existed is Custom")
	custom := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd = etcdv1alpha1.EtcdOptions{TimingProfile: etcdv1alpha1.TimingCustom, HeartbeatIntervalMillis: 250, ElectionTimeoutMillis: 2500}
	})
	g.Expect(compute(custom, nil)).To(HaveField("HeartbeatIntervalMillis", int32(250)))
	slower := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingSlower })
	g.Expect(compute(slower, nil)).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingSlower,
		HeartbeatIntervalMillis: 500, ElectionTimeoutMillis: 2500, Reason: "Profile", Message: "the Slower profile"}))

	// Auto: the decision of the pass, the last one when the step did not run, and etcd's
	// defaults before any.
	auto := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto })
	g.Expect(compute(auto, nil)).To(And(HaveField("Profile", etcdv1alpha1.TimingAuto), HaveField("HeartbeatIntervalMillis", int32(100)),
		HaveField("ElectionTimeoutMillis", int32(1000)), HaveField("Reason", "Measuring")))
	decided := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 410, ElectionTimeoutMillis: 4100,
		MeasuredRoundTripMillis: ptr.To(int32(410)), Reason: "Raised", Message: "raised"}
	g.Expect(compute(auto, decided)).To(Equal(decided))
	auto.Status.RaftTiming = decided
	g.Expect(compute(auto, nil)).To(Equal(decided), "kept when the step did not run")
	// Leaving Auto for a profile replaces what Auto decided.
	auto.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingStandard
	g.Expect(compute(auto, nil)).To(HaveField("HeartbeatIntervalMillis", int32(100)))
}

func TestStorageStatusAndCeiling(t *testing.T) {
	g := NewWithT(t)
	c := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}
	})
	seen := status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Size: 1, Now: time.Now()}}
	at := &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse("8Gi")), Reason: status.StorageReasonQuotaCeiling,
		Message: "at the ceiling"}
	seen.Storage = at
	out := status.Compute(seen)
	g.Expect(out.Storage).To(Equal(at))
	degraded := meta.FindStatusCondition(out.Conditions, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded).NotTo(BeNil())
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonStorageCeilingReached))
	g.Expect(degraded.Message).To(Equal("at the ceiling"))

	seen.Storage = &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse("2Gi")), Reason: "BelowThreshold"}
	out = status.Compute(seen)
	g.Expect(meta.FindStatusCondition(out.Conditions, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))

	// Autoscaling off: no status.storage, whatever was there.
	c.Status.Storage = at
	c.Spec.Storage.Autoscaling = nil
	seen.Storage = nil
	g.Expect(status.Compute(seen).Storage).To(BeNil())
}

func TestAutopilotTransitions(t *testing.T) {
	g := NewWithT(t)
	timing := func(hb int32) *etcdv1alpha1.RaftTimingStatus {
		return &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: hb, ElectionTimeoutMillis: 10 * hb, Message: "why"}
	}
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)}, etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(410)})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "RaftTimingChanged", Action: "Tune",
			Message: "Raft timing set to heartbeat 410 ms, election timeout 4100 ms (was 100 ms and 1000 ms): why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)}, etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)})).To(BeEmpty())

	storage := func(quota, size string) *etcdv1alpha1.StorageStatus {
		return &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse(quota)), Size: ptr.To(resource.MustParse(size)), Message: "why"}
	}
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{Storage: storage("24Mi", "4Gi")}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("64Mi", "4Gi")})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "QuotaRaised", Action: "Autoscale", Message: "Quota raised from 24Mi to 64Mi: why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "4Gi")}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "6Gi")})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "VolumesGrowing", Action: "Autoscale", Message: "Member volumes growing from 4Gi to 6Gi: why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "4Gi")})).To(BeEmpty(), "turning it on is no news")
}
