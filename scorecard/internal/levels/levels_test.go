package levels_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	discoveryfake "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/levels"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

const ns = "scorecard"

var bundleDir = filepath.Join("..", "..", "..", "bundle")

func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

func TestConfigFromEnv(t *testing.T) {
	g := NewWithT(t)
	cfg, err := levels.ConfigFromEnv(env(nil))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg).To(Equal(levels.Config{BundleDir: "/bundle", Timeout: 10 * time.Minute,
		PrometheusURL: "http://prometheus.etcdpilot-monitoring.svc:9090"}))

	cfg, err = levels.ConfigFromEnv(env(map[string]string{
		"SCORECARD_NAMESPACE": "ns", "SCORECARD_BUNDLE_DIR": "/b", "SCORECARD_TEST_TIMEOUT": "15m",
		"SCORECARD_PROMETHEUS_URL": "https://prometheus-k8s.monitoring.svc:9091/"}))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg).To(Equal(levels.Config{Namespace: "ns", BundleDir: "/b", Timeout: 15 * time.Minute,
		PrometheusURL: "https://prometheus-k8s.monitoring.svc:9091/"}))

	for _, bad := range []string{"prometheus.etcdpilot-monitoring.svc:9090", "http://", "ftp://p:21", "http://p:x:9090/%zz"} {
		_, err = levels.ConfigFromEnv(env(map[string]string{"SCORECARD_PROMETHEUS_URL": bad}))
		g.Expect(err).To(MatchError(HavePrefix(`SCORECARD_PROMETHEUS_URL="`+bad+`" is not`)), bad)
	}

	_, err = levels.ConfigFromEnv(env(map[string]string{"SCORECARD_TEST_TIMEOUT": "ten"}))
	g.Expect(err).To(MatchError(ContainSubstring(`SCORECARD_TEST_TIMEOUT="ten" is not a duration`)))
	_, err = levels.ConfigFromEnv(env(map[string]string{"SCORECARD_TEST_TIMEOUT": "30s"}))
	g.Expect(err).To(MatchError(ContainSubstring("too short")))
}

// A setting given as an argument wins over the environment; an argument that is not a
// setting is refused.
func TestWithArguments(t *testing.T) {
	g := NewWithT(t)
	lookup, err := levels.WithArguments([]string{"SCORECARD_PROMETHEUS_URL=http://p:9090", "SCORECARD_TEST_TIMEOUT="},
		env(map[string]string{"SCORECARD_PROMETHEUS_URL": "http://q:9090", "SCORECARD_NAMESPACE": "ns"}))
	g.Expect(err).NotTo(HaveOccurred())
	cfg, err := levels.ConfigFromEnv(lookup)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg).To(Equal(levels.Config{Namespace: "ns", BundleDir: "/bundle", Timeout: 10 * time.Minute, PrometheusURL: "http://p:9090"}))

	_, err = levels.WithArguments([]string{"--prometheus-url=http://p:9090"}, env(nil))
	g.Expect(err).To(MatchError(`argument "--prometheus-url=http://p:9090" is not NAME=VALUE with NAME one of ` +
		`SCORECARD_NAMESPACE, SCORECARD_BUNDLE_DIR, SCORECARD_TEST_TIMEOUT, SCORECARD_PROMETHEUS_URL`))
	_, err = levels.WithArguments([]string{"SCORECARD_PROMETHEUS_URL"}, env(nil))
	g.Expect(err).To(HaveOccurred())
}

func TestBudget(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct{ timeout, test, cleanup time.Duration }{
		{time.Minute, 25 * time.Second, 30 * time.Second},
		{10 * time.Minute, 7*time.Minute + 55*time.Second, 2 * time.Minute},
		{time.Hour, 56*time.Minute + 55*time.Second, 3 * time.Minute},
	} {
		test, cleanup := levels.Budget(tc.timeout)
		g.Expect(test).To(Equal(tc.test), tc.timeout.String())
		g.Expect(cleanup).To(Equal(tc.cleanup), tc.timeout.String())
		g.Expect(test+cleanup).To(BeNumerically("<", tc.timeout), "time is left to print the result")
	}
}

func TestMissing(t *testing.T) {
	g := NewWithT(t)
	g.Expect(levels.FullLifecycleMissing(false, true)).To(Equal([]string{"backup and restore (EtcdBackup is not served; issue 8)"}))
	g.Expect(levels.FullLifecycleMissing(true, false)).To(Equal([]string{"tenants with their own certificates and prefixes (EtcdTenant is not served; issue 38)"}))
	g.Expect(levels.FullLifecycleMissing(true, true)).To(BeEmpty(), "served: the test exercises backup and restore, and a tenant")

	g.Expect(levels.DeepInsightsMissing([]levels.Insight{
		{What: "etcd's metrics from the member pods", Problem: errors.New("pod c-0 has no container port named metrics")},
		{What: "the operator's metrics of the cluster"},
		{What: "Kubernetes events about the EtcdCluster", Problem: errors.New("none within 1m0s of it becoming Available")},
	})).To(Equal([]string{
		"etcd's metrics from the member pods (pod c-0 has no container port named metrics)",
		"Kubernetes events about the EtcdCluster (none within 1m0s of it becoming Available)",
	}))
	g.Expect(levels.DeepInsightsMissing([]levels.Insight{{What: "a"}, {What: "b"}})).To(BeEmpty())

	g.Expect(levels.AutoPilotMissing()).To(BeEmpty(), "level 5 exercises every auto-pilot capability it names")
}

func TestSummarizeEvents(t *testing.T) {
	g := NewWithT(t)
	g.Expect(levels.SummarizeEvents(nil)).To(Equal("none"))
	g.Expect(levels.SummarizeEvents([]corev1.Event{
		{Type: "Normal", Reason: "MemberPodCreated", Count: 2},
		{Type: "Normal", Reason: "CertificateIssued"},
		{Type: "Normal", Reason: "MemberPodCreated", Count: 1},
	})).To(Equal("Normal CertificateIssued x1, Normal MemberPodCreated x3"))
}

func TestNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(levels.Names()).To(Equal([]string{"level-1-basic-install", "level-2-seamless-upgrades",
		"level-3-full-lifecycle", "level-4-deep-insights", "level-5-auto-pilot"}))
}

func noCluster(string, *report.Report) (*framework.Env, error) {
	panic("this test must not reach for a cluster")
}

func TestRunWithoutCluster(t *testing.T) {
	deps := levels.Deps{NewEnv: noCluster}
	cases := []struct {
		name, test string
		vars       map[string]string
		state      scapiv1alpha3.State
		err        string
	}{
		{name: "unknown test", test: "level-6", state: scapiv1alpha3.ErrorState, err: `unknown test "level-6"; the tests are level-1-basic-install, `},
		{name: "bad timeout", test: "level-5-auto-pilot", vars: map[string]string{"SCORECARD_TEST_TIMEOUT": "x"},
			state: scapiv1alpha3.ErrorState, err: "not a duration"},
		{name: "no bundle", test: "level-1-basic-install", vars: map[string]string{"SCORECARD_NAMESPACE": ns, "SCORECARD_BUNDLE_DIR": "/nonexistent"},
			state: scapiv1alpha3.ErrorState, err: "reading the bundle in /nonexistent"},
		{name: "no namespace", test: "level-3-full-lifecycle", vars: map[string]string{"SCORECARD_BUNDLE_DIR": bundleDir},
			state: scapiv1alpha3.ErrorState, err: "SCORECARD_NAMESPACE is not set"},
		{name: "level 5 reads the bundle", test: "level-5-auto-pilot", vars: map[string]string{"SCORECARD_NAMESPACE": ns, "SCORECARD_BUNDLE_DIR": "/nonexistent"},
			state: scapiv1alpha3.ErrorState, err: "reading the bundle in /nonexistent"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := levels.Run(tc.test, env(tc.vars), deps)
			g.Expect(res.Name).To(Equal(tc.test))
			g.Expect(res.State).To(Equal(tc.state))
			g.Expect(res.Errors).To(ContainElement(ContainSubstring(tc.err)))
		})
	}
}

