package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
//
// +kubebuilder:validation:XValidation:rule="!has(self.storage) || !has(self.storage.size) || (has(self.storage.ephemeral) && self.storage.ephemeral) || !has(self.etcd) || !has(self.etcd.quotaBackendBytes) || quantity(string(self.etcd.quotaBackendBytes)).isLessThan(quantity(string(self.storage.size)))",message="etcd.quotaBackendBytes must be smaller than storage.size: etcd needs room beyond its quota for the write-ahead log and snapshots"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.auth.enabled) || !self.auth.enabled || !has(self.tls) || !has(self.tls.mode) || self.tls.mode != 'Disabled'",message="auth.enabled needs TLS: etcd knows a client by the common name of its certificate, and tls.mode Disabled gives clients none"
// +kubebuilder:validation:XValidation:rule="!has(self.auth) || !has(self.auth.enabled) || !self.auth.enabled || !has(self.etcd) || !has(self.etcd.autoCompactionRetention) || !self.etcd.autoCompactionRetention.matches('^(0+(\\\\.0+)?(h|m|s)?)+$')",message="with auth.enabled, etcd.autoCompactionRetention cannot turn compaction off: clients without the root role cannot compact, so etcd must"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap)",message="bootstrap cannot be added or removed after the cluster is created: it only decides how the cluster was first created"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(self.bootstrap.restore) || !has(self.version) || !self.version.startsWith('3.5.')",message="restoring from a backup needs etcd 3.6 or newer in spec.version (a 3.5 backup restores into a 3.6 cluster)"
// +kubebuilder:validation:XValidation:rule="!has(self.hibernation) || !has(self.hibernation.enabled) || !self.hibernation.enabled || !has(self.storage) || !has(self.storage.ephemeral) || !self.storage.ephemeral",message="hibernation needs members that keep their data on claims: ephemeral members lose it when they stop; back the cluster up and restore it into a new cluster instead"
// +kubebuilder:validation:XValidation:rule="!((has(self.hibernation) && has(self.hibernation.enabled) && self.hibernation.enabled) || (has(oldSelf.hibernation) && has(oldSelf.hibernation.enabled) && oldSelf.hibernation.enabled)) || (has(self.version) == has(oldSelf.version) && (!has(self.version) || self.version == oldSelf.version))",message="spec.version cannot change while the cluster hibernates, nor when hibernation is turned on or off: an upgrade restarts running members one at a time; wake the cluster first, then upgrade it"
type EtcdClusterSpec struct {
	// size is the number of etcd members. An etcd cluster tolerates the loss of
	// (size-1)/2 members, so only odd sizes are useful: 1 (no fault tolerance, for
	// development), 3 (tolerates one failure), 5 (two) or 7 (three).
	// +kubebuilder:default=3
	// +kubebuilder:validation:Enum=1;3;5;7
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	Size int32 `json:"size,omitempty"`

	// version is the etcd release the members run, without a leading "v" (for example
	// "3.6.16"). It must be one of the releases this operator supports (several patch
	// releases per minor); the default is the newest of them. Changing it restarts the
	// members one at a time at the new release (see the upgrade design notes): to any other
	// supported patch release of the same minor, newer or older, or to a patch release of the
	// next minor, never skipping one. Going back to an older minor is refused; to cancel an
	// upgrade in progress or retry one that was rolled back, set it back to
	// status.currentVersion (the version every member still runs or runs again).
	// +kubebuilder:default="3.7.3"
	// +kubebuilder:validation:Enum="3.5.35";"3.6.15";"3.6.16";"3.7.2";"3.7.3"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="etcd Version",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:3.5.35","urn:alm:descriptor:com.tectonic.ui:select:3.6.15","urn:alm:descriptor:com.tectonic.ui:select:3.6.16","urn:alm:descriptor:com.tectonic.ui:select:3.7.2","urn:alm:descriptor:com.tectonic.ui:select:3.7.3"}
	Version string `json:"version,omitempty"`

	// storage is where each member keeps its data: a PersistentVolumeClaim per member by
	// default, or an emptyDir when ephemeral is set.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage"
	Storage StorageSpec `json:"storage,omitempty"`

	// resources are the CPU and memory requests and limits of each etcd container.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Resources",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:resourceRequirements"}
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// podTemplate adds scheduling and metadata settings to every member pod.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Template",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	PodTemplate PodTemplate `json:"podTemplate,omitempty"`

	// tls selects how peer and client traffic is secured. The default is TLS on both,
	// with certificates from a certificate authority the operator creates for this cluster.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS"
	TLS TLSSpec `json:"tls,omitempty"`

	// auth turns etcd's own authentication on or off. Off by default, so that a client
	// certificate from the cluster's CA may do anything; on is recommended wherever more
	// than one application shares the cluster. See AuthSpec.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Authentication"
	Auth AuthSpec `json:"auth,omitempty"`

	// etcd holds the etcd settings that matter in production.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="etcd Options",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Etcd EtcdOptions `json:"etcd,omitempty"`

	// monitoring says which monitoring objects the operator keeps for the cluster. By
	// default (mode Auto), when the Prometheus Operator's CRDs (monitoring.coreos.com) are
	// installed, it creates a PodMonitor that scrapes every member's metrics port, a
	// PrometheusRule with etcd's alerts for this cluster, and a ConfigMap with a Grafana
	// dashboard; the Monitoring condition says what is in place.
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Monitoring",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Monitoring MonitoringSpec `json:"monitoring,omitempty"`

	// maintenance says how the operator keeps the members' databases compact: when it
	// defragments them (by default when enough space is wasted), and whether it gets the
	// cluster out of the NOSPACE alarm by itself (by default it does).
	// +kubebuilder:default={}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Maintenance",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Maintenance MaintenanceSpec `json:"maintenance,omitempty"`

	// consistencyCheck is how the operator checks that the members hold the same data, and
	// what it does about a member that does not: by default it compares the members' hashes
	// every 10 minutes and replaces a member whose data differs from a majority's.
	// +kubebuilder:default={}
	// +optional
	ConsistencyCheck ConsistencyCheckSpec `json:"consistencyCheck,omitempty"`

	// quorumLossRecovery is what the operator does when the cluster has lost its quorum for
	// good: Manual (the default) says what it found and what it would do and waits for
	// approval; Automatic recovers without it when the lost members' data is gone.
	// +kubebuilder:default={}
	// +optional
	QuorumLossRecovery QuorumLossRecoverySpec `json:"quorumLossRecovery,omitempty"`

	// networkPolicy is who may reach the members on the network: by default a NetworkPolicy
	// admits only the cluster's own members to the peer port, the operator, the cluster's
	// backup Jobs and the pods of the cluster's namespace to the client port, and every
	// source to the metrics port (metrics and health, no keys or values). It takes effect
	// where the cluster's network plugin enforces NetworkPolicy.
	// +kubebuilder:default={}
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// deletionPolicy says what happens to the members' PersistentVolumeClaims when the
	// EtcdCluster is deleted: Retain keeps them (and the data), Delete removes them.
	// +kubebuilder:default=Retain
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Retain","urn:alm:descriptor:com.tectonic.ui:select:Delete"}
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`

	// replaceUnhealthyMemberAfter is how long a started voting member may stay unhealthy
	// (its etcd does not answer, for example a pod that cannot pull its image or a crash
	// loop) before the operator replaces it: it removes the member from the cluster and adds
	// a fresh one (a new member ID, empty data synced from the others). It does so only while
	// the other voting members keep a healthy quorum, one member at a time. "0s" turns
	// replacement off: an unhealthy member is then only reported (Degraded). A member whose
	// data is lost (its claim deleted) is replaced at once, whatever this says.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || duration(self) >= duration('30s')",message="replaceUnhealthyMemberAfter must be 0s (never replace) or at least 30s: a member restarting must not be mistaken for a lost one"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replace Unhealthy Member After",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	ReplaceUnhealthyMemberAfter *metav1.Duration `json:"replaceUnhealthyMemberAfter,omitempty"`

	// replaceMemberOnLostNodeAfter is how long a started voting member may stay unhealthy
	// while a node it needs is lost before the operator replaces it as
	// replaceUnhealthyMemberAfter does: the node its pod runs on NotReady or gone, or, for a
	// pod no node takes (a drain evicted it), the node its volume was made on NotReady, gone,
	// cordoned, or left out by the placement rules (another member there while a node has
	// none). It is counted from the later of when the member stopped answering and the loss
	// (the node turning NotReady, the pod beginning to wait). Kubernetes marks
	// a silent node NotReady after about 50 s (the controller manager's
	// node-monitor-grace-period) and evicts its pods after 5 minutes, but the pods of a node
	// that does not come back stay terminating, and a member whose data is on a local volume
	// of that node cannot run anywhere else: the default replaces it after 3 minutes, before
	// that eviction and after a typical reboot. The member is removed from etcd first, so
	// the node coming back with the old data cannot bring it back. "0s" leaves such a member
	// to replaceUnhealthyMemberAfter.
	// +kubebuilder:default="3m"
	// +kubebuilder:validation:XValidation:rule="duration(self) == duration('0s') || duration(self) >= duration('30s')",message="replaceMemberOnLostNodeAfter must be 0s (only replaceUnhealthyMemberAfter applies) or at least 30s: a node briefly NotReady must not cost a member its data"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Replace Member On Lost Node After",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	ReplaceMemberOnLostNodeAfter *metav1.Duration `json:"replaceMemberOnLostNodeAfter,omitempty"`

	// memberUpgradeTimeout is how long a member restarted at a new spec.version, or with a
	// changed spec (a rollout), has to become healthy and ready. Past it, during an upgrade
	// while some member still runs the old version (so the cluster version has not been
	// raised), the operator puts the member back on the old version, stops the upgrade and
	// reports Degraded/UpgradeRolledBack. During a rollout, which has no old spec to go back
	// to, it restarts no other member and reports Degraded/RolloutStuck until the spec is
	// corrected; the correction then restarts the stuck member at once.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s')",message="memberUpgradeTimeout must be at least 30s: a member needs time to pull its image and start"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Member Upgrade Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	MemberUpgradeTimeout *metav1.Duration `json:"memberUpgradeTimeout,omitempty"`

	// upgradeBackupDestination is where the snapshot taken before each upgrade to a newer
	// etcd release goes. When set, the operator creates an EtcdBackup of the cluster to
	// this destination, named <cluster>-pre-upgrade-<version with dashes> (for example
	// main-pre-upgrade-3-7-3), and restarts the first member only once it succeeded; the
	// backup is kept after the upgrade (and after the cluster), like any EtcdBackup, and a
	// new cluster can start from it (bootstrap.restore.backupName). A failed backup blocks
	// the upgrade (Degraded/UpgradeBlocked) until it is deleted. When unset, the snapshot
	// is saved to a follower's volume. status.upgrade.snapshot says where it is.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Upgrade Backup Destination",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	UpgradeBackupDestination *BackupDestination `json:"upgradeBackupDestination,omitempty"`

	// hibernation stops every member while keeping its data, for a cluster that is not
	// needed for a while: with enabled true, the operator takes a final backup (when
	// backupDestination is set), then stops the members one at a time, the leader last. The
	// claims, Secrets and CA stay; the Hibernated condition turns True once every member
	// has stopped. With enabled false again, the same members come back with their data
	// and identity. Members on ephemeral storage cannot hibernate.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Hibernation"
	Hibernation HibernationSpec `json:"hibernation,omitempty"`

	// bootstrap says how a new cluster starts: empty (the default) or restored from a
	// backup. It is read only when the first member is created and cannot be changed.
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="bootstrap cannot be changed: it only decides how the cluster was first created"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Bootstrap",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`
}

