package scale

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/memlimit"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Targets, from the operator's deployment (config/manager/manager.yaml: limits cpu 500m,
// memory 256Mi) and its steady-state requeue (controllers: every 30 s).
const (
	memoryLimitMiB     = 256
	cpuLimitSecPerMin  = 0.5 * 60
	steadyPollInterval = 30 * time.Second
)

// settings of one run, from the environment.
type settings struct {
	clusters, members, perNamespace int
	window, readyTimeout            time.Duration
	log                             bool
	// profiles, when set, is a directory for a CPU profile of the window and a heap profile
	// after it.
	profiles string
	// autopilot turns every self-tuning feature on in every cluster (autopilotSpec), with
	// timingWindow as etcd.autoTimingWindow.
	autopilot    bool
	timingWindow time.Duration
}

func settingsFromEnv(b *testing.B) settings {
	b.Helper()
	s := settings{clusters: 1000, members: 3, perNamespace: 10, window: time.Minute, readyTimeout: 40 * time.Minute, timingWindow: time.Minute}
	for name, p := range map[string]*int{"SCALE_CLUSTERS": &s.clusters, "SCALE_MEMBERS": &s.members, "SCALE_CLUSTERS_PER_NAMESPACE": &s.perNamespace} {
		if v := os.Getenv(name); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				b.Fatalf("%s=%q: want a positive integer", name, v)
			}
			*p = n
		}
	}
	for name, p := range map[string]*time.Duration{"SCALE_WINDOW": &s.window, "SCALE_READY_TIMEOUT": &s.readyTimeout, "SCALE_TIMING_WINDOW": &s.timingWindow} {
		if v := os.Getenv(name); v != "" {
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				b.Fatalf("%s=%q: want a positive duration", name, v)
			}
			*p = d
		}
	}
	s.log = os.Getenv("SCALE_LOG") != ""
	s.profiles = os.Getenv("SCALE_PROFILES")
	switch v := os.Getenv("SCALE_AUTOPILOT"); v {
	case "", "1", "on", "true":
		s.autopilot = true
	case "0", "off", "false":
	default:
		b.Fatalf("SCALE_AUTOPILOT=%q: want on or off", v)
	}
	return s
}

// autopilotSpec turns on every feature that changes a cluster by itself: raft timing Auto
// over timingWindow (SCALE_TIMING_WINDOW, by default 1m, the API's least: every cluster has
// read a whole window before the steady window starts, and its round trips are read every
// 10 s, the most often any cluster's are, which makes its passes three times as frequent
// as a steady cluster's), storage autoscaling Auto, the consistency check (Replace,
// every 10m: the default) and defragmentation Auto (the default), each said outright so
// that a change of a default does not turn one off here.
func autopilotSpec(spec *etcdv1alpha1.EtcdClusterSpec, timingWindow time.Duration) {
	spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
	spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: timingWindow}
	spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}
	spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckReplace
	spec.Maintenance.Defragmentation.Mode = etcdv1alpha1.DefragmentationAuto
}

// snapshot is what is read before and after a stretch of time.
type snapshot struct {
	at            time.Time
	writes        Writes
	reconcile     Histogram
	cpu           time.Duration
	kubeletWrites int64
}

