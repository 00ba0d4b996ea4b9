package framework_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	etcdfake "github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

const ns = "scorecard"

func newEnv(t *testing.T, objs ...client.Object) *framework.Env {
	t.Helper()
	s, err := framework.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&etcdv1alpha1.EtcdCluster{}, &etcdv1alpha1.EtcdBackup{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).Build()
	return &framework.Env{Client: c, Namespace: ns, Report: &logBook{}, Poll: 10 * time.Millisecond}
}

func TestNewName(t *testing.T) {
	g := NewWithT(t)
	a, b := framework.NewName("sc-l1-"), framework.NewName("sc-l1-")
	g.Expect(a).To(MatchRegexp(`^sc-l1-[a-z0-9]{5}$`))
	g.Expect(a).NotTo(Equal(b))
}

func TestPrepare(t *testing.T) {
	g := NewWithT(t)
	example := &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "etcdcluster-sample", Namespace: "elsewhere", ResourceVersion: "7",
			UID: "u", Labels: map[string]string{"app.kubernetes.io/name": "etcdpilot"}},
		Spec:   etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyRetain},
		Status: etcdv1alpha1.EtcdClusterStatus{ReadyMembers: 3},
	}
	c := framework.Prepare(example, "sc-l1-abcde", ns)
	g.Expect(c.ObjectMeta).To(Equal(metav1.ObjectMeta{Name: "sc-l1-abcde", Namespace: ns, Labels: map[string]string{
		"app.kubernetes.io/name": "etcdpilot", framework.PartOfLabel: framework.PartOfValue}}))
	g.Expect(c.Spec.Size).To(Equal(int32(3)))
	g.Expect(c.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.DeletionPolicyDelete), "the test leaves no volumes behind")
	g.Expect(c.Spec.PodTemplate.Labels).To(Equal(map[string]string{framework.PartOfLabel: framework.PartOfValue}))
	g.Expect(c.Status).To(BeZero())
	g.Expect(example.Labels).To(HaveLen(1), "the example is not changed")
	g.Expect(example.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.DeletionPolicyRetain))
}

// clientSecret is a client Secret c-client-tls, with a certificate of a new CA.
func clientSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	return clientSecretOf(t, newCA(t))
}