// MonitoringMode says whether the operator keeps monitoring objects for a cluster.
// +kubebuilder:validation:Enum=Auto;Disabled
type MonitoringMode string

const (
	// MonitoringAuto keeps a PodMonitor, a PrometheusRule and a dashboard ConfigMap for the
	// cluster whenever the Prometheus Operator's CRDs are installed, and nothing otherwise.
	MonitoringAuto MonitoringMode = "Auto"
	// MonitoringDisabled keeps none, and deletes those the operator made before; for users
	// who manage their own.
	MonitoringDisabled MonitoringMode = "Disabled"
)

// MonitoringSpec is how the cluster is monitored. Every member serves etcd's metrics and
// health over plain HTTP on its port named "metrics" (2381) whatever this says; it carries
// no keys or values.
//
// With mode Auto the operator keeps three objects in the cluster's namespace, owned by the
// EtcdCluster (deleted with it) and put back in step with it when changed or deleted:
//   - PodMonitor <name>-members: scrapes every member pod's metrics port and labels the
//     series namespace, pod and etcd_cluster (the EtcdCluster's name);
//   - PrometheusRule <name>-alerts: etcd's alerts (members down, no leader, slow disks,
//     quota, fragmentation and the rest), each limited to this cluster and linking its
//     runbook;
//   - ConfigMap <name>-dashboard: a Grafana dashboard of this cluster, labelled
//     grafana_dashboard: "1" so that Grafana's dashboard sidecar loads it.
type MonitoringSpec struct {
	// mode is Auto (the default) or Disabled.
	// +kubebuilder:default=Auto
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode MonitoringMode `json:"mode,omitempty"`

	// labels are added to the PodMonitor, the PrometheusRule and the dashboard ConfigMap,
	// for a Prometheus that selects them by label (for example release: prometheus).
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('app.kubernetes.io/') && !k.startsWith('etcd.etcdpilot.io/') && k != 'grafana_dashboard')",message="monitoring.labels cannot set the operator's own labels (app.kubernetes.io/*, etcd.etcdpilot.io/*, grafana_dashboard)"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
}

// DefragmentationMode says when the operator defragments members.
// +kubebuilder:validation:Enum=Auto;Schedule;Disabled
type DefragmentationMode string

const (
	// DefragmentationAuto defragments a member once enough of its database file is free
	// pages (DefragmentationSpec's thresholds), or, when its file is at 75% of the quota,
	// as soon as the smaller of 32Mi and 5% of the quota can be given back; with storage
	// autoscaling on, only when that brings the file that far under 75%, and otherwise the
	// quota is raised.
	DefragmentationAuto DefragmentationMode = "Auto"
	// DefragmentationSchedule defragments every member with at least 1Mi to give back at
	// the times of DefragmentationSpec's schedule.
	DefragmentationSchedule DefragmentationMode = "Schedule"
	// DefragmentationDisabled never defragments on its own (NOSPACE recovery aside).
	DefragmentationDisabled DefragmentationMode = "Disabled"
)

// NoSpaceRecoveryMode says whether the operator clears the NOSPACE alarm by itself.
// +kubebuilder:validation:Enum=Auto;Disabled
type NoSpaceRecoveryMode string

const (
	// NoSpaceRecoveryAuto compacts the history (keeping what etcd.autoCompactionRetention
	// keeps while it fits), defragments every member and disarms the alarm once every member
	// is below 90% of the quota.
	NoSpaceRecoveryAuto NoSpaceRecoveryMode = "Auto"
	// NoSpaceRecoveryDisabled leaves the alarm to a human; the cluster reports
	// Degraded/NoSpace meanwhile.
	NoSpaceRecoveryDisabled NoSpaceRecoveryMode = "Disabled"
)

// MaintenanceSpec is how the operator keeps the members' databases compact.
//
// etcd never gives disk space back by itself: deleted keys and compacted history leave free
// pages in a member's database file, which only a defragmentation returns. A member
// answers no request while it defragments (about a second per 100Mi on a local disk), so
// the operator defragments one member at a time, followers first and the leader last,
// only while every member is healthy, at least 10 minutes apart for the same member
// (NOSPACE recovery aside), and never while a CORRUPT alarm is raised. Each
// defragmentation is an event (MemberDefragmented) and shows in the member's status
// (lastDefragmentation: when, and the file's size before and after).
//
// When a member's database reaches etcd.quotaBackendBytes, etcd raises the NOSPACE alarm
// and accepts only reads and deletes. With noSpaceRecovery Auto the operator then compacts
// the history, keeping what etcd.autoCompactionRetention keeps while it fits (in mode
// revision, up to the current revision less the retention; in mode periodic, etcd's own
// compactor keeps its window), and up to the current revision only when the data in use is
// at 75% of the quota or more (old versions of keys are lost; every key's latest value
// stays); it then defragments every member, and disarms the alarm once every member is
// below 90% of the quota. When the data itself does not fit, it says so
// (Degraded/NoSpaceDataDoesNotFit): raise etcd.quotaBackendBytes, or delete data.
type MaintenanceSpec struct {
	// defragmentation says when members are defragmented.
	// +kubebuilder:default={}
	// +optional
	Defragmentation DefragmentationSpec `json:"defragmentation,omitempty"`

	// noSpaceRecovery is Auto (the default) or Disabled.
	// +kubebuilder:default=Auto
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="NOSPACE Recovery",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	NoSpaceRecovery NoSpaceRecoveryMode `json:"noSpaceRecovery,omitempty"`
}

// DefragmentationSpec says when members are defragmented.
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'Schedule') == has(self.schedule)",message="defragmentation.schedule is required with mode Schedule, and only allowed with it"
type DefragmentationSpec struct {
	// mode is Auto (the default), Schedule or Disabled.
	// +kubebuilder:default=Auto
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Defragmentation",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Auto","urn:alm:descriptor:com.tectonic.ui:select:Schedule","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode DefragmentationMode `json:"mode,omitempty"`

	// minFragmentationPercent is, in mode Auto, the share of a member's database file that
	// must be free pages before it is defragmented (45 by default, as OpenShift's etcd
	// operator does).
	// +kubebuilder:default=45
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=99
	// +optional
	MinFragmentationPercent int32 `json:"minFragmentationPercent,omitempty"`

	// minReclaimable is, in mode Auto, how much a defragmentation must give back, at least
	// (100Mi by default): below that, the pause is not worth it.
	// +kubebuilder:default="100Mi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('1Mi')) >= 0",message="defragmentation.minReclaimable must be at least 1Mi"
	// +optional
	MinReclaimable *resource.Quantity `json:"minReclaimable,omitempty"`

	// schedule is, in mode Schedule, when every member is defragmented: a cron expression
	// in UTC with the same syntax as an EtcdBackupSchedule's (five fields, or @daily and
	// the like). "0 3 * * 0" is Sundays at 03:00.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule=`self.matches('^@(hourly|daily|midnight|weekly|monthly|yearly|annually)$') || self.matches('^(\\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|(0?[1-9]|1[0-2])(-(0?[1-9]|1[0-2]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|(0?[1-9]|1[0-2])(-(0?[1-9]|1[0-2]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|0?[0-6](-0?[0-6])?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|0?[0-6](-0?[0-6])?)(/(0?[1-9]|[1-9][0-9]))?)*$')`,message="defragmentation.schedule must be a cron expression of five fields in range (minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-6), each *, n, a-b, */n, a-b/n or a comma list of those, for example \"0 3 * * 0\"; or one of @hourly, @daily, @weekly, @monthly, @yearly"
	// +kubebuilder:validation:XValidation:rule="self.findAll('[0-9]+-[0-9]+').all(r, int(r.split('-')[0]) <= int(r.split('-')[1]))",message="defragmentation.schedule: a range a-b must not end before it starts, for example 8-17 rather than 17-8"
	// +optional
	Schedule string `json:"schedule,omitempty"`
}