// BenchmarkScale runs the EtcdCluster controller in this process against envtest, with a
// fake etcd per cluster and a stand-in kubelet, creates SCALE_CLUSTERS EtcdClusters
// (default 1000) of SCALE_MEMBERS members (default 3), with every self-tuning feature on
// unless SCALE_AUTOPILOT=off (autopilotSpec), waits until every one is Ready (and, with
// them, has decided its raft timing on a whole window), then measures a steady-state window
// of SCALE_WINDOW (default 1m): writes to the API server, p99 reconcile time, memory, CPU,
// and member status calls, each next to its floor or target. Run it once (-benchtime=1x):
// `make bench-scale`.
func BenchmarkScale(b *testing.B) {
	s := settingsFromEnv(b)
	if b.N > 1 {
		b.Skip("one run is the measurement: use -benchtime=1x")
	}
	env, cfg := startEnvtest(b, s)
	defer func() { _ = env.Stop() }()
	admin, err := rest.RESTClientFor(adminMetricsConfig(cfg))
	if err != nil {
		b.Fatal(err)
	}

	// The soft limit the operator gives the Go runtime in its container (main.go).
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(memlimit.SoftLimit(memoryLimitMiB << 20)))

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mgr, members, kube, updates := startOperator(ctx, b, cfg)
	floorRSS, floorHeap := memory()
	b.Logf("floor (no clusters): RSS %.1f MiB, heap in use %.1f MiB", mib(floorRSS), mib(floorHeap))

	start := time.Now()
	bootstrap := take(ctx, b, admin, kube)
	createClusters(ctx, b, mgr.GetClient(), members, s)
	waitReady(ctx, b, mgr.GetCache(), s, start)
	ready := take(ctx, b, admin, kube)
	toReady := ready.at.Sub(start)
	b.Logf("bootstrap: %d clusters Ready in %s; writes to the API server: %s", s.clusters, toReady.Round(time.Second), ready.writes.Since(bootstrap.writes))
	// One steady pass of every cluster after the last became Ready, before the window; with
	// Auto timing, a whole timing window read and a read more.
	settle := steadyPollInterval + 5*time.Second
	if s.autopilot {
		waitTuned(ctx, b, mgr.GetCache(), s, start)
		b.Logf("every cluster decided its raft timing on measured round trips %s after the first create", time.Since(start).Round(time.Second))
		settle = max(settle, s.timingWindow+10*time.Second)
	}
	time.Sleep(settle)
	members.takeStatusCalls()

	before, updatesBefore := take(ctx, b, admin, kube), updates.take()
	stopProfile := startCPUProfile(b, s.profiles)
	time.Sleep(s.window)
	stopProfile()
	after, updatesAfter := take(ctx, b, admin, kube), updates.take()
	statusCalls := members.takeStatusCalls()
	rss, heap := memory()
	writeHeapProfile(b, s.profiles)

	perMin := func(v float64) float64 { return v / after.at.Sub(before.at).Minutes() }
	writes := after.writes.Since(before.writes)
	kubeletWrites := perMin(float64(after.kubeletWrites - before.kubeletWrites))
	// The API server writes its own identity lease; the operator writes no lease (no leader
	// election here).
	ownWrites := perMin(writes.Total() - writes.Total("leases"))
	operatorWrites := perMin(writes.Total("leases")) - kubeletWrites
	b.Logf("steady window (%s): writes to the API server by resource: %s", s.window, writes)
	b.Logf("steady window (%s): EtcdCluster updates seen by the operator's cache, by the status field they changed: %s",
		s.window, updatesAfter.Since(updatesBefore))
	steady := after.reconcile.Since(before.reconcile)
	boot := ready.reconcile.Since(bootstrap.reconcile)
	p99Target := steadyPollInterval.Seconds() / float64(s.clusters)
	rssPer1000 := Per1000(mib(rss)-mib(floorRSS), s.clusters)
	rssTarget := Per1000(memoryLimitMiB-mib(floorRSS), 1000)
	cpuPer1000 := Per1000(perMin(after.cpu.Seconds()-before.cpu.Seconds()), s.clusters)
	statusPerMember := perMin(float64(statusCalls)) / float64(s.clusters*s.members)
	statusTarget := time.Minute.Seconds() / steadyPollInterval.Seconds()

	b.ReportMetric(float64(s.clusters), "clusters")
	b.ReportMetric(float64(s.members), "members/cluster")
	b.ReportMetric(map[bool]float64{false: 0, true: 1}[s.autopilot], "autopilot")
	b.ReportMetric(toReady.Seconds(), "s-to-all-ready")
	b.ReportMetric(operatorWrites, "operator-writes/min")
	b.ReportMetric(0, "writes-target/min")
	// The floor is 0, so the ratio is to the passes: the share of passes that wrote.
	b.ReportMetric(operatorWrites/max(perMin(steady.Count), 1), "operator-writes/pass")
	b.ReportMetric(ownWrites, "apiserver-own-writes/min")
	b.ReportMetric(kubeletWrites, "kubelet-writes/min")
	b.ReportMetric(steady.Quantile(0.99)*1000, "p99-reconcile-steady-ms")
	b.ReportMetric(boot.Quantile(0.99)*1000, "p99-reconcile-bootstrap-ms")
	b.ReportMetric(p99Target*1000, "p99-target-ms")
	b.ReportMetric(steady.Quantile(0.99)/p99Target, "p99-steady/target")
	b.ReportMetric(perMin(steady.Count)/float64(s.clusters), "reconciles/cluster/min")
	b.ReportMetric(steady.Sum/after.at.Sub(before.at).Seconds(), "worker-busy-fraction")
	b.ReportMetric(mib(floorRSS), "rss-floor-MiB")
	b.ReportMetric(rssPer1000, "rss-MiB/1000-clusters")
	b.ReportMetric(rssTarget, "rss-target-MiB/1000-clusters")
	b.ReportMetric(rssPer1000/rssTarget, "rss/target")
	b.ReportMetric(mib(floorHeap), "heap-floor-MiB")
	b.ReportMetric(Per1000(mib(heap)-mib(floorHeap), s.clusters), "heap-MiB/1000-clusters")
	b.ReportMetric(cpuPer1000, "cpu-s/min/1000-clusters")
	b.ReportMetric(cpuLimitSecPerMin, "cpu-target-s/min/1000-clusters")
	b.ReportMetric(cpuPer1000/cpuLimitSecPerMin, "cpu/target")
	b.ReportMetric(statusPerMember, "status-calls/member/min")
	b.ReportMetric(statusTarget, "status-target/member/min")
	b.ReportMetric(statusPerMember/statusTarget, "status/target")
	b.ReportMetric(0, "ns/op") // the figures above are the result, not the wall time
}

