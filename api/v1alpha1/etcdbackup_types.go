package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupDestination is where a backup's artifact is written: exactly one of pvc and s3.
//
// +kubebuilder:validation:XValidation:rule="has(self.pvc) != has(self.s3)",message="set exactly one of destination.pvc and destination.s3"
type BackupDestination struct {
	// pvc writes the artifact to a PersistentVolumeClaim in the backup's namespace.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="PersistentVolumeClaim"
	PVC *PVCDestination `json:"pvc,omitempty"`

	// s3 uploads the artifact to an S3-compatible object store.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="S3"
	S3 *S3Destination `json:"s3,omitempty"`
}

// PVCDestination is a directory on a PersistentVolumeClaim. Artifacts are written under
// <path>/<namespace>/<cluster>/.
type PVCDestination struct {
	// claimName is the PersistentVolumeClaim, in the backup's namespace. It must exist and
	// be mountable by the backup pod (ReadWriteOnce claims are mounted by one node at a
	// time).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	ClaimName string `json:"claimName"`

	// path is the directory inside the claim, relative to its root; empty means the root.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="path must be relative to the claim's root and must not contain '..'"
	// +optional
	Path string `json:"path,omitempty"`
}

// S3Bucket is a bucket of an S3-compatible object store and how to reach it.
type S3Bucket struct {
	// endpoint is the URL of the object store, with its scheme: "https://s3.eu-west-1.amazonaws.com"
	// or "http://minio.storage.svc:9000". Plain http sends the snapshot unencrypted: use it
	// only inside a trusted network.
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^https?://[^/?#]+/?$')",message="endpoint must be a URL with an http or https scheme and a host, and no path, for example https://s3.amazonaws.com"
	Endpoint string `json:"endpoint"`

	// bucket is the bucket name. It must exist.
	// +kubebuilder:validation:MinLength=3
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]*[a-z0-9]$`
	Bucket string `json:"bucket"`

	// region is the bucket's region; "us-east-1" when empty.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`

	// credentialsSecretName names a Secret in the backup's namespace with the keys
	// accessKeyID and secretAccessKey (and, optionally, sessionToken).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	CredentialsSecretName string `json:"credentialsSecretName"`

	// caSecretName names a Secret in the backup's namespace whose key ca.crt is the PEM CA
	// bundle that signed the endpoint's certificate, for a store with a private CA. When
	// empty, the system roots are trusted.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CASecretName string `json:"caSecretName,omitempty"`

	// forcePathStyle addresses the bucket in the URL path (https://host/bucket/key) rather
	// than as a subdomain (https://bucket.host/key). Most self-hosted stores need it.
	// +optional
	ForcePathStyle bool `json:"forcePathStyle,omitempty"`
}

// S3Destination is a key prefix in an S3 bucket. Artifacts are written under
// <prefix>/<namespace>/<cluster>/.
type S3Destination struct {
	S3Bucket `json:",inline"`

	// prefix is prepended to every object key; empty means the bucket's root.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/')",message="prefix must not start with '/'"
	// +optional
	Prefix string `json:"prefix,omitempty"`
}

// BackupDeletionPolicy says what happens to a backup's artifact when the EtcdBackup is
// deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type BackupDeletionPolicy string

const (
	// BackupDeletionPolicyRetain keeps the artifact when the EtcdBackup is deleted.
	BackupDeletionPolicyRetain BackupDeletionPolicy = "Retain"
	// BackupDeletionPolicyDelete deletes the artifact with the EtcdBackup.
	BackupDeletionPolicyDelete BackupDeletionPolicy = "Delete"
)

// BackupCompression is how a backup's snapshot is compressed before it is stored. It also
// ends the artifact's name: .db.zst, .db.gz or .db.
// +kubebuilder:validation:Enum=zstd;gzip;none
type BackupCompression string

const (
	// BackupCompressionZstd is Zstandard at its fastest level, encoding one block while the
	// next arrives: the smallest artifacts at the highest throughput, and the fastest to
	// decompress. The default.
	BackupCompressionZstd BackupCompression = "zstd"
	// BackupCompressionGzip is gzip at its fastest level, on one CPU: somewhat slower and
	// larger than zstd, readable by any gzip tool. Every backup was gzip before the
	// compression could be chosen.
	BackupCompressionGzip BackupCompression = "gzip"
	// BackupCompressionNone stores the snapshot as etcd sends it, a bbolt database file: no
	// CPU spent on compression, but every byte of the database is sent and stored.
	BackupCompressionNone BackupCompression = "none"
)

