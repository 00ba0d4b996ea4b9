// Package membership decides, as a pure function of what the operator observed, the one
// next change an etcd cluster needs: bootstrap the first member, bring back a member's pod,
// add a learner, promote it. It never does I/O; the controller observes, calls Plan, and
// carries out the single Action it returns, then observes again.
//
// Bootstrap of a brand-new cluster whose members keep their data on claims is static: the
// initial members are created together, each with initial-cluster-state=new and the same
// initial cluster, which is how etcd itself starts a cluster of several members. Each of
// their claims records that initial cluster. Later, a member with such a claim (and only
// such a claim) may be started with "new" again: the claim holds its data, which etcd
// prefers to the flag, or it never started. A member of that initial cluster whose claim is
// gone rejoins with "existing", which never starts a cluster. Otherwise (ephemeral members,
// a cluster restored from a backup) bootstrap is single-seed: the first member starts alone,
// and every other member joins the running cluster as a learner, as every member added
// later does. No member is ever started with "new" while another member may hold data of
// another start, so a lost or recreated pod can never form a second cluster (split brain).
package membership

import (
	"fmt"
	"sort"
	"strings"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// Observed is everything Plan needs, gathered by the controller in one reconcile.
type Observed struct {
	// Cluster names the cluster's objects and URLs.
	Cluster cluster.Names
	// Size is spec.size.
	Size int
	// Ephemeral is spec.storage.ephemeral: member data lives and dies with the pod.
	Ephemeral bool
	// Pods are the member pods that exist, by member name.
	Pods map[string]Pod
	// PVCs are the member data claims that exist, by member name.
	PVCs map[string]PVC
	// ClaimsGoing are the names whose claims are being deleted (a deletion timestamp is
	// set, the data is going). Such a name is not given to a new member, and no pod is
	// created for it, until its claim is gone: a pod made on a claim being deleted never
	// starts.
	ClaimsGoing map[string]bool
	// Corrupt are the members the consistency check found holding data that differs from
	// a majority's, by member ID, with what was found: each is replaced, one at a time.
	// A member ID no longer in the member list was replaced already.
	Corrupt map[uint64]string
	// Members is the etcd member list, or nil when no member answered.
	Members []Member
	// Now is the time of the observation.
	Now time.Time
	// ReplaceUnhealthyAfter is spec.replaceUnhealthyMemberAfter: a started voting member
	// unhealthy for longer is replaced. Zero never replaces.
	ReplaceUnhealthyAfter time.Duration
	// ReplaceOnLostNodeAfter is spec.replaceMemberOnLostNodeAfter: a started voting member
	// unhealthy on a lost node (Pod.LostNode) for longer is replaced (ReplaceAt). Zero
	// leaves such a member to ReplaceUnhealthyAfter.
	ReplaceOnLostNodeAfter time.Duration
	// Upgrade is what the spec and the status say about the etcd version (upgrade.go).
	Upgrade Upgrade
	// SpecHashes are, by member name, the hashes of the pods the current spec gives each
	// member at Upgrade.Desired(). A pod built from another spec is rolled out (rollout.go).
	SpecHashes map[string]string
	// Storage is what spec.storage asks of the members' claims (volumes.go).
	Storage Storage
	// Hibernate is spec.hibernation.enabled: the members stop, their claims kept
	// (hibernate.go). FinalBackup is the EtcdBackup the final backup goes to, nil without
	// spec.hibernation.backupDestination.
	Hibernate   bool
	FinalBackup *UpgradeBackup
	// StaticBootstrap says that a brand-new cluster starts all its initial members at once
	// with a static initial cluster: its members keep their data on claims and it is not
	// restored from a backup (whose data one member restores and the others copy).
	StaticBootstrap bool
}

// Pod is a member pod as observed.
type Pod struct {
	// Ready is the pod's Ready condition: etcd's /readyz answered, which a learner never does.
	Ready bool
	// Version is the etcd release the pod runs (its version label, or what its member
	// reported for pods made before the label existed); empty when unknown.
	Version string
	// Created is when the pod was created.
	Created time.Time
	// Terminating is true once the pod is being deleted (a restart under way).
	Terminating bool
	// SpecHash is the hash of the spec the pod was built from (its spec-hash annotation).
	// Empty for a pod made before the operator recorded it: such a pod counts as current.
	SpecHash string
	// Node is the node the pod was placed on, empty until the scheduler places it; Zone is
	// that node's topology.kubernetes.io/zone label, empty when it has none.
	Node, Zone string
	// Unschedulable is the scheduler's word on a pod it could place on no node (its
	// PodScheduled condition False with reason Unschedulable), since UnschedulableSince;
	// empty otherwise.
	Unschedulable      string
	UnschedulableSince time.Time
	// LostNode is the node the member needs, lost: the pod's node NotReady or gone, or, for
	// a pod no node takes, the node its claim's volume was made on (PVC.Node) NotReady,
	// gone, cordoned (a drain evicted the member, and its data cannot follow it) or refusing
	// the pod. Empty otherwise; observed only for the pods of unhealthy members, and, for
	// removed members' pods being deleted, their node NotReady or gone.
	LostNode NodeLoss
}

// How a node is lost (NodeLoss.How).
const (
	NodeNotReady = "NotReady"
	NodeGone     = "gone"
	NodeCordoned = "cordoned"
	// NodeRefuses: the node holding the member's data is there and takes pods, but not
	// the member's (the placement rules leave it out: another member there already while
	// a node has none, say).
	NodeRefuses = "refuses its pod"
)

// NodeLoss is a node a member needs that is lost, how, and since when (zero when unknown:
// a node gone).
type NodeLoss struct {
	Node, How string
	Since     time.Time
}

// String says it for a message: "node n2 NotReady since 2026-11-30T01:00:00Z", "node n2
// gone", "node n2, which holds its data, cordoned since ...".
func (l NodeLoss) String() string {
	s := "node " + l.Node
	if l.How == NodeCordoned || l.How == NodeRefuses {
		s += ", which holds its data,"
	}
	s += " " + l.How
	if !l.Since.IsZero() {
		s += " since " + l.Since.UTC().Format(time.RFC3339)
	}
	return s
}

// PVC is a member data claim as observed.
type PVC struct {
	// Bootstrapped is true once the member on this claim has been seen in the etcd member
	// list with its name, that is, it has started and holds data of the cluster.
	Bootstrapped bool
	// Removed is true once its member was removed from the cluster (a claim kept under
	// deletionPolicy Retain): its data must never start a member again.
	Removed bool
	// Volume is the claim's size and resize state (volumes.go).
	Volume Volume
	// InitialCluster is the static initial cluster the claim was created for (its
	// initial-cluster annotation), empty for a claim made any other way.
	InitialCluster []string
	// Node is the node the scheduler chose for the claim's volume (its selected-node
	// annotation), empty when none was: the node a local volume's data lives on.
	Node string
}

// Member is an etcd member as the cluster reports it, joined with its health.
type Member struct {
	// Name is the member name derived from its peer URL (never empty).
	Name string
	// ID is the etcd member ID.
	ID uint64
	// PeerURL is the member's first peer URL.
	PeerURL string
	// Started is true when the member has started (etcd reports its name).
	Started bool
	// Learner is true for a non-voting learner.
	Learner bool
	// Healthy is true when the member answered its status call without errors.
	Healthy bool
	// Ready is true when the member's pod is Ready (etcd's /readyz answered), which a
	// learner's never is. The client Service only routes to Ready members.
	Ready bool
	// Leader is true for the raft leader.
	Leader bool
	// UnhealthySince is when the member was first seen unhealthy in its current unhealthy
	// stretch (TrackUnhealthy); zero while it is healthy.
	UnhealthySince time.Time
	// RaftIndex is the member's raft index, from its status call (zero when it did not answer).
	RaftIndex uint64
}

// Kind is the kind of change an Action makes.
type Kind string

// The kinds of Action.
const (
	// None: the membership is as the spec asks; nothing to do.
	None Kind = "None"
	// Wait: a change is under way or the cluster is not healthy enough for the next one.
	Wait Kind = "Wait"
	// Blocked: the spec asks for something this release does not do, or a member's data
	// is lost; nothing is changed.
	Blocked Kind = "Blocked"
	// CreateSeed: create the claims and pods of the initial members (Members), starting a
	// new cluster: the first member alone, or every initial member of a static bootstrap.
	CreateSeed Kind = "CreateSeed"
	// CreatePod: create the claim (when missing) and pod of a member that is in the
	// membership (or was the seed) but has no pod.
	CreatePod Kind = "CreatePod"
	// AddLearner: add a member to etcd as a learner, then create its claim and pod.
	AddLearner Kind = "AddLearner"
	// Promote: promote a started learner to a voting member.
	Promote Kind = "Promote"
	// MoveLeader: hand leadership to MemberID before the leader is removed.
	MoveLeader Kind = "MoveLeader"
	// RemoveMember: remove a member from etcd, then delete its pod (and its claim under
	// deletionPolicy Delete).
	RemoveMember Kind = "RemoveMember"
	// DeletePod: delete the pod of a member that is no longer in the membership (the
	// operator stopped between removing the member and deleting its pod).
	DeletePod Kind = "DeletePod"
	// RestartMember: delete the pod of Member so that it comes back (CreatePod) at Version,
	// built from the current spec, with its data and identity: one step of an upgrade or a
	// rollout, or of an upgrade's rollback.
	RestartMember Kind = "RestartMember"
	// ExpandVolume: raise the storage request of Member's claim to Storage.Size.
	ExpandVolume Kind = "ExpandVolume"
	// Snapshot: save a snapshot of the data to Member's volume before an upgrade restarts
	// the first member; or, with Backup set, record that EtcdBackup Backup holds it.
	Snapshot Kind = "Snapshot"
	// CreateBackup: create EtcdBackup Backup to spec.upgradeBackupDestination, the
	// snapshot before an upgrade restarts the first member; or, while hibernating, to
	// spec.hibernation.backupDestination, the final backup before the members stop.
	CreateBackup Kind = "CreateBackup"
	// StopMember: delete Member's pod to hibernate the cluster; its claim, and so its data
	// and identity, stay for the member to come back.
	StopMember Kind = "StopMember"
	// ForceRaftSnapshots: append Entries no-op entries to the raft log, so that every member
	// takes a raft snapshot past the entries older releases wrote (before 3.7).
	ForceRaftSnapshots Kind = "ForceRaftSnapshots"
	// RollBack: record that the upgraded Member did not become healthy in time; the
	// upgrade stops and the member goes back to the previous version (RestartMember next).
	RollBack Kind = "RollBack"
)

// Action is the one change Plan chose, with what carrying it out needs.
type Action struct {
	Kind Kind
	// Member is the member the action is about.
	Member string
	// Members are the members CreateSeed creates, Member first.
	Members []string
	// MemberID is the etcd ID of the member to promote.
	MemberID uint64
	// PeerURL is the peer URL of the member to add.
	PeerURL string
	// InitialCluster and InitialClusterState are the member's bootstrap flags, used only
	// when its data directory is empty.
	InitialCluster      []string
	InitialClusterState string
	// OnExistingClaim says that CreatePod makes the pod on the member's claim as the plan saw
	// it, which holds the member's data: when the claim is gone by the time the pod is made,
	// nothing is made, and the next pass sees the data lost. A fresh claim would start the
	// member empty under its old identity, as though it still held its data.
	OnExistingClaim bool
	// Version is the etcd release the member's new pod runs (CreateSeed, CreatePod,
	// AddLearner, RestartMember).
	Version string
	// Entries is how many no-op entries ForceRaftSnapshots appends.
	Entries int
	// Backup is the EtcdBackup that holds the snapshot before an upgrade (CreateBackup,
	// Snapshot).
	Backup string
	// Reason is the condition reason (an etcdv1alpha1.Reason* constant) and Message says
	// what is happening, for the status.
	Reason  string
	Message string
}

// Plan returns the one next change the cluster needs.
func Plan(o Observed) Action {
	if o.Hibernate {
		return o.hibernate()
	}
	var a Action
	if o.Members == nil {
		a = planUnreachable(o)
	} else {
		a = planReachable(o)
	}
	switch a.Kind {
	case CreateSeed, CreatePod, AddLearner:
		if a.Version == "" {
			a.Version = o.Upgrade.Desired()
		}
	}
	return o.duringRollout(a)
}

// planUnreachable decides when no member answered: at bootstrap, or when every member is
// down. Only a cluster with no member data at all is started anew (for an ephemeral
// cluster whose pods are all gone, that data is gone with them).
func planUnreachable(o Observed) Action {
	known := o.knownMembers()
	if len(known) == 0 {
		return o.seed()
	}
	if a, ok := o.unplacedOutdated(); ok {
		return a
	}
	static := o.staticInitialCluster()
	for _, name := range known {
		if _, ok := o.Pods[name]; !ok {
			return o.recreatePod(name, known, static)
		}
	}
	if a, ok := o.staticMemberWithoutClaim(static); ok {
		return a
	}
	if len(static) > 0 {
		return Action{Kind: Wait, Reason: etcdv1alpha1.ReasonBootstrapping,
			Message: fmt.Sprintf("waiting for the initial members %s to start", strings.Join(known, ", "))}
	}
	if len(known) == 1 {
		return Action{Kind: Wait, Reason: etcdv1alpha1.ReasonBootstrapping,
			Message: fmt.Sprintf("waiting for the first member %s to start", known[0])}
	}
	return Action{Kind: Wait, Reason: etcdv1alpha1.ReasonWaitingForMembers,
		Message: "no member answers; waiting for the member pods to start"}
}

// unplacedOutdated finds the first member pod, in member order, that the scheduler found no
// node for and that was made from another spec than the current one, and restarts it: it
// never ran, so deleting it costs nothing, and the pod made again from the current spec may
// find a node (a corrected node selector, affinity or toleration). Without this, a cluster
// whose first pods no node could take would wait for them forever, whatever the spec says.
func (o Observed) unplacedOutdated() (Action, bool) {
	for _, name := range o.PodNames() {
		if p := o.Pods[name]; p.Unschedulable != "" && p.Node == "" && !p.Terminating && o.specOutdated(name) {
			return Action{Kind: RestartMember, Member: name, Version: o.Upgrade.Desired(), Reason: etcdv1alpha1.ReasonRecreatingPod,
				Message: fmt.Sprintf("making the pod of member %s again from the current spec: no node took the one made from the previous spec", name)}, true
		}
	}
	return Action{}, false
}

// recreatePod brings back the pod of a known member (it has a claim: ephemeral members are
// known only by their pods) while no member answers. A member of a static bootstrap whose
// claim was made for it starts with "new" again while no member was ever seen started: its
// data, if it started, wins over the flag. So does a seed that never started. Any other
// member rejoins with its data; "existing" makes etcd refuse to start a new cluster.
func (o Observed) recreatePod(name string, known, static []string) Action {
	pvc, hasPVC := o.PVCs[name]
	switch {
	case len(static) > 0 && len(pvc.InitialCluster) > 0:
		return Action{
			Kind: CreatePod, Member: name, OnExistingClaim: hasPVC,
			InitialCluster: pvc.InitialCluster, InitialClusterState: "new",
			Reason:  etcdv1alpha1.ReasonBootstrapping,
			Message: fmt.Sprintf("creating the pod of initial member %s", name),
		}
	case len(static) == 0 && len(known) == 1 && !pvc.Bootstrapped:
		return Action{
			Kind: CreatePod, Member: name, OnExistingClaim: hasPVC,
			InitialCluster:      []string{initialClusterEntry(o.Cluster, name)},
			InitialClusterState: "new",
			Reason:              etcdv1alpha1.ReasonBootstrapping,
			Message:             fmt.Sprintf("recreating the pod of the first member %s, which never started", name),
		}
	}
	initial := initialClusterOf(o.Cluster, known)
	if len(static) > 0 {
		initial = static
	}
	return Action{
		Kind: CreatePod, Member: name, OnExistingClaim: hasPVC,
		InitialCluster:      initial,
		InitialClusterState: "existing",
		Reason:              etcdv1alpha1.ReasonRecreatingPod,
		Message:             fmt.Sprintf("recreating the pod of member %s with its data", name),
	}
}

// seed starts a cluster of which nothing is left: the first member alone, or, for a static
// bootstrap, every initial member, each claim recording the initial cluster.
func (o Observed) seed() Action {
	first := o.Cluster.MemberName(0)
	if !o.StaticBootstrap || o.Ephemeral || o.Size <= 1 {
		return Action{
			Kind: CreateSeed, Member: first, Members: []string{first},
			InitialCluster:      []string{initialClusterEntry(o.Cluster, first)},
			InitialClusterState: "new",
			Reason:              etcdv1alpha1.ReasonBootstrapping,
			Message:             fmt.Sprintf("creating the first member %s", first),
		}
	}
	names := make([]string, o.Size)
	for i := range names {
		names[i] = o.Cluster.MemberName(i)
	}
	return Action{
		Kind: CreateSeed, Member: first, Members: names,
		InitialCluster:      initialClusterOf(o.Cluster, names),
		InitialClusterState: "new",
		Reason:              etcdv1alpha1.ReasonBootstrapping,
		Message:             fmt.Sprintf("creating the %d initial members %s together", o.Size, strings.Join(names, ", ")),
	}
}

// staticInitialCluster is the initial cluster a static bootstrap recorded on the claims of
// its members (the first such claim by ordinal), while the bootstrap is under way: once a
// member was seen started, the cluster has formed, and the membership has the last word
// (members removed since, members added since), so it is nil, as it is without such claims.
func (o Observed) staticInitialCluster() []string {
	if o.Ephemeral || o.anyBootstrapped() {
		return nil
	}
	names := make([]string, 0, len(o.PVCs))
	for n, pvc := range o.PVCs {
		if len(pvc.InitialCluster) > 0 && !pvc.Removed {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sortByOrdinal(o.Cluster, names)
	return o.PVCs[names[0]].InitialCluster
}

// anyBootstrapped says whether a claim's member was ever seen started in the member list.
func (o Observed) anyBootstrapped() bool {
	for _, pvc := range o.PVCs {
		if pvc.Bootstrapped {
			return true
		}
	}
	return false
}

// staticMemberWithoutClaim finds a member of the static initial cluster with neither claim
// nor pod while no member answers during the bootstrap (the operator stopped while creating
// them, or the claim was deleted): its pod is created with "existing", so it joins the
// members that started and can never start a cluster of its own with empty data.
func (o Observed) staticMemberWithoutClaim(static []string) (Action, bool) {
	for _, entry := range static {
		name, _, _ := strings.Cut(entry, "=")
		_, hasPod := o.Pods[name]
		_, hasPVC := o.PVCs[name]
		if hasPod || hasPVC {
			continue
		}
		return Action{
			Kind: CreatePod, Member: name,
			InitialCluster: static, InitialClusterState: "existing",
			Reason:  etcdv1alpha1.ReasonRecreatingPod,
			Message: fmt.Sprintf("creating the pod of initial member %s, whose claim is missing, to join the others", name),
		}, true
	}
	return Action{}, false
}

// planReachable decides from the member list: first bring back members without pods and
// delete pods of removed members, then shrink (unhealthy members first), promote learners,
// then grow; growing only while all members are healthy.
func planReachable(o Observed) Action {
	if a, ok := o.missingPod(); ok {
		return a
	}
	if a, ok := o.orphanPod(); ok {
		return a
	}
	if a, ok := o.unplacedOutdated(); ok {
		return a
	}
	if a, ok := o.corruptMember(); ok {
		return a
	}
	if len(o.Members) > o.Size {
		return o.shrink()
	}
	if a, ok := o.restartGuards(); ok {
		return a
	}
	if m, why, ok := o.unhealthyTooLong(); ok {
		return o.replace(m, why, etcdv1alpha1.ReasonMembersUnhealthy)
	}
	if a, ok := o.learnersAndHealth(); ok {
		return a
	}
	if len(o.Members) < o.Size {
		return o.addLearner()
	}
	if a, ok := o.rollOut(); ok {
		return a
	}
	if a, ok := o.growVolumes(); ok {
		return a
	}
	return Action{Kind: None, Reason: etcdv1alpha1.ReasonAsExpected, Message: "all members are running"}
}

// learnersAndHealth promotes a started learner (or waits for it), then waits for any member
// not healthy or not Ready: every later step needs the whole cluster healthy.
func (o Observed) learnersAndHealth() (Action, bool) {
	for _, m := range o.Members {
		if !m.Learner {
			continue
		}
		if !m.Started || !m.Healthy {
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonPromotingLearner,
				Message: fmt.Sprintf("waiting for learner %s to start", m.Name)}, true
		}
		return Action{Kind: Promote, Member: m.Name, MemberID: m.ID, Reason: etcdv1alpha1.ReasonPromotingLearner,
			Message: fmt.Sprintf("promoting learner %s to a voting member", m.Name)}, true
	}
	for _, m := range o.Members {
		if !m.Healthy {
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonWaitingForMembers,
				Message: fmt.Sprintf("waiting for member %s to become healthy", m.Name)}, true
		}
		if !m.Ready {
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonWaitingForMembers,
				Message: fmt.Sprintf("waiting for the pod of member %s to become ready", m.Name)}, true
		}
	}
	return Action{}, false
}

