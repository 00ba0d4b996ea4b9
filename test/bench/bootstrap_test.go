// Package bench holds benchmarks that run on a real cluster with the operator deployed:
// `make bench` runs them against the local cluster. They measure, they do not assert
// speed: targets are read from their output, not enforced by timed tests.
package bench

import (
	"context"
	"fmt"
	"net"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

const etcdImageRepository = "localhost:5000/etcd-development/etcd"

func newClient(b *testing.B) client.Client {
	b.Helper()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(clientcmd.NewDefaultClientConfigLoadingRules(), nil).ClientConfig()
	if err != nil {
		b.Fatalf("loading kubeconfig (KUBECONFIG=%q): %v", os.Getenv("KUBECONFIG"), err)
	}
	// client-go's default of 5 requests a second would make creating many objects, not the
	// operator, the figure.
	cfg.QPS, cfg.Burst = 200, 400
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	_ = etcdv1alpha1.AddToScheme(scheme)
	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		b.Fatal(err)
	}
	return c
}

func namespace(ctx context.Context, b *testing.B, c client.Client, prefix string) string {
	b.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix}}
	if err := c.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = c.DeleteAllOf(context.Background(), &etcdv1alpha1.EtcdCluster{}, client.InNamespace(ns.Name))
		_ = c.Delete(context.Background(), ns)
	})
	return ns.Name
}

// BenchmarkBootstrap3TLS reports the time from applying a 3-member TLS EtcdCluster to its
// Available and Ready conditions, next to the floor: three etcd pods with the same image,
// flags and certificates, started by hand at once with a static initial cluster, until all
// three pods are Ready. The ratio is what the operator's bootstrap (claims, certificates,
// Services, then the three initial members together) costs over the fastest possible start
// on this node. Then, on each, the pod of a member is deleted: s-pod-recovery is the time
// until the operator's new pod is Ready and the cluster Ready again, s-restart-floor the time
// until a pod created by hand the moment the old one is gone is Ready.
func BenchmarkBootstrap3TLS(b *testing.B) {
	ctx := context.Background()
	c := newClient(b)
	var operator, available, floor, recover, restartFloor time.Duration
	for i := 0; i < b.N; i++ {
		ns := namespace(ctx, b, c, "bench-operator-")
		start := time.Now()
		ec := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete}}
		if err := c.Create(ctx, ec); err != nil {
			b.Fatal(err)
		}
		available += waitCondition(ctx, b, c, ec, etcdv1alpha1.ConditionAvailable, start)
		operator += waitCondition(ctx, b, c, ec, etcdv1alpha1.ConditionReady, start)
		recover += operatorRecovery(ctx, b, c, ec)

		floorNS := namespace(ctx, b, c, "bench-floor-")
		floor += handStartedFloor(ctx, b, c, floorNS)
		restartFloor += handRestartedFloor(ctx, b, c, floorNS)
	}
	n := float64(b.N)
	b.ReportMetric(available.Seconds()/n, "s-to-available")
	b.ReportMetric(operator.Seconds()/n, "s-to-ready")
	b.ReportMetric(floor.Seconds()/n, "s-floor")
	b.ReportMetric(operator.Seconds()/floor.Seconds(), "ready/floor")
	b.ReportMetric(recover.Seconds()/n, "s-pod-recovery")
	b.ReportMetric(restartFloor.Seconds()/n, "s-restart-floor")
	b.ReportMetric(recover.Seconds()/restartFloor.Seconds(), "recovery/floor")
	b.ReportMetric(0, "ns/op") // wall time per op is the sum above, not a useful figure
}

// operatorRecovery deletes the pod of a member of a Ready cluster and returns the time until
// the operator's new pod for it is Ready and the cluster is Ready with three members again.
func operatorRecovery(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster) time.Duration {
	b.Helper()
	old := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ec.Namespace, Name: ec.Name + "-1"}, old); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if err := c.Delete(ctx, old); err != nil {
		b.Fatal(err)
	}
	waitPodReplacedReady(ctx, b, c, old, start)
	waitReadyMembers(ctx, b, c, ec, 3, "")
	return time.Since(start)
}

