package v1alpha1

// Condition types of an EtcdCluster. Each is True in its normal state except Degraded and
// Progressing, which are True when something is wrong or under way.
const (
	// ConditionAvailable is True when a quorum of voting members is healthy, so the cluster
	// serves reads and writes.
	ConditionAvailable = "Available"
	// ConditionProgressing is True while the operator is changing the cluster towards its
	// spec: creating, adding or promoting members.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when something needs attention: a member is unhealthy, the
	// spec asks for something this release cannot do, or the last reconcile failed.
	ConditionDegraded = "Degraded"
	// ConditionReady summarises the others: True when the cluster is Available, not
	// Progressing, not Degraded and every member the spec asks for is healthy. Monitoring
	// does not count: the cluster serves whether or not it is watched.
	ConditionReady = "Ready"
	// ConditionMonitoring is True when the monitoring objects spec.monitoring asks for (a
	// PodMonitor, a PrometheusRule and a dashboard ConfigMap) are in place, False when they
	// are not (the reason says why).
	ConditionMonitoring = "Monitoring"
	// ConditionHibernated is there only while spec.hibernation.enabled is true: False while
	// the members stop (reason Hibernating), True once none runs (reason Hibernated).
	ConditionHibernated = "Hibernated"
)

// Reasons of the Monitoring condition.
const (
	// ReasonMonitoringConfigured (Monitoring=True): the PodMonitor, the PrometheusRule and
	// the dashboard ConfigMap exist and match the cluster.
	ReasonMonitoringConfigured = "Configured"
	// ReasonPrometheusOperatorMissing (Monitoring=False): the Prometheus Operator's CRDs
	// (monitoring.coreos.com PodMonitor and PrometheusRule) are not installed; nothing is
	// created, and the operator looks again every minute. Members serve their metrics all
	// the same.
	ReasonPrometheusOperatorMissing = "PrometheusOperatorMissing"
	// ReasonMonitoringDisabled (Monitoring=False): spec.monitoring.mode is Disabled; the
	// operator keeps no monitoring objects.
	ReasonMonitoringDisabled = "Disabled"
	// ReasonMonitoringFailed (Monitoring=False): creating or updating a monitoring object
	// failed (the message says which and why); the operator retries, and manages the etcd
	// cluster meanwhile.
	ReasonMonitoringFailed = "Failed"
)