// restartGuards decide, ahead of the health gates, about members whose restart went wrong or
// that a restart cannot hurt: an upgrade's rollback, an unhealthy outdated member restarted
// at once, a stuck rollout stopped.
func (o Observed) restartGuards() (Action, bool) {
	for _, guard := range []func() (Action, bool){o.rollback, o.repairOutdated, o.rolloutStuck} {
		if a, ok := guard(); ok {
			return a, true
		}
	}
	return Action{}, false
}

// orphanPod finds a member pod whose member is no longer in the membership: it is deleted,
// and waited for, before anything else changes. Except one being deleted on a lost node
// (Pod.LostNode) whose claim has had the deletion policy applied: only its kubelet could
// confirm the deletion, so it stays as long as its node is lost; the cluster goes on without
// it, and its name stays taken until it is gone.
func (o Observed) orphanPod() (Action, bool) {
	inList := map[string]bool{}
	for _, m := range o.Members {
		inList[m.Name] = true
	}
	names := make([]string, 0, len(o.Pods))
	for n, p := range o.Pods {
		if !inList[n] && (!p.Terminating || p.LostNode.Node == "" || !o.claimSettled(n)) {
			names = append(names, n)
		}
	}
	if len(names) == 0 {
		return Action{}, false
	}
	sortByOrdinal(o.Cluster, names)
	return Action{Kind: DeletePod, Member: names[0], Reason: etcdv1alpha1.ReasonRemovingMember,
		Message: fmt.Sprintf("deleting the pod of removed member %s", names[0])}, true
}