// fakeCluster is a fake API server with a fake operator and fake etcd clusters behind it.
type fakeCluster struct {
	client     client.Client
	etcds      *fakeEtcds
	operator   *fakeOperator
	prometheus *fakePrometheus
	// backup says whether discovery lists EtcdBackup.
	backup bool
	// noTenants keeps EtcdTenant out of discovery: an operator older than tenants.
	noTenants bool
}

func newFakeCluster(t *testing.T, events bool, funcs interceptor.Funcs, opts ...fakeOption) *fakeCluster {
	t.Helper()
	s, err := framework.Scheme()
	if err != nil {
		t.Fatal(err)
	}
	// The API server gives every object a UID; events name theirs by it (EventsFor).
	create := funcs.Create
	funcs.Create = func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
		if obj.GetUID() == "" {
			obj.SetUID(uuid.NewUUID())
		}
		if create != nil {
			return create(ctx, c, obj, opts...)
		}
		return c.Create(ctx, obj, opts...)
	}
	c := fake.NewClientBuilder().WithScheme(s).
		WithStatusSubresource(&etcdv1alpha1.EtcdCluster{}, &etcdv1alpha1.EtcdBackup{}, &etcdv1alpha1.EtcdTenant{}).
		WithIndex(&corev1.Event{}, "involvedObject.uid", func(o client.Object) []string {
			return []string{string(o.(*corev1.Event).InvolvedObject.UID)}
		}).
		WithInterceptorFuncs(funcs).Build()
	etcds := newFakeEtcds()
	o := startFakeOperator(t, c, ns, etcds, events, opts...)
	p := startFakePrometheus(t, o)
	o.promHost = p.srv.Listener.Addr().String()
	return &fakeCluster{client: c, etcds: etcds, operator: o, prometheus: p}
}

func (f *fakeCluster) deps() levels.Deps {
	return levels.Deps{NewEnv: func(namespace string, r *report.Report) (*framework.Env, error) {
		resources := []metav1.APIResource{{Name: "etcdclusters", Kind: "EtcdCluster"}}
		if f.backup {
			resources = append(resources, metav1.APIResource{Name: "etcdbackups", Kind: "EtcdBackup"})
		}
		if !f.noTenants {
			resources = append(resources, metav1.APIResource{Name: "etcdtenants", Kind: "EtcdTenant"})
		}
		lists := []*metav1.APIResourceList{{GroupVersion: "etcd.etcdpilot.io/v1alpha1", APIResources: resources}}
		if f.operator.crds {
			lists = append(lists, &metav1.APIResourceList{GroupVersion: "monitoring.coreos.com/v1", APIResources: []metav1.APIResource{
				{Name: "podmonitors", Kind: "PodMonitor"}, {Name: "prometheusrules", Kind: "PrometheusRule"}, {Name: "servicemonitors", Kind: "ServiceMonitor"}}})
		}
		return &framework.Env{
			Client: f.client, Namespace: namespace, Report: r, NewEtcdClient: f.etcds.factory(), ReadLocal: f.etcds.readLocal, OpenProbe: f.etcds.openProbe,
			Poll:      10 * time.Millisecond,
			Discovery: &discoveryfake.FakeDiscovery{Fake: &clienttesting.Fake{Resources: lists}},
			HTTP:      f.operator.transport(),
			Token:     func() (string, error) { return testToken, nil },
			Image:     "etcdpilot-scorecard-tests:test",
		}, nil
	}}
}

// run runs test against the fake cluster and checks that it left nothing behind. The fake
// operator works in rounds on what it listed: a round that began before the cleanup may
// still create a member object of a deleted cluster, which its next round collects, as a
// real cluster's garbage collector would; so the check waits for that round.
func (f *fakeCluster) run(t *testing.T, test string) scapiv1alpha3.TestResult {
	t.Helper()
	res := levels.Run(test, env(map[string]string{"SCORECARD_NAMESPACE": ns, "SCORECARD_BUNDLE_DIR": bundleDir, "SCORECARD_TEST_TIMEOUT": "1m",
		"SCORECARD_PROMETHEUS_URL": f.prometheus.srv.URL}), f.deps())
	NewWithT(t).Eventually(func(g Gomega) {
		var clusters etcdv1alpha1.EtcdClusterList
		var backups etcdv1alpha1.EtcdBackupList
		var pods corev1.PodList
		var pvcs corev1.PersistentVolumeClaimList
		g.Expect(f.client.List(context.Background(), &clusters)).To(Succeed())
		g.Expect(f.client.List(context.Background(), &backups)).To(Succeed())
		g.Expect(f.client.List(context.Background(), &pods)).To(Succeed())
		g.Expect(f.client.List(context.Background(), &pvcs)).To(Succeed())
		g.Expect(clusters.Items).To(BeEmpty(), res.Log)
		g.Expect(backups.Items).To(BeEmpty(), res.Log)
		g.Expect(pods.Items).To(BeEmpty(), res.Log)
		g.Expect(pvcs.Items).To(BeEmpty(), res.Log)
	}).WithTimeout(time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
	return res
}

func TestBasicInstall(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{})
	res := f.run(t, "level-1-basic-install")
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Log).To(MatchRegexp(`created EtcdCluster scorecard/sc-l1-[a-z0-9]{5}: size 3`))
	g.Expect(res.Log).To(MatchRegexp(`connecting to http://sc-l1-[a-z0-9]{5}-client\.scorecard\.svc:2379`))
	g.Expect(res.Log).To(MatchRegexp(`write a key and read it back: done in`))
	g.Expect(res.Log).To(ContainSubstring("clean up: done in"))
}

func TestSeamlessUpgradesRefused(t *testing.T) {
	g := NewWithT(t)
	refuse := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		po := (&client.PatchOptions{}).ApplyOptions(opts)
		if _, ok := obj.(*etcdv1alpha1.EtcdCluster); ok && len(po.DryRun) > 0 {
			return apierrors.NewInvalid(etcdv1alpha1.GroupVersion.WithKind("EtcdCluster").GroupKind(), obj.GetName(), field.ErrorList{
				field.Invalid(field.NewPath("spec", "version"), "string", "spec.version cannot be changed yet")})
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	f := newFakeCluster(t, false, refuse)
	res := f.run(t, "level-2-seamless-upgrades")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState))
	g.Expect(res.Errors).To(ConsistOf(And(
		ContainSubstring("the API server refuses to change spec.version from 3.6.16 to 3.7.3"),
		ContainSubstring("spec.version cannot be changed yet"),
		HaveSuffix("operand upgrades are not built yet (issue 6: rolling, health-gated upgrades)"))))
	g.Expect(res.Log).To(ContainSubstring("the bundle supports etcd 3.5.35, 3.6.15, 3.6.16, 3.7.2, 3.7.3"))
}