// ConsistencyCheckMode says what the operator does about a member whose data differs from
// a majority's.
// +kubebuilder:validation:Enum=Replace;Report;Disabled
type ConsistencyCheckMode string

const (
	// ConsistencyCheckReplace fences a member whose data differs from a majority's (no
	// backup is taken from it) and replaces it with a fresh member that copies the
	// majority's data, while the other voting members keep a healthy quorum.
	ConsistencyCheckReplace ConsistencyCheckMode = "Replace"
	// ConsistencyCheckReport fences the member and reports it (Degraded/MemberCorrupt, an
	// event), and changes nothing else: a human decides.
	ConsistencyCheckReport ConsistencyCheckMode = "Report"
	// ConsistencyCheckDisabled does not check (etcd's own corruption checks stay on).
	ConsistencyCheckDisabled ConsistencyCheckMode = "Disabled"
)

// ConsistencyCheckSpec is how the operator checks that the members hold the same data.
//
// Every interval, while the cluster is healthy and settled, the operator asks each voting
// member for etcd's HashKV at one revision every member has applied: the hash of the
// key-value history from the last compaction up to it, which members with the same data
// report identically. A member whose hash differs from that of a majority of the voting
// members that agree among themselves, or that carries etcd's CORRUPT alarm and is not one
// of that majority, is named in status.consistency and fenced; in mode Replace it is then
// removed and replaced with a fresh member, one at a time, as a member whose volume was
// lost is. Without such a majority nothing is changed, and status.consistency says what
// was found. Hashing reads each member's whole key-value store, so the check costs about
// as much as a backup's read per member.
type ConsistencyCheckSpec struct {
	// mode is Replace (the default), Report or Disabled.
	// +kubebuilder:default=Replace
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Consistency Check",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Replace","urn:alm:descriptor:com.tectonic.ui:select:Report","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode ConsistencyCheckMode `json:"mode,omitempty"`

	// interval is how often the members' hashes are compared: between 1m and 24h, 10m by
	// default.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="consistencyCheck.interval must be between 1m and 24h"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Consistency Check Interval",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Interval *metav1.Duration `json:"interval,omitempty"`
}

// QuorumLossPolicy says who starts the recovery of a cluster that lost its quorum.
// +kubebuilder:validation:Enum=Manual;Automatic
type QuorumLossPolicy string

const (
	// QuorumLossManual reports a lost quorum, the member the cluster would be recovered from
	// and what would be lost, and recovers only once the EtcdCluster is annotated with
	// etcd.etcdpilot.io/approve-recovery set to status.recovery.id.
	QuorumLossManual QuorumLossPolicy = "Manual"
	// QuorumLossAutomatic recovers without approval when the data of the lost members is
	// gone (their claims deleted); when they only do not answer, their data may come back,
	// and the recovery waits for approval as under Manual.
	QuorumLossAutomatic QuorumLossPolicy = "Automatic"
)

// AnnotationApproveRecovery approves the recovery of a cluster that lost its quorum: its
// value must be status.recovery.id, so that an old approval never approves a later loss.
const AnnotationApproveRecovery = "etcd.etcdpilot.io/approve-recovery"

// QuorumLossRecoverySpec is how a cluster that lost its quorum is recovered.
//
// The loss is declared when no member knows a leader and fewer than a majority of the
// voting members answer, without a break, for longer than after. The cluster is then
// recovered from the member that answers with the highest applied raft index (the
// survivor): a snapshot of it is saved on its volume first; every other member is removed
// (its pod deleted, its claim deleted or, under deletionPolicy Retain, marked removed);
// the survivor starts again alone from the snapshot, as a new cluster with every revision
// raised by a billion (so that watchers, Kubernetes among them, see revisions move
// forward), and the cluster grows back to spec.size with learners. What only the lost
// members held is lost. A cluster with no survivor (no member answers, or ephemeral
// storage) is recovered the same way from its newest successful EtcdBackup, losing every
// write after it; with no backup either, nothing is done and the status says so.
type QuorumLossRecoverySpec struct {
	// policy is Manual (the default) or Automatic.
	// +kubebuilder:default=Manual
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Quorum Loss Recovery",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Manual","urn:alm:descriptor:com.tectonic.ui:select:Automatic"}
	Policy QuorumLossPolicy `json:"policy,omitempty"`

	// after is how long the quorum must be lost, without a break, before the loss is
	// declared: between 30s and 24h, 5m by default. It should be far longer than a member
	// restart, so that a node that reboots is not taken for a lost majority.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('30s') && duration(self) <= duration('24h')",message="quorumLossRecovery.after must be between 30s and 24h"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Quorum Lost For",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	After *metav1.Duration `json:"after,omitempty"`
}

// NetworkPolicyMode says whether the operator keeps a NetworkPolicy for the members.
// +kubebuilder:validation:Enum=Enabled;Disabled
type NetworkPolicyMode string

const (
	// NetworkPolicyEnabled keeps the NetworkPolicy <cluster>-members.
	NetworkPolicyEnabled NetworkPolicyMode = "Enabled"
	// NetworkPolicyDisabled keeps none: one the operator made is deleted.
	NetworkPolicyDisabled NetworkPolicyMode = "Disabled"
)

// NamespaceAccess says whether the pods of the cluster's own namespace may reach the
// client and metrics ports.
// +kubebuilder:validation:Enum=Allowed;Denied
type NamespaceAccess string

const (
	// NamespaceAllowed admits every pod of the cluster's namespace.
	NamespaceAllowed NamespaceAccess = "Allowed"
	// NamespaceDenied admits only what clientFrom and metricsFrom list (and the operator
	// and the cluster's Jobs).
	NamespaceDenied NamespaceAccess = "Denied"
)

// NetworkPolicySpec is the NetworkPolicy the operator keeps for the member pods
// (<cluster>-members, ingress only). It admits:
//
//   - to the peer port (2380): the cluster's member pods, nothing else;
//   - to the client port (2379): the operator's pods, the cluster's backup Jobs, the pods
//     of the cluster's namespace (sameNamespace Allowed), and clientFrom;
//   - to the metrics port (2381), which serves etcd's metrics and health and no keys or
//     values: every source, so that a Prometheus in any namespace scrapes the members; or,
//     once metricsFrom is set, only the operator's pods, the pods of the cluster's
//     namespace (sameNamespace Allowed), and metricsFrom.
//
// Traffic from the member's own node (the kubelet's probes) is admitted by every network
// plugin that enforces NetworkPolicy. The policy does nothing where the network plugin
// does not enforce NetworkPolicy.
type NetworkPolicySpec struct {
	// mode is Enabled (the default) or Disabled: no NetworkPolicy (the one the operator
	// made is deleted), every pod that can route to the members may reach every port.
	// +kubebuilder:default=Enabled
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Network Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Enabled","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode NetworkPolicyMode `json:"mode,omitempty"`

	// sameNamespace is Allowed (the default): every pod of the cluster's namespace may reach
	// the client port (it still needs a client certificate) and a restricted metrics port;
	// or Denied: only what clientFrom and metricsFrom list may.
	// +kubebuilder:default=Allowed
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Same Namespace",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Allowed","urn:alm:descriptor:com.tectonic.ui:select:Denied","urn:alm:descriptor:com.tectonic.ui:advanced"}
	SameNamespace NamespaceAccess `json:"sameNamespace,omitempty"`

	// clientFrom are the other sources admitted to the client port: the applications that
	// use this etcd, as NetworkPolicy peers (podSelector: pods of the cluster's namespace;
	// namespaceSelector: every pod of the namespaces it selects; both: the selected pods of
	// the selected namespaces; ipBlock: addresses outside the cluster). At most 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	ClientFrom []networkingv1.NetworkPolicyPeer `json:"clientFrom,omitempty"`

	// metricsFrom restricts the metrics port, which every source may reach while it is
	// empty (the default), to the operator, the pods of the cluster's namespace
	// (sameNamespace Allowed) and these sources, such as the namespace Prometheus runs in:
	// namespaceSelector: {matchLabels: {kubernetes.io/metadata.name: monitoring}}. At most 16.
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	// +optional
	MetricsFrom []networkingv1.NetworkPolicyPeer `json:"metricsFrom,omitempty"`
}

// BootstrapSpec says how a new cluster starts.
type BootstrapSpec struct {
	// restore starts the cluster from a backup: the first member restores the snapshot,
	// after its checksum is verified, with the new cluster's own identity (a new cluster ID
	// and member ID); the other members join it and copy its data.
	// +optional
	Restore *RestoreSpec `json:"restore,omitempty"`
}