// EtcdBackupSpec says which cluster to back up, once, and where to.
//
// +kubebuilder:validation:XValidation:rule="self.clusterName == oldSelf.clusterName && self.destination == oldSelf.destination",message="clusterName and destination cannot be changed: a backup is taken once; create a new EtcdBackup instead"
type EtcdBackupSpec struct {
	// clusterName is the EtcdCluster to back up, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	ClusterName string `json:"clusterName"`

	// destination is where the compressed snapshot is written.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Destination"
	Destination BackupDestination `json:"destination"`

	// deletionPolicy says what happens to the artifact when this EtcdBackup is deleted:
	// Retain keeps it, Delete removes it first. Backups a schedule creates are always
	// Delete, so retention removes their artifacts.
	// +kubebuilder:default=Retain
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:Retain","urn:alm:descriptor:com.tectonic.ui:select:Delete"}
	DeletionPolicy BackupDeletionPolicy `json:"deletionPolicy,omitempty"`

	// timeout bounds the whole backup, from the backup pod's start to the artifact's
	// upload. Past it the backup is Failed with reason Timeout and nothing is left behind.
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="timeout must be at least 1m"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Timeout",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// compression is how the snapshot is compressed before it is stored; it also ends the
	// artifact's name. zstd (the default, .db.zst) is Zstandard at its fastest level: on
	// Kubernetes-like data it stores about 15 % of the snapshot's bytes, and it backs up and
	// restores faster than gzip. gzip (.db.gz) is gzip at its fastest level, on one CPU:
	// somewhat slower, about a third larger, readable by any gzip tool. none (.db) stores
	// the bbolt database file as it is:
	// no CPU spent on compression, but every byte is sent and stored, which is slowest
	// whenever the network or the store is the limit. A restore reads all three. It cannot
	// be changed.
	// +kubebuilder:default=zstd
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="compression cannot be changed: a backup is taken once; create a new EtcdBackup instead"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Compression",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:select:zstd","urn:alm:descriptor:com.tectonic.ui:select:gzip","urn:alm:descriptor:com.tectonic.ui:select:none","urn:alm:descriptor:com.tectonic.ui:advanced"}
	Compression BackupCompression `json:"compression,omitempty"`

	// verify proves the backup restorable once it succeeded: a Job restores the artifact
	// into a throwaway single etcd member (in the Job's pod, on loopback) and checks that
	// the artifact's SHA-256 is the one recorded, that the member starts, and that its
	// revision, its key count and its hash (etcd's HashKV, which reads every key-value) at
	// the backup's revision are what the backup recorded. The outcome is the Verified
	// condition and status.verification; a failure is a BackupVerificationFailed event and
	// makes the backup not Ready. Setting it on a backup that succeeded earlier verifies it
	// then, once.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Verify",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Verify bool `json:"verify,omitempty"`
}

// BackupVerification is what the verification of a backup found in the member restored
// from it.
type BackupVerification struct {
	// completedAt is when the verification ended, passed or failed.
	CompletedAt metav1.Time `json:"completedAt"`
	// restoredRevision is the revision of the member restored from the artifact.
	// +optional
	RestoredRevision int64 `json:"restoredRevision,omitempty"`
	// keys is how many keys that member held at the backup's revision.
	// +optional
	Keys *int64 `json:"keys,omitempty"`
	// kvHash is that member's HashKV at the backup's revision, in hex.
	// +optional
	KVHash string `json:"kvHash,omitempty"`
}

// BackupArtifact is the stored, compressed snapshot of a successful backup.
type BackupArtifact struct {
	// location names the artifact: s3://<bucket>/<key> or pvc://<claim>/<path>.
	Location string `json:"location"`
	// key is the object key (S3) or the path inside the claim (PVC).
	Key string `json:"key"`
	// compression is how the artifact was written: zstd, gzip or none (spec.compression;
	// gzip for backups taken before it could be chosen).
	Compression BackupCompression `json:"compression"`
	// sha256 is the hex SHA-256 of the artifact as stored (compressed). A restore refuses an
	// artifact whose checksum differs.
	SHA256 string `json:"sha256"`
	// size is the artifact's size in bytes, as stored.
	Size int64 `json:"size"`
	// snapshotSize is the size in bytes of the uncompressed etcd snapshot.
	SnapshotSize int64 `json:"snapshotSize"`
}