// runUpgrade runs level 2 against a fake operator that rolls upgrades, at the fakes' pace:
// each restart takes 150 ms and makes writes fail for 20 ms (opts change that), the writer
// writes every 10 ms, the members are sampled every 20 ms (5 ms once one restarts), and
// writes may go unacknowledged for 300 ms in all.
func runUpgrade(t *testing.T, opts ...fakeOption) scapiv1alpha3.TestResult {
	t.Helper()
	t.Cleanup(levels.SetUpgradeTiming(10*time.Millisecond, 20*time.Millisecond, 5*time.Millisecond, 300*time.Millisecond))
	return newFakeCluster(t, false, interceptor.Funcs{}, opts...).run(t, "level-2-seamless-upgrades")
}

// The checks of level 2 once every member runs the new release.
var upgradeChecks = []string{
	`check every acknowledged write`,
	`check that writes went unacknowledged for at most 300ms in all \(100ms for each of the 3 members restarted\)`,
	`check the members' versions: one member restarted at a time, each once the one before answered at 3\.7\.3`,
}

// An operator that restarts one member at a time, each once the one before answers at the
// new release, with writes failing for 20 ms at each restart: the test passes, and the log
// tells how the members went.
func TestSeamlessUpgradesAccepted(t *testing.T) {
	g := NewWithT(t)
	res := runUpgrade(t)
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Log).To(ContainSubstring("wait until every member runs 3.7.3: done"))
	for _, check := range upgradeChecks {
		g.Expect(res.Log).To(MatchRegexp(check+`: done in`), check)
	}
	g.Expect(res.Log).To(MatchRegexp(`\d+ writes acknowledged, \d+ not acknowledged during the upgrade`))
	g.Expect(res.Log).To(MatchRegexp(`writes went unacknowledged [0-3] times, for \d+m?s in all`))
	g.Expect(res.Log).To(MatchRegexp(`the members' versions, times from the change of spec\.version: \d+ samples over \d\.\d s; ` +
		`(sc-l2-[a-z0-9]{5})-1 silent from \d\.\d s, answering 3\.7\.3 from \d\.\d s; ` +
		`sc-l2-[a-z0-9]{5}-2 silent from \d\.\d s, answering 3\.7\.3 from \d\.\d s; ` +
		`sc-l2-[a-z0-9]{5}-0 silent from \d\.\d s, answering 3\.7\.3 from \d\.\d s`))
}

// An operator whose cluster refuses writes for 250 ms at each restart, more than twice what
// the test allows in all (the last outage may be cut short by the end of the upgrade): the
// unavailability check fails, the others pass.
func TestSeamlessUpgradesUnavailableTooLong(t *testing.T) {
	g := NewWithT(t)
	res := runUpgrade(t, unavailableDuringRestarts)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(MatchRegexp(`^check that writes went unacknowledged for at most 300ms in all .*: ` +
		`writes through the client Service went unacknowledged for 0\.[5-9] s in all, more than 0\.3 s \((0\.\d s from -?\d\.\d s, ){2}0\.\d s from \d\.\d s\), times from the change of spec\.version: ` +
		`a rolling upgrade of 3 members allows about an election timeout and a reconnection for each restart$`)))
	for _, check := range []string{upgradeChecks[0], upgradeChecks[2]} {
		g.Expect(res.Log).To(MatchRegexp(check+`: done in`), check)
	}
}

// An operator that restarts two members at once: the samples see both silent, and the
// check of the members' versions fails; the writes, never failing longer than the bound,
// pass.
func TestSeamlessUpgradesTwoAtOnce(t *testing.T) {
	g := NewWithT(t)
	res := runUpgrade(t, restartTwo)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(MatchRegexp(`^check the members' versions: .*: at \d\.\d s members ` +
		`(sc-l2-[a-z0-9]{5})-1 \(.+\) and sc-l2-[a-z0-9]{5}-2 \(.+\) did not answer at the same time: more than one member was down or restarting ` +
		`\(times from the change of spec\.version; \d+ samples over .*sc-l2-[a-z0-9]{5}-1 silent from .*\)$`)))
	for _, check := range upgradeChecks[:2] {
		g.Expect(res.Log).To(MatchRegexp(check+`: done in`), check)
	}
}

// scalingSteps are the steps of level 3 before the backup.
var scalingSteps = []string{"write 50 keys", "scale to 5 members", "scale to 3 members",
	"destroy a member: delete its volume claim and its pod",
	"wait until the member is replaced and the cluster has 3 ready members", "read back the 50 keys"}

// An operator that does not serve EtcdBackup: the scaling part runs, and the test fails
// naming backup and restore.
func TestFullLifecycleWithoutBackups(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{})
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(Equal([]string{"missing: backup and restore (EtcdBackup is not served; issue 8)"}))
	for _, step := range scalingSteps {
		g.Expect(res.Log).To(ContainSubstring(step+": done in"), step)
	}
	g.Expect(res.Log).To(MatchRegexp(`destroying member sc-l3-[a-z0-9]{5}-2`))
	g.Expect(res.Log).To(ContainSubstring("EtcdBackup served in etcd.etcdpilot.io: false"))
	g.Expect(res.Log).NotTo(ContainSubstring("EtcdBackup sc-l3-"))
	g.Expect(res.Log).To(ContainSubstring("delete the tenant: its key goes: done in"), "the tenant's round trip runs all the same")
}

// tenantSteps are the steps of level 3's tenant round trip.
var tenantSteps = []string{"turn etcd's authentication on", "wait until etcd's authentication is on and the cluster is settled",
	"wait until the tenant is Ready", "write under the prefix with the tenant's certificate",
	"the tenant's certificate is refused outside its prefix", "read back the 50 keys with the operator's certificate",
	"delete the tenant: its key goes"}

// An operator that does not serve EtcdTenant: the rest runs, and the test fails naming
// tenants.
func TestFullLifecycleWithoutTenants(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{})
	f.backup, f.noTenants = true, true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(Equal([]string{"missing: tenants with their own certificates and prefixes (EtcdTenant is not served; issue 38)"}))
	g.Expect(res.Log).To(ContainSubstring("check that sc-l3-"))
	g.Expect(res.Log).NotTo(ContainSubstring("EtcdTenant sc-l3-"))
}

// A tenant whose certificate reaches keys outside its prefix fails the test.
func TestFullLifecycleTenantUnbounded(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{}, unboundedTenants)
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(MatchRegexp(`^the tenant's certificate is refused outside its prefix: writing /scorecard/outside: want permission denied, got no error$`)))
}