// claimSettled says that the claim of a removed member needs nothing more: there is none,
// its deletion is under way, or it is marked removed (deletionPolicy Retain).
func (o Observed) claimSettled(name string) bool {
	pvc, ok := o.PVCs[name]
	return !ok || pvc.Removed || o.ClaimsGoing[name]
}

// shrink removes one member: an unhealthy one if there is one, otherwise the one with the
// highest ordinal. The removal must leave a healthy quorum of the remaining voters, and when
// the member to remove is healthy, every remaining member healthy: shrinking never eats
// into the margin a sick member already took. Leadership is moved away first.
func (o Observed) shrink() Action {
	victim := o.shrinkVictim()
	voters, healthy, successor := o.remainingVoters(victim)
	if healthy < voters/2+1 || (victim.Healthy && healthy < voters) || successor == nil {
		return Action{Kind: Wait, Member: victim.Name, Reason: etcdv1alpha1.ReasonWaitingForMembers,
			Message: fmt.Sprintf("not removing member %s: %d of the %d remaining voting members are healthy, which leaves no margin", victim.Name, healthy, voters)}
	}
	if victim.Leader {
		return Action{Kind: MoveLeader, Member: victim.Name, MemberID: successor.ID, Reason: etcdv1alpha1.ReasonRemovingMember,
			Message: fmt.Sprintf("moving leadership from %s to %s before removing it", victim.Name, successor.Name)}
	}
	return Action{Kind: RemoveMember, Member: victim.Name, MemberID: victim.ID, Reason: etcdv1alpha1.ReasonRemovingMember,
		Message: fmt.Sprintf("removing member %s (%d members, spec.size %d)", victim.Name, len(o.Members), o.Size)}
}

