package levels_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// backupFinalizer is the operator's finalizer on a backup with deletionPolicy Delete.
const backupFinalizer = "etcd.etcdpilot.io/delete-artifact"

// fakeOperator plays the operator against a fake API server, just well enough for the
// tests' flows: it keeps spec.size members, each a pod and a claim, gives a member a new
// etcd ID when its claim was lost, reports all of them healthy at spec.version, records
// one event per cluster, and deletes the pods and claims of deleted clusters (the garbage
// collector's part). It takes a backup at once: a pod for its Job, a copy of the cluster's
// keys and a made-up artifact; a cluster restored from it starts with that copy.
//
// Level 4's insights are options, off by default (an operator without them): its
// transport answers the GETs of member metrics and of the operator's metrics endpoint, and
// it keeps monitoring objects and the Monitoring condition. Its transport also reaches the
// fake Prometheus (fakeprometheus_test.go), whose view of the cluster other options shape:
// the operator's ServiceMonitor and rules applied, a member target down, the cluster's
// rules not loaded or broken, an alert that never goes off. So is level 5's maintenance
// (maintaining): defragmentation by spec.maintenance's thresholds and NOSPACE recovery.
// Without it, the fake etcd clusters still raise NOSPACE at spec.etcd.quotaBackendBytes,
// and nothing gets them out. So is level 5's healing: recovery from a lost quorum, and the
// replacement of a member whose data a test pod rewrote. The fake also plays the kubelet
// for the tests' own pods: such a pod ends at once, and one on a member's claim marks that
// member's data as rewritten.
type fakeOperator struct {
	c     client.Client
	ns    string
	etcds *fakeEtcds

	// events makes the operator record an event about every cluster.
	events bool
	// memberMetrics gives member pods a metrics port that answers etcd_server_has_leader 1.
	memberMetrics bool
	// operatorMetrics makes the operator's metrics endpoint describe every cluster; without
	// it, the endpoint answers only metrics of its own workings.
	operatorMetrics bool
	// refuseMetrics makes the operator's metrics endpoint refuse the test's token (403).
	refuseMetrics bool
	// monitoring makes the operator keep the Monitoring condition, and the monitoring
	// objects when crds.
	monitoring bool
	// crds says whether the Prometheus Operator's CRDs are installed (discovery serves them).
	crds bool
	// noAvailableEvent leaves out the ClusterAvailable event when events are recorded.
	noAvailableEvent bool
	// operatorMonitored says the operator's ServiceMonitor and PrometheusRule
	// (config/prometheus) are applied: Prometheus scrapes the operator and evaluates the
	// operator's alerts.
	operatorMonitored bool
	// memberDown makes Prometheus fail to scrape the member pods.
	memberDown bool
	// rulesNotLoaded keeps the clusters' PrometheusRules out of Prometheus.
	rulesNotLoaded bool
	// ruleBroken makes the first rule of each cluster's group fail its evaluation.
	ruleBroken bool
	// alertSilent keeps EtcdBackupFailing inactive whatever the backups do.
	alertSilent bool
	// alertStuck keeps EtcdBackupFailing firing once a backup failed, whatever succeeds
	// after.
	alertStuck bool
	// promHost is the fake Prometheus's host:port, which the transport passes through to.
	promHost string
	// backupFailure, when set, fails every backup with its reason and message.
	backupFailure *metav1.Condition
	// restoreLive makes a broken restore: the restored cluster gets the backed-up
	// cluster's keys as they are now, not as the backup took them.
	restoreLive bool
	// maintaining makes the operator defragment members past spec.maintenance's thresholds
	// and recover from NOSPACE, recording its events.
	maintaining bool
	// leaderFirst makes it defragment the leader first rather than last.
	leaderFirst bool
	// verifying passes the verification of every backup that asks for one.
	verifying bool
	// healing makes the operator recover a cluster with spec.quorumLossRecovery Automatic
	// that lost a majority of its members, from the one left, and replace a member whose
	// data was rewritten (spec.consistencyCheck Replace). Without it, a cluster with
	// spec.consistencyCheck.interval is still found Consistent at every round.
	healing bool
	// blameOther makes the MemberCorrupt event of a replacement name another member than
	// the one replaced.
	blameOther bool
	// unseenRewrite makes a test pod's rewrite of a member's file succeed without changing
	// what the member serves (the operator still replaces the member).
	unseenRewrite bool
	// restartFor is how long a member restarted by an upgrade answers nothing; the next
	// member is restarted restartFor after it answers again. writesFailFor is how long writes
	// through the client Service fail at each restart.
	restartFor, writesFailFor time.Duration
	// restartTwo makes an upgrade restart two members at once.
	restartTwo bool
	// nodes is how many Ready nodes the fake cluster has (node1, node2, ...); member i runs
	// on node i mod nodes + 1. Without nodes, members name none.
	nodes int

	mu        sync.Mutex
	ids       map[string]string // member name -> etcd ID
	nextID    int
	nextIP    int
	snapshots map[string]map[string]string                   // backup name -> keys
	sources   map[string]string                              // backup name -> endpoint of the backed-up cluster
	restored  map[string]bool                                // UIDs of restored clusters
	defrags   map[string]*etcdv1alpha1.DefragmentationRecord // member name -> its last defragmentation
	rewritten map[string]time.Time                           // claims whose data a test pod rewrote, and when
	lost      map[string]map[string]bool                     // cluster UID -> members whose data was lost since it was last recovered
	nextEvent int
	// unbounded lets every tenant's user use every key.
	unbounded bool
	// tenantSigner signs the tenants' certificates; tenantCAPair is its certificate and key.
	tenantSigner *pki.CA
	tenantCAPair pki.KeyPair
}

