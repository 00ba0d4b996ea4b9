// Package e2e holds the end-to-end tests: they run against a real cluster (the local one from
// `make cluster-up`, or the current kubeconfig's with USE_EXISTING_CLUSTER=true). Run them
// with `make test-e2e`, which runs the suite twice:
//
//   - the specs without the "olm" label, with the operator deployed by `make deploy`;
//   - then the specs labelled "olm" (E2E_INSTALL=olm), which install the operator
//     themselves through OLM, from the catalog and bundle images `make test-e2e` builds.
//
// The two runs cannot share a cluster at the same time: two operators would reconcile the
// same EtcdClusters.
package e2e

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// operatorNamespace is where `make deploy` installs the operator.
const operatorNamespace = "etcdpilot-system"

var (
	clientset *kubernetes.Clientset
	k8sClient client.Client
	// fw is the test framework the specs share with the scorecard tests (test/framework),
	// seeing the cluster from this machine: members by their pod IPs, the client Service by
	// its ClusterIP.
	fw *framework.Env
	// apiServer and apiServerTransport reach the API server, and through its proxy the
	// Services of the cluster (the monitoring stack's Prometheus).
	apiServer          *rest.Config
	apiServerTransport http.RoundTripper
)

// podNetwork is the local cluster's pod network (hack/cluster): the only pod addresses the
// specs dial, since an address outside it may not be this machine's.
var podNetwork = netip.MustParsePrefix("198.18.0.0/16")

// Long specs start first. Ginkgo hands the specs out in order, one to each process as it
// becomes free, and the run ends when the last one does: a five-minute spec that starts
// late leaves the other processes idle for its last minutes. Each spec or Ordered container
// that takes over a minute in a warm CI run therefore carries its duration, in seconds, as
// its priority (longestSpec), so that the longest start first and the short ones fill in at
// the end (longest processing time first). Serial specs run after all of them whatever
// their priority.
func longestSpec(seconds int) SpecPriority { return SpecPriority(seconds) }

// olmRun reports whether this run is the OLM one (E2E_INSTALL=olm): the specs install the
// operator through OLM and nothing is deployed for them.
func olmRun() bool { return os.Getenv("E2E_INSTALL") == "olm" }

// connect returns the kubeconfig's REST configuration and clients of the cluster, with the
// project's and OLM's types.
func connect() (*rest.Config, *kubernetes.Clientset, client.Client) {
	config, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	Expect(err).NotTo(HaveOccurred(), "loading the kubeconfig (KUBECONFIG=%q)", os.Getenv("KUBECONFIG"))
	cs, err := kubernetes.NewForConfig(config)
	Expect(err).NotTo(HaveOccurred())
	scheme := runtime.NewScheme()
	Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	Expect(etcdv1alpha1.AddToScheme(scheme)).To(Succeed())
	Expect(operatorsv1alpha1.AddToScheme(scheme)).To(Succeed())
	Expect(operatorsv1.AddToScheme(scheme)).To(Succeed())
	c, err := client.New(config, client.Options{Scheme: scheme})
	Expect(err).NotTo(HaveOccurred())
	return config, cs, c
}

func TestE2E(t *testing.T) {
	RegisterFailHandler(Fail)
	RunSpecs(t, "etcdpilot e2e")
}