func TestFullLifecycle(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{})
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Errors).To(BeEmpty())
	for _, step := range append(scalingSteps, "write 5 more keys", "wait until the backup has succeeded",
		"check the backup's artifact and snapshot", "write a key after the backup", "wait for 3 ready members, Available and Ready") {
		g.Expect(res.Log).To(ContainSubstring(step+": done in"), step)
	}
	for _, step := range tenantSteps {
		g.Expect(res.Log).To(ContainSubstring(step+": done in"), step)
	}
	for _, line := range []string{
		`create PersistentVolumeClaim sc-l3-[a-z0-9]{5}-backups: done in`,
		`created PersistentVolumeClaim scorecard/sc-l3-[a-z0-9]{5}-backups: 256Mi, \[ReadWriteOnce\], the default StorageClass`,
		`created EtcdBackup scorecard/sc-l3-[a-z0-9]{5}-backup of EtcdCluster sc-l3-[a-z0-9]{5} to claim sc-l3-[a-z0-9]{5}-backups: deletionPolicy Delete, timeout 3m0s`,
		`sc-l3-[a-z0-9]{5}-backup: Succeeded=True \(Completed: stored pvc://sc-l3-[a-z0-9]{5}-backups/scorecard/`,
		`artifact pvc://\S+: \d+ bytes \(\d+ uncompressed\), sha256 [0-9a-f]{64}; snapshot of member sc-l3-[a-z0-9]{5}-2 at revision 56, etcd`,
		`created EtcdCluster scorecard/sc-l3-[a-z0-9]{5}-restored: size 3`,
		`read back from sc-l3-[a-z0-9]{5}-restored the 55 keys written before the backup: done in`,
		`check that sc-l3-[a-z0-9]{5}-restored lacks the key written after the backup: done in`,
		`created EtcdTenant scorecard/sc-l3-[a-z0-9]{5}-tenant: cluster sc-l3-[a-z0-9]{5}, prefix /scorecard/tenant/`,
		`sc-l3-[a-z0-9]{5}-tenant: Ready=True \(Provisioned: \), secret "sc-l3-[a-z0-9]{5}-tenant-etcd-client"`,
		// Newest first: the restored cluster, the backup and its claim, the backed-up cluster.
		`(?s)deleted EtcdCluster sc-l3-[a-z0-9]{5}-restored .*deleted EtcdBackup sc-l3-[a-z0-9]{5}-backup and its Jobs' pods` +
			`.*deleted PersistentVolumeClaim sc-l3-[a-z0-9]{5}-backups .*deleted EtcdCluster sc-l3-[a-z0-9]{5} with`,
	} {
		g.Expect(res.Log).To(MatchRegexp(line))
	}
}

// On one node there is no drain, and the log says why.
func TestFullLifecycleOneNode(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{}, onNodes(1))
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Log).To(ContainSubstring("drain not tried: the cluster has 1 schedulable node(s), and a drain needs another node to leave pods on"))
	g.Expect(res.Log).NotTo(ContainSubstring("cordon"))
}

// budget is a PodDisruptionBudget of one member away, as the operator makes it for 3
// members: a member evicted from a cordoned node is away until the node is uncordoned (its
// volume keeps it there), and no other member's eviction is admitted meanwhile. With
// admitTwo it admits every eviction. evicted records each admitted eviction.
func budget(admitTwo bool, evicted *[]string) interceptor.Funcs {
	var mu sync.Mutex
	away := map[string]string{} // evicted member -> its node
	return interceptor.Funcs{SubResourceCreate: func(ctx context.Context, c client.Client, sub string, obj, subObj client.Object, opts ...client.SubResourceCreateOption) error {
		if sub != "eviction" {
			return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
		}
		mu.Lock()
		defer mu.Unlock()
		for member, node := range away {
			var n corev1.Node
			if err := c.Get(ctx, client.ObjectKey{Name: node}, &n); err != nil {
				return err
			}
			if !n.Spec.Unschedulable {
				delete(away, member)
			} else if !admitTwo {
				return apierrors.NewTooManyRequests("Cannot evict pod as it would violate the pod's disruption budget.", 10)
			}
		}
		var c3 etcdv1alpha1.EtcdClusterList
		if err := c.List(ctx, &c3); err != nil {
			return err
		}
		for _, cl := range c3.Items {
			for _, m := range cl.Status.Members {
				if m.Name == obj.GetName() {
					away[m.Name] = m.Node
				}
			}
		}
		*evicted = append(*evicted, obj.GetName())
		return c.SubResource(sub).Create(ctx, obj, subObj, opts...)
	}}
}

// On several nodes, level 3 drains a follower's node: cordon, an eviction the budget admits,
// a second it refuses, writes meanwhile, the uncordon, and the member back as itself.
func TestFullLifecycleDrain(t *testing.T) {
	g := NewWithT(t)
	res, evicted := runDrain(t, g, false)
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	for _, line := range []string{
		`draining node node3 \(one of 3 schedulable nodes\) of member sc-l3-[a-z0-9]{5}-2 \(etcd ID [0-9a-f]+\)`,
		`cordon node node3: done in`,
		`evict member sc-l3-[a-z0-9]{5}-2 \(the budget admits one member away\): done in`,
		`refused: Cannot evict pod`,
		`evict member sc-l3-[a-z0-9]{5}-1 too: refused while sc-l3-[a-z0-9]{5}-2 is away: done in`,
		`write 5 keys while sc-l3-[a-z0-9]{5}-2 is away: done in`,
		`uncordon node node3: done in`,
		`wait until the status has sc-l3-[a-z0-9]{5}-2 away: its pod waits for its cordoned node: done in`,
		`wait until sc-l3-[a-z0-9]{5}-2 is back as itself on a new pod and the cluster has 3 ready members: done in`,
		`read back the 55 keys: done in`,
		`read back from sc-l3-[a-z0-9]{5}-restored the 60 keys written before the backup: done in`,
	} {
		g.Expect(res.Log).To(MatchRegexp(line))
	}
	g.Expect(evicted).To(HaveLen(1), "the second eviction was refused")
}

// runDrain runs level 3 on a fake cluster of 3 nodes whose budget admits one member away
// (or two, with admitTwo), checks that every node ends uncordoned, and returns the result
// and the evicted pods.
func runDrain(t *testing.T, g Gomega, admitTwo bool) (scapiv1alpha3.TestResult, []string) {
	var evicted []string
	f := newFakeCluster(t, false, budget(admitTwo, &evicted), onNodes(3))
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	var nodes corev1.NodeList
	g.Expect(f.client.List(context.Background(), &nodes)).To(Succeed())
	for _, n := range nodes.Items {
		g.Expect(n.Spec.Unschedulable).To(BeFalse(), "%s uncordoned", n.Name)
	}
	return res, evicted
}

// A budget that lets two members go at once fails level 3, and the node is uncordoned all
// the same.
func TestFullLifecycleDrainTwoAtOnce(t *testing.T) {
	g := NewWithT(t)
	res, _ := runDrain(t, g, true)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(MatchRegexp(`evict member sc-l3-[a-z0-9]{5}-1 too: refused while sc-l3-[a-z0-9]{5}-2 is away: ` +
		`the PodDisruptionBudget let sc-l3-[a-z0-9]{5}-1 go while sc-l3-[a-z0-9]{5}-2 was away: two of 3 members at once`)))
	g.Expect(res.Log).To(ContainSubstring("backup and restore not tried"))
}

// A backup that fails fails the test with its reason and message, and is cleaned up.
func TestFullLifecycleBackupFails(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{}, failBackups(etcdv1alpha1.ReasonDestinationFull, "no space left on device"))
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(MatchRegexp(
		`^wait until the backup has succeeded: EtcdBackup sc-l3-[a-z0-9]{5}-backup failed: DestinationFull: no space left on device$`)))
	g.Expect(res.Log).NotTo(ContainSubstring("-restored"), "no cluster is restored from a failed backup")
}