// fakeOption changes the fake operator before it starts.
type fakeOption func(*fakeOperator)

// unboundedTenants gives each tenant every key rather than its prefix.
func unboundedTenants(o *fakeOperator) { o.unbounded = true }

// onNodes gives the fake cluster n Ready nodes, the members spread over them.
func onNodes(n int) fakeOption { return func(o *fakeOperator) { o.nodes = n } }

// failBackups makes every backup fail with reason and message.
func failBackups(reason, message string) fakeOption {
	return func(o *fakeOperator) {
		o.backupFailure = &metav1.Condition{Reason: reason, Message: message}
	}
}

// restoreLive makes the operator start restored clusters from the live data.
func restoreLive(o *fakeOperator) { o.restoreLive = true }

// insightful makes an operator with everything level 4 looks for: member metrics, its own
// metrics of every cluster, the Monitoring condition and monitoring objects.
func insightful(o *fakeOperator) { o.memberMetrics, o.operatorMetrics, o.monitoring = true, true, true }

// prometheusCRDs installs the Prometheus Operator's CRDs.
func prometheusCRDs(o *fakeOperator) { o.crds = true }

// monitored is what a Prometheus that proves level 4 has: the Prometheus Operator's CRDs and
// the operator's ServiceMonitor and rules applied.
func monitored(o *fakeOperator) { o.crds, o.operatorMonitored = true, true }

// maintaining makes an operator with level 5's maintenance.
func maintaining(o *fakeOperator) { o.maintaining = true }

// leaderFirst makes the maintaining operator defragment the leader first.
func leaderFirst(o *fakeOperator) { o.leaderFirst = true }

// verifying makes the operator verify the backups that ask for it (spec.verify): each
// passes, restored at its revision.
func verifying(o *fakeOperator) { o.verifying = true }

// healing makes the operator recover from quorum loss and replace corrupt members.
func healing(o *fakeOperator) { o.healing = true }

// blameOther makes the healing operator's MemberCorrupt event name a member it did not
// replace.
func blameOther(o *fakeOperator) { o.blameOther = true }

// unseenRewrite makes the rewrite of a member's file invisible in what the member serves.
func unseenRewrite(o *fakeOperator) { o.unseenRewrite = true }

// restartTwo makes upgrades restart two members at once.
func restartTwo(o *fakeOperator) { o.restartTwo = true }

// unavailableDuringRestarts makes writes through the client Service fail for 250 ms at
// each restart of an upgrade, longer than the restart itself.
func unavailableDuringRestarts(o *fakeOperator) { o.writesFailFor = 250 * time.Millisecond }

func startFakeOperator(t *testing.T, c client.Client, ns string, etcds *fakeEtcds, events bool, opts ...fakeOption) *fakeOperator {
	t.Helper()
	o := &fakeOperator{c: c, ns: ns, etcds: etcds, events: events, ids: map[string]string{},
		restartFor: 150 * time.Millisecond, writesFailFor: 20 * time.Millisecond,
		snapshots: map[string]map[string]string{}, sources: map[string]string{}, restored: map[string]bool{},
		defrags: map[string]*etcdv1alpha1.DefragmentationRecord{}, rewritten: map[string]time.Time{}, lost: map[string]map[string]bool{}}
	for _, opt := range opts {
		opt(o)
	}
	if err := c.Create(context.Background(), metricsService()); err != nil {
		t.Fatal(err)
	}
	for i := range o.nodes {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("node%d", i+1)}}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if err := c.Create(context.Background(), n); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			o.reconcileAll(ctx)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

func (o *fakeOperator) reconcileAll(ctx context.Context) {
	var list etcdv1alpha1.EtcdClusterList
	var backups etcdv1alpha1.EtcdBackupList
	var tenants etcdv1alpha1.EtcdTenantList
	if o.c.List(ctx, &list, client.InNamespace(o.ns)) != nil || o.c.List(ctx, &backups, client.InNamespace(o.ns)) != nil ||
		o.c.List(ctx, &tenants, client.InNamespace(o.ns)) != nil {
		return
	}
	live := map[string]bool{}
	clusters := map[string]*etcdv1alpha1.EtcdCluster{}
	for i := range list.Items {
		live[list.Items[i].Name] = true
		o.reconcile(ctx, &list.Items[i])
		clusters[list.Items[i].Name] = &list.Items[i]
	}
	for i := range tenants.Items {
		o.reconcileTenant(ctx, &tenants.Items[i], clusters)
	}
	liveBackups := map[string]bool{}
	for i := range backups.Items {
		liveBackups[backups.Items[i].Name] = true
		o.reconcileBackup(ctx, &backups.Items[i])
	}
	o.collectGarbage(ctx, live, liveBackups)
	o.runTestPods(ctx)
}