// startEnvtest starts kube-apiserver and etcd from KUBEBUILDER_ASSETS with the operator's
// CRDs and those it reads (cert-manager's Certificate, the Prometheus Operator's).
func startEnvtest(b *testing.B, s settings) (*envtest.Environment, *rest.Config) {
	b.Helper()
	for _, v := range []string{"KUBEBUILDER_ASSETS", "CERT_MANAGER_CRDS", "PROMETHEUS_OPERATOR_CRDS"} {
		if os.Getenv(v) == "" {
			b.Fatalf("%s is not set: run `make bench-scale`", v)
		}
	}
	log := zap.New(zap.WriteTo(io.Discard))
	if s.log {
		log = zap.New(zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(log)
	prom := os.Getenv("PROMETHEUS_OPERATOR_CRDS")
	env := &envtest.Environment{
		CRDDirectoryPaths: []string{filepath.Join("..", "..", "config", "crd", "bases"), os.Getenv("CERT_MANAGER_CRDS"),
			filepath.Join(prom, "monitoring.coreos.com_podmonitors.yaml"), filepath.Join(prom, "monitoring.coreos.com_prometheusrules.yaml")},
		ErrorIfCRDPathMissing: true,
	}
	// envtest's default service range (a /24) runs out of ClusterIPs at about 250 clusters
	// (one client Service each).
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		b.Fatal("starting envtest: ", err)
	}
	// As in production (ctrl.GetConfig): no client-side rate limit, the API server's
	// priority and fairness instead.
	cfg.QPS, cfg.Burst = -1, 0
	return env, cfg
}

func adminMetricsConfig(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.GroupVersion = &corev1.SchemeGroupVersion
	c.APIPath = "/api"
	c.NegotiatedSerializer = clientgoscheme.Codecs.WithoutConversion()
	return c
}

// startOperator runs the EtcdCluster controller as main.go does (same cache options, no
// client-side rate limit), with the fake etcd fleet (members and their round trips) and the
// stand-in kubelet, and counts the EtcdCluster updates its cache sees.
func startOperator(ctx context.Context, b *testing.B, cfg *rest.Config) (ctrl.Manager, *fleet, *kubelet, *statusUpdates) {
	b.Helper()
	scheme := kruntime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	if err := etcdv1alpha1.AddToScheme(scheme); err != nil {
		b.Fatal(err)
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{Scheme: scheme, Cache: controllers.CacheOptions(nil),
		Metrics: metricsserver.Options{BindAddress: "0"}})
	if err != nil {
		b.Fatal(err)
	}
	members := &fleet{}
	if err := (&controllers.EtcdClusterReconciler{
		Client: mgr.GetClient(), APIReader: mgr.GetAPIReader(), Scheme: mgr.GetScheme(), Recorder: mgr.GetEventRecorder("etcdpilot"),
		EtcdImages: versions.Images{Repository: "registry.example/etcd"}, ClusterDomain: "cluster.local",
		NewEtcdClient: members.factory, PeerRoundTrip: members.roundTrips, Metrics: metrics.New(ctrlmetrics.Registry),
	}).SetupWithManager(mgr); err != nil {
		b.Fatal(err)
	}
	kube := newKubelet(mgr.GetClient(), mgr.GetClient())
	if err := kube.start(ctx, mgr.GetCache()); err != nil {
		b.Fatal(err)
	}
	updates := &statusUpdates{counts: Counts{}}
	if err := updates.start(ctx, mgr.GetCache()); err != nil {
		b.Fatal(err)
	}
	go func() {
		if err := mgr.Start(ctx); err != nil {
			b.Error("manager: ", err)
		}
	}()
	if !mgr.GetCache().WaitForCacheSync(ctx) {
		b.Fatal("the cache did not sync")
	}
	// The controller's own watches start with it; give them a moment to list.
	time.Sleep(2 * time.Second)
	return mgr, members, kube, updates
}

// createClusters creates the namespaces and the EtcdClusters, a few at a time.
func createClusters(ctx context.Context, b *testing.B, c client.Client, members *fleet, s settings) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, s.clusters)
	next := make(chan int)
	for range 4 {
		wg.Go(func() {
			for i := range next {
				ns := fmt.Sprintf("scale-%04d", i/s.perNamespace)
				if i%s.perNamespace == 0 {
					if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
						errs <- err
						continue
					}
				}
				ec := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("c%04d", i), Namespace: ns},
					Spec: etcdv1alpha1.EtcdClusterSpec{Size: int32(s.members)}}
				if s.autopilot {
					autopilotSpec(&ec.Spec, s.timingWindow)
				}
				members.add(ec, s.members)
				if err := createRetrying(ctx, c, ec); err != nil {
					errs <- err
				}
			}
		})
	}
	for i := range s.clusters {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal("creating clusters: ", err)
	}
}