// repoRoot is the repository root, found from this file's location.
func repoRoot() string {
	_, file, _, _ := goruntime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// run runs a command from the repository root and fails the spec with its output on error.
func run(name string, args ...string) {
	cmd := exec.Command(name, args...)
	cmd.Dir = repoRoot()
	cmd.Env = os.Environ()
	out, err := cmd.CombinedOutput()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s %v failed:\n%s", name, args, out)
}

// The operator is deployed once, by the first parallel process, and removed after all
// processes are done; every spec shares it. The first process also makes the early clusters
// (early_test.go).
var _ = SynchronizedBeforeSuite(func() []byte {
	if olmRun() {
		return nil
	}
	By("deploying the operator with make deploy, crash-test hooks on, CA rotation phases of 15 s")
	run("make", "deploy", "DEPLOY_TEST_FAILPOINTS=true", "DEPLOY_CA_ROTATION_MIN_PHASE=15s",
		fmt.Sprintf("DEPLOY_PPROF_BIND_ADDRESS=:%d", operatorPprofPort))
	By("making the early clusters of the Serial specs (early_test.go)")
	_, cs, c := connect()
	return makeEarlyClusters(context.Background(), c, cs.CoreV1().Namespaces())
}, func(early []byte) {
	readEarlyClusters(early)
	var config *rest.Config
	var err error
	config, clientset, k8sClient = connect()
	fw, err = framework.NewEnv(config, "", framework.LoggerFunc(func(format string, args ...any) { GinkgoWriter.Printf(format+"\n", args...) }))
	Expect(err).NotTo(HaveOccurred())
	fw.PodNetwork, fw.Poll = podNetwork, time.Second
	apiServer = config
	apiServerTransport, err = rest.TransportFor(config)
	Expect(err).NotTo(HaveOccurred())

	// An operator that OLM installed earlier (make demo does) would reconcile the specs'
	// clusters too; the specs need to be alone with the operator they install.
	var csvs operatorsv1alpha1.ClusterServiceVersionList
	if err := k8sClient.List(context.Background(), &csvs); err == nil {
		for _, csv := range csvs.Items {
			if strings.HasPrefix(csv.Name, "etcdpilot.") && !csv.IsCopied() {
				Fail(fmt.Sprintf("etcdpilot is installed through OLM in namespace %s (by make demo?): remove it, "+
					"or start a clean cluster with make cluster-up, before running the e2e suite", csv.Namespace))
			}
		}
	}
})

var _ = SynchronizedAfterSuite(func() {}, func() {
	if olmRun() || os.Getenv("E2E_KEEP_OPERATOR") == "true" {
		return
	}
	removeEarlyClusters()
	By("removing the operator with make undeploy")
	run("make", "undeploy")
})

// operatorPprofPort is where the operator deployed for the suite serves Go's profiling
// endpoints (make deploy DEPLOY_PPROF_BIND_ADDRESS); an operator installed through OLM
// serves none.
const operatorPprofPort = 6060

// When a spec fails, its report carries the logs of every operator pod (in any namespace:
// OLM installs it in the test's namespaces; of its previous container too, and how that
// ended, when it restarted), or why they could not be read, and the
// goroutines of the one make deploy installed, read through the API server's pod proxy:
// what each worker was doing when the spec gave up. The operator is left running: the
// suite's cleanup and make undeploy need it to remove its finalizers.
var _ = JustAfterEach(func() {
	if !CurrentSpecReport().Failed() || clientset == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	pods, err := clientset.CoreV1().Pods("").List(ctx, operatorPodSelector())
	if err != nil {
		AddReportEntry("operator pods", "listing them failed: "+err.Error())
		return
	}
	for _, p := range pods.Items {
		AddReportEntry("operator log "+p.Name, managerLog(ctx, p, false))
		if restarts, ended := lastRestart(p); restarts > 0 {
			AddReportEntry("operator previous log "+p.Name, fmt.Sprintf("restarted %d times; the last container ended with %s\n%s",
				restarts, ended, managerLog(ctx, p, true)))
		}
		if olmRun() || p.Namespace != operatorNamespace {
			continue
		}
		if stacks, err := operatorGoroutines(ctx, p.Name); err != nil {
			AddReportEntry("operator goroutines "+p.Name, "reading them failed: "+err.Error())
		} else {
			AddReportEntry("operator goroutines "+p.Name, stacks)
		}
	}
})

// managerLog is the log of pod p's manager container (of the one before it, with previous),
// or why it could not be read, with what was.
func managerLog(ctx context.Context, p corev1.Pod, previous bool) string {
	logs, err := clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: "manager", Previous: previous}).DoRaw(ctx)
	if err != nil {
		return fmt.Sprintf("reading it failed (%v); what was read:\n%s", err, logs)
	}
	return string(logs)
}

// lastRestart is how many times pod p's manager container restarted, and how the last
// container before the current one ended.
func lastRestart(p corev1.Pod) (restarts int32, ended string) {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name != "manager" {
			continue
		}
		ended = "unknown"
		if t := cs.LastTerminationState.Terminated; t != nil {
			ended = fmt.Sprintf("exit code %d, reason %q, at %s: %s", t.ExitCode, t.Reason, t.FinishedAt.UTC().Format(time.RFC3339), t.Message)
		}
		return cs.RestartCount, ended
	}
	return 0, ""
}

// operatorGoroutines reads the stacks of every goroutine of the operator pod named pod, in
// operatorNamespace, from its profiling endpoint through the API server's pod proxy.
func operatorGoroutines(ctx context.Context, pod string) (string, error) {
	stacks, err := clientset.CoreV1().Pods(operatorNamespace).
		ProxyGet("http", pod, strconv.Itoa(operatorPprofPort), "/debug/pprof/goroutine", map[string]string{"debug": "2"}).DoRaw(ctx)
	return string(stacks), err
}