// runTestPods ends the tests' own pods that have not run yet, as the kubelet would run
// corrupt-member-data: each succeeds, says so in its termination message, and marks the
// data on its claim as rewritten.
func (o *fakeOperator) runTestPods(ctx context.Context) {
	var pods corev1.PodList
	if o.c.List(ctx, &pods, client.InNamespace(o.ns), client.MatchingLabels{framework.PartOfLabel: framework.PartOfValue}) != nil {
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Status.Phase != "" || len(p.Spec.Volumes) == 0 || p.Spec.Volumes[0].PersistentVolumeClaim == nil {
			continue
		}
		// The container runs, then the pod reports that it ended: the test reads the member
		// once it sees the pod end.
		claim := p.Spec.Volumes[0].PersistentVolumeClaim.ClaimName
		if args := p.Spec.Containers[0].Args; !o.unseenRewrite && len(args) == 3 { // file, find, replace
			member := strings.TrimSuffix(claim, "-data")
			o.etcds.each(func(d *fakeDB) { d.rewrite(member, args[1], args[2]) })
		}
		o.mu.Lock()
		o.rewritten[claim] = time.Now()
		o.mu.Unlock()
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "corrupt", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{Message: "rewrote 1 occurrences of the canary"}}}}
		_ = o.c.Status().Update(ctx, p) // a conflict is retried on the next round
	}
}

// collectGarbage deletes the member pods and claims of deleted clusters and the Job pods
// of deleted backups.
func (o *fakeOperator) collectGarbage(ctx context.Context, clusters, backups map[string]bool) {
	var pods corev1.PodList
	var pvcs corev1.PersistentVolumeClaimList
	_ = o.c.List(ctx, &pods, client.InNamespace(o.ns))
	_ = o.c.List(ctx, &pvcs, client.InNamespace(o.ns))
	for i := range pods.Items {
		l := pods.Items[i].Labels
		if l[cluster.LabelMember] != "" && !clusters[l[cluster.LabelCluster]] || l[resources.LabelBackup] != "" && !backups[l[resources.LabelBackup]] {
			_ = o.c.Delete(ctx, &pods.Items[i])
		}
	}
	for i := range pvcs.Items {
		l := pvcs.Items[i].Labels
		if l[cluster.LabelMember] != "" && !clusters[l[cluster.LabelCluster]] {
			_ = o.c.Delete(ctx, &pvcs.Items[i])
		}
	}
}

func (o *fakeOperator) reconcile(ctx context.Context, c *etcdv1alpha1.EtcdCluster) {
	cond := func(t string, s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: reason, ObservedGeneration: c.Generation, LastTransitionTime: metav1.Now()}
	}
	if !o.restore(c) {
		c.Status = etcdv1alpha1.EtcdClusterStatus{ObservedGeneration: c.Generation, Conditions: []metav1.Condition{
			cond(etcdv1alpha1.ConditionAvailable, metav1.ConditionFalse, etcdv1alpha1.ReasonBootstrapping),
			cond(etcdv1alpha1.ConditionProgressing, metav1.ConditionTrue, etcdv1alpha1.ReasonRestoreSourceNotReady),
		}}
		_ = o.c.Status().Update(ctx, c)
		return
	}
	names := cluster.For(c)
	if o.healing {
		o.replaceRewritten(ctx, c)
	}
	var members []etcdv1alpha1.MemberStatus
	for i := range int(c.Spec.Size) {
		name := names.MemberName(i)
		id, placed := o.ensureMember(ctx, c, name, o.nodeOf(i))
		members = append(members, etcdv1alpha1.MemberStatus{Name: name, ID: id, Leader: i == 0, Node: o.nodeOf(i), Healthy: placed})
	}
	var recovery *etcdv1alpha1.RecoveryStatus
	if o.healing {
		recovery = o.recover(ctx, c, members)
	}
	var consistency *etcdv1alpha1.ConsistencyStatus
	if c.Spec.ConsistencyCheck.Interval != nil { // checked; a rewritten member goes unseen without healing
		consistency = &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.Now(), Result: "Consistent"}
	}
	for i := int(c.Spec.Size); i < 7; i++ {
		name := names.MemberName(i)
		_ = o.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name}})
		_ = o.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: names.PVCName(name)}})
	}
	o.observeEtcd(ctx, c, members)
	ready, current := int32(0), c.Spec.Version
	for _, m := range members {
		if m.Healthy {
			ready++
		}
		if m.Version != c.Spec.Version {
			current = m.Version
		}
	}
	_ = o.c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: names.ClientService()},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: cluster.ClientPort}}}})
	if o.events {
		_ = o.c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: c.Name + ".created"},
			InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: c.Name, UID: c.UID},
			Type:           corev1.EventTypeNormal, Reason: "MemberPodCreated", Count: 1})
		if !o.noAvailableEvent {
			_ = o.c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: c.Name + ".available"},
				InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: c.Name, UID: c.UID},
				Type:           corev1.EventTypeNormal, Reason: "ClusterAvailable", Count: 1})
		}
	}
	conditions := []metav1.Condition{
		cond(etcdv1alpha1.ConditionAvailable, metav1.ConditionTrue, etcdv1alpha1.ReasonAsExpected),
		cond(etcdv1alpha1.ConditionProgressing, metav1.ConditionFalse, etcdv1alpha1.ReasonAsExpected),
		cond(etcdv1alpha1.ConditionDegraded, metav1.ConditionFalse, etcdv1alpha1.ReasonAsExpected),
		cond(etcdv1alpha1.ConditionReady, metav1.ConditionTrue, etcdv1alpha1.ReasonAsExpected),
	}
	switch {
	case o.monitoring && o.crds:
		o.ensureMonitoring(ctx, c)
		conditions = append(conditions, cond(etcdv1alpha1.ConditionMonitoring, metav1.ConditionTrue, etcdv1alpha1.ReasonMonitoringConfigured))
	case o.monitoring:
		conditions = append(conditions, cond(etcdv1alpha1.ConditionMonitoring, metav1.ConditionFalse, etcdv1alpha1.ReasonPrometheusOperatorMissing))
	}
	c.Status = etcdv1alpha1.EtcdClusterStatus{
		ObservedGeneration: c.Generation,
		Conditions:         conditions,
		Members:            members, ReadyMembers: ready, CurrentVersion: current,
		ClientService: names.ClientService(), ClientSecret: "", // plain http: the fake etcd needs no certificate
		Recovery: recovery, Consistency: consistency, Auth: authOf(c),
	}
	_ = o.c.Status().Update(ctx, c) // a conflict is retried on the next round
}