// BackupSnapshot says what the snapshot holds and where it came from.
type BackupSnapshot struct {
	// member is the etcd member the snapshot was streamed from.
	Member string `json:"member"`
	// memberID is that member's ID, in hex.
	MemberID string `json:"memberID,omitempty"`
	// revision is the etcd revision of the snapshot: every key at this revision is in it.
	Revision int64 `json:"revision"`
	// etcdVersion is the etcd release the member ran.
	EtcdVersion string `json:"etcdVersion"`
	// clusterID is the etcd cluster ID, in hex.
	ClusterID string `json:"clusterID,omitempty"`
	// keys is how many keys the cluster held at revision, read from the member the
	// snapshot came from; absent when it could not be read.
	// +optional
	Keys *int64 `json:"keys,omitempty"`
	// kvHash is that member's HashKV at revision, in hex, and hashCompactRevision the
	// compaction it started from: a verification compares the restored member's with it.
	// Absent when it could not be read.
	// +optional
	KVHash string `json:"kvHash,omitempty"`
	// +optional
	HashCompactRevision int64 `json:"hashCompactRevision,omitempty"`
}

// EtcdBackupStatus is the observed state of a backup.
type EtcdBackupStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Succeeded (Unknown while the backup runs, then True or False for good,
	// with the failure's reason), Ready (True once the artifact is stored, False again when
	// its verification failed) and, with spec.verify, Verified.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// startedAt is when the backup pod started.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Started At"
	StartedAt *metav1.Time `json:"startedAt,omitempty"`

	// completedAt is when the backup succeeded or failed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Completed At"
	CompletedAt *metav1.Time `json:"completedAt,omitempty"`

	// artifact is the stored snapshot; set only when the backup succeeded.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Artifact"
	Artifact *BackupArtifact `json:"artifact,omitempty"`

	// snapshot describes what was backed up; set only when the backup succeeded.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Snapshot"
	Snapshot *BackupSnapshot `json:"snapshot,omitempty"`

	// verification is what the verification (spec.verify) found, once it ended; the
	// Verified condition says whether it passed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Verification"
	Verification *BackupVerification `json:"verification,omitempty"`
}

// EtcdBackup is one backup of an EtcdCluster, taken once when it is created: a snapshot
// streamed from the healthiest member, compressed and written to a PVC or S3.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdbk,categories=etcdpilot
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it labels the backup's Job and pod"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].reason`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.snapshot.revision`
// +kubebuilder:printcolumn:name="Verified",type=string,JSONPath=`.status.conditions[?(@.type=="Verified")].status`
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.status.artifact.size`
// +kubebuilder:printcolumn:name="Location",type=string,JSONPath=`.status.artifact.location`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="etcd Backup",resources={{Job,v1,""},{Pod,v1,""}}
type EtcdBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdBackupSpec `json:"spec"`
	// +optional
	Status EtcdBackupStatus `json:"status,omitempty"`
}

// EtcdBackupList is a list of EtcdBackups.
//
// +kubebuilder:object:root=true
type EtcdBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackup `json:"items"`
}

// EtcdBackupTemplate is what a schedule puts in the spec of each backup it creates.
type EtcdBackupTemplate struct {
	// clusterName is the EtcdCluster to back up, in the same namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	ClusterName string `json:"clusterName"`

	// destination is where each backup's compressed snapshot is written.
	Destination BackupDestination `json:"destination"`

	// timeout bounds each backup (see EtcdBackup spec.timeout).
	// +kubebuilder:default="30m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="timeout must be at least 1m"
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`

	// compression of each backup (see EtcdBackup spec.compression): zstd, gzip or none.
	// +kubebuilder:default=zstd
	// +optional
	Compression BackupCompression `json:"compression,omitempty"`

	// verify proves each backup restorable once it succeeded (see EtcdBackup spec.verify);
	// the schedule's status keeps the newest verification's outcome.
	// +optional
	Verify bool `json:"verify,omitempty"`
}