// newCA is a new CA, valid for an hour.
func newCA(t *testing.T) *pki.CA {
	t.Helper()
	caPair, err := pki.NewCA("test CA", time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCA(caPair)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

// clientSecretOf is a client Secret c-client-tls with a certificate of ca.
func clientSecretOf(t *testing.T, ca *pki.CA) *corev1.Secret {
	t.Helper()
	g := NewWithT(t)
	clientPair, err := ca.IssueClient("etcdpilot", time.Hour, time.Now())
	g.Expect(err).NotTo(HaveOccurred())
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-client-tls"},
		Data: map[string][]byte{"ca.crt": ca.CertPEM(), "tls.crt": clientPair.CertPEM, "tls.key": clientPair.KeyPEM}}
}

func TestClientEndpointAndConnect(t *testing.T) {
	g := NewWithT(t)
	secret := clientSecret(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	_, err := framework.ClientEndpoint(c)
	g.Expect(err).To(MatchError(ContainSubstring("no status.clientService")))

	c.Status.ClientService, c.Status.ClientSecret = "c-client", "c-client-tls"
	g.Expect(framework.ClientEndpoint(c)).To(Equal("https://c-client.scorecard.svc:2379"))

	env := newEnv(t, secret)
	etcd := etcdfake.New()
	env.NewEtcdClient = etcd.Factory()
	cli, err := env.Connect(context.Background(), c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(etcd.Calls()).To(Equal([]string{"New https://c-client.scorecard.svc:2379"}))

	kv, err := framework.WriteKeys(context.Background(), cli, "/p", 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(kv).To(Equal(map[string]string{"/p/000": "value-000", "/p/001": "value-001", "/p/002": "value-002"}))
	g.Expect(framework.CheckKeys(context.Background(), cli, kv)).To(Succeed())
	g.Expect(cli.Put(context.Background(), "/p/001", "other")).To(Succeed())
	g.Expect(framework.CheckKeys(context.Background(), cli, kv)).To(MatchError(`1 of 3 keys lost or changed, first "/p/001"`))

	// TLS disabled: no Secret, plain http.
	plain := c.DeepCopy()
	plain.Status.ClientSecret = ""
	g.Expect(framework.ClientEndpoint(plain)).To(Equal("http://c-client.scorecard.svc:2379"))

	missing := c.DeepCopy()
	missing.Status.ClientSecret = "nope"
	_, err = env.Connect(context.Background(), missing)
	g.Expect(err).To(MatchError(ContainSubstring("reading the client Secret nope")))
}

func TestTLSConfig(t *testing.T) {
	g := NewWithT(t)
	_, err := framework.TLSConfig(map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y")})
	g.Expect(err).To(MatchError("no ca.crt"))
	_, err = framework.TLSConfig(map[string][]byte{"tls.crt": []byte("x"), "tls.key": []byte("y"), "ca.crt": []byte("z")})
	g.Expect(err).To(HaveOccurred())
}

func TestLost(t *testing.T) {
	g := NewWithT(t)
	want := map[string]string{"a": "1", "b": "2", "c": "3"}
	g.Expect(framework.Lost(want, want)).To(BeEmpty())
	g.Expect(framework.Lost(want, map[string]string{"a": "1", "c": "x", "d": "4"})).To(Equal([]string{"b", "c"}))
}

func TestWaitFor(t *testing.T) {
	g := NewWithT(t)
	env := newEnv(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}, Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}}
	g.Expect(env.Create(context.Background(), c)).To(Succeed())

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	err := env.WaitFor(ctx, c, "1 ready member", framework.Settled(1))
	g.Expect(err).To(MatchError(ContainSubstring("gave up waiting for 1 ready member")))
	g.Expect(err).To(MatchError(ContainSubstring("last seen: no conditions yet, 0 of 1 members ready")))

	// Reads that fail after a state was seen (the API server busy, the deadline) keep it.
	reads := 0
	failing := interceptor.NewClient(env.Client.(client.WithWatch), interceptor.Funcs{
		Get: func(ctx context.Context, cl client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if reads++; reads > 1 {
				return errors.New("the API server is busy")
			}
			return cl.Get(ctx, key, obj, opts...)
		}})
	flaky := &framework.Env{Client: failing, Namespace: env.Namespace, Report: env.Report, Poll: env.Poll}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel2()
	err = flaky.WaitFor(ctx2, c, "1 ready member", framework.Settled(1))
	g.Expect(err).To(MatchError(ContainSubstring("last seen: no conditions yet, 0 of 1 members ready; then reading EtcdCluster c: the API server is busy")))

	c.Status = settled().Status
	c.Status.ReadyMembers, c.Status.Members = 1, c.Status.Members[:1]
	c.Status.ObservedGeneration = c.Generation
	for i := range c.Status.Conditions {
		c.Status.Conditions[i].ObservedGeneration = c.Generation
	}
	g.Expect(env.Client.Status().Update(context.Background(), c)).To(Succeed())
	g.Expect(env.WaitFor(context.Background(), c, "1 ready member", framework.Settled(1))).To(Succeed())
	g.Expect(logOf(env)).To(ContainSubstring("c: Available=True, Ready=True"))
}

func TestEventsFor(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c", UID: "uid-c"}}
	event := func(name, uid string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: "c", UID: k8stypes.UID("uid-" + uid)}}
	}
	env := newEnv(t, event("e1", "c"), event("e2", "other"), event("e3", "c"))
	events, err := env.EventsFor(context.Background(), c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(events).To(HaveLen(2))
}

func TestServes(t *testing.T) {
	g := NewWithT(t)
	env := newEnv(t)
	env.Discovery = &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{
		{GroupVersion: "etcd.etcdpilot.io/v1alpha1", APIResources: []metav1.APIResource{{Name: "etcdclusters", Kind: "EtcdCluster"}}},
		{GroupVersion: "other.io/v1", APIResources: []metav1.APIResource{{Name: "etcdbackups", Kind: "EtcdBackup"}}},
	}}}
	g.Expect(env.Serves("etcd.etcdpilot.io", "EtcdCluster")).To(BeTrue())
	g.Expect(env.Serves("etcd.etcdpilot.io", "EtcdBackup")).To(BeFalse(), "only in the etcdpilot group")
}

// Cleanup removes what a test created even when no operator runs: the finalizers it would
// have removed are stripped, and claims it would have deleted are deleted. Newest first:
// the backup, its claim, then the cluster.
func TestCleanupWithoutOperator(t *testing.T) {
	g := NewWithT(t)
	env := newEnv(t)
	ctx := context.Background()
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c",
		Finalizers: []string{"etcd.etcdpilot.io/cleanup"}}}
	g.Expect(env.Create(ctx, c)).To(Succeed())
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-0-data",
		Labels: map[string]string{"etcd.etcdpilot.io/cluster": "c", "app.kubernetes.io/name": "etcd"}}}
	other := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d-0-data",
		Labels: map[string]string{"etcd.etcdpilot.io/cluster": "d", "app.kubernetes.io/name": "etcd"}}}
	g.Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	g.Expect(env.Client.Create(ctx, other)).To(Succeed())
	g.Expect(env.CreateClaim(ctx, framework.BackupClaim("c-backups", ns, resource.MustParse("1Gi")))).To(Succeed())
	b := framework.NewBackup("c-backup", c, "c-backups", time.Minute)
	b.Finalizers = []string{"etcd.etcdpilot.io/delete-artifact"}
	g.Expect(env.CreateBackup(ctx, b)).To(Succeed())

	cctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	g.Expect(env.Cleanup(cctx)).To(Succeed())

	var left etcdv1alpha1.EtcdClusterList
	g.Expect(env.Client.List(ctx, &left)).To(Succeed())
	g.Expect(left.Items).To(BeEmpty())
	var backups etcdv1alpha1.EtcdBackupList
	g.Expect(env.Client.List(ctx, &backups)).To(Succeed())
	g.Expect(backups.Items).To(BeEmpty())
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(env.Client.List(ctx, &pvcs)).To(Succeed())
	g.Expect(pvcs.Items).To(ConsistOf(HaveField("Name", "d-0-data")), "only this test's claims go")
	g.Expect(logOf(env)).To(MatchRegexp(`(?s)` +
		`EtcdBackup c-backup is still there after \d+s: removing its finalizers.*deleted EtcdBackup c-backup and its Jobs' pods in .*` +
		`deleted PersistentVolumeClaim c-backups in .*` +
		`EtcdCluster c is still there after \d+s: removing its finalizers.*deleted EtcdCluster c with its pods and volume claims`))

	g.Expect(env.Cleanup(cctx)).To(Succeed(), "nothing left to clean")
}