// shrinkVictim is the member to remove next: the first unhealthy one, or else the one with
// the highest ordinal (the newest).
func (o Observed) shrinkVictim() Member {
	for _, m := range o.Members {
		if !m.Healthy {
			return m
		}
	}
	victim := o.Members[0]
	for _, m := range o.Members[1:] {
		a, _ := o.Cluster.MemberOrdinal(m.Name)
		b, _ := o.Cluster.MemberOrdinal(victim.Name)
		if a > b {
			victim = m
		}
	}
	return victim
}

// remainingVoters projects the cluster without victim: how many voters remain, how many of
// them are healthy and staying, and the first of those (to hand leadership to). A member
// that answers but is going (its pod being deleted, or its data gone) does not count as
// healthy: it will not be there to hold the quorum the removal leaves.
func (o Observed) remainingVoters(victim Member) (voters, healthy int, successor *Member) {
	for i, m := range o.Members {
		if m.ID == victim.ID || m.Learner {
			continue
		}
		voters++
		if m.Healthy && !o.going(m) {
			healthy++
			if successor == nil {
				successor = &o.Members[i]
			}
		}
	}
	return voters, healthy, successor
}

// going is true for a member whose pod is being deleted, or whose data is gone (its claim,
// or the pod of an ephemeral member): whatever it answers now, it is about to stop.
func (o Observed) going(m Member) bool {
	pod, hasPod := o.Pods[m.Name]
	return (hasPod && pod.Terminating) || o.dataLost(m)
}