// authOf is status.auth: on at once when the spec asks.
func authOf(c *etcdv1alpha1.EtcdCluster) *etcdv1alpha1.AuthStatus {
	if !c.Spec.Auth.Enabled {
		return nil
	}
	return &etcdv1alpha1.AuthStatus{Enabled: true, RootUsers: []string{"root"}}
}

// tenantFinalizer is the operator's finalizer on every tenant.
const tenantFinalizer = "etcd.etcdpilot.io/tenant"

// reconcileTenant plays the operator's part for tenant t of a cluster with auth on: its
// prefix given to its user in the fake etcd, a Secret with a certificate for the user, Ready;
// once deleted, its keys deleted with deletionPolicy Delete and its user forgotten.
func (o *fakeOperator) reconcileTenant(ctx context.Context, t *etcdv1alpha1.EtcdTenant, clusters map[string]*etcdv1alpha1.EtcdCluster) {
	c := clusters[t.Spec.ClusterName]
	user := "tenant:" + t.Name
	if !t.DeletionTimestamp.IsZero() {
		if c != nil && t.Spec.DeletionPolicy == etcdv1alpha1.TenantDeletionPolicyDelete {
			o.etcds.with(endpoint(c), func(d *fakeDB) { d.deletePrefix(t.Spec.Prefix) })
		}
		o.etcds.grant(user, "")
		if controllerutil.RemoveFinalizer(t, tenantFinalizer) {
			_ = o.c.Update(ctx, t)
		}
		return
	}
	if c == nil || c.Status.Auth == nil || !c.Status.Auth.Enabled {
		return
	}
	if controllerutil.AddFinalizer(t, tenantFinalizer) {
		if o.c.Update(ctx, t) != nil {
			return
		}
	}
	if o.unbounded {
		o.etcds.grant(user, "/")
	} else {
		o.etcds.grant(user, t.Spec.Prefix)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: t.Namespace, Name: t.Name + "-etcd-client"}}
	if err := o.c.Get(ctx, client.ObjectKeyFromObject(secret), secret); apierrors.IsNotFound(err) {
		pair, err := o.tenantCA().IssueClient(user, time.Hour, time.Now())
		if err != nil {
			return
		}
		secret.Data = map[string][]byte{"ca.crt": o.tenantCAPair.CertPEM, "tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM}
		if o.c.Create(ctx, secret) != nil {
			return
		}
	}
	if meta.IsStatusConditionTrue(t.Status.Conditions, etcdv1alpha1.ConditionReady) {
		return
	}
	t.Status = etcdv1alpha1.EtcdTenantStatus{ObservedGeneration: t.Generation, User: user, SecretName: secret.Name,
		Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonTenantProvisioned, LastTransitionTime: metav1.Now()}}}
	_ = o.c.Status().Update(ctx, t)
}

// tenantCA is the CA that signs the fake tenants' certificates, made on first use.
func (o *fakeOperator) tenantCA() *pki.CA {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.tenantSigner == nil {
		pair, err := pki.NewCA("fake tenants CA", time.Hour, time.Now())
		if err != nil {
			panic(err)
		}
		ca, err := pki.LoadCA(pair)
		if err != nil {
			panic(err)
		}
		o.tenantSigner, o.tenantCAPair = ca, pair
	}
	return o.tenantSigner
}

// nodeOf names the node member i runs on: none without nodes.
func (o *fakeOperator) nodeOf(i int) string {
	if o.nodes == 0 {
		return ""
	}
	return fmt.Sprintf("node%d", i%o.nodes+1)
}

