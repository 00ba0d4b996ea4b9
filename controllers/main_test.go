package controllers_test

import (
	"time"

	"github.com/etcdpilot/etcdpilot/internal/versions"

	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// k8sClient talks to this package's envtest API server, where the EtcdCluster controller runs.
var k8sClient client.Client

// testImageRepository is the etcd image repository the controller under test is given.
const testImageRepository = "registry.example/etcd"

// fakeEtcd stands in for the etcd members, which never run in envtest (there is no kubelet):
// a test registers a fake cluster for its namespace; namespaces without one do not answer.
var fakeEtcd = &etcdRouter{byNamespace: map[string]*fake.Client{}}

type etcdRouter struct {
	mu          sync.Mutex
	byNamespace map[string]*fake.Client
	// clients: a namespace's members as a client other than the fake (registerClient).
	clients map[string]etcd.Client
}

func (r *etcdRouter) register(namespace string, f *fake.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.byNamespace[namespace] = f
}

// registerClient makes c the members of namespace, for a test whose members behave in a
// way the fake does not.
func (r *etcdRouter) registerClient(namespace string, c etcd.Client) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.clients == nil {
		r.clients = map[string]etcd.Client{}
	}
	r.clients[namespace] = c
}

// factory routes by the namespace in the member URLs (https://<member>.<peer>.<ns>.svc:2379).
func (r *etcdRouter) factory(cfg etcd.Config) (etcd.Client, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, e := range cfg.Endpoints {
		u, err := url.Parse(e)
		if err != nil {
			return nil, err
		}
		if labels := strings.Split(u.Hostname(), "."); len(labels) == 4 {
			if f, ok := r.byNamespace[labels[2]]; ok {
				return f.Factory()(cfg)
			}
			if c, ok := r.clients[labels[2]]; ok {
				return c, nil
			}
		}
	}
	return nil, errors.New("no etcd member answers in envtest")
}

// TestMain starts one envtest (our own kube-apiserver and etcd from bin/, found through
// KUBEBUILDER_ASSETS) for the whole package, with the CRDs from config/crd/bases and the
// controller running in a manager.
//
// Every test makes its clusters in a namespace of its own (newNamespace) and registers its
// fakes by that namespace. The tests that wait out real time (measurement windows, rollout
// phases, a namespace going) call t.Parallel, so they wait together, after the others: they
// read and set nothing shared but what is keyed by their namespace. make test runs them four
// at a time (go test -parallel 4): with go test's default on two cores, the two longest
// would hold both slots while the others queue. A test that moves a shared clock
// (scheduleClock) stays serial.
func TestMain(m *testing.M) {
	os.Exit(runWithEnvtest(m))
}

func runWithEnvtest(m *testing.M) int {
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		fmt.Fprintln(os.Stderr, "KUBEBUILDER_ASSETS is not set: run these tests with `make test`, which builds kube-apiserver and etcd into bin/")
		return 1
	}
	certManagerCRDs := os.Getenv("CERT_MANAGER_CRDS")
	if certManagerCRDs == "" {
		fmt.Fprintln(os.Stderr, "CERT_MANAGER_CRDS is not set: run these tests with `make test`, which fetches cert-manager's Certificate CRD")
		return 1
	}
	// The Prometheus Operator's PodMonitor and PrometheusRule: the operator creates them for
	// every cluster (monitoring_test.go; monitoring_internal_test.go covers their absence).
	promCRDs := os.Getenv("PROMETHEUS_OPERATOR_CRDS")
	if promCRDs == "" {
		fmt.Fprintln(os.Stderr, "PROMETHEUS_OPERATOR_CRDS is not set: run these tests with `make test`, which copies the Prometheus Operator's CRDs")
		return 1
	}
	ctrl.SetLogger(zap.New(zap.WriteTo(os.Stderr), zap.UseDevMode(true)))
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases"), certManagerCRDs,
			filepath.Join(promCRDs, "monitoring.coreos.com_podmonitors.yaml"), filepath.Join(promCRDs, "monitoring.coreos.com_prometheusrules.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting envtest:", err)
		return 1
	}
	defer func() { _ = env.Stop() }()

	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		panic(err)
	}
	if err := etcdv1alpha1.AddToScheme(scheme); err != nil {
		panic(err)
	}
	// The operator's own cache options (main.go), so that the tests read what it reads.
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: controllers.CacheOptions(nil), Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating manager:", err)
		return 1
	}
	if err := (&controllers.EtcdClusterReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("etcdpilot"),
		EtcdImages: versions.Images{Repository: testImageRepository}, ClusterDomain: "cluster.local", NewEtcdClient: fakeEtcd.factory,
		AgentImage: testAgentImage, CAMinPhase: time.Second, Metrics: testMetrics, PeerRoundTrip: roundTrips.read,
		Operator: testOperator,
	}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "setting up controller:", err)
		return 1
	}
	if err := (&controllers.EtcdBackupReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Recorder: mgr.GetEventRecorder("etcdpilot"), AgentImage: testAgentImage,
		EtcdImages: versions.Images{Repository: testImageRepository},
		Metrics:    testMetrics,
	}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the backup controller:", err)
		return 1
	}
	if err := (&controllers.EtcdBackupScheduleReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdpilot"), Now: scheduleClock.now, Metrics: testMetrics,
	}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the backup schedule controller:", err)
		return 1
	}
	if err := (&controllers.EtcdTenantReconciler{
		Client: mgr.GetClient(), Recorder: mgr.GetEventRecorder("etcdpilot"), NewEtcdClient: fakeEtcd.factory, Now: tenantClock.now, Metrics: testMetrics,
	}).SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, "setting up the tenant controller:", err)
		return 1
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "manager stopped with an error:", err)
		}
	}()

	k8sClient, err = client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		fmt.Fprintln(os.Stderr, "creating client:", err)
		return 1
	}
	return m.Run()
}