// BackupRetention says which of a schedule's backups are kept. A backup is deleted, with
// its artifact, when it is beyond maxCount or older than maxAge; the newest successful
// backup is always kept, whatever the policy says.
//
// +kubebuilder:validation:XValidation:rule="has(self.maxCount) || has(self.maxAge)",message="retention needs maxCount, maxAge or both: without either, backups would pile up forever"
type BackupRetention struct {
	// maxCount is how many of the newest backups are kept, failed ones included.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	MaxCount *int32 `json:"maxCount,omitempty"`

	// maxAge deletes backups older than this ("168h" is a week).
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="retention.maxAge must be at least 1m"
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// EtcdBackupScheduleSpec is a cron schedule of backups and how many are kept.
type EtcdBackupScheduleSpec struct {
	// schedule is a cron expression in UTC: five fields (minute 0-59, hour 0-23,
	// day-of-month 1-31, month 1-12, day-of-week 0-6 with 0 Sunday), each "*", a number, a
	// range "a-b", a step "*/n" or "a-b/n", or a comma list of those; or one of @hourly,
	// @daily, @weekly, @monthly, @yearly. "0 */6 * * *" backs up every six hours.
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:XValidation:rule=`self.matches('^@(hourly|daily|midnight|weekly|monthly|yearly|annually)$') || self.matches('^(\\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|[0-5]?[0-9](-[0-5]?[0-9])?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|(0?[1-9]|1[0-2])(-(0?[1-9]|1[0-2]))?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|(0?[1-9]|1[0-2])(-(0?[1-9]|1[0-2]))?)(/(0?[1-9]|[1-9][0-9]))?)* (\\*|0?[0-6](-0?[0-6])?)(/(0?[1-9]|[1-9][0-9]))?(,(\\*|0?[0-6](-0?[0-6])?)(/(0?[1-9]|[1-9][0-9]))?)*$')`,message="schedule must be a cron expression of five fields in range (minute 0-59, hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-6), each *, n, a-b, */n, a-b/n or a comma list of those, for example \"0 */6 * * *\"; or one of @hourly, @daily, @weekly, @monthly, @yearly"
	// +kubebuilder:validation:XValidation:rule="self.findAll('[0-9]+-[0-9]+').all(r, int(r.split('-')[0]) <= int(r.split('-')[1]))",message="schedule: a range a-b must not end before it starts, for example 8-17 rather than 17-8"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Schedule",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:text"}
	Schedule string `json:"schedule"`

	// suspend stops creating backups; retention still applies.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Suspend",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	Suspend bool `json:"suspend,omitempty"`

	// retention says which backups are kept; the default keeps the newest 7.
	// +kubebuilder:default={maxCount: 7}
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Retention"
	Retention *BackupRetention `json:"retention,omitempty"`

	// backupTemplate is the spec of every backup the schedule creates. Those backups are
	// named <schedule>-<unix time of the run>, labelled etcd.etcdpilot.io/backup-schedule,
	// and have deletionPolicy Delete.
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Backup Template"
	BackupTemplate EtcdBackupTemplate `json:"backupTemplate"`
}

// EtcdBackupScheduleStatus is the observed state of a schedule.
type EtcdBackupScheduleStatus struct {
	// observedGeneration is the generation the status was computed for.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is True while the schedule runs and its last backup succeeded.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// lastScheduleTime is the run time of the last backup created.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Schedule Time"
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// nextScheduleTime is when the next backup will be created.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Next Schedule Time"
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// lastSuccessfulBackup names the newest backup that succeeded.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Backup"
	LastSuccessfulBackup string `json:"lastSuccessfulBackup,omitempty"`

	// lastSuccessfulTime is when that backup completed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Successful Time"
	LastSuccessfulTime *metav1.Time `json:"lastSuccessfulTime,omitempty"`

	// backups is the number of backups the schedule keeps now.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Backups"
	Backups int32 `json:"backups,omitempty"`

	// lastVerification is the newest verification of the schedule's backups that ended
	// (backupTemplate.verify): which backup, when, and whether it passed.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Last Verification"
	LastVerification *ScheduleVerification `json:"lastVerification,omitempty"`
}

// ScheduleVerification is the outcome of the verification of one of a schedule's backups.
type ScheduleVerification struct {
	// backup is the EtcdBackup that was verified.
	Backup string `json:"backup"`
	// completedAt is when its verification ended.
	CompletedAt metav1.Time `json:"completedAt"`
	// passed is true when the backup restored and matched what it recorded.
	Passed bool `json:"passed"`
	// reason and message say why it failed (the backup's Verified condition).
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
}

// EtcdBackupSchedule creates EtcdBackups of one cluster on a cron schedule and deletes
// old ones per its retention policy.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdbks,categories=etcdpilot
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it labels the backups the schedule creates"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.backupTemplate.clusterName`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Last Success",type=date,JSONPath=`.status.lastSuccessfulTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Backups",type=integer,JSONPath=`.status.backups`
// +operator-sdk:csv:customresourcedefinitions:displayName="etcd Backup Schedule",resources={{EtcdBackup,v1alpha1,""}}
type EtcdBackupSchedule struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdBackupScheduleSpec `json:"spec"`
	// +optional
	Status EtcdBackupScheduleStatus `json:"status,omitempty"`
}

// EtcdBackupScheduleList is a list of EtcdBackupSchedules.
//
// +kubebuilder:object:root=true
type EtcdBackupScheduleList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdBackupSchedule `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdBackup{}, &EtcdBackupList{}, &EtcdBackupSchedule{}, &EtcdBackupScheduleList{})
}