// A restored cluster that holds what was written after the backup is a copy, not a
// restore.
func TestFullLifecycleRestoreIsACopy(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{}, restoreLive)
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(MatchRegexp(`^check that sc-l3-[a-z0-9]{5}-restored lacks the key written after the backup: ` +
		`sc-l3-[a-z0-9]{5}-restored holds 1 of the 1 keys written after the backup, first "/etcdpilot-scorecard/sc-l3-[a-z0-9]{5}/after-backup/000": ` +
		`it was not restored from the backup$`)))
	g.Expect(res.Log).To(MatchRegexp(`read back from sc-l3-[a-z0-9]{5}-restored the 55 keys written before the backup: done`))
}

// When the scaling part fails, backup and restore are not tried.
func TestFullLifecycleScalingFails(t *testing.T) {
	g := NewWithT(t)
	refuse := interceptor.Funcs{Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
		if _, ok := obj.(*etcdv1alpha1.EtcdCluster); ok && obj.GetDeletionTimestamp() == nil {
			return apierrors.NewForbidden(etcdv1alpha1.GroupVersion.WithResource("etcdclusters").GroupResource(), obj.GetName(), errors.New("no"))
		}
		return c.Patch(ctx, obj, patch, opts...)
	}}
	f := newFakeCluster(t, false, refuse)
	f.backup = true
	res := f.run(t, "level-3-full-lifecycle")
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(HavePrefix("scale to 5 members: setting spec.size of EtcdCluster")))
	g.Expect(res.Log).To(ContainSubstring("backup and restore not tried: the cluster did not get through scaling, member replacement and the drain"))
}

// l4 matches the name of level 4's cluster.
const l4 = `sc-l4-[a-z0-9]{5}`

// The steps of level 4 after its cluster is Available, each followed by "done" when it
// passes, and those of its fault.
var (
	insightSteps = []string{"scrape the member pods' metrics port", "scrape the operator's metrics endpoint with the test's token",
		"check the PodMonitor, PrometheusRule and dashboard ConfigMap",
		"find the operator's target up in Prometheus, and the cluster's series",
		"fail a backup of the cluster: EtcdBackupFailing must go off, then clear once a backup succeeds",
		"find the member's target of the cluster's PodMonitor up in Prometheus, and its series",
		"find the cluster's rule group loaded in Prometheus, every rule healthy",
		"look for the events MemberPodCreated and ClusterAvailable about EtcdCluster " + l4}
	faultSteps = []string{"find the rule EtcdBackupFailing loaded and healthy, and inactive for EtcdCluster " + l4,
		"create EtcdBackup " + l4 + "-doomed to claim " + l4 + "-no-such-claim, which does not exist",
		"wait until the backup has failed", "wait until EtcdBackupFailing is pending or firing for EtcdCluster " + l4,
		"create PersistentVolumeClaim " + l4 + "-backups", "create EtcdBackup " + l4 + "-backup",
		"wait until the backup has succeeded", "wait until EtcdBackupFailing clears for EtcdCluster " + l4}
)

// runDeepInsights runs level 4 against a fake cluster with short waits: a piece that is
// missing fails after a second.
func runDeepInsights(t *testing.T, events bool, opts ...fakeOption) scapiv1alpha3.TestResult {
	t.Helper()
	return runDeepInsightsWithin(t, time.Second, events, opts...)
}

// runDeepInsightsWithin runs level 4 against a fake cluster, each piece given wait. A piece
// that is there passes at its first look, however long wait is; on a machine busy with other
// work (make test runs beside the local cluster's start) that look can take longer than a
// wait short enough for the failing cases.
func runDeepInsightsWithin(t *testing.T, wait time.Duration, events bool, opts ...fakeOption) scapiv1alpha3.TestResult {
	t.Helper()
	t.Cleanup(levels.SetInsightsWait(wait, 10*time.Millisecond))
	return newFakeCluster(t, events, interceptor.Funcs{}, opts...).run(t, "level-4-deep-insights")
}

// An operator with every insight, and a Prometheus that sees it all: the test passes.
func TestDeepInsights(t *testing.T) {
	g := NewWithT(t)
	res := runDeepInsightsWithin(t, 30*time.Second, true, insightful, monitored)
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Errors).To(BeEmpty())
	g.Expect(res.Suggestions).To(BeEmpty())
	for _, line := range []string{
		`the Prometheus Operator's PodMonitor and PrometheusRule kinds are served: true`,
		`Prometheus's API: http://127\.0\.0\.1:\d+ \(SCORECARD_PROMETHEUS_URL\)`,
		`created EtcdCluster scorecard/` + l4 + `: size 1`,
		`member ` + l4 + `-0: http://10\.0\.0\.1:2381/metrics answers etcd_server_has_leader 1 \(2 samples, etcd 3\.6\.16\)`,
		`the operator's metrics endpoint: https://etcdpilot-controller-manager-metrics-service\.etcdpilot-system\.svc:8443/metrics`,
		`6 series of EtcdCluster scorecard/` + l4 + ` with the test's token: etcdpilot_cluster_condition, etcdpilot_cluster_members`,
		`PodMonitor ` + l4 + `-members, PrometheusRule ` + l4 + `-alerts, ConfigMap ` + l4 + `-dashboard exist, ` +
			`controlled by EtcdCluster ` + l4 + `; Monitoring=True \(Configured: \)`,
		`targets of the operator's metrics Service etcdpilot-system/etcdpilot-controller-manager-metrics-service: https://10\.0\.9\.9:8443/metrics up; ` +
			`etcdpilot_cluster_condition\{namespace="scorecard", name="` + l4 + `", condition="Available"\} is 1`,
		`rule EtcdBackupFailing of group etcdpilot \(/etc/prometheus/rules/prometheus-prometheus-rulefiles-0/etcdpilot-system-etcdpilot-operator-alerts-u1\.yaml\) ` +
			`is evaluated without error`,
		`created EtcdBackup scorecard/` + l4 + `-doomed of EtcdCluster ` + l4 + ` to claim ` + l4 + `-no-such-claim`,
		l4 + `-doomed: Succeeded=False \(DestinationNotFound: PersistentVolumeClaim ` + l4 + `-no-such-claim does not exist\)`,
		`EtcdBackupFailing firing for EtcdCluster ` + l4 + ` \d+s after its backup failed`,
		`EtcdBackupFailing cleared for EtcdCluster ` + l4 + ` \d+s after its backup succeeded`,
		`targets of PodMonitor scorecard/` + l4 + `-members: ` + l4 + `-0 http://10\.0\.0\.1:2381/metrics up; ` +
			`etcd_server_has_leader\{namespace="scorecard", etcd_cluster="` + l4 + `"\} is 1 for each`,
		`rule group etcd of /etc/prometheus/rules/prometheus-prometheus-rulefiles-0/scorecard-` + l4 + `-alerts-[-0-9a-f]{36}\.yaml: ` +
			`\d\d rules, each evaluated without error`,
		`events about EtcdCluster ` + l4 + `: Normal ClusterAvailable x1, Normal MemberPodCreated x1`,
		// Newest first: the good backup, its claim, the doomed backup, the cluster.
		`(?s)deleted EtcdBackup ` + l4 + `-backup .*deleted PersistentVolumeClaim ` + l4 + `-backups .*deleted EtcdBackup ` + l4 + `-doomed .*deleted EtcdCluster ` + l4,
	} {
		g.Expect(res.Log).To(MatchRegexp(line), line)
	}
	for _, step := range append(insightSteps, faultSteps...) {
		g.Expect(res.Log).To(MatchRegexp(step+": done in"), step)
	}
}