// handRestartedFloor is the floor of a member's recovery: the pod of a hand-started member
// deleted and created again, the same, as soon as the old one is gone (a controller that
// reacts at once), until the new pod is Ready: termination, start, and etcd rejoining with
// its data on its volume.
func handRestartedFloor(ctx context.Context, b *testing.B, c client.Client, ns string) time.Duration {
	b.Helper()
	old := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "floor-1"}, old); err != nil {
		b.Fatal(err)
	}
	again := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: old.Name, Namespace: ns, Labels: old.Labels, Annotations: old.Annotations},
		Spec: *old.Spec.DeepCopy()}
	again.Spec.NodeName = ""
	start := time.Now()
	if err := c.Delete(ctx, old); err != nil {
		b.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := c.Create(ctx, again.DeepCopy())
		if err == nil {
			break
		}
		if !apierrors.IsAlreadyExists(err) || time.Now().After(deadline) {
			b.Fatalf("creating the hand-started member %s again: %v", old.Name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	return waitPodReplacedReady(ctx, b, c, old, start)
}

func waitCondition(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, condition string, start time.Time) time.Duration {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err == nil && meta.IsStatusConditionTrue(got.Status.Conditions, condition) {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("%s/%s: %s not True after 5 minutes", ec.Namespace, ec.Name, condition)
	return 0
}

// handStartedFloor starts three members at once with a static initial cluster, using the
// operator's own builders for the pods, Service and certificate names (without owner
// references: there is no EtcdCluster), and returns the time until all three pods are Ready.
func handStartedFloor(ctx context.Context, b *testing.B, c client.Client, ns string) time.Duration {
	b.Helper()
	_, took := startHandMembers(ctx, b, c, ns)
	return took
}

// handCluster is a cluster of members started by hand, without the operator: what the
// floors are measured on.
type handCluster struct {
	ec    *etcdv1alpha1.EtcdCluster
	names cluster.Names
	ca    *pki.CA
}

// startHandMembers is handStartedFloor, returning the hand-started cluster too.
func startHandMembers(ctx context.Context, b *testing.B, c client.Client, ns string) (handCluster, time.Duration) {
	b.Helper()
	ec := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "floor", Namespace: ns, UID: "floor"},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, Storage: etcdv1alpha1.StorageSpec{Ephemeral: false}}}
	names := cluster.For(ec)
	now := time.Now()
	caPair, err := pki.NewCA("floor CA", time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	ca, err := pki.LoadCA(caPair)
	if err != nil {
		b.Fatal(err)
	}
	member, err := ca.IssueServer(names.MemberCommonName(), names.ServingDNSNames("cluster.local"), []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour, now)
	if err != nil {
		b.Fatal(err)
	}
	initial := make([]string, 3)
	for i := range initial {
		initial[i] = fmt.Sprintf("%s=%s", names.MemberName(i), names.PeerURL(names.MemberName(i)))
	}

	start := time.Now()
	objects := []client.Object{
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: names.MemberTLSSecret(), Namespace: ns}, Type: corev1.SecretTypeTLS,
			Data: map[string][]byte{"ca.crt": ca.CertPEM(), "tls.crt": member.CertPEM, "tls.key": member.KeyPEM}},
		resources.PeerService(ec),
	}
	for i := range 3 {
		objects = append(objects, resources.MemberPVC(ec, names.MemberName(i)), resources.MemberPod(ec, resources.MemberConfig{
			Name: names.MemberName(i), InitialCluster: initial, InitialClusterState: "new",
		}, versions.Images{Repository: etcdImageRepository}))
	}
	for _, o := range objects {
		o.SetOwnerReferences(nil)
		if err := c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(ns)); err == nil && readyPods(pods.Items) == 3 {
			return handCluster{ec: ec, names: names, ca: ca}, time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatal("the hand-started members were not Ready after 5 minutes")
	return handCluster{}, 0
}

func readyPods(pods []corev1.Pod) int {
	n := 0
	for _, p := range pods {
		for _, cond := range p.Status.Conditions {
			if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
				n++
			}
		}
	}
	return n
}
