package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// annotationBootstrapped marks a member claim whose member has started and joined: from then
// on its data belongs to the cluster and the member must never start a new cluster.
const annotationBootstrapped = "etcd.etcdpilot.io/bootstrapped"

// annotationRemoved marks the claim of a member removed from the cluster and kept under
// deletionPolicy Retain: its data must never start a member again.
const annotationRemoved = "etcd.etcdpilot.io/removed"

// annotationInitialCluster is on the claims a static bootstrap made: the initial cluster
// (comma-separated name=peerURL) their members start with. Only a member on such a claim
// may start with initial-cluster-state=new again (internal/membership).
const annotationInitialCluster = "etcd.etcdpilot.io/initial-cluster"

// observation is everything one reconcile saw, and the etcd client it saw it with.
type observation struct {
	// membership is what the membership planner decides from (internal/membership); the
	// status reads the same maps, so what later steps record there, it sees.
	membership membership.Observed
	details    map[string]status.Detail
	pvcs       map[string]*corev1.PersistentVolumeClaim
	pods       map[string]*corev1.Pod
	// desired are, by member, the pods the current spec gives the members that have pods,
	// at the release they should run: their spec hashes, and what is applied in place.
	desired map[string]*corev1.Pod
	etcd    etcd.Client
	// trustHash is what TLS material member pods start with (resources.MemberConfig).
	trustHash string
	// restore is the backup the first member restores, when this pass creates it.
	restore *resources.RestoreSource
	// answering are the members whose status call answered, with the raft index each
	// applied, and leaderKnown says whether one of them knows a leader: what a quorum-loss
	// recovery decides from when the member list does not answer (recovery.go).
	answering   map[string]uint64
	leaderKnown bool
}

// close releases the etcd client, if one was made.
func (o *observation) close() {
	if o.etcd != nil {
		_ = o.etcd.Close()
	}
}

// observe lists the member pods and claims and asks the members about the membership and
// their health. A cluster where no member answers has membership.Members == nil.
func (r *EtcdClusterReconciler) observe(ctx context.Context, c *etcdv1alpha1.EtcdCluster, st *tlsState) (*observation, error) {
	names := cluster.For(c)
	spec := clusterspec.WithDefaults(c.Spec)
	o := &observation{
		membership: membership.Observed{
			Cluster: names, Size: int(c.Spec.Size), Ephemeral: c.Spec.Storage.Ephemeral,
			Pods: map[string]membership.Pod{}, PVCs: map[string]membership.PVC{}, ClaimsGoing: map[string]bool{},
			Now:                    r.now(),
			ReplaceUnhealthyAfter:  spec.ReplaceUnhealthyMemberAfter.Duration,
			ReplaceOnLostNodeAfter: spec.ReplaceMemberOnLostNodeAfter.Duration,
			Upgrade:                upgradeOf(spec, c.Status.Upgrade),
			StaticBootstrap:        !c.Spec.Storage.Ephemeral && (c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil),
			Hibernate:              c.Spec.Hibernation.Enabled,
		},
		details:   map[string]status.Detail{},
		pvcs:      map[string]*corev1.PersistentVolumeClaim{},
		pods:      map[string]*corev1.Pod{},
		desired:   map[string]*corev1.Pod{},
		trustHash: st.trustHash,
	}
	selector := client.MatchingLabels(names.SelectorLabels())
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(c.Namespace), selector); err != nil {
		return nil, err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if member := p.Labels[cluster.LabelMember]; member != "" {
			o.pods[member] = p
			o.membership.Pods[member] = plannerPod(p)
		}
	}
	r.observeZones(ctx, o)
	var pvcs corev1.PersistentVolumeClaimList
	if err := r.Client.List(ctx, &pvcs, client.InNamespace(c.Namespace), selector); err != nil {
		return nil, err
	}
	o.addClaims(pvcs.Items)
	if err := r.observeUpgradeBackup(ctx, c, o); err != nil {
		return nil, err
	}
	if err := r.observeFinalBackup(ctx, c, o); err != nil {
		return nil, err
	}
	r.observeEtcd(ctx, st.config, o)
	// How long each member has been unhealthy carries over from the last status, so that
	// the bound holds across reconciles and operator restarts.
	since := map[string]time.Time{}
	for _, m := range c.Status.Members {
		if m.UnhealthySince != nil {
			since[m.Name] = m.UnhealthySince.Time
		}
	}
	membership.TrackUnhealthy(o.membership.Members, since, o.membership.Now)
	r.observeLostNodes(ctx, o)
	if clusterspec.ReplacesCorruptMembers(c) {
		o.membership.Corrupt = status.Suspects(c)
	}
	// Pods made before the version label existed run what their member reports.
	for name, p := range o.membership.Pods {
		if p.Version == "" {
			p.Version = o.details[name].Version
			o.membership.Pods[name] = p
		}
	}
	r.desiredPods(c, o)
	r.observeStorage(ctx, c, o)
	return o, nil
}