// Condition reasons of an EtcdCluster.
const (
	// ReasonAsExpected is the reason of a condition in its normal state.
	ReasonAsExpected = "AsExpected"

	// ReasonQuorumAvailable (Available=True): a quorum of voting members is healthy.
	ReasonQuorumAvailable = "QuorumAvailable"
	// ReasonQuorumLost (Available=False): fewer than a quorum of voting members are healthy
	// and the member list, a linearizable read, fails, for at least 10 seconds on end; the
	// cluster refuses writes and linearizable reads.
	ReasonQuorumLost = "QuorumLost"
	// ReasonQuorumUnconfirmed (Available=Unknown): fewer than a quorum of voting members
	// answered their status, but the loss of quorum is not confirmed: either the member
	// list, a linearizable read that needs a quorum, answered, or it has failed for less
	// than 10 seconds. Under load a member can be slow to answer while clients are served.
	ReasonQuorumUnconfirmed = "QuorumUnconfirmed"
	// ReasonBootstrapping (Available=False, Progressing=True): the first member is starting.
	ReasonBootstrapping = "Bootstrapping"

	// ReasonAddingMember (Progressing=True): a member is being added as a learner.
	ReasonAddingMember = "AddingMember"
	// ReasonPromotingLearner (Progressing=True): a learner is catching up with the leader
	// before it becomes a voting member.
	ReasonPromotingLearner = "PromotingLearner"
	// ReasonRemovingMember (Progressing=True): spec.size is below the member count; members
	// are removed one at a time, unhealthy ones first, the leader after handing over.
	ReasonRemovingMember = "RemovingMember"
	// ReasonReplacingMember (Progressing=True): a member whose data is lost, or that stayed
	// unhealthy longer than spec.replaceUnhealthyMemberAfter, is removed, and a fresh member
	// with a new identity is added in its place.
	ReasonReplacingMember = "ReplacingMember"
	// ReasonUpgrading (Progressing=True): members are restarted at the new spec.version one
	// at a time, followers first; the message says how many run it ("2/3 members at 3.6.16").
	ReasonUpgrading = "Upgrading"
	// ReasonRollingOut (Progressing=True): a change of the spec (resources, podTemplate, an
	// etcd option, TLS secrets) is rolled out: member pods are restarted one at a time with
	// the new spec; the message says how many members run it.
	ReasonRollingOut = "RollingOut"
	// ReasonConfiguringAuth (Progressing=True): etcd's authentication is not yet what
	// spec.auth asks; the operator turns it on (after making the root users) or off.
	ReasonConfiguringAuth = "ConfiguringAuth"
	// ReasonRotatingCA (Progressing=True): the cluster's CA is rotated (status.caRotation);
	// the current phase is in force on every member, and the next begins once clients had
	// time to see the new trust bundle.
	ReasonRotatingCA = "RotatingCA"
	// ReasonExpandingVolumes (Progressing=True): spec.storage.size grew; the members' claims
	// are expanded one at a time.
	ReasonExpandingVolumes = "ExpandingVolumes"
	// ReasonRecreatingPod (Progressing=True): a member's pod was gone and is being created
	// again, with the member's data and identity.
	ReasonRecreatingPod = "RecreatingPod"
	// ReasonWaitingForCertificates (Progressing=True): cert-manager has not issued the
	// cluster's certificates yet; no member starts before they exist.
	ReasonWaitingForCertificates = "WaitingForCertificates"
	// ReasonWaitingForMembers (Progressing=True): a member pod is starting or a member is
	// not healthy yet; the operator waits before the next change.
	ReasonWaitingForMembers = "WaitingForMembers"

	// ReasonMembersUnhealthy (Degraded=True): at least one member failed its health check.
	ReasonMembersUnhealthy = "MembersUnhealthy"
	// ReasonUpgradeRolledBack (Degraded=True): a member did not become healthy at the new
	// version in time and runs the previous one again; the upgrade stopped. Set spec.version
	// to status.currentVersion, then to the new version again, to retry.
	ReasonUpgradeRolledBack = "UpgradeRolledBack"
	// ReasonUpgradeBlocked (Degraded=True): a member runs a version that cannot go to
	// spec.version in one step; nothing is changed.
	ReasonUpgradeBlocked = "UpgradeBlocked"
	// ReasonRolloutStuck (Degraded=True): a member restarted with the new spec did not
	// become healthy within spec.memberUpgradeTimeout; the rollout stops there and needs a
	// human: correct the spec, and the next change restarts that member at once.
	ReasonRolloutStuck = "RolloutStuck"
	// ReasonVolumeExpansionNotSupported (Degraded=True): spec.storage.size grew but the
	// StorageClass of the claims does not allow volume expansion; the claims are left as
	// they are.
	ReasonVolumeExpansionNotSupported = "VolumeExpansionNotSupported"
	// ReasonMemberDataLost (Degraded=True): a member's data is gone (its ephemeral pod or
	// its volume was deleted) and the other members lack a healthy quorum to replace it.
	ReasonMemberDataLost = "MemberDataLost"
	// ReasonMemberUnschedulable (Degraded=True): a member's pod has waited for a node for
	// 30 s or more, the scheduler finding none that its rules allow; the message names the
	// member and quotes the scheduler (which rule, on how many nodes).
	ReasonMemberUnschedulable = "MemberUnschedulable"
	// ReasonNoSpace (Degraded=True): a member's database reached the quota and etcd raised
	// the NOSPACE alarm: the cluster accepts only reads and deletes. The message says what
	// the operator is doing about it (spec.maintenance.noSpaceRecovery), or that it is off.
	ReasonNoSpace = "NoSpace"
	// ReasonNoSpaceDataDoesNotFit (Degraded=True): NOSPACE persists although the history is
	// compacted and every member defragmented: the data itself does not fit under the
	// quota. Raise spec.etcd.quotaBackendBytes, or delete data.
	ReasonNoSpaceDataDoesNotFit = "NoSpaceDataDoesNotFit"
	// ReasonMemberCorrupt (Degraded=True): the consistency check found members whose data
	// differs from a majority's (status.consistency.suspects). In mode Replace they are
	// being replaced, one at a time; in mode Report, or while the others lack a healthy
	// quorum, nothing is changed and a human decides.
	ReasonMemberCorrupt = "MemberCorrupt"
	// ReasonRecoveryAwaitingApproval (Degraded=True): the quorum is lost for good and, under
	// spec.quorumLossRecovery, the recovery waits for approval: annotate the EtcdCluster
	// with etcd.etcdpilot.io/approve-recovery set to status.recovery.id.
	ReasonRecoveryAwaitingApproval = "RecoveryAwaitingApproval"
	// ReasonRecoveryBlocked (Degraded=True): the quorum is lost for good and no member can
	// be recovered from; status.recovery.message says what was found.
	ReasonRecoveryBlocked = "RecoveryBlocked"
	// ReasonRecoveringQuorum (Degraded=True, Progressing=True): the cluster is recovered
	// from its surviving member (status.recovery).
	ReasonRecoveringQuorum = "RecoveringQuorum"
	// ReasonStorageCeilingReached (Degraded=True): with storage.autoscaling Auto, the
	// largest member's database is past the threshold and neither the quota nor the
	// volumes can grow further (a ceiling, or a StorageClass that does not expand); the
	// message says which and what to do before the NOSPACE alarm stops writes.
	ReasonStorageCeilingReached = "StorageCeilingReached"
	// ReasonHibernating (Hibernated=False, Progressing=True, Degraded=False): spec.hibernation.enabled
	// is true; the operator takes the final backup, then stops the members one at a time.
	ReasonHibernating = "Hibernating"
	// ReasonHibernated (Hibernated=True; Available, Progressing, Degraded and Ready False):
	// every member is stopped and its claim keeps its data; nothing else changes until
	// spec.hibernation.enabled is false again.
	ReasonHibernated = "Hibernated"
	// ReasonHibernationBlocked (Degraded=True): the final backup before hibernation failed;
	// no (further) member stops. Delete the EtcdBackup to take it again, or remove
	// spec.hibernation.backupDestination.
	ReasonHibernationBlocked = "HibernationBlocked"
	// ReasonReconcileFailed (Degraded=True): the last reconcile hit an error; the message
	// says which step.
	ReasonReconcileFailed = "ReconcileFailed"
	// ReasonNotObserved (Available=Unknown): no reconcile has observed the members yet (an
	// earlier step failed or waits, for example for certificates).
	ReasonNotObserved = "NotObserved"

	// ReasonNotAvailable (Ready=False): the cluster is not Available.
	ReasonNotAvailable = "NotAvailable"
	// ReasonProgressing (Ready=False): the cluster is Progressing.
	ReasonProgressing = "Progressing"
	// ReasonDegraded (Ready=False): the cluster is Degraded.
	ReasonDegraded = "Degraded"
	// ReasonReady (Ready=True): every member the spec asks for is healthy and voting.
	ReasonReady = "Ready"
)