// RestoreSpec is the backup a new cluster starts from, and how.
//
// +kubebuilder:validation:XValidation:rule="has(self.backupName) != has(self.source)",message="restore needs exactly one of backupName and source"
// +kubebuilder:validation:XValidation:rule="has(self.bumpRevision) == (has(self.markCompacted) && self.markCompacted)",message="restore.bumpRevision and restore.markCompacted go together: etcdutl bumps revisions only while marking them compacted"
type RestoreSpec struct {
	// backupName is a successful EtcdBackup in the cluster's namespace; its artifact and
	// checksum are used. No member starts until that backup has succeeded.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	BackupName string `json:"backupName,omitempty"`

	// source is an artifact named directly, for example one written by another Kubernetes
	// cluster: its location and its SHA-256 (status.artifact of the EtcdBackup that wrote it).
	// +optional
	Source *RestoreSource `json:"source,omitempty"`

	// bumpRevision adds this many revisions to every key's revision in the restored data
	// (etcdutl snapshot restore --bump-revision). Set it when clients that watched the old
	// cluster will watch the restored one, Kubernetes API servers above all: with revisions
	// ahead of anything they saw, they cannot miss or misorder changes. A value larger than
	// the writes made since the backup is enough; 1000000000 is common. It needs markCompacted. etcd 3.6 or newer.
	// +kubebuilder:validation:Minimum=1
	// +optional
	BumpRevision *int64 `json:"bumpRevision,omitempty"`

	// markCompacted marks every revision up to the bumped one as compacted (etcdutl
	// snapshot restore --mark-compacted), so watchers resuming from an old revision get
	// "compacted" and re-list instead of waiting forever. Use it with bumpRevision for
	// Kubernetes. It is required with bumpRevision, and only with it. etcd 3.6 or newer.
	// +optional
	MarkCompacted bool `json:"markCompacted,omitempty"`
}

// RestoreSource names a backup artifact by its location.
//
// +kubebuilder:validation:XValidation:rule="has(self.pvc) != has(self.s3)",message="restore.source needs exactly one of pvc and s3"
type RestoreSource struct {
	// pvc is a file on a PersistentVolumeClaim in the cluster's namespace.
	// +optional
	PVC *PVCFile `json:"pvc,omitempty"`

	// s3 is an object in an S3-compatible store.
	// +optional
	S3 *S3Object `json:"s3,omitempty"`

	// sha256 is the artifact's expected hex SHA-256; the restore refuses an artifact whose
	// checksum differs.
	// +kubebuilder:validation:Pattern=`^[0-9a-f]{64}$`
	SHA256 string `json:"sha256"`
}

// PVCFile is a file on a PersistentVolumeClaim.
type PVCFile struct {
	// claimName is the PersistentVolumeClaim, in the cluster's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// path is the artifact's path inside the claim (status.artifact.key of its backup).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="path must be relative to the claim's root and must not contain '..'"
	Path string `json:"path"`
}

// S3Object is an object in an S3 bucket.
type S3Object struct {
	S3Bucket `json:",inline"`

	// key is the object's key (status.artifact.key of its backup).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	Key string `json:"key"`
}

// DeletionPolicy says what happens to member PVCs when their EtcdCluster is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type DeletionPolicy string

const (
	// DeletionPolicyRetain keeps the member PVCs, detached from the deleted EtcdCluster.
	DeletionPolicyRetain DeletionPolicy = "Retain"
	// DeletionPolicyDelete deletes the member PVCs with the EtcdCluster.
	DeletionPolicyDelete DeletionPolicy = "Delete"
)

// StorageSpec is where each member keeps its data.
//
// +kubebuilder:validation:XValidation:rule="!has(oldSelf.ephemeral) && !has(self.ephemeral) || has(oldSelf.ephemeral) && has(self.ephemeral) && self.ephemeral == oldSelf.ephemeral",message="storage.ephemeral cannot be changed after the cluster is created"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="storage.storageClassName cannot be changed after the cluster is created: volumes cannot move between storage classes"
// +kubebuilder:validation:XValidation:rule="!has(self.size) || !has(oldSelf.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0",message="storage.size cannot be decreased: volumes can only grow"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !has(self.autoscaling.maxSize) || !has(self.size) || quantity(string(self.autoscaling.maxSize)).compareTo(quantity(string(self.size))) >= 0",message="storage.autoscaling.maxSize must be at least storage.size: the volumes can only grow, so a lower ceiling could never be used"
type StorageSpec struct {
	// size is the capacity of each member's volume. It can grow but never shrink. When it
	// grows, the operator expands the members' claims one at a time, while the cluster is
	// otherwise steady (Progressing/ExpandingVolumes), and restarts a member whose file
	// system can only grow offline. When the claims' StorageClass does not allow volume
	// expansion, no claim is changed and the cluster reports
	// Degraded/VolumeExpansionNotSupported, naming the class.
	// +kubebuilder:default="4Gi"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('63Mi'))",message="storage.size must be at least 64Mi"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Volume Size",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Size *resource.Quantity `json:"size,omitempty"`

	// storageClassName is the StorageClass of the members' volumes; empty means the
	// cluster's default StorageClass. It cannot be changed after creation.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Class",xDescriptors={"urn:alm:descriptor:io.kubernetes:StorageClass"}
	StorageClassName *string `json:"storageClassName,omitempty"`

	// ephemeral keeps member data in an emptyDir instead of a PersistentVolumeClaim. The
	// data of a member is lost when its pod is deleted: use it only for tests and caches.
	// It cannot be changed after creation.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Ephemeral (no persistent volume)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Ephemeral bool `json:"ephemeral,omitempty"`

	// autoscaling lets the operator raise the quota and grow the volumes before the data
	// reaches the quota (off by default).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Autoscaling"
	Autoscaling *StorageAutoscalingSpec `json:"autoscaling,omitempty"`
}

// PodTemplate holds the settings applied to every member pod on top of the operator's own.
type PodTemplate struct {
	// labels are added to every member pod. They cannot override the operator's own labels.
	// Each value is a Kubernetes label value: at most 63 characters (refused here), of
	// alphanumerics, '-', '_' and '.', beginning and ending with an alphanumeric (a value
	// that is not ends Degraded: a pattern check on every value exceeds the API server's
	// budget for validation rules). At most 64.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, size(self[k]) <= 63)",message="podTemplate.labels values must be at most 63 characters, as every Kubernetes label value"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Labels",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Labels map[string]string `json:"labels,omitempty"`

	// annotations are added to every member pod.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Pod Annotations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Annotations map[string]string `json:"annotations,omitempty"`

	// affinity replaces the default affinity, which prefers spreading members across nodes.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Affinity",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// tolerations of every member pod.
	// +listType=atomic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Tolerations",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// nodeSelector of every member pod.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Node Selector",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:selector:core:v1:Node"}
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// priorityClassName of every member pod.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Priority Class",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:text"}
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// topologySpreadConstraints of every member pod, replacing the default: no node gets a
	// second member while a node the member may use and that takes pods has none
	// (kubernetes.io/hostname, DoNotSchedule, maxSkew 1), and members prefer separate zones
	// (topology.kubernetes.io/zone, ScheduleAnyway). The default applies to pods made from
	// then on and restarts no running member. The operator fills in the label selector
	// when a constraint has none.
	// +listType=atomic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Topology Spread Constraints",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
}

// TLSMode is how an etcd cluster's traffic is secured.
// +kubebuilder:validation:Enum=OperatorCA;CertManager;Secrets;Disabled
type TLSMode string

const (
	// TLSModeOperatorCA secures peer and client traffic with certificates from a
	// certificate authority the operator creates for the cluster (Secret <name>-ca).
	TLSModeOperatorCA TLSMode = "OperatorCA"
	// TLSModeCertManager secures peer and client traffic with certificates that
	// cert-manager issues from the Issuer or ClusterIssuer named in tls.certManager; the
	// operator creates the Certificate objects.
	TLSModeCertManager TLSMode = "CertManager"
	// TLSModeSecrets secures peer and client traffic with certificates the user provides in
	// Secrets (tls.secrets), issued by the user's own CA.
	TLSModeSecrets TLSMode = "Secrets"
	// TLSModeDisabled serves peer and client traffic in plain text. Anyone who can reach
	// the pods can read and write every key: use it only for tests.
	TLSModeDisabled TLSMode = "Disabled"
)

// AuthSpec is etcd's authentication. With it on, etcd knows each client by the common name
// (CN) of its client certificate and lets it do only what the roles of the etcd user of
// that name allow; a client whose name is no user may read and write no key. No password is
// stored anywhere: every user the operator makes has none, and can only be a certificate.
//
// Turning it on, the operator makes etcd's user root, and the users named by the client
// certificate (status.clientSecret) and by the members' own certificate, each with the root
// role, before it enables authentication: the operator, backups, the members' etcdctl and
// whoever holds status.clientSecret keep full access. Turning it off disables
// authentication and keeps the users and roles. Both happen on the running cluster, with no
// restart; status.auth says what etcd reports, and the cluster is Progressing until it
// reports what the spec asks. Auth needs TLS (tls.mode other than Disabled) and etcd's own
// compaction (etcd.autoCompactionRetention not zero), since clients without the root role
// cannot compact.
type AuthSpec struct {
	// enabled turns etcd's authentication on. Off by default.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled bool `json:"enabled,omitempty"`
}