// desiredPods computes the spec each member's pod should be built from, at the release it
// should run, and its hash: from c's spec and what its status decided (clusterspec.Effective).
func (r *EtcdClusterReconciler) desiredPods(c *etcdv1alpha1.EtcdCluster, o *observation) {
	version := o.membership.Upgrade.Desired()
	if o.membership.SpecHashes == nil {
		o.membership.SpecHashes = map[string]string{}
	}
	clear(o.membership.SpecHashes) // the same map: the status reads this map too
	for name := range o.membership.Pods {
		o.desired[name] = resources.MemberPod(c, r.memberConfig(c, name, version, o.trustHash), r.EtcdImages)
		o.membership.SpecHashes[name] = o.desired[name].Annotations[resources.AnnotationSpecHash]
	}
}

// addClaims records the member claims. A claim being deleted is, to the planner, gone
// already (its data is going), and its name not yet free.
func (o *observation) addClaims(pvcs []corev1.PersistentVolumeClaim) {
	for i := range pvcs {
		pvc := &pvcs[i]
		member := pvc.Labels[cluster.LabelMember]
		switch {
		case member == "":
		case pvc.DeletionTimestamp != nil:
			o.membership.ClaimsGoing[member] = true
		default:
			o.pvcs[member] = pvc
			o.membership.PVCs[member] = claimOf(pvc)
		}
	}
}

// claimOf reads what the planner needs of a member's claim: the marks the operator put on
// it, the initial cluster a static bootstrap recorded, and its volume.
func claimOf(pvc *corev1.PersistentVolumeClaim) membership.PVC {
	p := membership.PVC{
		Bootstrapped: pvc.Annotations[annotationBootstrapped] == "true",
		Removed:      pvc.Annotations[annotationRemoved] == "true",
		Volume:       volumeOf(pvc),
	}
	if v := pvc.Annotations[annotationInitialCluster]; v != "" {
		p.InitialCluster = strings.Split(v, ",")
	}
	p.Node = pvc.Annotations[annotationSelectedNode]
	return p
}

// annotationSelectedNode is where the scheduler records, on a claim whose volume is made
// for the first pod that uses it, the node it chose for that pod.
const annotationSelectedNode = "volume.kubernetes.io/selected-node"

// volumeOf reads a claim's requested and provided storage and whether its file system waits
// for a restart to grow.
func volumeOf(pvc *corev1.PersistentVolumeClaim) membership.Volume {
	v := membership.Volume{
		Requested: pvc.Spec.Resources.Requests[corev1.ResourceStorage],
		Capacity:  pvc.Status.Capacity[corev1.ResourceStorage],
	}
	for _, cond := range pvc.Status.Conditions {
		if cond.Type == corev1.PersistentVolumeClaimFileSystemResizePending && cond.Status == corev1.ConditionTrue {
			v.FileSystemResizePending = true
		}
	}
	return v
}