// Condition reasons of an EtcdCluster restored from a backup (spec.bootstrap.restore).
const (
	// ReasonRestoring (Progressing=True): the first member is restoring the backup into its
	// data directory before it starts.
	ReasonRestoring = "Restoring"
	// ReasonRestoreSourceNotReady (Available=False, Progressing=True): the EtcdBackup named
	// in spec.bootstrap.restore does not exist or has not succeeded yet; no member starts.
	ReasonRestoreSourceNotReady = "RestoreSourceNotReady"
	// ReasonRestoreFailed (Degraded=True): the restore failed, for example the artifact's
	// checksum differs from the expected one or it cannot be fetched; the message says why.
	// The first member retries with a growing back-off.
	ReasonRestoreFailed = "RestoreFailed"
)

// Condition types of an EtcdBackup.
const (
	// ConditionSucceeded is Unknown while the backup runs, then True when the artifact is
	// stored or False when the backup failed. A backup is not retried: a schedule's next run
	// takes a new one.
	ConditionSucceeded = "Succeeded"
	// ConditionVerified is present once spec.verify asks for the verification of a backup
	// that succeeded (a failed one has nothing to verify): Unknown while
	// the artifact is restored into a throwaway member and checked, then True when it
	// matched what the backup recorded, or False with the reason it did not. A verification
	// that could not compare everything ends Unknown (VerificationIncomplete).
	ConditionVerified = "Verified"
)