// Without the Prometheus Operator there is no Prometheus to prove monitoring against: the
// test fails before it creates anything, and says what to install.
func TestDeepInsightsWithoutPrometheusOperator(t *testing.T) {
	g := NewWithT(t)
	res := runDeepInsights(t, true, insightful)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(Equal([]string{"missing: a Prometheus to prove monitoring against (the API server serves no PodMonitor and PrometheusRule " +
		"of monitoring.coreos.com: the Prometheus Operator is not installed)"}))
	g.Expect(res.Suggestions).To(ConsistOf(And(ContainSubstring("Install the Prometheus Operator"), ContainSubstring("make monitoring-up"),
		ContainSubstring("SCORECARD_PROMETHEUS_URL"))))
	g.Expect(res.Log).To(ContainSubstring("the Prometheus Operator's PodMonitor and PrometheusRule kinds are served: false"))
	g.Expect(res.Log).NotTo(ContainSubstring("created EtcdCluster"))
}

// Each piece missing fails the test, naming it, while the other pieces pass.
func TestDeepInsightsMissing(t *testing.T) {
	cases := []struct {
		name   string
		events bool
		opts   []fakeOption
		want   []string
	}{
		{name: "no member metrics", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.memberMetrics = false }},
			want: []string{`^missing: etcd's metrics from the member pods \(pod ` + l4 + `-0 has no container port named metrics\)$`}},
		{name: "operator metrics without the cluster", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.operatorMetrics = false }},
			want: []string{`^missing: the operator's metrics of the cluster \(https://etcdpilot-controller-manager-metrics-service\.etcdpilot-system\.svc:8443/metrics ` +
				`answers 1 samples, none of EtcdCluster scorecard/` + l4 + ` \(etcdpilot_\* with namespace="scorecard", name="` + l4 + `"\)\)$`}},
		{name: "operator metrics refused", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.refuseMetrics = true }},
			want: []string{`^missing: the operator's metrics of the cluster \(GET https://etcdpilot-controller-manager-metrics-service\.etcdpilot-system\.svc:8443/metrics: ` +
				`403 Forbidden: Forbidden \(user=system:serviceaccount:scorecard:etcdpilot-scorecard.*\) \(the test's ServiceAccount must be bound to a ClusterRole ` +
				`that may get /metrics: config/scorecard/rbac binds etcdpilot-metrics-reader\)\)$`}},
		// No PodMonitor and no PrometheusRule: Prometheus has nothing of the cluster's
		// members and rules either.
		{name: "objects missing", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.monitoring = false }},
			want: []string{`^missing: the cluster's monitoring objects \(reading PodMonitor ` + l4 + `-members: .*not found; ` +
				`reading PrometheusRule ` + l4 + `-alerts: .*not found; reading ConfigMap ` + l4 + `-dashboard: .*not found; ` +
				`EtcdCluster ` + l4 + ` has no Monitoring condition\)$`,
				`^missing: the members' metrics in Prometheus \(no target of PodMonitor scorecard/` + l4 + `-members for member pod ` + l4 + `-0 ` +
					`\(Prometheus scrapes 2 targets\)\)$`,
				`^missing: the cluster's alert rules in Prometheus \(reading PrometheusRule ` + l4 + `-alerts: .*not found\)$`}},
		{name: "operator not scraped", events: true, opts: []fakeOption{insightful, prometheusCRDs},
			want: []string{`^missing: the operator's metrics in Prometheus \(no target of the operator's metrics Service ` +
				`etcdpilot-system/etcdpilot-controller-manager-metrics-service among the 2 targets Prometheus scrapes: nothing tells it to scrape the operator\)$`,
				`^missing: an alert for a real fault \(not tried: Prometheus does not have the operator's series of the cluster, which the alert reads\)$`}},
		{name: "member target down", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.memberDown = true }},
			want: []string{`^missing: the members' metrics in Prometheus \(member pod ` + l4 + `-0: target http://10\.0\.0\.1:2381/metrics is down: ` +
				`Get "http://10\.0\.0\.1:2381/metrics": dial tcp 10\.0\.0\.1:2381: connect: connection refused\)$`}},
		{name: "rules not loaded", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.rulesNotLoaded = true }},
			want: []string{`^missing: the cluster's alert rules in Prometheus \(the rule group etcd of PrometheusRule scorecard/` + l4 + `-alerts ` +
				`\(file scorecard-` + l4 + `-alerts-[-0-9a-f]{36}\.yaml\) is not loaded \(Prometheus evaluates 2 groups\)\)$`}},
		{name: "a rule broken", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.ruleBroken = true }},
			want: []string{`^missing: the cluster's alert rules in Prometheus \(rule group etcd of /etc/prometheus/rules/prometheus-prometheus-rulefiles-0/` +
				`scorecard-` + l4 + `-alerts-[-0-9a-f]{36}\.yaml: rule etcdMembersDown is err: found duplicate series for the match group ` +
				`\{namespace="scorecard"\} on the right hand-side of the operation\)$`}},
		{name: "the alert never goes off", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.alertSilent = true }},
			want: []string{`^missing: an alert for a real fault \(wait until EtcdBackupFailing is pending or firing for EtcdCluster ` + l4 + `: ` +
				`EtcdBackupFailing for EtcdCluster ` + l4 + ` is inactive \(\{__name__=~"etcdpilot_backup_last_\(failure\|success\)_timestamp_seconds", ` +
				`namespace="scorecard", name="` + l4 + `"\}: none\)\)$`}},
		{name: "the alert never clears", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.alertStuck = true }},
			want: []string{`^missing: an alert for a real fault \(wait until EtcdBackupFailing clears for EtcdCluster ` + l4 + `: ` +
				`EtcdBackupFailing for EtcdCluster ` + l4 + ` is firing \(\{__name__=~.*: none\)\)$`}},
		{name: "no events", opts: []fakeOption{insightful, monitored},
			want: []string{`^missing: Kubernetes events about the EtcdCluster \(no MemberPodCreated or ClusterAvailable event about EtcdCluster ` + l4 +
				` \(events: none\)\)$`}},
		// An event, but not the one of what happened.
		{name: "no ClusterAvailable event", events: true, opts: []fakeOption{insightful, monitored, func(o *fakeOperator) { o.noAvailableEvent = true }},
			want: []string{`^missing: Kubernetes events about the EtcdCluster \(no ClusterAvailable event about EtcdCluster ` + l4 +
				` \(events: Normal MemberPodCreated x1\)\)$`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := runDeepInsights(t, tc.events, tc.opts...)
			g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
			var want []any
			for _, w := range tc.want {
				want = append(want, MatchRegexp(w))
			}
			g.Expect(res.Errors).To(ConsistOf(want...), res.Log)
			g.Expect(res.Suggestions).To(HaveLen(len(tc.want)))
		})
	}
}