// observeEtcd registers c's members and quota with its fake etcd, maintains it when the
// operator is maintaining, and fills in what the members report: their files, their alarms
// and their last defragmentation.
func (o *fakeOperator) observeEtcd(ctx context.Context, c *etcdv1alpha1.EtcdCluster, members []etcdv1alpha1.MemberStatus) {
	quota := int64(2 << 30) // the API's default
	if q := c.Spec.Etcd.QuotaBackendBytes; q != nil {
		quota = q.Value()
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	o.etcds.with(endpoint(c), func(d *fakeDB) {
		d.setMembers(names, quota, c.Spec.Version)
		o.upgrade(d, names, c.Spec.Version)
	})
	if o.maintaining {
		o.maintain(ctx, c, names)
	}
	o.etcds.with(endpoint(c), func(d *fakeDB) {
		for i := range members {
			m := &members[i]
			if own := d.members[m.Name]; own != nil {
				m.Version, m.Healthy = own.version, m.Healthy && !own.down() // placed, and answering
			}
			m.DBSize, m.DBSizeInUse = d.files[m.Name], d.inUse()
			if m.DBSize > 0 {
				m.FragmentationPercent = int32(100 * (m.DBSize - m.DBSizeInUse) / m.DBSize)
			}
			if d.noSpace {
				m.Alarms = []string{"NOSPACE"}
			}
		}
	})
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range members {
		members[i].LastDefragmentation = o.defrags[members[i].Name].DeepCopy()
	}
}

// upgrade restarts the members of d at version one at a time, followers first and the
// leader (the first of names) last, each only once the one before has answered again for
// restartFor (health gating); with restartTwo, two at once. Each restart makes writes
// through the client Service fail for writesFailFor.
func (o *fakeOperator) upgrade(d *fakeDB, names []string, version string) {
	now := time.Now()
	if len(names) == 0 || now.Before(d.nextRestart) {
		return
	}
	var outdated []string
	for _, m := range append(slices.Clone(names[1:]), names[0]) {
		if d.members[m].version != version {
			outdated = append(outdated, m)
		}
	}
	if len(outdated) == 0 {
		return
	}
	n := 1
	if o.restartTwo {
		n = 2
	}
	for _, m := range outdated[:min(n, len(outdated))] {
		d.members[m].version, d.members[m].downUntil = version, now.Add(o.restartFor)
	}
	d.writesFailUntil, d.nextRestart = now.Add(o.writesFailFor), now.Add(2*o.restartFor)
}

// maintain is the operator's maintenance of c, whose members are names (the first is the
// leader): with NOSPACE raised, it compacts, defragments every member and disarms, all in
// one pass; otherwise it defragments the next member past spec.maintenance's thresholds,
// followers first and the leader last (first, with leaderFirst), one member per pass.
func (o *fakeOperator) maintain(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names []string) {
	if len(names) == 0 {
		return
	}
	order := append(slices.Clone(names[1:]), names[0])
	if o.leaderFirst {
		order = names
	}
	var noSpace bool
	o.etcds.with(endpoint(c), func(d *fakeDB) { noSpace = d.noSpace })
	if noSpace {
		if c.Spec.Maintenance.NoSpaceRecovery == etcdv1alpha1.NoSpaceRecoveryDisabled {
			return
		}
		o.event(ctx, c, corev1.EventTypeWarning, etcdv1alpha1.ReasonNoSpace, "the NOSPACE alarm is raised")
		o.etcds.with(endpoint(c), func(d *fakeDB) { d.history = 0 })
		for _, m := range order {
			o.defragment(ctx, c, m)
		}
		o.etcds.with(endpoint(c), func(d *fakeDB) { d.noSpace = false })
		o.event(ctx, c, corev1.EventTypeNormal, "NoSpaceDisarmed", "Disarmed NOSPACE")
		o.event(ctx, c, corev1.EventTypeNormal, "NoSpaceRecovered", "The NOSPACE alarm is gone: the cluster accepts writes again")
		return
	}
	spec := c.Spec.Maintenance.Defragmentation
	if spec.Mode != "" && spec.Mode != etcdv1alpha1.DefragmentationAuto {
		return
	}
	minFree, minPercent := int64(100<<20), int64(45) // the API's defaults
	if spec.MinReclaimable != nil {
		minFree = spec.MinReclaimable.Value()
	}
	if spec.MinFragmentationPercent > 0 {
		minPercent = int64(spec.MinFragmentationPercent)
	}
	for _, m := range order {
		var size, free int64
		o.etcds.with(endpoint(c), func(d *fakeDB) { size, free = d.files[m], d.files[m]-d.inUse() })
		if free >= minFree && 100*free >= minPercent*size {
			o.defragment(ctx, c, m)
			return
		}
	}
}

// defragment defragments member of c, keeps its record and records its event.
func (o *fakeOperator) defragment(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string) {
	var before, after int64
	o.etcds.with(endpoint(c), func(d *fakeDB) { before, after = d.defragment(member) })
	o.mu.Lock()
	o.defrags[member] = &etcdv1alpha1.DefragmentationRecord{Time: metav1.Now(), SizeBefore: before, SizeAfter: after}
	o.mu.Unlock()
	msg := fmt.Sprintf("Defragmented member %s: its database file went from %.1f MiB to %.1f MiB", member, float64(before)/(1<<20), float64(after)/(1<<20))
	if member == cluster.For(c).MemberName(0) { // the leader: the first member, as in the status it writes
		msg += framework.LeaderDefragmented
	}
	o.event(ctx, c, corev1.EventTypeNormal, "MemberDefragmented", msg)
}

// event records an event about c, as the operator does through events.k8s.io: with an
// eventTime in microseconds.
func (o *fakeOperator) event(ctx context.Context, c *etcdv1alpha1.EtcdCluster, eventType, reason, message string) {
	o.mu.Lock()
	o.nextEvent++
	name := fmt.Sprintf("%s.%d", c.Name, o.nextEvent)
	o.mu.Unlock()
	_ = o.c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name},
		InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: c.Name, UID: c.UID},
		Type:           eventType, Reason: reason, Message: message, EventTime: metav1.NowMicro()})
}