// Condition reasons of an EtcdBackup's Verified condition. A verification that could not
// read the artifact gives the reason of the failure, as a backup does
// (DestinationUnreachable, CredentialsNotFound...), or ChecksumMismatch.
const (
	// ReasonVerifying (Verified=Unknown): the verification Job runs, or waits for the backup
	// to succeed.
	ReasonVerifying = "Verifying"
	// ReasonVerificationPassed (Verified=True): the artifact's checksum matched, it restored
	// into a member that started, and that member's revision, key count and hash at the
	// backup's revision are what the backup recorded.
	ReasonVerificationPassed = "Passed"
	// ReasonVerificationFailed (Verified=False): the artifact restored, but what the
	// member holds is not what the backup recorded (or it did not start); the message
	// says what differs.
	ReasonVerificationFailed = "VerificationFailed"
	// ReasonVerificationIncomplete (Verified=Unknown, for good): the artifact's checksum
	// matched, it restored into a member that started at the backup's revision or later,
	// and nothing compared differed, but the key count or the hash was not compared; the
	// message says which and why (the backup recorded none, or its hash is from a
	// compaction the restored data cannot hash from). Unknown, not True: True promises
	// the content was compared. Not False: nothing was found wrong, and False makes the
	// backup not Ready and counts as a failed verification. The verification is over and
	// does not run again; the backup stays Ready.
	ReasonVerificationIncomplete = "VerificationIncomplete"
)

// Condition reasons of an EtcdBackup (Succeeded, and Ready which follows it).
const (
	// ReasonBackupPending (Succeeded=Unknown): the backup pod is being created or started.
	ReasonBackupPending = "Pending"
	// ReasonBackupRunning (Succeeded=Unknown): the snapshot is being streamed.
	ReasonBackupRunning = "Running"
	// ReasonBackupCompleted (Succeeded=True): the artifact is stored and described in status.
	ReasonBackupCompleted = "Completed"

	// ReasonClusterNotFound (Succeeded=False; an EtcdTenant's Ready=False): spec.clusterName
	// names no EtcdCluster.
	ReasonClusterNotFound = "ClusterNotFound"
	// ReasonClusterNotAvailable (Succeeded=False): no member of the cluster was healthy. An
	// EtcdTenant's Ready=False: etcd did not answer or refused the operator's request.
	ReasonClusterNotAvailable = "ClusterNotAvailable"
	// ReasonCredentialsNotFound (Succeeded=False): the S3 credentials or CA Secret is
	// missing or lacks a key.
	ReasonCredentialsNotFound = "CredentialsNotFound"
	// ReasonDestinationNotFound (Succeeded=False): the PVC or the S3 bucket does not exist.
	ReasonDestinationNotFound = "DestinationNotFound"
	// ReasonDestinationUnreachable (Succeeded=False): the object store did not answer.
	ReasonDestinationUnreachable = "DestinationUnreachable"
	// ReasonDestinationRejected (Succeeded=False): the object store refused the request
	// (credentials, permissions, TLS).
	ReasonDestinationRejected = "DestinationRejected"
	// ReasonDestinationFull (Succeeded=False): the PVC ran out of space.
	ReasonDestinationFull = "DestinationFull"
	// ReasonSnapshotFailed (Succeeded=False): etcd failed to stream its snapshot.
	ReasonSnapshotFailed = "SnapshotFailed"
	// ReasonBackupTimeout (Succeeded=False): the backup did not finish within spec.timeout.
	ReasonBackupTimeout = "Timeout"
	// ReasonBackupPodFailed (Succeeded=False): the backup pod failed for another reason (it
	// could not start, or was killed); the message has its last words.
	ReasonBackupPodFailed = "BackupPodFailed"
)

