package clusterspec

import (
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Defaults of the EtcdCluster spec. They match the +kubebuilder:default markers of the
// CRD, so an object the API server defaulted and one built by hand give the same result.
const (
	// DefaultSize is three members: the smallest cluster that survives losing one.
	DefaultSize int32 = 3
	// DefaultAutoCompactionRetention keeps one hour of history in periodic mode.
	DefaultAutoCompactionRetention = "1h"
	// DefaultRevisionRetention keeps 10000 revisions in revision mode. The CRD never
	// stores revision mode without a retention ("1h" would be rejected there), so this
	// only guards hand-built objects against an invalid etcd flag.
	DefaultRevisionRetention = "10000"
	// DefaultSnapshotCount is etcd's own default since 3.6.
	DefaultSnapshotCount int64 = 10000
	// DefaultHeartbeatIntervalMillis is etcd's own default heartbeat interval.
	DefaultHeartbeatIntervalMillis int32 = 100
	// DefaultElectionTimeoutMillis is etcd's own default election timeout.
	DefaultElectionTimeoutMillis int32 = 1000
	// DefaultReplaceUnhealthyMemberAfter is how long a member may stay unhealthy before it
	// is replaced: long enough for a node reboot or an image pull, short enough that a
	// 3-member cluster does not spend an afternoon one failure away from losing quorum.
	DefaultReplaceUnhealthyMemberAfter = 10 * time.Minute
	// DefaultReplaceMemberOnLostNodeAfter is how long a member may stay unhealthy on a lost
	// node before it is replaced: past a typical node reboot, and before Kubernetes evicts
	// the pods of a NotReady node (5 minutes), which on a node that does not come back
	// leaves them terminating.
	DefaultReplaceMemberOnLostNodeAfter = 3 * time.Minute
	// DefaultMemberUpgradeTimeout is how long a member restarted at a new version has to
	// become healthy before its upgrade is rolled back.
	DefaultMemberUpgradeTimeout = 5 * time.Minute
)

var (
	// defaultStorageSize is the CRD's default storage.size.
	defaultStorageSize = resource.MustParse("4Gi")
	// maxDefaultQuotaBackendBytes is the highest etcd.quotaBackendBytes the operator picks
	// when the user sets none (DefaultQuotaBackendBytes).
	maxDefaultQuotaBackendBytes = resource.MustParse("2Gi")
)

// WithDefaults returns spec with every empty field that has a CRD default set to that
// default. It is the only place the defaults live in Go, and every builder reads the spec
// through it, so a spec the API server never defaulted (a test fixture, an object stored
// by an older CRD) still gives complete, valid objects.
//
// The result shares maps, slices and pointers with spec: treat it as read-only.
func WithDefaults(spec etcdv1alpha1.EtcdClusterSpec) etcdv1alpha1.EtcdClusterSpec {
	if spec.Size == 0 {
		spec.Size = DefaultSize
	}
	if spec.Version == "" {
		spec.Version = versions.Default()
	}
	if spec.Storage.Size == nil || spec.Storage.Size.IsZero() {
		spec.Storage.Size = ptr.To(defaultStorageSize.DeepCopy())
	}
	if spec.TLS.Mode == "" {
		spec.TLS.Mode = etcdv1alpha1.TLSModeOperatorCA
	}
	if spec.DeletionPolicy == "" {
		spec.DeletionPolicy = etcdv1alpha1.DeletionPolicyRetain
	}
	if spec.ReplaceUnhealthyMemberAfter == nil {
		spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{Duration: DefaultReplaceUnhealthyMemberAfter}
	}
	if spec.ReplaceMemberOnLostNodeAfter == nil {
		spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: DefaultReplaceMemberOnLostNodeAfter}
	}
	if spec.MemberUpgradeTimeout == nil {
		spec.MemberUpgradeTimeout = &metav1.Duration{Duration: DefaultMemberUpgradeTimeout}
	}
	spec.Etcd = etcdDefaults(spec.Etcd, *spec.Storage.Size)
	return spec
}

