// Command manager runs the etcdpilot operator.
package main

import (
	"context"
	"crypto/tls"
	"flag"
	"fmt"
	"os"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/agent"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/memlimit"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
	"github.com/etcdpilot/etcdpilot/internal/watchns"
)

func main() {
	// `manager agent ...` runs in backup and restore pods, from the operator's own image:
	// it streams one snapshot and exits, and needs none of the manager's flags or setup.
	if len(os.Args) > 1 && os.Args[1] == "agent" {
		os.Exit(agent.Main(os.Args[2:]))
	}
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "etcdpilot:", err)
		os.Exit(1)
	}
}

func run() error {
	var (
		metricsAddr, probeAddr, pprofAddr, etcdImageRepository, clusterDomain string
		leaderElect, secureMetrics, enableHTTP2                               bool
		caMinPhase                                                            time.Duration
		clusterWorkers                                                        int
	)
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8443",
		"Address the metrics endpoint binds to (HTTPS, authenticated and authorized). Use \"0\" to disable it.")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "Address the liveness and readiness probes bind to.")
	flag.StringVar(&pprofAddr, "pprof-bind-address", "",
		"Address Go's profiling endpoints (/debug/pprof/) bind to, over plain HTTP without authentication: for debugging, "+
			"never to be exposed. Empty (the default) serves none.")
	flag.BoolVar(&leaderElect, "leader-elect", false,
		"Elect a leader so that only one replica of the operator reconciles at a time.")
	flag.BoolVar(&secureMetrics, "metrics-secure", true,
		"Serve metrics over HTTPS and require a bearer token authorized to get /metrics.")
	flag.BoolVar(&enableHTTP2, "enable-http2", false,
		"Serve metrics and webhooks over HTTP/2 as well (off by default: HTTP/2 Stream Cancellation and Rapid Reset CVEs).")
	flag.StringVar(&etcdImageRepository, "etcd-image-repository", os.Getenv("ETCD_IMAGE_REPOSITORY"),
		"Image repository of every etcd release, tagged v<version> (env ETCD_IMAGE_REPOSITORY). When empty, each release runs "+
			"the image pinned by its RELATED_IMAGE_ETCD_V<X_Y_Z> environment variable, or else the official "+versions.DefaultRepository+".")
	flag.StringVar(&clusterDomain, "cluster-domain", envOr("CLUSTER_DOMAIN", "cluster.local"),
		"DNS domain of the Kubernetes cluster, named in member certificates (env CLUSTER_DOMAIN).")
	defaultMinPhase, err := time.ParseDuration(envOr("CA_ROTATION_MIN_PHASE", "90s"))
	if err != nil {
		return fmt.Errorf("CA_ROTATION_MIN_PHASE: %w", err)
	}
	flag.DurationVar(&caMinPhase, "ca-rotation-min-phase", defaultMinPhase,
		"How long each of the first two phases of a CA rotation lasts at least, so that clients mounting the client Secret "+
			"see it change before the next phase needs it (env CA_ROTATION_MIN_PHASE).")
	flag.IntVar(&clusterWorkers, "cluster-workers", controllers.DefaultWorkers,
		"How many EtcdClusters are reconciled at once. A pass may wait seconds on members that do not answer; "+
			"with more workers, the other clusters' passes do not wait behind it. Passes of one cluster never overlap.")
	opts := zap.Options{Development: false}
	opts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts)))
	log := ctrl.Log.WithName("setup")

	applyMemoryLimit(log.Info)

	etcdImages := versions.ImagesFromEnv(etcdImageRepository, os.LookupEnv)
	namespaces, err := watchns.Parse(os.Getenv(watchns.EnvVar))
	if err != nil {
		return err
	}
	cacheOpts := controllers.CacheOptions(namespaces)
	log.Info("watching namespaces (none listed: all)", "namespaces", namespaces)

	var tlsOpts []func(*tls.Config)
	if !enableHTTP2 {
		tlsOpts = append(tlsOpts, func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} })
	}
	metricsOpts := metricsserver.Options{
		BindAddress:   metricsAddr,
		SecureServing: secureMetrics,
		TLSOpts:       tlsOpts,
	}
	if secureMetrics {
		metricsOpts.FilterProvider = filters.WithAuthenticationAndAuthorization
	}

	scheme := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(scheme))
	utilruntime.Must(etcdv1alpha1.AddToScheme(scheme))

	cfg := ctrl.GetConfigOrDie()
	leaderLock, err := leaderLockFor(cfg, leaderElect)
	if err != nil {
		return err
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsOpts,
		WebhookServer:          webhook.NewServer(webhook.Options{TLSOpts: tlsOpts}),
		HealthProbeBindAddress: probeAddr,
		PprofBindAddress:       pprofAddr,
		LeaderElection:         leaderElect,
		LeaderElectionID:       leaderElectionID,
		RenewDeadline:          ptr.To(renewDeadline),
		// Held under the pod's name, so that a restarted container leads again at once.
		LeaderElectionResourceLockInterface: leaderLock,
		// The manager exits right after it stops leading, so it can give up the lease at
		// once and a new leader takes over without waiting for the lease to expire.
		LeaderElectionReleaseOnCancel: true,
	})
	if err != nil {
		return fmt.Errorf("creating manager: %w", err)
	}

	apiReader, err := client.New(mgr.GetConfig(), client.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("creating an API client: %w", err)
	}
	agentImage, err := controllers.AgentImage(context.Background(), apiReader)
	if err != nil {
		log.Error(err, "backups and restores will fail")
	} else if agentImage == "" {
		log.Info("the operator's own image is unknown (not in a pod, " + controllers.AgentImageEnv + " unset): backups and restores will fail")
	}

	operatorPods, err := controllers.OperatorPods(context.Background(), apiReader)
	if err != nil {
		log.Error(err, "the members' NetworkPolicies will not admit the operator's pods")
	}

	podExec, err := controllers.NewPodExec(mgr.GetConfig())
	if err != nil {
		return fmt.Errorf("setting up pod exec: %w", err)
	}
	if err := setupControllers(mgr, etcdImages, clusterDomain, podExec, agentImage, operatorPods, caMinPhase, clusterWorkers); err != nil {
		return err
	}

	if err := addProbes(mgr); err != nil {
		return err
	}

	log.Info("starting manager", "etcdImageRepository", etcdImages.Repository, "pinnedEtcdImages", etcdImages.Pinned)
	if err := mgr.Start(ctrl.SetupSignalHandler()); err != nil {
		return fmt.Errorf("running manager: %w", err)
	}
	return nil
}