// restore starts a cluster with spec.bootstrap.restore from its backup, once, and reports
// whether the cluster may run: always, unless it waits for its backup to succeed.
func (o *fakeOperator) restore(c *etcdv1alpha1.EtcdCluster) bool {
	if c.Spec.Bootstrap == nil || c.Spec.Bootstrap.Restore == nil {
		return true
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.restored[string(c.UID)] {
		return true
	}
	backup := c.Spec.Bootstrap.Restore.BackupName
	data, ok := o.snapshots[backup]
	if !ok {
		return false
	}
	if o.restoreLive {
		data = o.etcds.snapshot(o.sources[backup])
	}
	o.etcds.restore(endpoint(c), data)
	o.restored[string(c.UID)] = true
	return true
}

// reconcileBackup keeps the finalizer of a backup with deletionPolicy Delete, removes it
// when the backup is deleted (the artifact is made up: there is nothing to delete), and
// takes a backup that has not run yet.
func (o *fakeOperator) reconcileBackup(ctx context.Context, b *etcdv1alpha1.EtcdBackup) {
	switch {
	case b.DeletionTimestamp != nil:
		if controllerutil.RemoveFinalizer(b, backupFinalizer) {
			_ = o.c.Update(ctx, b)
		}
		return
	case b.Spec.DeletionPolicy == etcdv1alpha1.BackupDeletionPolicyDelete && controllerutil.AddFinalizer(b, backupFinalizer):
		_ = o.c.Update(ctx, b) // the backup is taken on the next round
		return
	case meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded) != nil:
		o.verify(ctx, b)
		return // finished: a backup is taken once
	}
	// The Job's pod carries the labels the operator gives it (resources.BackupJob): not the
	// members' selector.
	labels := cluster.Names{Name: b.Spec.ClusterName}.JobSelectorLabels()
	labels[resources.LabelBackup] = b.Name
	_ = o.c.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: resources.BackupJobName(b.Name), Labels: labels}})
	succeeded := o.takeBackup(ctx, b)
	meta.SetStatusCondition(&b.Status.Conditions, *succeeded)
	ready := succeeded.DeepCopy()
	ready.Type = etcdv1alpha1.ConditionReady
	meta.SetStatusCondition(&b.Status.Conditions, *ready)
	_ = o.c.Status().Update(ctx, b)
}

// verify passes the verification of a backup that succeeded and asks for one, once.
func (o *fakeOperator) verify(ctx context.Context, b *etcdv1alpha1.EtcdBackup) {
	if !o.verifying || !b.Spec.Verify || b.Status.Snapshot == nil || meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified) != nil {
		return
	}
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionVerified, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonVerificationPassed, Message: "restored into a throwaway member"})
	b.Status.Verification = &etcdv1alpha1.BackupVerification{CompletedAt: metav1.Now(), RestoredRevision: b.Status.Snapshot.Revision}
	_ = o.c.Status().Update(ctx, b)
}

// takeBackup copies the keys of b's cluster, fills in b's artifact and snapshot, and
// returns its Succeeded condition.
func (o *fakeOperator) takeBackup(ctx context.Context, b *etcdv1alpha1.EtcdBackup) *metav1.Condition {
	failed := func(reason, message string) *metav1.Condition {
		return &metav1.Condition{Type: etcdv1alpha1.ConditionSucceeded, Status: metav1.ConditionFalse, Reason: reason, Message: message}
	}
	c := &etcdv1alpha1.EtcdCluster{}
	if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: b.Spec.ClusterName}, c); apierrors.IsNotFound(err) || len(c.Status.Members) == 0 {
		return failed(etcdv1alpha1.ReasonClusterNotFound, "no EtcdCluster "+b.Spec.ClusterName+" with members")
	}
	claim := b.Spec.Destination.PVC.ClaimName
	if err := o.c.Get(ctx, client.ObjectKey{Namespace: o.ns, Name: claim}, &corev1.PersistentVolumeClaim{}); err != nil {
		return failed(etcdv1alpha1.ReasonDestinationNotFound, "PersistentVolumeClaim "+claim+" does not exist")
	}
	if f := o.backupFailure; f != nil {
		return failed(f.Reason, f.Message)
	}
	data := o.etcds.snapshot(endpoint(c))
	o.mu.Lock()
	o.snapshots[b.Name], o.sources[b.Name] = data, endpoint(c)
	o.mu.Unlock()
	key := fmt.Sprintf("%s/%s/20260101T000000Z-%s.db.gz", o.ns, c.Name, b.Name)
	b.Status.Artifact = &etcdv1alpha1.BackupArtifact{Location: "pvc://" + claim + "/" + key, Key: key, Compression: "gzip",
		SHA256: fmt.Sprintf("%064x", len(data)), Size: 100 + int64(len(data)), SnapshotSize: 1000 + int64(len(data))}
	m := c.Status.Members[len(c.Status.Members)-1]
	b.Status.Snapshot = &etcdv1alpha1.BackupSnapshot{Member: m.Name, MemberID: m.ID, Revision: 1 + int64(len(data)),
		EtcdVersion: c.Status.CurrentVersion, ClusterID: "c1"}
	return &metav1.Condition{Type: etcdv1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonBackupCompleted,
		Message: "stored " + b.Status.Artifact.Location}
}