// observeStorage fills in what spec.storage asks of the claims and, only when a claim must
// grow, whether its StorageClass allows expansion (read from the API server: the operator
// does not cache StorageClasses for a question it rarely asks). A class it cannot read leaves
// Expandable unknown, with the reason: the planner then changes no claim and says why.
func (r *EtcdClusterReconciler) observeStorage(ctx context.Context, c *etcdv1alpha1.EtcdCluster, o *observation) {
	spec := clusterspec.Effective(c)
	if spec.Storage.Ephemeral || spec.Storage.Size == nil {
		return
	}
	st := &o.membership.Storage
	st.Size = spec.Storage.Size.DeepCopy()
	for _, member := range sortedKeys(o.pvcs) {
		pvc := o.pvcs[member]
		if !st.NeedsToGrow(o.membership.PVCs[member].Volume) {
			continue
		}
		st.Class = ptr.Deref(pvc.Spec.StorageClassName, "")
		if st.Class == "" {
			st.Unknown = fmt.Sprintf("claim %s names no StorageClass", pvc.Name)
			return
		}
		sc := &storagev1.StorageClass{}
		if err := r.APIReader.Get(ctx, client.ObjectKey{Name: st.Class}, sc); err != nil {
			st.Unknown = fmt.Sprintf("StorageClass %q could not be read: %v", st.Class, err)
			if apierrors.IsNotFound(err) {
				st.Unknown = fmt.Sprintf("StorageClass %q was not found", st.Class)
			}
			return
		}
		st.Expandable = ptr.To(ptr.Deref(sc.AllowVolumeExpansion, false))
		return
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// observeUpgradeBackup reads, with spec.upgradeBackupDestination and until the snapshot of
// the upgrade to spec.version is recorded, the EtcdBackup that is to hold it.
func (r *EtcdClusterReconciler) observeUpgradeBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster, o *observation) error {
	u := &o.membership.Upgrade
	if c.Spec.UpgradeBackupDestination == nil || u.SnapshotTaken {
		return nil
	}
	b, err := r.observePlannedBackup(ctx, c, o.membership.Cluster.PreUpgradeBackup(u.Target))
	u.Backup = b
	return err
}

// observeFinalBackup reads, with spec.hibernation.enabled and its backupDestination, the
// EtcdBackup that is to hold the final backup of this hibernation.
func (r *EtcdClusterReconciler) observeFinalBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster, o *observation) error {
	h := c.Spec.Hibernation
	if !h.Enabled || h.BackupDestination == nil {
		return nil
	}
	b, err := r.observePlannedBackup(ctx, c, o.membership.Cluster.FinalBackup(c.Generation))
	o.membership.FinalBackup = b
	return err
}

// observePlannedBackup reads how the EtcdBackup of the given name, one the planner creates
// and waits for, went: missing, running, succeeded, or failed (a backup of that name of
// another cluster counts as failed: the planner must not wait on it).
func (r *EtcdClusterReconciler) observePlannedBackup(ctx context.Context, c *etcdv1alpha1.EtcdCluster, name string) (*membership.UpgradeBackup, error) {
	out := &membership.UpgradeBackup{Name: name, State: membership.BackupMissing}
	b := &etcdv1alpha1.EtcdBackup{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, b); err != nil {
		return out, client.IgnoreNotFound(err)
	}
	if b.Spec.ClusterName != c.Name {
		out.State, out.Message = membership.BackupFailed, fmt.Sprintf("it exists, and backs up EtcdCluster %s", b.Spec.ClusterName)
		return out, nil
	}
	cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	switch {
	case cond == nil || cond.Status == metav1.ConditionUnknown:
		out.State = membership.BackupRunning
	case cond.Status == metav1.ConditionTrue:
		out.State = membership.BackupSucceeded
	default:
		out.State, out.Message = membership.BackupFailed, cond.Reason+": "+cond.Message
	}
	return out, nil
}

// upgradeOf reads what the (defaulted) spec and the last upgrade record say about the etcd
// version.
func upgradeOf(spec etcdv1alpha1.EtcdClusterSpec, last *etcdv1alpha1.UpgradeStatus) membership.Upgrade {
	u := membership.Upgrade{Target: spec.Version, MemberTimeout: spec.MemberUpgradeTimeout.Duration, SnapshotCount: int(spec.Etcd.SnapshotCount)}
	if last != nil && last.ToVersion == u.Target {
		u.From, u.RolledBack = last.FromVersion, last.RolledBack != nil
		u.SnapshotTaken, u.RaftSnapshotsForced = last.Snapshot != nil, last.RaftSnapshotsForcedAt != nil
	}
	return u
}