// HibernationSpec stops a cluster's members while keeping their data (spec.hibernation).
// While the cluster hibernates the operator changes nothing else: no member is replaced,
// no quorum recovered, no maintenance run, and its EtcdBackupSchedules take no backups.
type HibernationSpec struct {
	// enabled stops the members (true) or brings them back (false, the default).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Enabled",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Enabled bool `json:"enabled,omitempty"`

	// backupDestination is where the final backup goes before the members stop: the
	// operator creates an EtcdBackup of the cluster there, named
	// <cluster>-hibernation-<metadata.generation>, and stops the first member only once it
	// succeeded. Like any EtcdBackup it is kept after the cluster, and a new cluster can
	// start from it (bootstrap.restore.backupName). A failed final backup stops the
	// hibernation (Degraded/HibernationBlocked) until it is deleted. When unset, no backup
	// is taken: the members' claims hold the data.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Final Backup Destination",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced"}
	BackupDestination *BackupDestination `json:"backupDestination,omitempty"`
}

// AuthStatus is etcd's authentication as etcd reports it.
type AuthStatus struct {
	// enabled is true when etcd reported its authentication on.
	Enabled bool `json:"enabled"`
	// rootUsers are the etcd users the operator gave the root role, as etcd listed their
	// roles when it last looked (on each change of spec.auth): the users of the client, the
	// members' and root, while auth is on.
	// +optional
	// +listType=set
	RootUsers []string `json:"rootUsers,omitempty"`
}

// TLSSpec selects how an etcd cluster's traffic is secured.
//
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'Secrets') == has(self.secrets)",message="tls.secrets is required when tls.mode is Secrets, and allowed only then"
// +kubebuilder:validation:XValidation:rule="(has(self.mode) && self.mode == 'CertManager') == has(self.certManager)",message="tls.certManager is required when tls.mode is CertManager, and allowed only then"
type TLSSpec struct {
	// mode is how peer and client traffic is secured: OperatorCA (the default: TLS with
	// certificates from a CA the operator creates for this cluster, and client
	// certificates required), CertManager (TLS with certificates cert-manager issues from
	// the issuer in tls.certManager), Secrets (TLS with certificates you provide in
	// tls.secrets), or Disabled (plain text, for tests only). It cannot be changed after the cluster is
	// created.
	// +kubebuilder:default=OperatorCA
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="tls.mode cannot be changed after the cluster is created; create a new cluster and restore a backup into it"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="TLS Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:OperatorCA","urn:alm:descriptor:com.tectonic.ui:select:CertManager","urn:alm:descriptor:com.tectonic.ui:select:Secrets","urn:alm:descriptor:com.tectonic.ui:select:Disabled"}
	Mode TLSMode `json:"mode,omitempty"`

	// certManager names the cert-manager issuer of the certificates, in mode CertManager.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="cert-manager"
	CertManager *CertManagerTLS `json:"certManager,omitempty"`

	// secrets names the Secrets holding your certificates, in mode Secrets.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Your Own Secrets"
	Secrets *TLSSecrets `json:"secrets,omitempty"`
}