// ensureMember makes sure member's claim and pod exist and returns its etcd ID, a new one
// when the claim had to be created: the member's data was lost. A member whose pod is gone
// while its node is cordoned gets none, as its volume keeps it on that node, and is not
// placed (false).
func (o *fakeOperator) ensureMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member, node string) (string, bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	names := cluster.For(c)
	om := metav1.ObjectMeta{Namespace: o.ns, Labels: names.MemberLabels(member)}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: om}
	pvc.Name = names.PVCName(member)
	err := o.c.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
	if apierrors.IsNotFound(err) && o.c.Create(ctx, pvc) == nil {
		if _, known := o.ids[member]; known {
			if o.lost[string(c.UID)] == nil {
				o.lost[string(c.UID)] = map[string]bool{}
			}
			o.lost[string(c.UID)][member] = true
		}
		o.nextID++
		o.ids[member] = strconv.FormatInt(int64(o.nextID), 16)
	}
	pod := &corev1.Pod{ObjectMeta: *om.DeepCopy()}
	pod.Name = member
	pod.Spec.Containers = []corev1.Container{{Name: "etcd", Ports: []corev1.ContainerPort{{Name: "client", ContainerPort: cluster.ClientPort}}}}
	if o.memberMetrics {
		pod.Spec.Containers[0].Ports = append(pod.Spec.Containers[0].Ports, corev1.ContainerPort{Name: "metrics", ContainerPort: cluster.MetricsPort})
	}
	pod.Status.PodIP = fmt.Sprintf("10.0.0.%d", o.nextIP+1)
	if err := o.c.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); apierrors.IsNotFound(err) && o.cordoned(ctx, node) {
		return o.ids[member], false // its volume keeps it on its node, which takes no pod
	}
	if o.c.Create(ctx, pod) == nil {
		o.nextIP++
	}
	return o.ids[member], true
}

// cordoned says whether node is marked unschedulable; no node is not.
func (o *fakeOperator) cordoned(ctx context.Context, node string) bool {
	var n corev1.Node
	return node != "" && o.c.Get(ctx, client.ObjectKey{Name: node}, &n) == nil && n.Spec.Unschedulable
}

// recover keeps status.recovery of c: when a majority of its members lost their data
// since the last recovery and spec.quorumLossRecovery is Automatic, the cluster is
// recovered from the member left (in the fake, at once: the lost members' new IDs are
// the learners that grew it back), with a RecoverySucceeded event.
func (o *fakeOperator) recover(ctx context.Context, c *etcdv1alpha1.EtcdCluster, members []etcdv1alpha1.MemberStatus) *etcdv1alpha1.RecoveryStatus {
	o.mu.Lock()
	lost := o.lost[string(c.UID)]
	declared := 2*len(lost) > len(members) && len(lost) < len(members) &&
		c.Spec.QuorumLossRecovery.Policy == etcdv1alpha1.QuorumLossAutomatic
	if declared {
		delete(o.lost, string(c.UID))
	}
	o.mu.Unlock()
	if !declared {
		return c.Status.Recovery
	}
	r := &etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoverySucceeded, LostSince: metav1.Now(),
		ID: time.Now().UTC().Format("20060102-150405"), RevisionBump: 1000000000, Message: "recovered"}
	for _, m := range members {
		if lost[m.Name] {
			r.LostMembers = append(r.LostMembers, m.Name)
		} else {
			r.Survivor = m.Name
		}
	}
	o.event(ctx, c, corev1.EventTypeNormal, "RecoverySucceeded", "recovered from "+r.Survivor)
	return r
}

// replaceRewritten replaces the members of c whose data a test pod rewrote, when
// spec.consistencyCheck is Replace, at the next consistency check: the first round after
// the test read the member alone, as level 5 does right after the rewrite (the real check
// is most of a minute away then), or consistencyCheckAfter the rewrite. Their claim and pod
// are deleted (ensureMember gives them a new ID), with a MemberCorrupt event.
func (o *fakeOperator) replaceRewritten(ctx context.Context, c *etcdv1alpha1.EtcdCluster) {
	if c.Spec.ConsistencyCheck.Mode != etcdv1alpha1.ConsistencyCheckReplace {
		return
	}
	names := cluster.For(c)
	for i := range int(c.Spec.Size) {
		member := names.MemberName(i)
		var readAlone time.Time
		o.etcds.with(endpoint(c), func(d *fakeDB) {
			if m := d.members[member]; m != nil {
				readAlone = m.readAlone
			}
		})
		o.mu.Lock()
		at, rewritten := o.rewritten[names.PVCName(member)]
		if rewritten = rewritten && (readAlone.After(at) || time.Since(at) >= consistencyCheckAfter); rewritten {
			delete(o.rewritten, names.PVCName(member))
			delete(o.ids, member) // a replacement, not a loss
		}
		o.mu.Unlock()
		if !rewritten {
			continue
		}
		// As the operator words it: the member that differs first, then the majority.
		blamed, others := member, []string{}
		for j := range int(c.Spec.Size) {
			if other := names.MemberName(j); other != member {
				others = append(others, other)
			}
		}
		if o.blameOther {
			blamed, others[0] = others[0], member
		}
		o.event(ctx, c, corev1.EventTypeWarning, etcdv1alpha1.ReasonMemberCorrupt, fmt.Sprintf(
			"Consistency check at revision 7: %s's hash 0badbeef differs from 600dbeef of %s at revision 7", blamed, strings.Join(others, ", ")))
		_ = o.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: names.PVCName(member)}})
		_ = o.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: member}})
		o.etcds.with(endpoint(c), func(d *fakeDB) { delete(d.members, member) }) // the new member holds the majority's data
	}
}