// Cleanup waits for the pods of a deleted backup's Jobs, which the garbage collector
// deletes after the backup, and fails when they stay.
func TestCleanupWaitsForBackupPods(t *testing.T) {
	g := NewWithT(t)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-backup-job",
		Labels: map[string]string{"etcd.etcdpilot.io/backup": "c-backup"}}}
	env := newEnv(t, pod)
	ctx := context.Background()
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	g.Expect(env.CreateBackup(ctx, framework.NewBackup("c-backup", c, "c-backups", time.Minute))).To(Succeed())

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	g.Expect(env.Cleanup(cctx)).To(MatchError(ContainSubstring("the Jobs' pods of EtcdBackup c-backup are not gone (context deadline exceeded): [Pod c-backup-job]")))
}

func TestWaitForBackup(t *testing.T) {
	g := NewWithT(t)
	env := newEnv(t)
	ctx := context.Background()
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	b := framework.NewBackup("c-backup", c, "c-backups", time.Minute)
	g.Expect(env.CreateBackup(ctx, b)).To(Succeed())

	short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	g.Expect(env.WaitForBackup(short, b)).To(MatchError(And(
		ContainSubstring("gave up waiting for EtcdBackup c-backup to finish"), ContainSubstring("last seen: no Succeeded condition yet"))))

	setSucceeded := func(status metav1.ConditionStatus, reason, message string) {
		b.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionSucceeded, Status: status, Reason: reason, Message: message,
			LastTransitionTime: metav1.Now()}}
		g.Expect(env.Client.Status().Update(ctx, b)).To(Succeed())
	}
	setSucceeded(metav1.ConditionFalse, etcdv1alpha1.ReasonDestinationNotFound, "PersistentVolumeClaim c-backups does not exist")
	g.Expect(env.WaitForBackup(ctx, b)).To(MatchError(
		"EtcdBackup c-backup failed: DestinationNotFound: PersistentVolumeClaim c-backups does not exist"))

	setSucceeded(metav1.ConditionTrue, etcdv1alpha1.ReasonBackupCompleted, "stored pvc://c-backups/x")
	g.Expect(env.WaitForBackup(ctx, b)).To(Succeed())
	g.Expect(logOf(env)).To(ContainSubstring("c-backup: Succeeded=True (Completed: stored pvc://c-backups/x)"))
}

// logBook is a Logger that keeps every line, for the tests to read.
type logBook struct {
	mu    sync.Mutex
	lines strings.Builder
}

func (l *logBook) Logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(&l.lines, format+"\n", args...)
}

// logOf is what env's Logger (a logBook) received.
func logOf(env *framework.Env) string {
	l := env.Report.(*logBook)
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines.String()
}

// DestroyMembers stops the members first, their pods held in the API until every one of
// their containers has stopped, and only then deletes their claims and lets the pods go: a
// pod that does not stop in time fails it, and its pod is still let go.
func TestDestroyMembersStopsThemAllBeforeTheirDataGoes(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	pod := func(name string, stopped bool) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		state := corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
		if stopped {
			state = corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}
		}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "etcd", State: state}}
		return p
	}
	claim := func(name string) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	env := newEnv(t, pod("c-0", true), pod("c-1", true), pod("c-2", false), claim("c-0-data"), claim("c-1-data"), claim("c-2-data"))
	ctx := context.Background()

	g.Expect(env.DestroyMembers(ctx, c, []string{"c-0", "c-1"})).To(Succeed())
	var pods corev1.PodList
	g.Expect(env.Client.List(ctx, &pods)).To(Succeed())
	g.Expect(pods.Items).To(ConsistOf(HaveField("Name", "c-2")), "the destroyed members' pods are gone")
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(env.Client.List(ctx, &pvcs)).To(Succeed())
	g.Expect(pvcs.Items).To(ConsistOf(HaveField("Name", "c-2-data")), "and so are their claims")

	cctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	g.Expect(env.DestroyMembers(cctx, c, []string{"c-2"})).To(MatchError(ContainSubstring("waiting for the containers of Pod c-2 to stop")))
	g.Expect(env.Client.List(ctx, &pods)).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty(), "a pod whose etcd did not stop is let go all the same")
	g.Expect(env.Client.List(ctx, &pvcs)).To(Succeed())
	g.Expect(pvcs.Items).To(ConsistOf(HaveField("Name", "c-2-data")), "its data is kept")
}
