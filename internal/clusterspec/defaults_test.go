package clusterspec_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

func TestWithDefaultsFillsEmptySpec(t *testing.T) {
	g := NewWithT(t)
	s := clusterspec.WithDefaults(etcdv1alpha1.EtcdClusterSpec{})

	g.Expect(s.Size).To(Equal(int32(3)))
	g.Expect(s.Version).To(Equal(versions.Default()))
	g.Expect(s.Storage.Size.Cmp(resource.MustParse("4Gi"))).To(BeZero())
	g.Expect(s.TLS.Mode).To(Equal(etcdv1alpha1.TLSModeOperatorCA))
	g.Expect(s.DeletionPolicy).To(Equal(etcdv1alpha1.DeletionPolicyRetain))
	g.Expect(s.ReplaceUnhealthyMemberAfter.Duration).To(Equal(10 * time.Minute))
	g.Expect(s.ReplaceMemberOnLostNodeAfter.Duration).To(Equal(3 * time.Minute))
	g.Expect(s.MemberUpgradeTimeout.Duration).To(Equal(5 * time.Minute))
	g.Expect(s.Etcd.AutoCompactionMode).To(Equal(etcdv1alpha1.AutoCompactionPeriodic))
	g.Expect(s.Etcd.AutoCompactionRetention).To(Equal("1h"))
	g.Expect(s.Etcd.QuotaBackendBytes.Value()).To(Equal(int64(2 << 30)))
	g.Expect(s.Etcd.SnapshotCount).To(Equal(int64(10000)))
	g.Expect(s.Etcd.HeartbeatIntervalMillis).To(Equal(int32(100)))
	g.Expect(s.Etcd.ElectionTimeoutMillis).To(Equal(int32(1000)))
}

func TestWithDefaultsKeepsSetFields(t *testing.T) {
	g := NewWithT(t)
	in := etcdv1alpha1.EtcdClusterSpec{
		Size:           5,
		Version:        versions.Supported[0],
		Storage:        etcdv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("10Gi")), StorageClassName: ptr.To("fast"), Ephemeral: true},
		Resources:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
		TLS:            etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeDisabled},
		DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
		// "0s" (replacement off) is a set value, not an empty one.
		ReplaceUnhealthyMemberAfter:  &metav1.Duration{},
		ReplaceMemberOnLostNodeAfter: &metav1.Duration{},
		MemberUpgradeTimeout:         &metav1.Duration{Duration: time.Minute},
		Etcd: etcdv1alpha1.EtcdOptions{
			AutoCompactionMode:      etcdv1alpha1.AutoCompactionRevision,
			AutoCompactionRetention: "1000",
			QuotaBackendBytes:       ptr.To(resource.MustParse("1Gi")),
			SnapshotCount:           500,
			HeartbeatIntervalMillis: 50,
			ElectionTimeoutMillis:   500,
		},
	}
	want := *in.DeepCopy()
	g.Expect(clusterspec.WithDefaults(in)).To(Equal(want))
	g.Expect(in).To(Equal(want), "the argument must not change")
}

// A quota the user did not set follows the volume: half of it, at most 2Gi, so that a
// small volume such as {size: 1Gi} is valid with every other default.
func TestWithDefaultsQuotaFollowsStorageSize(t *testing.T) {
	g := NewWithT(t)
	for size, quota := range map[string]string{"64Mi": "32Mi", "1Gi": "512Mi", "3Gi": "1536Mi", "4Gi": "2Gi", "100Gi": "2Gi"} {
		s := clusterspec.WithDefaults(etcdv1alpha1.EtcdClusterSpec{Storage: etcdv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse(size))}})
		g.Expect(s.Etcd.QuotaBackendBytes.Value()).To(Equal(ptr.To(resource.MustParse(quota)).Value()), "storage.size %s", size)
		g.Expect(s.Etcd.QuotaBackendBytes.Cmp(*s.Storage.Size)).To(BeNumerically("<", 0), "smaller than the volume, as the API requires")
	}
	set := clusterspec.WithDefaults(etcdv1alpha1.EtcdClusterSpec{Storage: etcdv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi"))},
		Etcd: etcdv1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(resource.MustParse("100Mi"))}})
	g.Expect(set.Etcd.QuotaBackendBytes.String()).To(Equal("100Mi"), "a quota the user set is kept")
}

func TestWithDefaultsRetentionFollowsMode(t *testing.T) {
	g := NewWithT(t)
	s := clusterspec.WithDefaults(etcdv1alpha1.EtcdClusterSpec{Etcd: etcdv1alpha1.EtcdOptions{AutoCompactionMode: etcdv1alpha1.AutoCompactionRevision}})
	g.Expect(s.Etcd.AutoCompactionRetention).To(MatchRegexp(`^[1-9][0-9]*$`), "revision mode needs a revision count")
}

func TestQuorum(t *testing.T) {
	g := NewWithT(t)
	for n, want := range map[int]int{1: 1, 2: 2, 3: 2, 4: 3, 5: 3, 6: 4, 7: 4} {
		g.Expect(clusterspec.Quorum(n)).To(Equal(want), "size %d", n)
	}
}