// CertManagerTLS is where cert-manager gets the cluster's certificates from. cert-manager
// must be installed; the operator creates two Certificates, <name>-member and
// <name>-client, and waits for their Secrets. The issuer should be a CA dedicated to the
// cluster (for example a cert-manager CA Issuer), so that its certificates are valid for
// this cluster only.
type CertManagerTLS struct {
	// issuerRef is the Issuer (in the cluster's namespace) or ClusterIssuer to use.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer"
	IssuerRef IssuerReference `json:"issuerRef"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// name of the Issuer or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer Name",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Name string `json:"name"`

	// kind is Issuer (the default) or ClusterIssuer.
	// +kubebuilder:default=Issuer
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer Kind",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Issuer","urn:alm:descriptor:com.tectonic.ui:select:ClusterIssuer"}
	Kind string `json:"kind,omitempty"`

	// group of the issuer; cert-manager.io (the default) for cert-manager's own issuers.
	// +kubebuilder:default="cert-manager.io"
	// +kubebuilder:validation:MaxLength=253
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Issuer Group",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Group string `json:"group,omitempty"`
}

// TLSSecrets names the Secrets of a cluster in TLS mode Secrets. Each holds tls.crt, tls.key
// and ca.crt (the kubernetes.io/tls layout plus the CA), in the cluster's namespace.
type TLSSecrets struct {
	// memberSecretName is the Secret with the certificate every member serves clients and
	// peers with, and presents to its peers. It must be valid for server and client
	// authentication and cover *.<name>-peer.<namespace>.svc and
	// <name>-client.<namespace>.svc. Members accept as a peer any certificate from its CA:
	// use a CA dedicated to this cluster.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Member Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	MemberSecretName string `json:"memberSecretName"`

	// clientSecretName is the Secret with a client certificate from the same CA, which the
	// operator uses to manage the cluster and status.clientSecret names for clients.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Client Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	ClientSecretName string `json:"clientSecretName"`
}

// AutoCompactionMode is how etcd decides which revisions to compact.
// +kubebuilder:validation:Enum=periodic;revision
type AutoCompactionMode string

const (
	// AutoCompactionPeriodic keeps the history of the last retention period (a duration).
	AutoCompactionPeriodic AutoCompactionMode = "periodic"
	// AutoCompactionRevision keeps the last retention revisions (a count).
	AutoCompactionRevision AutoCompactionMode = "revision"
)

// EtcdOptions are the etcd settings that matter in production, typed and validated.
//
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionMode) || !has(self.autoCompactionRetention) || self.autoCompactionMode != 'periodic' || self.autoCompactionRetention.matches('^([0-9]+(\\\\.[0-9]+)?(h|m|s))+$')",message="etcd.autoCompactionRetention must be a duration such as 1h or 30m when autoCompactionMode is periodic"
// +kubebuilder:validation:XValidation:rule="!has(self.autoCompactionMode) || !has(self.autoCompactionRetention) || self.autoCompactionMode != 'revision' || self.autoCompactionRetention.matches('^[1-9][0-9]*$')",message="etcd.autoCompactionRetention must be a positive number of revisions such as 10000 when autoCompactionMode is revision"
// +kubebuilder:validation:XValidation:rule="!has(self.electionTimeoutMillis) || !has(self.heartbeatIntervalMillis) || self.electionTimeoutMillis >= 5 * self.heartbeatIntervalMillis",message="etcd.electionTimeoutMillis must be at least 5 times etcd.heartbeatIntervalMillis, or members start needless elections"
// +kubebuilder:validation:XValidation:rule="!has(self.timingProfile) || self.timingProfile == 'Custom' || ((!has(self.heartbeatIntervalMillis) || self.heartbeatIntervalMillis == 100) && (!has(self.electionTimeoutMillis) || self.electionTimeoutMillis == 1000))",message="etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis are set by etcd.timingProfile: leave them out, or set timingProfile to Custom"
// +kubebuilder:validation:XValidation:rule="!has(self.autoTimingWindow) || (has(self.timingProfile) && self.timingProfile == 'Auto')",message="etcd.autoTimingWindow applies only with etcd.timingProfile Auto"
type EtcdOptions struct {
	// autoCompactionMode is how old revisions are compacted: periodic (keep a time window
	// of history) or revision (keep a number of revisions).
	// +kubebuilder:default=periodic
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto-compaction Mode",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:select:periodic","urn:alm:descriptor:com.tectonic.ui:select:revision"}
	AutoCompactionMode AutoCompactionMode `json:"autoCompactionMode,omitempty"`

	// autoCompactionRetention is how much history to keep: a duration such as "1h" in
	// periodic mode, a number of revisions such as "10000" in revision mode.
	// +kubebuilder:default="1h"
	// +kubebuilder:validation:MaxLength=32
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto-compaction Retention",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:text"}
	AutoCompactionRetention string `json:"autoCompactionRetention,omitempty"`

	// quotaBackendBytes is the size at which etcd stops accepting writes (NOSPACE alarm).
	// etcd recommends at most 8Gi. It must be smaller than storage.size. When it is not
	// set it follows storage.size: half of it, at most 2Gi (2Gi with the default 4Gi
	// volume), so that the write-ahead log and snapshots fit beside the database.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('15Mi')) && quantity(string(self)).isLessThan(quantity('8Gi')) || quantity(string(self)).compareTo(quantity('8Gi')) == 0",message="etcd.quotaBackendBytes must be between 16Mi and 8Gi"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backend Quota",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:text"}
	QuotaBackendBytes *resource.Quantity `json:"quotaBackendBytes,omitempty"`

	// snapshotCount is the number of committed transactions after which a member takes a
	// snapshot to disk and can release its in-memory log.
	// +kubebuilder:default=10000
	// +kubebuilder:validation:Minimum=100
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Snapshot Count",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:number"}
	SnapshotCount int64 `json:"snapshotCount,omitempty"`

	// heartbeatIntervalMillis is how often, in milliseconds, the leader tells followers it
	// is alive. Set it near the round-trip time between members.
	// +kubebuilder:default=100
	// +kubebuilder:validation:Minimum=10
	// +kubebuilder:validation:Maximum=5000
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Heartbeat Interval (ms)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:number"}
	HeartbeatIntervalMillis int32 `json:"heartbeatIntervalMillis,omitempty"`

	// electionTimeoutMillis is how long, in milliseconds, a follower waits without a
	// heartbeat before it calls an election. At least 5 times heartbeatIntervalMillis.
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=50
	// +kubebuilder:validation:Maximum=50000
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Election Timeout (ms)",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:number"}
	ElectionTimeoutMillis int32 `json:"electionTimeoutMillis,omitempty"`

	// timingProfile chooses the raft timing (heartbeat interval and election timeout):
	// Custom (the default) uses heartbeatIntervalMillis and electionTimeoutMillis;
	// Standard is etcd's own 100 ms and 1000 ms; Slower is 500 ms and 2500 ms, for members
	// far apart or on slow networks; Auto measures the round trip between the members
	// (etcd's peer round-trip histogram, every member's, over autoTimingWindow) and sets
	// the heartbeat near its 99th percentile (never below 100 ms) and the election timeout
	// at ten times that (at most 50 s). Auto changes the timing only when the measured
	// round trip leaves a wide band around the value in force (raised from 1.5 times,
	// lowered at half, at most once per window), so noise never restarts members; each
	// change is rolled out one member at a time. status.raftTiming shows the values set
	// and why. With any profile but Custom, heartbeatIntervalMillis and
	// electionTimeoutMillis must be left at their defaults.
	// +kubebuilder:default=Custom
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Raft Timing Profile",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:select:Custom","urn:alm:descriptor:com.tectonic.ui:select:Standard","urn:alm:descriptor:com.tectonic.ui:select:Slower","urn:alm:descriptor:com.tectonic.ui:select:Auto"}
	TimingProfile TimingProfile `json:"timingProfile,omitempty"`

	// autoTimingWindow is, with timingProfile Auto, how long the round trips are measured
	// before the timing is changed, and the least time between two changes (10m by
	// default; from 1m to 24h).
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('24h')",message="etcd.autoTimingWindow must be between 1m and 24h"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Auto Timing Window",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:advanced","urn:alm:descriptor:com.tectonic.ui:text"}
	AutoTimingWindow *metav1.Duration `json:"autoTimingWindow,omitempty"`
}

// TimingProfile chooses how the raft timing of the members is set.
// +kubebuilder:validation:Enum=Custom;Standard;Slower;Auto
type TimingProfile string

const (
	// TimingCustom uses etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis.
	TimingCustom TimingProfile = "Custom"
	// TimingStandard is etcd's default: heartbeat 100 ms, election timeout 1000 ms.
	TimingStandard TimingProfile = "Standard"
	// TimingSlower is heartbeat 500 ms, election timeout 2500 ms.
	TimingSlower TimingProfile = "Slower"
	// TimingAuto sets the timing from the round trip the members measure.
	TimingAuto TimingProfile = "Auto"
)

// StorageAutoscalingMode says whether the operator raises the quota and grows the volumes.
// +kubebuilder:validation:Enum=Disabled;Auto
type StorageAutoscalingMode string

const (
	// StorageAutoscalingDisabled leaves etcd.quotaBackendBytes and storage.size as they are.
	StorageAutoscalingDisabled StorageAutoscalingMode = "Disabled"
	// StorageAutoscalingAuto raises the quota, and grows the claims, before the data
	// reaches the quota, up to the ceilings.
	StorageAutoscalingAuto StorageAutoscalingMode = "Auto"
)

// StorageAutoscalingSpec lets the operator give the members more room before they run out.
//
// With mode Auto the operator watches each member's database file, which etcd refuses
// writes on: once one is at 75% of the quota in force, or the largest grows fast enough to
// reach it within 6 hours (a trend over the last 4 hours), the quota is raised, unless
// maintenance defragments that member first down to data in use under 75% (its free pages
// are for defragmentation to give back). Then the quota rises by half, or until the file
// fills half of it, or to what lasts 12 hours at the trend, whichever is most (in steps of
// 64Mi), one member restarted at a time. A quota must leave room on the volume: twice the
// quota (a defragmentation or a snapshot from the leader writes a second copy of the
// database) plus 512Mi for the write-ahead log must fit in 90% of it. When the next quota
// does not fit and the claims' StorageClass allows expansion, the claims are grown first
// (in whole Gi, up to maxSize), one at a time. Nothing is ever made smaller. The quota and
// volume size in force are in status.storage; they are at least etcd.quotaBackendBytes and
// storage.size. When a ceiling stops the growth while a file is past the threshold, the
// cluster is Degraded/StorageCeilingReached. Setting the mode back to Disabled returns to
// etcd.quotaBackendBytes and storage.size: copy status.storage's values there first to keep
// them.
type StorageAutoscalingSpec struct {
	// mode is Disabled (the default) or Auto.
	// +kubebuilder:default=Disabled
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Storage Autoscaling",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Disabled","urn:alm:descriptor:com.tectonic.ui:select:Auto"}
	Mode StorageAutoscalingMode `json:"mode,omitempty"`

	// maxQuotaBackendBytes is the highest quota the operator sets (8Gi by default, etcd's
	// recommended maximum; at most 8Gi).
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('15Mi')) && (quantity(string(self)).isLessThan(quantity('8Gi')) || quantity(string(self)).compareTo(quantity('8Gi')) == 0)",message="storage.autoscaling.maxQuotaBackendBytes must be between 16Mi and 8Gi"
	// +optional
	MaxQuotaBackendBytes *resource.Quantity `json:"maxQuotaBackendBytes,omitempty"`

	// maxSize is the largest the operator grows each member's volume to; unset, volumes
	// keep storage.size and only the quota is raised within them.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('63Mi'))",message="storage.autoscaling.maxSize must be at least 64Mi"
	// +optional
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster, written only by the operator.
type EtcdClusterStatus struct {
	// observedGeneration is the metadata.generation of the spec that is in force: the last
	// reconcile succeeded and every member runs that spec, at the desired size and version.
	// It lags metadata.generation while a change is rolled out, so that a change counts as
	// done (kubectl wait, GitOps health checks) only once it is done.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation",xDescriptors={"urn:alm:descriptor:text"}
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the cluster: Available, Progressing, Degraded, and Ready as
	// their summary.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// members are the etcd members, as the cluster itself reports them.
	// +listType=map
	// +listMapKey=name
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Members"
	Members []MemberStatus `json:"members,omitempty"`

	// currentVersion is the lowest etcd version its members run (see members[].version):
	// it reaches an upgrade's version only once every member has answered with it.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Current Version",xDescriptors={"urn:alm:descriptor:text"}
	CurrentVersion string `json:"currentVersion,omitempty"`

	// readyMembers is the number of voting members that are healthy and whose pods are
	// Ready, so that the client Service sends clients to them.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Ready Members",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	ReadyMembers int32 `json:"readyMembers,omitempty"`

	// updatedMembers is the number of members whose pods run the desired etcd version and
	// the current spec, and that answered with that version in the last observation. A change of the spec that shapes member pods (resources,
	// podTemplate scheduling, etcd options, TLS secrets) is rolled out until it equals
	// spec.size.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Updated Members",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:podCount"}
	UpdatedMembers int32 `json:"updatedMembers,omitempty"`

	// selector selects the member pods (for the scale subresource).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Pod Selector",xDescriptors={"urn:alm:descriptor:text"}
	Selector string `json:"selector,omitempty"`

	// clientService is the name of the Service clients connect to (port 2379).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Client Service",xDescriptors={"urn:alm:descriptor:io.kubernetes:Service"}
	ClientService string `json:"clientService,omitempty"`

	// clientSecret is the name of the Secret with a client certificate (tls.crt, tls.key)
	// and the CA certificates the cluster trusts (ca.crt: two while its CA is rotated).
	// Empty when TLS is disabled.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Client Certificate Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	ClientSecret string `json:"clientSecret,omitempty"`

	// upgrade is the etcd version upgrade under way, or the last one, until the next starts.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Upgrade"
	Upgrade *UpgradeStatus `json:"upgrade,omitempty"`

	// caRotation is the cluster's CA (tls.mode OperatorCA): when it expires, and where its
	// rotation stands. Annotate the EtcdCluster with etcd.etcdpilot.io/rotate-ca set to a new
	// value to rotate it; the operator also rotates it a year before it expires.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="CA Rotation"
	CARotation *CARotationStatus `json:"caRotation,omitempty"`

	// tls is the certificates the members and the clients use, as the operator last read
	// them from their Secrets (every TLS mode but Disabled): when each stops being valid.
	// A pass that could not read the Secrets, or refused them, leaves it as it was.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="TLS Certificates"
	TLS *TLSStatus `json:"tls,omitempty"`

	// maintenance is what the operator's maintenance (spec.maintenance) decided in its
	// last pass, and when the last scheduled defragmentation run completed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Maintenance"
	Maintenance *MaintenanceStatus `json:"maintenance,omitempty"`

	// auth is etcd's authentication as etcd last reported it; absent until the operator
	// asked.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Authentication"
	Auth *AuthStatus `json:"auth,omitempty"`

	// raftTiming is the raft timing the operator sets for the members (etcd.timingProfile),
	// what it measured and why; members run it once updatedMembers equals spec.size.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Raft Timing"
	RaftTiming *RaftTimingStatus `json:"raftTiming,omitempty"`

	// storage is the quota and volume size the operator sets for the members with
	// storage.autoscaling, and why.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Storage"
	Storage *StorageStatus `json:"storage,omitempty"`

	// consistency is the outcome of the operator's last consistency check
	// (spec.consistencyCheck); absent until one ran.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Consistency"
	Consistency *ConsistencyStatus `json:"consistency,omitempty"`

	// recovery is the quorum loss under way, or the last one, until the next
	// (spec.quorumLossRecovery); absent while the cluster never lost its quorum.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Quorum Loss Recovery"
	Recovery *RecoveryStatus `json:"recovery,omitempty"`
}

// RecoveryPhase is where the recovery from a lost quorum stands.
type RecoveryPhase string

const (
	// RecoveryQuorumLost the quorum is lost, not yet for spec.quorumLossRecovery.after.
	RecoveryQuorumLost RecoveryPhase = "QuorumLost"
	// RecoveryAwaitingApproval the loss is declared and the recovery waits for the
	// approval annotation.
	RecoveryAwaitingApproval RecoveryPhase = "AwaitingApproval"
	// RecoveryBlocked the loss is declared but no member can be recovered from.
	RecoveryBlocked RecoveryPhase = "Blocked"
	// RecoveryRecovering the snapshot is saved, the lost members are removed and the
	// survivor starts alone from the snapshot.
	RecoveryRecovering RecoveryPhase = "Recovering"
	// RecoveryGrowing the survivor serves alone; the cluster grows back with learners.
	RecoveryGrowing RecoveryPhase = "Growing"
	// RecoverySucceeded the cluster is back at spec.size.
	RecoverySucceeded RecoveryPhase = "Succeeded"
)

// RecoveryStatus is a quorum loss and its recovery.
type RecoveryStatus struct {
	// phase is QuorumLost, AwaitingApproval, Blocked, Recovering, Growing or Succeeded.
	Phase RecoveryPhase `json:"phase"`
	// lostSince is when the quorum was first seen lost.
	LostSince metav1.Time `json:"lostSince"`
	// id names the declared loss: the value of the approval annotation
	// etcd.etcdpilot.io/approve-recovery. Empty until the loss is declared.
	// +optional
	ID string `json:"id,omitempty"`
	// survivor is the member the cluster is recovered from, and survivorAppliedIndex the
	// raft index it had applied when it was chosen; recovering from a backup, the member
	// that restores it, once created.
	// +optional
	Survivor string `json:"survivor,omitempty"`
	// +optional
	SurvivorAppliedIndex int64 `json:"survivorAppliedIndex,omitempty"`
	// backup is the EtcdBackup the cluster is recovered from when no member survives (no
	// member answers, or the members' data is ephemeral); empty when a member survives.
	// +optional
	Backup string `json:"backup,omitempty"`
	// lostMembers are the voting members that did not answer when the loss was declared.
	// +optional
	// +listType=atomic
	LostMembers []string `json:"lostMembers,omitempty"`
	// approved is true once the recovery may go on: approved by the annotation, or
	// automatic.
	// +optional
	Approved bool `json:"approved,omitempty"`
	// snapshot is where the snapshot of the survivor was saved, on its volume, once saved.
	// It is kept after the recovery; delete it by hand when it is no longer wanted.
	// +optional
	Snapshot string `json:"snapshot,omitempty"`
	// revisionBump is what every revision was raised by.
	// +optional
	RevisionBump int64 `json:"revisionBump,omitempty"`
	// completionTime is when the cluster was back at spec.size.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// message says what was found and what happens next.
	// +optional
	Message string `json:"message,omitempty"`
}

// ConsistencyStatus is the outcome of the last consistency check.
type ConsistencyStatus struct {
	// lastCheckTime is when the members' hashes were last compared.
	LastCheckTime metav1.Time `json:"lastCheckTime"`
	// revision is the revision the compared hashes cover.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// result is Consistent (the members that answered agree, and they are a majority),
	// Mismatch (suspects differ from a majority that agrees) or Inconclusive (nothing can
	// be told: too few comparable answers, or no majority agrees; nothing is changed).
	Result string `json:"result"`
	// suspects are the members whose data differs from the majority's: fenced, and in mode
	// Replace replaced one at a time.
	// +optional
	// +listType=atomic
	Suspects []SuspectMember `json:"suspects,omitempty"`
	// message says what was found.
	// +optional
	Message string `json:"message,omitempty"`
}

// SuspectMember is a member whose data differs from the majority's.
type SuspectMember struct {
	// name is the member's name.
	Name string `json:"name"`
	// id is its etcd member ID, in hexadecimal as etcdctl prints it: the replacement that
	// takes its place has another.
	ID string `json:"id"`
}

// RaftTimingStatus is the raft timing the operator sets, and why.
type RaftTimingStatus struct {
	// profile is the etcd.timingProfile this was decided under.
	Profile TimingProfile `json:"profile"`
	// heartbeatIntervalMillis is the heartbeat interval set for the members, in ms.
	HeartbeatIntervalMillis int32 `json:"heartbeatIntervalMillis"`
	// electionTimeoutMillis is the election timeout set for the members, in ms.
	ElectionTimeoutMillis int32 `json:"electionTimeoutMillis"`
	// measuredRoundTripMillis is, with profile Auto, the 99th percentile of the round
	// trips between members over the last window, in ms: etcd's peer probes, rounded up
	// to the bucket etcd counts them in, divided by the round trips a probe takes (3 with
	// TLS, 2 without); absent until enough were reported.
	// +optional
	MeasuredRoundTripMillis *int32 `json:"measuredRoundTripMillis,omitempty"`
	// lastChangeTime is when Auto last changed the timing.
	// +optional
	LastChangeTime *metav1.Time `json:"lastChangeTime,omitempty"`
	// reason is why the timing is what it is, in one word: Custom or Profile (not Auto);
	// with Auto: Measuring, TooFewSamples, WithinBand, RecentlyChanged, NotSustained (a
	// rise that did not last the whole window), Raised or Lowered.
	Reason string `json:"reason,omitempty"`
	// message says the same for people, with the figures.
	Message string `json:"message,omitempty"`
}

// StorageStatus is the quota and volume size the operator's storage autoscaling sets.
type StorageStatus struct {
	// quotaBackendBytes is the quota set for the members (at least etcd.quotaBackendBytes).
	// +optional
	QuotaBackendBytes *resource.Quantity `json:"quotaBackendBytes,omitempty"`
	// size is the volume size set for the members' claims (at least storage.size).
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`
	// lastChangeTime is when the autoscaling last raised the quota or grew the volumes.
	// +optional
	LastChangeTime *metav1.Time `json:"lastChangeTime,omitempty"`
	// reason is what the last pass decided, in one word: BelowThreshold (nothing to do),
	// DefragmentationPending (a file at the threshold is defragmented first), NearQuota or
	// FullSoon (why the quota was raised or the volumes grown), QuotaCeiling, VolumeCeiling
	// or VolumeNotExpandable (nothing more can grow).
	Reason string `json:"reason,omitempty"`
	// message says the same for people, with the sizes and the growth trend.
	Message string `json:"message,omitempty"`
}