// ensureMonitoring creates c's PodMonitor, PrometheusRule and dashboard ConfigMap, each
// controlled by c.
func (o *fakeOperator) ensureMonitoring(ctx context.Context, c *etcdv1alpha1.EtcdCluster) {
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(c, etcdv1alpha1.GroupVersion.WithKind("EtcdCluster"))}
	for _, kind := range []string{"PodMonitor", "PrometheusRule"} {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("monitoring.coreos.com/v1")
		u.SetKind(kind)
		u.SetNamespace(c.Namespace)
		u.SetName(map[string]string{"PodMonitor": c.Name + "-members", "PrometheusRule": c.Name + "-alerts"}[kind])
		u.SetOwnerReferences(owner)
		_ = o.c.Create(ctx, u)
	}
	_ = o.c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name + "-dashboard",
		Labels: map[string]string{"grafana_dashboard": "1"}, OwnerReferences: owner}})
}

// consistencyCheckAfter is when, at the latest, the fake operator's next consistency check
// runs after a test pod rewrote a member's data.
const consistencyCheckAfter = 2 * time.Second

// The operator's metrics Service, as OLM creates it from the bundle, and the token of the
// test's ServiceAccount.
const (
	operatorNamespace   = "etcdpilot-system"
	operatorMetricsHost = "etcdpilot-controller-manager-metrics-service.etcdpilot-system.svc:8443"
	testToken           = "scorecard-token"
)

func metricsService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: "etcdpilot-controller-manager-metrics-service",
			Labels: map[string]string{"app.kubernetes.io/managed-by": "kustomize", "app.kubernetes.io/name": "etcdpilot", "control-plane": "controller-manager"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "https", Port: 8443}}},
	}
}

// roundTripper answers GETs in-process, without a network.
type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// transport answers the GETs of the operator's metrics endpoint and of member pods' metrics
// ports, and passes those of the fake Prometheus on to it; any other address is refused, as
// a dial would be.
func (o *fakeOperator) transport() http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		w := httptest.NewRecorder()
		switch {
		case req.URL.Host == o.promHost:
			return http.DefaultTransport.RoundTrip(req)
		case req.URL.Scheme == "https" && req.URL.Host == operatorMetricsHost && req.URL.Path == "/metrics":
			o.serveOperatorMetrics(w, req)
		case req.URL.Scheme == "http" && req.URL.Path == "/metrics" && o.servesMemberMetrics(req.Context(), req.URL.Host):
			_, _ = w.WriteString("# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n" +
				"etcd_server_version{server_version=\"3.6.16\"} 1\n")
		default:
			return nil, fmt.Errorf("dial tcp %s: connect: connection refused", req.URL.Host)
		}
		return w.Result(), nil
	})
}

// servesMemberMetrics says whether host is the metrics port of a member pod.
func (o *fakeOperator) servesMemberMetrics(ctx context.Context, host string) bool {
	var pods corev1.PodList
	if !o.memberMetrics || o.c.List(ctx, &pods, client.InNamespace(o.ns), client.HasLabels{cluster.LabelMember}) != nil {
		return false
	}
	for _, p := range pods.Items {
		if host == fmt.Sprintf("%s:%d", p.Status.PodIP, cluster.MetricsPort) {
			return true
		}
	}
	return false
}

func (o *fakeOperator) serveOperatorMetrics(w http.ResponseWriter, req *http.Request) {
	switch {
	case req.Header.Get("Authorization") != "Bearer "+testToken:
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	case o.refuseMetrics:
		http.Error(w, "Forbidden (user=system:serviceaccount:scorecard:etcdpilot-scorecard, verb=get, resource=, subresource=)", http.StatusForbidden)
		return
	}
	_, _ = io.WriteString(w, "controller_runtime_reconcile_total{controller=\"etcdcluster\",result=\"success\"} 7\n")
	var list etcdv1alpha1.EtcdClusterList
	if !o.operatorMetrics || o.c.List(req.Context(), &list) != nil {
		return
	}
	for _, c := range list.Items {
		for _, cond := range c.Status.Conditions {
			v := 0
			if cond.Status == metav1.ConditionTrue {
				v = 1
			}
			_, _ = fmt.Fprintf(w, "etcdpilot_cluster_condition{condition=%q,name=%q,namespace=%q} %d\n", cond.Type, c.Name, c.Namespace, v)
		}
		_, _ = fmt.Fprintf(w, "etcdpilot_cluster_members{name=%q,namespace=%q} %d\n", c.Name, c.Namespace, len(c.Status.Members))
	}
}

func (o *fakeOperator) String() string { return fmt.Sprintf("fake operator in %s", o.ns) }