// An operator without any of it, with the Prometheus Operator installed and nothing else:
// every piece is named, and the alert is not tried.
func TestDeepInsightsNone(t *testing.T) {
	g := NewWithT(t)
	res := runDeepInsights(t, false, prometheusCRDs)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(
		HavePrefix("missing: etcd's metrics from the member pods"),
		HavePrefix("missing: the operator's metrics of the cluster"),
		HavePrefix("missing: the cluster's monitoring objects"),
		HavePrefix("missing: the operator's metrics in Prometheus"),
		HavePrefix("missing: an alert for a real fault (not tried"),
		HavePrefix("missing: the members' metrics in Prometheus"),
		HavePrefix("missing: the cluster's alert rules in Prometheus"),
		HavePrefix("missing: Kubernetes events about the EtcdCluster")))
	g.Expect(res.Log).To(ContainSubstring("clean up: done in"))
}

// runAutoPilot runs level 5 against a fake cluster with short waits.
func runAutoPilot(t *testing.T, opts ...fakeOption) scapiv1alpha3.TestResult {
	t.Helper()
	t.Cleanup(levels.SetAutoPilotWaits(3*time.Second, time.Second, 10*time.Millisecond))
	return newFakeCluster(t, false, interceptor.Funcs{}, opts...).run(t, "level-5-auto-pilot")
}

// The steps of level 5, each followed by "done" when it passes: the defragmentation
// cluster's, then the NOSPACE cluster's; beside them the quorum-loss cluster's and the
// corrupt-member cluster's.
var (
	defragSteps = []string{
		`create EtcdCluster sc-l5-[a-z0-9]{5}-defrag`,
		`wait for 3 ready members, Available and Ready`,
		`write 48 values of 512 KiB, then overwrite each with a few bytes`,
		`compact the history`,
		`wait until every member is defragmented, its file at least 8Mi smaller, while a key is written every few seconds`,
		`check the MemberDefragmented events: one per member, the leader last`,
	}
	noSpaceSteps = []string{
		`create EtcdCluster sc-l5-[a-z0-9]{5}-nospace`,
		`write 20 keys`,
		`fill the 16Mi quota: rewrite one key with 256 KiB values until etcd refuses a write with NOSPACE`,
		`wait until writes work again, with no action by the test`,
		`read back the 20 keys and the rewritten key`,
		`wait for 3 ready members, Available and Ready, without alarms`,
		`look for the events NoSpaceDisarmed and NoSpaceRecovered`,
	}
	verifiedSteps = []string{
		`create PersistentVolumeClaim sc-l5-[a-z0-9]{5}-nospace-backups`,
		`create EtcdBackup sc-l5-[a-z0-9]{5}-nospace-verified with spec.verify`,
		`wait until the backup has succeeded`,
		`wait until the backup is verified: restored into a throwaway member, it holds what it recorded`,
	}
	quorumSteps = []string{
		`create EtcdCluster sc-l5-[a-z0-9]{5}-quorum`,
		`wait for 3 ready members, Available and Ready`,
		`write 20 keys`,
		`destroy two of the three members, the leader among them \(claims, then pods\)`,
		`wait until the operator recovers the cluster from the surviving member: status.recovery Succeeded, 3 ready members`,
		`read back the 20 keys`,
		`look for the event RecoverySucceeded`,
	}
	corruptSteps = []string{
		`create EtcdCluster sc-l5-[a-z0-9]{5}-corrupt`,
		`wait for 3 ready members, Available and Ready`,
		`write 20 keys and a canary key`,
		`wait for a consistency check that finds the members consistent, canary included`,
		`rewrite the canary's value in a follower's database file while it runs`,
		`read the canary from each member alone \(serializable\): the rewritten member serves the rewritten value, the others the original`,
		`wait until the operator replaces that member \(a new member ID\), 3 ready members`,
		`read back the 20 keys and the canary through the client Service \(linearizable: the majority's data\)`,
		`read the canary from each member alone: every member, the new one included, serves the original`,
		`look for the event MemberCorrupt: it names the rewritten member, and no event blames another`,
	}
)

// allAutoPilotSteps are every step of level 5.
func allAutoPilotSteps() []string {
	return slices.Concat(defragSteps, noSpaceSteps, verifiedSteps, quorumSteps, corruptSteps)
}

// An operator that maintains, verifies and heals: every step passes, and so does the test.
func TestAutoPilot(t *testing.T) {
	g := NewWithT(t)
	res := runAutoPilot(t, maintaining, verifying, healing)
	g.Expect(res.State).To(Equal(scapiv1alpha3.PassState), res.Log)
	g.Expect(res.Errors).To(BeEmpty(), res.Log)
	g.Expect(res.Suggestions).To(BeEmpty())
	for _, step := range allAutoPilotSteps() {
		g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
	}
	for _, line := range []string{
		`created EtcdCluster scorecard/sc-l5-[a-z0-9]{5}-defrag: size 3`,
		`wrote 24\.0 MiB under /etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-defrag/garbage/ and overwrote each`,
		`compacted at revision 96; the member behind http://sc-l5-[a-z0-9]{5}-defrag-client\.scorecard\.svc:2379 now has a 24\.\d MiB file with 0\.\d MiB in use`,
		`sc-l5-[a-z0-9]{5}-defrag: sc-l5-[a-z0-9]{5}-defrag-0 not defragmented \(file 24\.\d MiB, 9\d% free\)`,
		`sc-l5-[a-z0-9]{5}-defrag-0 defragmented from 24\.\d MiB to 0\.\d MiB; sc-l5-[a-z0-9]{5}-defrag-1 defragmented from 24\.\d MiB to 0\.\d MiB; `,
		`members defragmented in the order sc-l5-[a-z0-9]{5}-defrag-1, sc-l5-[a-z0-9]{5}-defrag-2, sc-l5-[a-z0-9]{5}-defrag-0: the leader last`,
		`created EtcdCluster scorecard/sc-l5-[a-z0-9]{5}-nospace: size 3`,
		`etcd acknowledged \d+ writes of 256 KiB to /etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-nospace/churn, then refused one: ` +
			`writing etcd key "/etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-nospace/churn": etcdserver: mvcc: database space exceeded`,
		`write \d+ to /etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-nospace/after-nospace acknowledged`,
		`events about EtcdCluster sc-l5-[a-z0-9]{5}-nospace: Normal MemberDefragmented x3, Normal NoSpaceDisarmed x1, Normal NoSpaceRecovered x1, Warning NoSpace x1`,
		`verified: restored at revision \d+ \(the backup recorded \d+\)`,
		`members \[sc-l5-[a-z0-9]{5}-quorum-\d sc-l5-[a-z0-9]{5}-quorum-\d\] stopped together; their claims deleted`,
		`recovered from sc-l5-[a-z0-9]{5}-quorum-\d \(recovery \d{8}-\d{6}\), revisions raised by 1000000000`,
		`events about EtcdCluster sc-l5-[a-z0-9]{5}-quorum: Normal RecoverySucceeded x1`,
		`member sc-l5-[a-z0-9]{5}-corrupt-2: rewrote 1 occurrences of the canary`,
		`/etcdpilot-scorecard/(sc-l5-[a-z0-9]{5}-corrupt)/canary from each member's own data: ` +
			`sc-l5-[a-z0-9]{5}-corrupt-0 the original value, sc-l5-[a-z0-9]{5}-corrupt-1 the original value, sc-l5-[a-z0-9]{5}-corrupt-2 the rewritten value\n`,
		`/etcdpilot-scorecard/(sc-l5-[a-z0-9]{5}-corrupt)/canary from each member's own data: ` +
			`sc-l5-[a-z0-9]{5}-corrupt-0 the original value, sc-l5-[a-z0-9]{5}-corrupt-1 the original value, sc-l5-[a-z0-9]{5}-corrupt-2 the original value\n`,
		`events about EtcdCluster sc-l5-[a-z0-9]{5}-corrupt: Warning MemberCorrupt x1`,
		// Newest first.
		`(?s)deleted EtcdCluster sc-l5-[a-z0-9]{5}-nospace .*deleted EtcdCluster sc-l5-[a-z0-9]{5}-defrag `,
	} {
		g.Expect(res.Log).To(MatchRegexp(line), line)
	}
}