// addProbes serves the liveness and readiness probes: the manager answers.
func addProbes(mgr ctrl.Manager) error {
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding readiness check: %w", err)
	}
	return nil
}

// The Lease the replicas elect their leader with, and how long the leader keeps trying to
// renew it (controller-runtime's default).
const leaderElectionID, renewDeadline = "etcdpilot.etcd.etcdpilot.io", 10 * time.Second

// leaderLockFor is the leader election lock held under the pod's name
// (controllers.LeaderLock), or nil without leader election or outside a pod.
func leaderLockFor(cfg *rest.Config, leaderElect bool) (resourcelock.Interface, error) {
	if !leaderElect {
		return nil, nil
	}
	lock, err := controllers.LeaderLock(cfg, leaderElectionID, renewDeadline)
	if err != nil {
		return nil, fmt.Errorf("making the leader election lock: %w", err)
	}
	return lock, nil
}

func envOr(key, fallback string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return fallback
}

// setupControllers registers the EtcdCluster, EtcdBackup and EtcdBackupSchedule controllers.
func setupControllers(mgr ctrl.Manager, etcdImages versions.Images, clusterDomain string, podExec controllers.PodExec, agentImage string, operatorPods resources.Operator, caMinPhase time.Duration, clusterWorkers int) error {
	if clusterWorkers < 1 {
		return fmt.Errorf("--cluster-workers=%d: at least one worker is needed", clusterWorkers)
	}
	// One set of metrics about the clusters and their backups, served with
	// controller-runtime's on the metrics endpoint.
	clusterMetrics := metrics.New(ctrlmetrics.Registry)
	if err := (&controllers.EtcdClusterReconciler{
		Client:        mgr.GetClient(),
		APIReader:     mgr.GetAPIReader(),
		Scheme:        mgr.GetScheme(),
		Recorder:      mgr.GetEventRecorder("etcdpilot"),
		EtcdImages:    etcdImages,
		ClusterDomain: clusterDomain,
		NewEtcdClient: etcd.New,
		Failpoints:    os.Getenv(controllers.FailpointsEnv) == "true",
		Exec:          podExec,
		AgentImage:    agentImage,
		Operator:      operatorPods,
		CAMinPhase:    caMinPhase,
		Metrics:       clusterMetrics,
		Workers:       clusterWorkers,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EtcdCluster controller: %w", err)
	}
	if err := (&controllers.EtcdBackupReconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   mgr.GetEventRecorder("etcdpilot"),
		AgentImage: agentImage,
		EtcdImages: etcdImages,
		Metrics:    clusterMetrics,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EtcdBackup controller: %w", err)
	}
	if err := (&controllers.EtcdBackupScheduleReconciler{
		Client:   mgr.GetClient(),
		Recorder: mgr.GetEventRecorder("etcdpilot"),
		Metrics:  clusterMetrics,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EtcdBackupSchedule controller: %w", err)
	}
	if err := (&controllers.EtcdTenantReconciler{
		Client:        mgr.GetClient(),
		Recorder:      mgr.GetEventRecorder("etcdpilot"),
		NewEtcdClient: etcd.New,
		Metrics:       clusterMetrics,
	}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("setting up the EtcdTenant controller: %w", err)
	}
	return nil
}

// applyMemoryLimit gives the Go runtime a soft limit under its container's memory limit:
// the collector works harder instead of the heap growing past it (docs/benchmarks.md: 1000
// clusters with every self-tuning feature on).
func applyMemoryLimit(info func(msg string, keysAndValues ...any)) {
	soft, err := memlimit.Apply(memlimit.CgroupMemoryMax, memlimit.CgroupV1MemoryLimit)
	switch {
	case err != nil:
		info("No soft memory limit for the Go runtime", "error", err.Error())
	case soft > 0:
		info("Soft memory limit for the Go runtime, under the container's", "bytes", soft, "percent", memlimit.Percent)
	}
}