// dataLost is true for a member that started and whose data is gone: its claim (or, in an
// ephemeral cluster, its pod).
func (o Observed) dataLost(m Member) bool {
	_, hasPod := o.Pods[m.Name]
	_, hasPVC := o.PVCs[m.Name]
	return m.Started && ((o.Ephemeral && !hasPod) || (!o.Ephemeral && !hasPVC))
}

// claimlessPodGrace is how old the pod of a member that never started must be before its
// missing claim counts as lost rather than not yet in the operator's cache.
const claimlessPodGrace = 30 * time.Second

// missingPod finds the first member of the membership without a pod, or whose data is
// gone, and says what to do: bring its pod back with its claim (or fresh when it never
// started), or replace a member whose data is lost. A member that never started and whose
// claim went away under its pod gets its pod deleted, so that both are made again.
func (o Observed) missingPod() (Action, bool) {
	for _, m := range o.Members {
		pod, hasPod := o.Pods[m.Name]
		_, hasPVC := o.PVCs[m.Name]
		if o.dataLost(m) {
			return o.replace(m, "its data is lost (its pod or volume was deleted)", etcdv1alpha1.ReasonMemberDataLost), true
		}
		if hasPod && !o.Ephemeral && !hasPVC && !pod.Terminating && o.Now.Sub(pod.Created) > claimlessPodGrace {
			return Action{Kind: DeletePod, Member: m.Name, Reason: etcdv1alpha1.ReasonRecreatingPod,
				Message: fmt.Sprintf("deleting the pod of member %s, which has not started and whose claim is gone: both are made again", m.Name)}, true
		}
		if hasPod {
			continue
		}
		if o.ClaimsGoing[m.Name] {
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonRecreatingPod,
				Message: fmt.Sprintf("waiting for the old claim of member %s to be deleted before creating its pod", m.Name)}, true
		}
		return Action{
			Kind: CreatePod, Member: m.Name, OnExistingClaim: hasPVC,
			InitialCluster:      o.initialClusterFromMembers(),
			InitialClusterState: "existing",
			Reason:              etcdv1alpha1.ReasonRecreatingPod,
			Message:             fmt.Sprintf("creating the pod of member %s", m.Name),
		}, true
	}
	return Action{}, false
}