// An operator without maintenance: no member is defragmented, and a cluster in NOSPACE
// stays there. Both parts fail at their wait, after the steps before it passed.
func TestAutoPilotWithoutMaintenance(t *testing.T) {
	g := NewWithT(t)
	res := runAutoPilot(t, healing)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(
		MatchRegexp(`^wait until every member is defragmented, its file at least 8Mi smaller, while a key is written every few seconds: gave up waiting for every member defragmented, `+
			`its file at least 8Mi smaller \(context deadline exceeded\); last seen: sc-l5-[a-z0-9]{5}-defrag-0 not defragmented \(file 24\.\d MiB, 9\d% free\)`),
		MatchRegexp(`^wait until writes work again, with no action by the test: writes still fail after \d+ tries in 3s: `+
			`writing etcd key "/etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-nospace/after-nospace": etcdserver: mvcc: database space exceeded$`),
	))
	for _, step := range append(defragSteps[:4], noSpaceSteps[:3]...) {
		g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
	}
	g.Expect(res.Log).NotTo(ContainSubstring("check the MemberDefragmented events"), "the steps after a failure are skipped")
	g.Expect(res.Log).NotTo(ContainSubstring("read back the 20 keys and the rewritten key"))
	g.Expect(res.Log).To(ContainSubstring("verified backup not tried: the NOSPACE part did not pass"))
}

// An operator that maintains but does not verify backups: the backup succeeds and its
// verification never ends.
func TestAutoPilotWithoutVerification(t *testing.T) {
	g := NewWithT(t)
	res := runAutoPilot(t, maintaining, healing)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(
		MatchRegexp(`^wait until the backup is verified: restored into a throwaway member, it holds what it recorded: gave up waiting for ` +
			`EtcdBackup sc-l5-[a-z0-9]{5}-nospace-verified to be verified \(context deadline exceeded\); last seen: no Verified condition yet$`),
	))
	for _, step := range verifiedSteps[:3] {
		g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
	}
}

// An operator that defragments the leader first fails the order check.
func TestAutoPilotLeaderFirst(t *testing.T) {
	g := NewWithT(t)
	res := runAutoPilot(t, maintaining, leaderFirst, verifying, healing)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(HaveExactElements(
		MatchRegexp(`^check the MemberDefragmented events: one per member, the leader last: the leader (sc-l5-[a-z0-9]{5}-defrag)-0 was not ` +
			`defragmented last: the events tell the order sc-l5-[a-z0-9]{5}-defrag-0, sc-l5-[a-z0-9]{5}-defrag-1, sc-l5-[a-z0-9]{5}-defrag-2$`),
	))
	for _, step := range slices.Concat(noSpaceSteps, quorumSteps, corruptSteps) {
		g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
	}
}

// An operator that maintains but does not heal: the cluster that lost two members comes
// back with two new, empty members and no recovery; the member whose data was rewritten
// stays. Both healing parts fail at their wait, after the steps before it passed.
func TestAutoPilotWithoutHealing(t *testing.T) {
	g := NewWithT(t)
	res := runAutoPilot(t, maintaining, verifying)
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
	g.Expect(res.Errors).To(ConsistOf(
		MatchRegexp(`^wait until the operator recovers the cluster from the surviving member: status.recovery Succeeded, 3 ready members: `+
			`gave up waiting for the recovery to succeed \(context deadline exceeded\); last seen: Available=True`),
		MatchRegexp(`^wait until the operator replaces that member \(a new member ID\), 3 ready members: gave up waiting for `+
			`member sc-l5-[a-z0-9]{5}-corrupt-2 replaced \(context deadline exceeded\)`),
	))
	for _, step := range slices.Concat(quorumSteps[:4], corruptSteps[:6], defragSteps, noSpaceSteps, verifiedSteps) {
		g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
	}
	g.Expect(res.Log).NotTo(ContainSubstring("read back the 20 keys and the canary"), "the steps after a failure are skipped")
}

// What etcd and the events must show of the corrupt member, each missing in turn: the test
// fails at that check, every step before it passed.
func TestAutoPilotCorruptMemberUnproven(t *testing.T) {
	cases := []struct {
		name   string
		opt    fakeOption
		err    string // the one error, a regular expression
		passed int    // how many of corruptSteps passed
	}{
		// The rewrite succeeds but does not change what the member serves: the test fails
		// right after it, before the operator's word is asked, although the operator goes on
		// to replace the member.
		{name: "the divergence does not show in etcd", opt: unseenRewrite, passed: 5,
			err: `^read the canary from each member alone \(serializable\): .*: member (sc-l5-[a-z0-9]{5}-corrupt)-2, whose data the test rewrote, ` +
				`serves /etcdpilot-scorecard/sc-l5-[a-z0-9]{5}-corrupt/canary's original value from its own data: ` +
				`the rewrite does not show in what etcd serves, so nothing diverged$`},
		// The operator replaces the rewritten member but blames another in its event.
		{name: "the event names another member", opt: blameOther, passed: len(corruptSteps) - 1,
			err: `^look for the event MemberCorrupt: .*: a MemberCorrupt event names member (sc-l5-[a-z0-9]{5}-corrupt)-0, not sc-l5-[a-z0-9]{5}-corrupt-2, ` +
				`whose data the test rewrote: "Consistency check at revision 7: sc-l5-[a-z0-9]{5}-corrupt-0's hash 0badbeef differs from 600dbeef of ` +
				`sc-l5-[a-z0-9]{5}-corrupt-2, sc-l5-[a-z0-9]{5}-corrupt-1 at revision 7"$`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			res := runAutoPilot(t, maintaining, verifying, healing, tc.opt)
			g.Expect(res.State).To(Equal(scapiv1alpha3.FailState), res.Log)
			g.Expect(res.Errors).To(HaveExactElements(MatchRegexp(tc.err)))
			for _, step := range corruptSteps[:tc.passed] {
				g.Expect(res.Log).To(MatchRegexp(step+`: done in`), step)
			}
			g.Expect(res.Log).NotTo(MatchRegexp(corruptSteps[tc.passed]+`: done in`), "the step that failed")
		})
	}
}

func TestPanicIsAnErrorAndCleansUp(t *testing.T) {
	g := NewWithT(t)
	f := newFakeCluster(t, false, interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
		if _, ok := obj.(*corev1.Service); ok {
			panic("boom")
		}
		return c.Get(ctx, key, obj, opts...)
	}})
	res := f.run(t, "level-1-basic-install")
	g.Expect(res.State).To(Equal(scapiv1alpha3.ErrorState))
	g.Expect(res.Errors).To(ConsistOf("the test panicked: boom"))
	g.Expect(res.Log).To(ContainSubstring("clean up: done in"))
}
