package clusterspec_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

func TestEffective(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{}
	spec := clusterspec.Effective(c)
	g.Expect(spec).To(Equal(clusterspec.WithDefaults(c.Spec)), "nothing decided: the spec with its defaults")

	// Timing profiles.
	for profile, want := range map[etcdv1alpha1.TimingProfile][2]int32{
		etcdv1alpha1.TimingStandard: {100, 1000}, etcdv1alpha1.TimingSlower: {500, 2500}, etcdv1alpha1.TimingAuto: {100, 1000},
	} {
		c := &etcdv1alpha1.EtcdCluster{Spec: etcdv1alpha1.EtcdClusterSpec{Etcd: etcdv1alpha1.EtcdOptions{TimingProfile: profile}}}
		e := clusterspec.Effective(c).Etcd
		g.Expect([2]int32{e.HeartbeatIntervalMillis, e.ElectionTimeoutMillis}).To(Equal(want), "%s", profile)
	}
	auto := &etcdv1alpha1.EtcdCluster{Spec: etcdv1alpha1.EtcdClusterSpec{Etcd: etcdv1alpha1.EtcdOptions{TimingProfile: etcdv1alpha1.TimingAuto}}}
	auto.Status.RaftTiming = &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 410, ElectionTimeoutMillis: 4100}
	g.Expect(clusterspec.Effective(auto).Etcd.HeartbeatIntervalMillis).To(Equal(int32(410)))
	g.Expect(resources.EtcdArgs(auto, resources.MemberConfig{Name: "e-0"})).To(ContainElements("--heartbeat-interval=410", "--election-timeout=4100"))
	// What Auto decided under another profile does not count.
	auto.Status.RaftTiming.Profile = etcdv1alpha1.TimingCustom
	g.Expect(clusterspec.Effective(auto).Etcd.HeartbeatIntervalMillis).To(Equal(int32(100)))

	// Storage autoscaling: status raises, never lowers, and only while Auto.
	grown := &etcdv1alpha1.EtcdCluster{Spec: etcdv1alpha1.EtcdClusterSpec{
		Etcd:    etcdv1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(resource.MustParse("1Gi"))},
		Storage: etcdv1alpha1.StorageSpec{Autoscaling: &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}}}}
	grown.Status.Storage = &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse("3Gi")), Size: ptr.To(resource.MustParse("10Gi"))}
	e := clusterspec.Effective(grown)
	g.Expect(e.Etcd.QuotaBackendBytes.String()).To(Equal("3Gi"))
	g.Expect(e.Storage.Size.String()).To(Equal("10Gi"))
	g.Expect(resources.MemberPVC(grown, "e-0").Spec.Resources.Requests.Storage().String()).To(Equal("10Gi"))
	g.Expect(resources.EtcdArgs(grown, resources.MemberConfig{Name: "e-0"})).To(ContainElement("--quota-backend-bytes=3221225472"))
	grown.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("4Gi"))
	g.Expect(clusterspec.Effective(grown).Etcd.QuotaBackendBytes.String()).To(Equal("4Gi"), "the spec's larger quota wins")
	grown.Spec.Storage.Autoscaling.Mode = etcdv1alpha1.StorageAutoscalingDisabled
	e = clusterspec.Effective(grown)
	g.Expect(e.Etcd.QuotaBackendBytes.String()).To(Equal("4Gi"))
	g.Expect(e.Storage.Size.String()).To(Equal("4Gi"), "autoscaling off: the spec's size")
	g.Expect(clusterspec.MaxQuotaBytes(grown)).To(Equal(int64(8 << 30)))
}

func TestConsistencyCheckDefaults(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{}
	g.Expect(clusterspec.ConsistencyCheckEnabled(c)).To(BeTrue(), "on by default")
	g.Expect(clusterspec.ReplacesCorruptMembers(c)).To(BeTrue(), "replacing by default")
	g.Expect(clusterspec.ConsistencyInterval(c)).To(Equal(10 * time.Minute))
	c.Spec.ConsistencyCheck = etcdv1alpha1.ConsistencyCheckSpec{Mode: etcdv1alpha1.ConsistencyCheckReport, Interval: &metav1.Duration{Duration: time.Hour}}
	g.Expect(clusterspec.ReplacesCorruptMembers(c)).To(BeFalse())
	g.Expect(clusterspec.ConsistencyInterval(c)).To(Equal(time.Hour))
	c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckDisabled
	g.Expect(clusterspec.ConsistencyCheckEnabled(c)).To(BeFalse())
}