// replace removes a member that cannot come back as it is (why says why: its data is gone,
// or it stayed unhealthy too long), so that the cluster grows back with a fresh member (a
// new learner, new member ID). It only happens while the other voters keep a healthy
// quorum; otherwise nothing is touched and the cluster is reported degraded, with
// blockedReason.
func (o Observed) replace(m Member, why, blockedReason string) Action {
	voters, healthy, successor := o.remainingVoters(m)
	if voters == 0 || healthy < voters/2+1 {
		return Action{Kind: Blocked, Member: m.Name, Reason: blockedReason,
			Message: fmt.Sprintf("member %s must be replaced (%s) but cannot be: %d of the %d other voting members are healthy, short of a quorum", m.Name, why, healthy, voters)}
	}
	if m.Leader {
		// A leader that must go cannot lead for long; still, hand over before removing.
		return Action{Kind: MoveLeader, Member: m.Name, MemberID: successor.ID, Reason: etcdv1alpha1.ReasonReplacingMember,
			Message: fmt.Sprintf("moving leadership from %s before replacing it: %s", m.Name, why)}
	}
	return Action{Kind: RemoveMember, Member: m.Name, MemberID: m.ID, Reason: etcdv1alpha1.ReasonReplacingMember,
		Message: fmt.Sprintf("replacing member %s: %s; a fresh member joins after it is removed", m.Name, why)}
}