// DefaultQuotaBackendBytes is etcd.quotaBackendBytes when the user sets none: half of the
// volume (storage.size), which leaves the other half to the write-ahead log and the
// snapshots, and at most 2Gi, etcd's own default. With the default 4Gi volume it is 2Gi; a
// 1Gi volume gets 512Mi. Since storage.size is at least 64Mi, it is at least 32Mi, above
// the API's floor of 16Mi.
func DefaultQuotaBackendBytes(storage resource.Quantity) resource.Quantity {
	half := storage.Value() / 2
	if half >= maxDefaultQuotaBackendBytes.Value() {
		return maxDefaultQuotaBackendBytes.DeepCopy()
	}
	return *resource.NewQuantity(half, resource.BinarySI)
}

// etcdDefaults fills in the defaults of the etcd options; the quota follows storage, the
// volume's size.
func etcdDefaults(o etcdv1alpha1.EtcdOptions, storage resource.Quantity) etcdv1alpha1.EtcdOptions {
	if o.AutoCompactionMode == "" {
		o.AutoCompactionMode = etcdv1alpha1.AutoCompactionPeriodic
	}
	if o.AutoCompactionRetention == "" {
		o.AutoCompactionRetention = DefaultAutoCompactionRetention
		if o.AutoCompactionMode == etcdv1alpha1.AutoCompactionRevision {
			o.AutoCompactionRetention = DefaultRevisionRetention
		}
	}
	if o.QuotaBackendBytes == nil || o.QuotaBackendBytes.IsZero() {
		o.QuotaBackendBytes = ptr.To(DefaultQuotaBackendBytes(storage))
	}
	if o.SnapshotCount == 0 {
		o.SnapshotCount = DefaultSnapshotCount
	}
	if o.HeartbeatIntervalMillis == 0 {
		o.HeartbeatIntervalMillis = DefaultHeartbeatIntervalMillis
	}
	if o.ElectionTimeoutMillis == 0 {
		o.ElectionTimeoutMillis = DefaultElectionTimeoutMillis
	}
	return o
}

// Quorum is the number of members of an n-member cluster that must be up for it to
// accept writes: a strict majority, n/2+1. A cluster of 1 needs 1, of 3 needs 2, of 5
// needs 3, of 7 needs 4, so it tolerates the loss of n-Quorum(n) = (n-1)/2 members.
// An even size adds a member without adding fault tolerance, which is why the API only
// allows odd sizes.
func Quorum(n int) int { return n/2 + 1 }

// DefaultConsistencyCheckInterval is how often the members' hashes are compared when
// spec.consistencyCheck.interval is not set.
const DefaultConsistencyCheckInterval = 10 * time.Minute

// ConsistencyCheckEnabled says whether the operator compares the members' hashes.
func ConsistencyCheckEnabled(c *etcdv1alpha1.EtcdCluster) bool {
	return c.Spec.ConsistencyCheck.Mode != etcdv1alpha1.ConsistencyCheckDisabled
}

// ConsistencyInterval is spec.consistencyCheck.interval, or its default.
func ConsistencyInterval(c *etcdv1alpha1.EtcdCluster) time.Duration {
	if i := c.Spec.ConsistencyCheck.Interval; i != nil && i.Duration > 0 {
		return i.Duration
	}
	return DefaultConsistencyCheckInterval
}

// ReplacesCorruptMembers says whether a member whose data differs from the majority's is
// replaced (mode Replace, the default), rather than only reported.
func ReplacesCorruptMembers(c *etcdv1alpha1.EtcdCluster) bool {
	m := c.Spec.ConsistencyCheck.Mode
	return m == "" || m == etcdv1alpha1.ConsistencyCheckReplace
}

// DefaultQuorumLossAfter is how long the quorum must be lost before the loss is declared
// when spec.quorumLossRecovery.after is not set.
const DefaultQuorumLossAfter = 5 * time.Minute

// QuorumLossRecovery is spec.quorumLossRecovery with its defaults: the policy (Manual) and
// how long a loss must last before it is declared.
func QuorumLossRecovery(c *etcdv1alpha1.EtcdCluster) (etcdv1alpha1.QuorumLossPolicy, time.Duration) {
	p, after := c.Spec.QuorumLossRecovery.Policy, DefaultQuorumLossAfter
	if p == "" {
		p = etcdv1alpha1.QuorumLossManual
	}
	if a := c.Spec.QuorumLossRecovery.After; a != nil && a.Duration > 0 {
		after = a.Duration
	}
	return p, after
}