// Condition reasons of an EtcdBackupSchedule (Ready).
const (
	// ReasonScheduled (Ready=True): backups are created on schedule and the last one
	// succeeded (or none ran yet).
	ReasonScheduled = "Scheduled"
	// ReasonInvalidSchedule (Ready=False): spec.schedule never fires (for example the 30th
	// of February) or cannot be parsed; no backup is created.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonSuspended (Ready=False): spec.suspend is set.
	ReasonSuspended = "Suspended"
	// ReasonLastBackupFailed (Ready=False): the schedule's newest finished backup failed; the
	// message names it and its reason. The next run tries again.
	ReasonLastBackupFailed = "LastBackupFailed"
	// ReasonLastVerificationFailed (Ready=False): the newest verification of the
	// schedule's backups (backupTemplate.verify) failed; the message names the backup and
	// why. It clears when a newer backup verifies.
	ReasonLastVerificationFailed = "LastVerificationFailed"
)

// Condition reasons of an EtcdTenant (Ready). Where a reason says nothing is created, the
// tenant has no user in etcd and its Secret, if any, is left as it was. Two more are shared
// with EtcdBackup: ReasonClusterNotFound (no EtcdCluster of that name in the namespace, or
// one being deleted; nothing is created, and the tenant is looked at again when the cluster
// changes) and ReasonClusterNotAvailable (etcd did not answer or refused the operator's
// request, the message says which; the operator tries again).
const (
	// ReasonTenantProvisioned (Ready=True): the tenant's etcd user and role exist with
	// exactly its prefix's range, read-write or read-only as asked, and its certificate is
	// in its Secret.
	ReasonTenantProvisioned = "Provisioned"
	// ReasonAuthNotEnabled (Ready=False): the cluster does not have authentication on in
	// etcd (spec.auth.enabled, as status.auth reports it): without it a prefix bounds
	// nothing. Nothing is created.
	ReasonAuthNotEnabled = "AuthNotEnabled"
	// ReasonClusterHibernated (Ready=False): the cluster hibernates (spec.hibernation): its
	// members are stopped, the tenant's user, role and keys are kept in their data and its
	// Secret as it was; the operator looks again when the cluster wakes.
	ReasonClusterHibernated = "ClusterHibernated"
	// ReasonTenantTLSUnsupported (Ready=False): the cluster's tls.mode is not OperatorCA,
	// so the operator holds no CA key to sign the tenant's certificate with. Nothing is
	// created.
	ReasonTenantTLSUnsupported = "TLSModeUnsupported"
	// ReasonPrefixConflict (Ready=False): the prefix overlaps the prefix of an older tenant
	// of the same cluster (the message names it), which keeps its own. Nothing is created;
	// delete this tenant and create one with another prefix.
	ReasonPrefixConflict = "PrefixConflict"
	// ReasonPrefixInUse (Ready=False): the tenant is being deleted with deletionPolicy
	// Delete, and a key under its prefix was written within the last 30 seconds: its keys
	// are kept until its clients stop, or the annotation etcd.etcdpilot.io/force-delete:
	// "true" is set.
	ReasonPrefixInUse = "PrefixInUse"
)
