package clusterspec

import (
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

// Effective returns the spec c's members are built from: WithDefaults(c.Spec), with what the
// operator decided for the cluster on its own put in.
//
//   - The raft timing of etcd.timingProfile: the profile's values, or with Auto the values
//     status.raftTiming records (tuning.Standard until Auto has decided).
//   - With storage.autoscaling Auto, the quota and volume size status.storage records where
//     they are larger than etcd.quotaBackendBytes and storage.size (they never shrink the
//     user's values).
//
// The decisions live in the status so that they survive an operator restart, and every
// builder of member objects reads the spec through Effective, so a decision is rolled out
// like any change of the spec.
//
// The result shares maps, slices and pointers with c: treat it as read-only.
func Effective(c *etcdv1alpha1.EtcdCluster) etcdv1alpha1.EtcdClusterSpec {
	spec := WithDefaults(c.Spec)
	if t, ok := Timing(c); ok {
		spec.Etcd.HeartbeatIntervalMillis, spec.Etcd.ElectionTimeoutMillis = t.HeartbeatMillis, t.ElectionMillis
	}
	if !AutoscalingEnabled(c) || c.Status.Storage == nil {
		return spec
	}
	if q := c.Status.Storage.QuotaBackendBytes; q != nil && q.Cmp(*spec.Etcd.QuotaBackendBytes) > 0 {
		spec.Etcd.QuotaBackendBytes = ptr.To(q.DeepCopy())
	}
	if s := c.Status.Storage.Size; s != nil && !spec.Storage.Ephemeral && s.Cmp(*spec.Storage.Size) > 0 {
		spec.Storage.Size = ptr.To(s.DeepCopy())
	}
	return spec
}

// Timing is the raft timing etcd.timingProfile sets, and false with profile Custom (the
// spec's own fields apply).
func Timing(c *etcdv1alpha1.EtcdCluster) (tuning.Timing, bool) {
	switch c.Spec.Etcd.TimingProfile {
	case etcdv1alpha1.TimingStandard:
		return tuning.Standard, true
	case etcdv1alpha1.TimingSlower:
		return tuning.Slower, true
	case etcdv1alpha1.TimingAuto:
		if st := c.Status.RaftTiming; st != nil && st.Profile == etcdv1alpha1.TimingAuto && st.HeartbeatIntervalMillis > 0 && st.ElectionTimeoutMillis > 0 {
			return tuning.Timing{HeartbeatMillis: st.HeartbeatIntervalMillis, ElectionMillis: st.ElectionTimeoutMillis}, true
		}
		return tuning.Standard, true
	}
	return tuning.Timing{}, false
}

// AutoscalingEnabled says whether storage.autoscaling is Auto.
func AutoscalingEnabled(c *etcdv1alpha1.EtcdCluster) bool {
	a := c.Spec.Storage.Autoscaling
	return a != nil && a.Mode == etcdv1alpha1.StorageAutoscalingAuto
}

// MaxQuotaBytes is storage.autoscaling.maxQuotaBackendBytes, 8Gi (etcd's recommended
// maximum) when unset.
func MaxQuotaBytes(c *etcdv1alpha1.EtcdCluster) int64 {
	if a := c.Spec.Storage.Autoscaling; a != nil && a.MaxQuotaBackendBytes != nil {
		return a.MaxQuotaBackendBytes.Value()
	}
	return maxQuotaBackendBytes.Value()
}

// maxQuotaBackendBytes is etcd's recommended maximum quota, the API's highest.
var maxQuotaBackendBytes = resource.MustParse("8Gi")