// observeEtcd fills in the membership and health, through the client URLs of the members
// that have pods. Errors leave the membership unknown (nil): to the planner, a cluster that
// does not answer.
func (r *EtcdClusterReconciler) observeEtcd(ctx context.Context, tlsConfig *tls.Config, o *observation) {
	names := o.membership.Cluster
	endpoints := make([]string, 0, len(o.membership.Pods))
	for member := range o.membership.Pods {
		endpoints = append(endpoints, names.ClientURL(member))
	}
	if len(endpoints) == 0 {
		return
	}
	sort.Strings(endpoints)
	logger := log.FromContext(ctx)
	cli, err := r.NewEtcdClient(etcd.Config{Endpoints: endpoints, TLS: tlsConfig})
	if err != nil {
		logger.Info("Cannot create an etcd client", "error", err.Error())
		return
	}
	o.etcd = cli
	list, err := memberList(ctx, cli, o.membership.Pods)
	if err != nil {
		logger.Info("No member answered the member list", "error", err.Error())
		o.askPods(ctx, cli)
		return
	}
	members := make([]membership.Member, 0, len(list))
	for _, m := range list {
		if len(m.PeerURLs) == 0 {
			continue
		}
		name, ok := names.MemberFromPeerURL(m.PeerURLs[0])
		if !ok {
			logger.Info("Ignoring an etcd member that this operator did not create", "id", m.ID, "peerURLs", m.PeerURLs)
			continue
		}
		members = append(members, membership.Member{Name: name, ID: m.ID, PeerURL: m.PeerURLs[0], Started: m.Name != "", Learner: m.IsLearner})
	}
	statuses := askMembers(ctx, cli, names, members, o.membership.Pods)
	for i := range members {
		member := &members[i]
		st, asked := statuses[member.Name]
		if !asked {
			continue
		}
		member.Healthy = st.err == nil && etcd.MemberHealthy(member.ID, st.Errors)
		member.Ready = o.membership.Pods[member.Name].Ready
		if st.err == nil {
			o.heard(member.Name, st.MemberStatus)
			member.Leader = st.LeaderID == member.ID
			member.RaftIndex = st.RaftIndex
			o.details[member.Name] = status.Detail{Version: st.Version, DBSize: st.DBSize, DBSizeInUse: st.DBSizeInUse,
				Alarms: etcd.Alarms(st.Errors)[member.ID], Revision: st.Revision}
		}
	}
	o.membership.Members = members
}

// askPods asks the member of every pod that is not being deleted for its status, when the
// member list did not answer: which members still run, and how far each got, for a
// quorum-loss recovery.
func (o *observation) askPods(ctx context.Context, cli etcd.Client) {
	members := make([]membership.Member, 0, len(o.membership.Pods))
	for name := range o.membership.Pods {
		members = append(members, membership.Member{Name: name, Started: true})
	}
	for name, st := range askMembers(ctx, cli, o.membership.Cluster, members, o.membership.Pods) {
		if st.err == nil {
			o.heard(name, st.MemberStatus)
		}
	}
}

// heard records a member's answer to the status call.
func (o *observation) heard(name string, st etcd.MemberStatus) {
	if o.answering == nil {
		o.answering = map[string]uint64{}
	}
	o.answering[name] = st.RaftAppliedIndex
	o.leaderKnown = o.leaderKnown || st.LeaderID != 0
}

// startingListTimeout bounds the member list while no member pod is Ready: at a bootstrap,
// or when every member is down, an answer comes at once or not at all, and a pass that waits
// longer only holds back the next, which sees the members that have started since.
const startingListTimeout = 2 * time.Second

// memberList lists the members, for at most startingListTimeout while no member pod is Ready.
func memberList(ctx context.Context, cli etcd.Client, pods map[string]membership.Pod) ([]etcd.Member, error) {
	for _, p := range pods {
		if p.Ready {
			return cli.MemberList(ctx)
		}
	}
	lctx, cancel := context.WithTimeout(ctx, startingListTimeout)
	defer cancel()
	return cli.MemberList(lctx)
}

// statusTimeout bounds each member's status call: a member that takes longer is not
// healthy, and a reconcile that waits on it holds back the next one. A member whose pod is
// not Ready (starting, or a learner) gets startingStatusTimeout: one that runs answers in
// milliseconds, one that does not yet listen would only keep the pass from seeing it Ready.
const (
	statusTimeout         = etcd.HealthTimeout
	startingStatusTimeout = 2 * time.Second
)

// memberStatus is a member's answer to the status call, or why there was none.
type memberStatus struct {
	etcd.MemberStatus
	err error
}

// askMembers asks every started member that has a pod for its status, all at once, each
// for at most statusTimeout (startingStatusTimeout while its pod is not Ready). A member
// whose pod is being deleted is not asked: it is going away (not healthy), and a call to it
// could only wait. The answers are by member name.
func askMembers(ctx context.Context, cli etcd.Client, names cluster.Names, members []membership.Member, pods map[string]membership.Pod) map[string]memberStatus {
	answers := make([]*memberStatus, len(members)) // each goroutine writes its own slot
	var wg sync.WaitGroup
	for i, m := range members {
		pod, hasPod := pods[m.Name]
		switch {
		case !hasPod || !m.Started:
			continue
		case pod.Terminating:
			answers[i] = &memberStatus{err: fmt.Errorf("the pod of member %s is being deleted", m.Name)}
			continue
		}
		timeout := statusTimeout
		if !pod.Ready {
			timeout = startingStatusTimeout
		}
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			st, err := cli.Status(sctx, names.ClientURL(m.Name))
			answers[i] = &memberStatus{MemberStatus: st, err: err}
		})
	}
	wg.Wait()
	out := make(map[string]memberStatus, len(members))
	for i, a := range answers {
		if a != nil {
			out[members[i].Name] = *a
		}
	}
	return out
}