// corruptMember replaces the first member, in member list order, that the consistency check
// found holding data that differs from a majority's.
func (o Observed) corruptMember() (Action, bool) {
	for _, m := range o.Members {
		if found, ok := o.Corrupt[m.ID]; ok {
			return o.replace(m, "its data differs from the majority's: "+found, etcdv1alpha1.ReasonMemberCorrupt), true
		}
	}
	return Action{}, false
}

// unhealthyTooLong finds the first started voting member past the time ReplaceAt gives it,
// with why it is replaced.
func (o Observed) unhealthyTooLong() (Member, string, bool) {
	for _, m := range o.Members {
		if at, why, ok := o.ReplaceAt(m); ok && o.Now.After(at) {
			return m, why, true
		}
	}
	return Member{}, "", false
}

// ReplaceAt is when the started voting member m, unhealthy, is replaced if it stays so, and
// why it would be: ReplaceUnhealthyAfter past UnhealthySince, or, when a node it needs is
// lost (Pod.LostNode), ReplaceOnLostNodeAfter past the later of UnhealthySince and the
// loss, whichever comes first. A member answering again, or coming back on a Ready node,
// starts over. ok is false when m is not such a member or no bound applies.
func (o Observed) ReplaceAt(m Member) (at time.Time, why string, ok bool) {
	if m.Learner || !m.Started || m.Healthy || m.UnhealthySince.IsZero() {
		return time.Time{}, "", false
	}
	since := m.UnhealthySince.UTC().Format(time.RFC3339)
	if o.ReplaceUnhealthyAfter > 0 {
		at, ok = m.UnhealthySince.Add(o.ReplaceUnhealthyAfter), true
		why = fmt.Sprintf("it has been unhealthy since %s, longer than spec.replaceUnhealthyMemberAfter (%s)", since, o.ReplaceUnhealthyAfter)
	}
	loss := o.Pods[m.Name].LostNode
	if loss.Node == "" || o.ReplaceOnLostNodeAfter <= 0 {
		return at, why, ok
	}
	from := m.UnhealthySince
	if loss.Since.After(from) {
		from = loss.Since
	}
	if lostAt := from.Add(o.ReplaceOnLostNodeAfter); !ok || lostAt.Before(at) {
		at, ok = lostAt, true
		why = fmt.Sprintf("it has been unhealthy since %s, %s, longer than spec.replaceMemberOnLostNodeAfter (%s)",
			since, loss, o.ReplaceOnLostNodeAfter)
	}
	return at, why, ok
}