// AnnotationDefragmentAt on an EtcdCluster asks for a defragmentation of its members, in any
// defragmentation mode and whatever their fragmentation: its value is a time (RFC 3339),
// and every member (or each one AnnotationDefragmentMembers names) not defragmented since
// then is defragmented once that time has come, one at a time, the leader last, while every
// member is healthy. A request is done when each member's
// status.members[].lastDefragmentation is at or after it; the annotation may stay.
// kubectl etcdpilot defragment writes the current time.
const AnnotationDefragmentAt = "etcd.etcdpilot.io/defragment-at"

// AnnotationDefragmentMembers limits the request of AnnotationDefragmentAt to the members
// it names, separated by commas.
const AnnotationDefragmentMembers = "etcd.etcdpilot.io/defragment-members"

// AnnotationRotateCA on an EtcdCluster (tls.mode OperatorCA) asks for a rotation of its CA:
// each new value starts one (a date or a ticket number does well). The value that started
// the last rotation is status.caRotation.request.
const AnnotationRotateCA = "etcd.etcdpilot.io/rotate-ca"

// CARotationStatus is the cluster's CA and the rotation of it, as read from its Secret.
type CARotationStatus struct {
	// phase is where a rotation stands: TrustingNew (members and clients trust the old
	// and the new CA; certificates are still issued by the old), ServingNew (certificates
	// are issued by the new CA; the old is still trusted), DroppingOld (only the new CA is
	// trusted). Each phase is rolled out to every member before the next. Empty when no
	// rotation runs.
	// +optional
	// +kubebuilder:validation:Enum=TrustingNew;ServingNew;DroppingOld
	Phase string `json:"phase,omitempty"`

	// phaseSince is when the current phase began.
	// +optional
	PhaseSince *metav1.Time `json:"phaseSince,omitempty"`

	// request is the value of the etcd.etcdpilot.io/rotate-ca annotation that started the
	// last rotation; with an empty phase, that rotation is complete.
	// +optional
	Request string `json:"request,omitempty"`

	// caNotAfter is when the CA that issues the cluster's certificates expires.
	// +optional
	CANotAfter *metav1.Time `json:"caNotAfter,omitempty"`
}

// TLSStatus is the certificates the members and the clients use.
type TLSStatus struct {
	// certificates are the member certificate (in tls.crt of the member Secret, which every
	// member serves clients and peers with) and the client certificate (of the client
	// Secret, status.clientSecret), one entry for each Secret.
	// +listType=map
	// +listMapKey=secret
	// +optional
	Certificates []CertificateStatus `json:"certificates,omitempty"`
}

// CertificateStatus is a certificate in a TLS Secret and when it stops being valid.
type CertificateStatus struct {
	// secret is the name of the Secret, in the cluster's namespace.
	Secret string `json:"secret"`

	// notAfter is when the certificate (tls.crt) stops being valid: when it expires, or
	// when the CA in the member Secret's ca.crt that issued it expires, whichever comes
	// first. The operator renews the certificates it issues (tls.mode OperatorCA) 30 days
	// before, and asks cert-manager to renew (CertManager) 30 days before too; in mode
	// Secrets, renewing them is yours.
	NotAfter metav1.Time `json:"notAfter"`
}