// plannerPod is what the planner knows of a member pod.
func plannerPod(p *corev1.Pod) membership.Pod {
	out := membership.Pod{Ready: podReady(p), Version: p.Labels[cluster.LabelVersion], Created: p.CreationTimestamp.Time,
		SpecHash: p.Annotations[resources.AnnotationSpecHash], Terminating: p.DeletionTimestamp != nil, Node: p.Spec.NodeName}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			out.Unschedulable, out.UnschedulableSince = c.Message, c.LastTransitionTime.Time
		}
	}
	return out
}

// observeZones fills in the zone of the node each member pod runs on (nodeZones). A node
// it cannot read leaves the zone empty, which status shows as unknown, and is read again
// next pass.
func (r *EtcdClusterReconciler) observeZones(ctx context.Context, o *observation) {
	for name, p := range o.membership.Pods {
		if p.Node == "" {
			continue
		}
		zone, err := r.zones.zoneOf(ctx, r.APIReader, p.Node, o.membership.Now)
		if err != nil {
			log.FromContext(ctx).Error(err, "Reading the zone of a member's node", "member", name, "node", p.Node)
			continue
		}
		p.Zone = zone
		o.membership.Pods[name] = p
	}
}

// observeLostNodes reads, from the API server, the node each started member that did not
// answer healthy needs, and records it on the member's pod when it is lost
// (membership.Pod.LostNode): the pod's node NotReady or gone; for a pod no node takes, the
// node its claim's volume was made on, whatever keeps the pod off it; and the node of a
// removed member's pod being deleted (nodeInQuestion). Only those nodes: a healthy member's
// node is not in question, and the operator keeps no cache of nodes. A node it cannot read
// is not taken for lost.
func (r *EtcdClusterReconciler) observeLostNodes(ctx context.Context, o *observation) {
	members := map[string]membership.Member{}
	for _, m := range o.membership.Members {
		members[m.Name] = m
	}
	for name, p := range o.membership.Pods {
		m, inList := members[name]
		node, waiting := nodeInQuestion(m, inList, p, o.membership.PVCs[name])
		if node == "" {
			continue
		}
		n := &corev1.Node{}
		err := r.APIReader.Get(ctx, client.ObjectKey{Name: node}, n)
		if err != nil && !apierrors.IsNotFound(err) {
			log.FromContext(ctx).Error(err, "Reading the node of a member pod", "member", name, "node", node)
			continue
		}
		if loss, lost := nodeLoss(node, n, err, waiting, p.UnschedulableSince); lost {
			p.LostNode = loss
			o.membership.Pods[name] = p
		}
	}
}

// nodeInQuestion is the node whose loss matters for the pod p of member m (inList: m is in
// the member list), and whether the pod waits for a node: for a started member that does
// not answer, its pod's node, or, for a pod no node takes, its claim's; for a removed
// member's pod being deleted, its node (a lost one never confirms the deletion). Empty
// otherwise.
func nodeInQuestion(m membership.Member, inList bool, p membership.Pod, claim membership.PVC) (node string, waiting bool) {
	switch {
	case !inList && p.Terminating:
		return p.Node, false
	case !inList || m.Healthy || !m.Started:
		return "", false
	case p.Node == "" && p.Unschedulable != "":
		return claim.Node, true
	}
	return p.Node, false
}

// nodeLoss says whether the node a member needs is lost, read as n (with err, NotFound when
// it is gone): NotReady (its Ready condition False or Unknown, as the node lifecycle
// controller sets it for a node that stopped reporting) since it turned so, or, for a pod
// waiting for a node since waitingSince, cordoned or refusing it: a member that cannot run
// where its data is must be made again where it can.
func nodeLoss(name string, n *corev1.Node, err error, waiting bool, waitingSince time.Time) (membership.NodeLoss, bool) {
	if apierrors.IsNotFound(err) {
		return membership.NodeLoss{Node: name, How: membership.NodeGone}, true
	}
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return membership.NodeLoss{Node: name, How: membership.NodeNotReady, Since: c.LastTransitionTime.Time}, true
		}
	}
	switch {
	case waiting && n.Spec.Unschedulable:
		return membership.NodeLoss{Node: name, How: membership.NodeCordoned, Since: waitingSince}, true
	case waiting:
		return membership.NodeLoss{Node: name, How: membership.NodeRefuses, Since: waitingSince}, true
	}
	return membership.NodeLoss{}, false
}