// createRetrying creates obj, waiting for its namespace when another worker creates it.
func createRetrying(ctx context.Context, c client.Client, obj client.Object) error {
	var err error
	for range 50 {
		if err = c.Create(ctx, obj); err == nil || !strings.Contains(err.Error(), "not found") {
			return err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

// waitReady waits until every EtcdCluster is Ready with its spec in force, reading the
// operator's cache (no extra requests).
func waitReady(ctx context.Context, b *testing.B, r client.Reader, s settings, start time.Time) {
	b.Helper()
	deadline := time.Now().Add(s.readyTimeout)
	lastLog := time.Now()
	for {
		var list etcdv1alpha1.EtcdClusterList
		if err := r.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		ready, waiting := 0, map[string]int{}
		for i := range list.Items {
			c := &list.Items[i]
			if meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha1.ConditionReady) && c.Status.ObservedGeneration == c.Generation {
				ready++
				continue
			}
			why := "no Progressing condition"
			if cond := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionProgressing); cond != nil {
				why = cond.Reason
			}
			waiting[why]++
		}
		if ready == s.clusters {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters Ready after %s; the others by reason of Progressing: %v", ready, s.clusters, s.readyTimeout, waiting)
		}
		if time.Since(lastLog) > 30*time.Second {
			b.Logf("%s: %d of %d clusters Ready; the others by reason of Progressing: %v", time.Since(start).Round(time.Second), ready, s.clusters, waiting)
			lastLog = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
}

// waitTuned waits until every EtcdCluster's raft timing rests on measured round trips (its
// reason is no longer Measuring), reading the operator's cache: the change of reason is a
// status write, which belongs before the steady window.
func waitTuned(ctx context.Context, b *testing.B, r client.Reader, s settings, start time.Time) {
	b.Helper()
	deadline := time.Now().Add(max(s.readyTimeout, 5*s.timingWindow))
	lastLog := time.Now()
	for {
		var list etcdv1alpha1.EtcdClusterList
		if err := r.List(ctx, &list); err != nil {
			b.Fatal(err)
		}
		reasons := map[string]int{}
		measuring := 0
		for i := range list.Items {
			reason := "none"
			if st := list.Items[i].Status.RaftTiming; st != nil {
				reason = st.Reason
			}
			reasons[reason]++
			if reason == "none" || reason == string(tuning.ReasonMeasuring) {
				measuring++
			}
		}
		if measuring == 0 && len(list.Items) == s.clusters {
			return
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d of %d clusters still measuring their raft timing; by reason: %v", measuring, s.clusters, reasons)
		}
		if time.Since(lastLog) > 30*time.Second {
			b.Logf("%s: raft timing by reason: %v", time.Since(start).Round(time.Second), reasons)
			lastLog = time.Now()
		}
		time.Sleep(2 * time.Second)
	}
}

// statusUpdates counts the EtcdCluster updates the operator's cache sees, by the status
// field each changed ("none" for an update that changed no status field): what the
// operator's status writes are made of.
type statusUpdates struct {
	mu     sync.Mutex
	counts Counts
}

func (u *statusUpdates) start(ctx context.Context, informers cache.Informers) error {
	inf, err := informers.GetInformer(ctx, &etcdv1alpha1.EtcdCluster{})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{UpdateFunc: func(oldObj, newObj any) {
		o, ok1 := oldObj.(*etcdv1alpha1.EtcdCluster)
		n, ok2 := newObj.(*etcdv1alpha1.EtcdCluster)
		if !ok1 || !ok2 || o.ResourceVersion == n.ResourceVersion {
			return
		}
		fields := ChangedFields(o.Status, n.Status)
		if len(fields) == 0 {
			fields = []string{"none"}
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		for _, f := range fields {
			u.counts[f]++
		}
	}})
	return err
}

// take returns the counts so far.
func (u *statusUpdates) take() Counts {
	u.mu.Lock()
	defer u.mu.Unlock()
	return maps.Clone(u.counts)
}

// take reads the API server's write counters, the controller's reconcile times, this
// process's CPU time and the stand-in kubelet's writes.
func take(ctx context.Context, b *testing.B, admin rest.Interface, kube *kubelet) snapshot {
	b.Helper()
	text, err := admin.Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		b.Fatal("reading the API server's metrics: ", err)
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatal(err)
	}
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return snapshot{at: time.Now(), writes: ParseWrites(text), reconcile: ReconcileTime(families, "etcdcluster"),
		cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano()), kubeletWrites: kube.writes.Load()}
}

// memory returns the process's resident set and the Go heap in use, after a collection.
func memory() (rss, heap uint64) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	data, _ := os.ReadFile("/proc/self/status")
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			rss = kb << 10
		}
	}
	return rss, ms.HeapInuse
}

// startCPUProfile profiles the CPU into dir/cpu.pprof until the returned function is
// called; it does nothing when dir is empty.
func startCPUProfile(b *testing.B, dir string) func() {
	b.Helper()
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, "cpu.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }
}

// writeHeapProfile writes dir/heap.pprof, unless dir is empty.
func writeHeapProfile(b *testing.B, dir string) {
	b.Helper()
	if dir == "" {
		return
	}
	f, err := os.Create(filepath.Join(dir, "heap.pprof"))
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

func mib(v uint64) float64 { return float64(v) / (1 << 20) }