// UpgradeStatus records an etcd version upgrade.
type UpgradeStatus struct {
	// fromVersion is the version the members ran when the upgrade started.
	FromVersion string `json:"fromVersion"`

	// toVersion is the version the upgrade goes to (spec.version when it started).
	ToVersion string `json:"toVersion"`

	// startedAt is when the upgrade started (its snapshot, then the first restart).
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// snapshot is the snapshot taken before the first member was restarted.
	// +optional
	Snapshot *UpgradeSnapshot `json:"snapshot,omitempty"`

	// raftSnapshotsForcedAt is when the operator made every member take a raft snapshot
	// before the first restart, by appending no-op entries to the log: etcd 3.7 cannot
	// replay log entries that etcd 3.5 wrote, so an upgrade to 3.7 needs it.
	// +optional
	RaftSnapshotsForcedAt *metav1.Time `json:"raftSnapshotsForcedAt,omitempty"`

	// completedAt is when every member ran toVersion, healthy.
	// +optional
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// rolledBack is set when a member did not become healthy at toVersion within
	// spec.memberUpgradeTimeout and was put back on fromVersion; the upgrade stopped there.
	// +optional
	RolledBack *UpgradeRollback `json:"rolledBack,omitempty"`
}

// UpgradeSnapshot is where the snapshot taken before an upgrade is: an EtcdBackup, or a
// file on a member's volume.
type UpgradeSnapshot struct {
	// backup is the EtcdBackup that holds the snapshot, with spec.upgradeBackupDestination.
	// +optional
	Backup string `json:"backup,omitempty"`

	// member is the member whose volume holds the snapshot (its PVC <member>-data), without
	// spec.upgradeBackupDestination.
	// +optional
	Member string `json:"member,omitempty"`

	// path is the snapshot file in the member's container; the volume is mounted at
	// /var/lib/etcd. Copy it out with kubectl cp, restore it with etcdutl snapshot restore.
	// +optional
	Path string `json:"path,omitempty"`

	// takenAt is when the snapshot was saved.
	TakenAt metav1.Time `json:"takenAt"`
}

// UpgradeRollback says which member's upgrade was undone, and why.
type UpgradeRollback struct {
	// member is the member that was put back on the previous version.
	Member string `json:"member"`

	// reason says what went wrong at the new version.
	Reason string `json:"reason"`

	// at is when the rollback was decided.
	At metav1.Time `json:"at"`
}

// MaintenanceStatus is what the operator's maintenance decided and did.
type MaintenanceStatus struct {
	// reason is what the last pass decided, in one word: for example BelowThresholds,
	// Fragmented (a member is being defragmented), NoSpaceCompact, NoSpaceDisarm,
	// CorruptAlarm (everything deferred), MemberUnhealthy (waiting).
	Reason string `json:"reason,omitempty"`
	// message says the same for people: which member, and why.
	Message string `json:"message,omitempty"`
	// lastScheduledRun is when the last scheduled defragmentation run (mode Schedule)
	// completed: every member defragmented or with nothing to give back.
	// +optional
	LastScheduledRun *metav1.Time `json:"lastScheduledRun,omitempty"`
}

// DefragmentationRecord is one defragmentation of a member by the operator.
type DefragmentationRecord struct {
	// time is when the defragmentation completed.
	Time metav1.Time `json:"time"`
	// sizeBefore is the member's database file size, in bytes, before it.
	SizeBefore int64 `json:"sizeBefore"`
	// sizeAfter is the member's database file size, in bytes, right after it, as the member
	// reported it.
	SizeAfter int64 `json:"sizeAfter"`
}

// MemberStatus is one etcd member as observed by the operator.
type MemberStatus struct {
	// name is the member's name, which is also the name of its pod and PVC.
	Name string `json:"name"`

	// id is the etcd member ID, in hexadecimal as etcdctl prints it.
	// +optional
	ID string `json:"id,omitempty"`

	// peerURL is the URL other members reach this member on.
	// +optional
	PeerURL string `json:"peerURL,omitempty"`

	// clientURL is the URL clients reach this member on.
	// +optional
	ClientURL string `json:"clientURL,omitempty"`

	// node is the node the member's pod runs on, as its pod says; empty while the pod is
	// not placed, or when the member has no pod.
	// +optional
	Node string `json:"node,omitempty"`

	// zone is the topology.kubernetes.io/zone label of that node; empty when the node has
	// none or could not be read.
	// +optional
	Zone string `json:"zone,omitempty"`

	// leader is true for the current raft leader.
	// +optional
	Leader bool `json:"leader,omitempty"`

	// learner is true while the member is a non-voting learner catching up.
	// +optional
	Learner bool `json:"learner,omitempty"`

	// healthy is true when the member answered a health check in the last reconcile.
	// +optional
	Healthy bool `json:"healthy,omitempty"`

	// unhealthySince is when the operator first saw this started member unhealthy, in the
	// stretch that is still going on; empty while it is healthy. A voting member unhealthy
	// for longer than spec.replaceUnhealthyMemberAfter is replaced.
	// +optional
	UnhealthySince *metav1.Time `json:"unhealthySince,omitempty"`

	// version is the etcd version the member runs: the one it reported when it last
	// answered, or, until it has answered once, its pod's. A member restarting into a new
	// version counts with the version it last ran until it answers with the new one.
	// +optional
	Version string `json:"version,omitempty"`

	// dbSize is the size of the member's database file in bytes.
	// +optional
	DBSize int64 `json:"dbSize,omitempty"`

	// dbSizeInUse is the part of dbSize that holds data, in bytes; the rest is free pages
	// that only a defragmentation returns to the file system.
	// +optional
	DBSizeInUse int64 `json:"dbSizeInUse,omitempty"`

	// fragmentationPercent is the share of dbSize that is free pages (0 to 100).
	// +optional
	FragmentationPercent int32 `json:"fragmentationPercent,omitempty"`

	// raftIndexLag is how many raft entries this member is behind the member with the
	// highest raft index, as both reported in the same reconcile.
	// +optional
	RaftIndexLag int64 `json:"raftIndexLag,omitempty"`

	// alarms are the alarms raised on this member: NOSPACE (its database reached the
	// quota; the cluster refuses writes) or CORRUPT (its data differs from the others').
	// +listType=set
	// +optional
	Alarms []string `json:"alarms,omitempty"`

	// lastDefragmentation is the operator's last defragmentation of this member.
	// +optional
	LastDefragmentation *DefragmentationRecord `json:"lastDefragmentation,omitempty"`
}

// EtcdCluster is an etcd cluster managed by etcdpilot.
//
// The upgrade rule: spec.version moves along the upgrade path (internal/versions.Upgrades,
// written here by hack/versions), from the old spec and from what the members run.
//
// +kubebuilder:validation:XValidation:rule="self.spec.version == oldSelf.spec.version || (has(self.status) && has(self.status.currentVersion) && self.spec.version == self.status.currentVersion) || ([['3.5.35','3.6.15'],['3.5.35','3.6.16'],['3.6.15','3.6.16'],['3.6.15','3.7.2'],['3.6.15','3.7.3'],['3.6.16','3.6.15'],['3.6.16','3.7.2'],['3.6.16','3.7.3'],['3.7.2','3.7.3'],['3.7.3','3.7.2']].exists(p, p[0] == oldSelf.spec.version && p[1] == self.spec.version) && (!has(self.status) || !has(self.status.currentVersion) || self.status.currentVersion == oldSelf.spec.version || [['3.5.35','3.6.15'],['3.5.35','3.6.16'],['3.6.15','3.6.16'],['3.6.15','3.7.2'],['3.6.15','3.7.3'],['3.6.16','3.6.15'],['3.6.16','3.7.2'],['3.6.16','3.7.3'],['3.7.2','3.7.3'],['3.7.3','3.7.2']].exists(p, p[0] == self.status.currentVersion && p[1] == self.spec.version)))",messageExpression="'spec.version cannot change from ' + oldSelf.spec.version + ' to ' + self.spec.version + (has(self.status) && has(self.status.currentVersion) ? ' while members run ' + self.status.currentVersion + ':' : ':') + ' etcd is upgraded one minor release at a time (3.5 -> 3.6 -> 3.7), never skipping one and never back to an older minor, and moves freely between the patch releases of a minor (supported: 3.5.35; 3.6.15, 3.6.16; 3.7.2, 3.7.3); to cancel or retry an upgrade, set spec.version to status.currentVersion'"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 48",message="metadata.name must be at most 48 characters: member pod names, which add a suffix, must stay valid DNS labels"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.size,statuspath=.status.readyMembers,selectorpath=.status.selector
// +kubebuilder:resource:shortName=etcd,categories=etcdpilot
// +operator-sdk:csv:customresourcedefinitions:displayName="etcd Cluster",resources={{Pod,v1,""},{PersistentVolumeClaim,v1,""},{Service,v1,""},{Secret,v1,""},{PodDisruptionBudget,v1,""},{Event,v1,""}}
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyMembers`
// +kubebuilder:printcolumn:name="Updated",type=integer,JSONPath=`.status.updatedMembers`
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.currentVersion`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Available",type=string,JSONPath=`.status.conditions[?(@.type=="Available")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Nodes",type=string,priority=1,JSONPath=`.status.members[*].node`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the cluster.
	// +kubebuilder:default={}
	// +optional
	Spec EtcdClusterSpec `json:"spec,omitempty"`

	// status is the observed state of the cluster.
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