// nodeZoneTTL is how long a node's zone, once read, is taken as it was: a node's zone label
// is set when it joins and seldom moves, and the operator does not keep nodes in its cache
// (a watch of every node of a large cluster for one label would cost more than a read per
// node now and then).
const nodeZoneTTL = 10 * time.Minute

// nodeZones remembers the zone label of each node read, and when it was read.
type nodeZones struct {
	mu    sync.Mutex
	zones map[string]zoneRead
}

type zoneRead struct {
	zone string
	at   time.Time
}

// zoneOf returns the topology.kubernetes.io/zone label of node ("" without one), read from
// the API server when it was not read in the last nodeZoneTTL. A failed read is not
// remembered.
func (z *nodeZones) zoneOf(ctx context.Context, reader client.Reader, node string, now time.Time) (string, error) {
	z.mu.Lock()
	read, ok := z.zones[node]
	z.mu.Unlock()
	if ok && now.Sub(read.at) < nodeZoneTTL {
		return read.zone, nil
	}
	n := &corev1.Node{}
	if err := reader.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return "", err
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	if z.zones == nil {
		z.zones = map[string]zoneRead{}
	}
	for name, old := range z.zones {
		if now.Sub(old.at) >= nodeZoneTTL {
			delete(z.zones, name) // nodes no member runs on any more are forgotten
		}
	}
	z.zones[node] = zoneRead{zone: n.Labels[corev1.LabelTopologyZone], at: now}
	return z.zones[node].zone, nil
}

// recheck is the second look before a disruptive action (membership.ConfirmDisruption):
// the member pods read from the API server, not the cache, and every member asked again for
// its status.
func (r *EtcdClusterReconciler) recheck(ctx context.Context, c *etcdv1alpha1.EtcdCluster, o *observation) (map[string]membership.Recheck, error) {
	var pods corev1.PodList
	if err := r.APIReader.List(ctx, &pods, client.InNamespace(c.Namespace), client.MatchingLabels(o.membership.Cluster.SelectorLabels())); err != nil {
		return nil, err
	}
	fresh := map[string]membership.Pod{}
	for i := range pods.Items {
		if member := pods.Items[i].Labels[cluster.LabelMember]; member != "" {
			fresh[member] = plannerPod(&pods.Items[i])
		}
	}
	statuses := askMembers(ctx, o.etcd, o.membership.Cluster, o.membership.Members, fresh)
	out := make(map[string]membership.Recheck, len(o.membership.Members))
	for _, m := range o.membership.Members {
		pod, hasPod := fresh[m.Name]
		st, asked := statuses[m.Name]
		out[m.Name] = membership.Recheck{HasPod: hasPod, Pod: pod, Healthy: asked && st.err == nil && etcd.MemberHealthy(m.ID, st.Errors)}
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// recordBootstrapped marks the claims of started members, so that a later reconcile never
// starts such a member as a new cluster, even if nothing answers then.
func (r *EtcdClusterReconciler) recordBootstrapped(ctx context.Context, o *observation) error {
	for _, m := range o.membership.Members {
		pvc, ok := o.pvcs[m.Name]
		if !ok || !m.Started || pvc.Annotations[annotationBootstrapped] == "true" {
			continue
		}
		if err := r.annotate(ctx, pvc, annotationBootstrapped); err != nil {
			return err
		}
		p := o.membership.PVCs[m.Name]
		p.Bootstrapped = true
		o.membership.PVCs[m.Name] = p
	}
	return nil
}

// annotate sets annotation key to "true" on a claim.
func (r *EtcdClusterReconciler) annotate(ctx context.Context, pvc *corev1.PersistentVolumeClaim, key string) error {
	patch := client.MergeFrom(pvc.DeepCopy())
	if pvc.Annotations == nil {
		pvc.Annotations = map[string]string{}
	}
	pvc.Annotations[key] = "true"
	return r.Client.Patch(ctx, pvc, patch)
}
