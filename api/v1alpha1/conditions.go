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
	// Progressing, not Degraded and every member the spec asks for is healthy.
	ConditionReady = "Ready"
)

// Condition reasons of an EtcdCluster.
const (
	// ReasonAsExpected is the reason of a condition in its normal state.
	ReasonAsExpected = "AsExpected"

	// ReasonQuorumAvailable (Available=True): a quorum of voting members is healthy.
	ReasonQuorumAvailable = "QuorumAvailable"
	// ReasonQuorumLost (Available=False): fewer than a quorum of voting members are healthy;
	// the cluster refuses writes and linearizable reads.
	ReasonQuorumLost = "QuorumLost"
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
	// ReasonMemberDataLost (Degraded=True): a member's data is gone (its ephemeral pod or
	// its volume was deleted) and the other members lack a healthy quorum to replace it.
	ReasonMemberDataLost = "MemberDataLost"
	// ReasonReconcileFailed (Degraded=True): the last reconcile hit an error; the message
	// says which step.
	ReasonReconcileFailed = "ReconcileFailed"

	// ReasonNotAvailable (Ready=False): the cluster is not Available.
	ReasonNotAvailable = "NotAvailable"
	// ReasonProgressing (Ready=False): the cluster is Progressing.
	ReasonProgressing = "Progressing"
	// ReasonDegraded (Ready=False): the cluster is Degraded.
	ReasonDegraded = "Degraded"
	// ReasonReady (Ready=True): every member the spec asks for is healthy and voting.
	ReasonReady = "Ready"
)