// TrackUnhealthy sets UnhealthySince on each started member: zero when healthy, else the
// time it was first seen unhealthy (since, by member name, from the last status), or now
// when this is the first time.
func TrackUnhealthy(members []Member, since map[string]time.Time, now time.Time) {
	for i := range members {
		m := &members[i]
		switch {
		case m.Healthy || !m.Started:
			m.UnhealthySince = time.Time{}
		case !since[m.Name].IsZero():
			m.UnhealthySince = since[m.Name]
		default:
			m.UnhealthySince = now
		}
	}
}

// addLearner adds the next member as a learner. Its name takes the lowest ordinal used by no
// member, pod or claim, so a retained claim of an old member is never reused by a new one.
func (o Observed) addLearner() Action {
	used := map[string]bool{}
	for _, m := range o.Members {
		used[m.Name] = true
	}
	for n := range o.Pods {
		used[n] = true
	}
	for n := range o.PVCs {
		used[n] = true
	}
	for n := range o.ClaimsGoing {
		used[n] = true
	}
	name := ""
	for i := 0; name == ""; i++ {
		if candidate := o.Cluster.MemberName(i); !used[candidate] {
			name = candidate
		}
	}
	return Action{
		Kind: AddLearner, Member: name, PeerURL: o.Cluster.PeerURL(name),
		InitialCluster:      append(o.initialClusterFromMembers(), initialClusterEntry(o.Cluster, name)),
		InitialClusterState: "existing",
		Reason:              etcdv1alpha1.ReasonAddingMember,
		Message:             fmt.Sprintf("adding member %s (%d of %d) as a learner", name, len(o.Members)+1, o.Size),
	}
}

// knownMembers are the members that have a pod or a claim, sorted by ordinal.
func (o Observed) knownMembers() []string {
	set := map[string]bool{}
	for n := range o.Pods {
		set[n] = true
	}
	if !o.Ephemeral {
		for n, pvc := range o.PVCs {
			if !pvc.Removed {
				set[n] = true
			}
		}
	}
	names := make([]string, 0, len(set))
	for n := range set {
		names = append(names, n)
	}
	sortByOrdinal(o.Cluster, names)
	return names
}

func (o Observed) initialClusterFromMembers() []string {
	out := make([]string, 0, len(o.Members)+1)
	for _, m := range o.Members {
		out = append(out, fmt.Sprintf("%s=%s", m.Name, m.PeerURL))
	}
	return out
}

func initialClusterOf(c cluster.Names, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		out = append(out, initialClusterEntry(c, n))
	}
	return out
}

func initialClusterEntry(c cluster.Names, name string) string {
	return fmt.Sprintf("%s=%s", name, c.PeerURL(name))
}

// PodNames are the names of the member pods observed, in member order.
func (o Observed) PodNames() []string {
	names := make([]string, 0, len(o.Pods))
	for name := range o.Pods {
		names = append(names, name)
	}
	sortByOrdinal(o.Cluster, names)
	return names
}

func sortByOrdinal(c cluster.Names, names []string) {
	sort.Slice(names, func(i, j int) bool {
		a, _ := c.MemberOrdinal(names[i])
		b, _ := c.MemberOrdinal(names[j])
		return a < b
	})
}
