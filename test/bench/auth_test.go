package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

const (
	// authWriters write at once, each a key after the other, for authWindow.
	authWriters = 16
	authWindow  = 20 * time.Second
	// authPrefix is the writer's range: the bench's etcd user may write under it only.
	authPrefix = "/bench/auth/"
	authUser   = "bench-writer"
)

// BenchmarkAuth reports what etcd's authentication costs writes, on one 3-member TLS cluster
// with every default: writes a second and their p99 with spec.auth off (writes-per-s-off,
// p99-ms-off: the floor), then with it on, by an etcd user whose role may read and write
// one prefix (writes-per-s-on, p99-ms-on: each write checked against the role's range), and
// the ratios. Writes are authWriters clients' sequential puts of 100-byte values for
// authWindow, to the member pods; the user and its role are made (with a certificate from the
// cluster's CA) before the first window, so both windows write with the same certificate.
func BenchmarkAuth(b *testing.B) {
	ctx := context.Background()
	c := newClient(b)
	var offRate, onRate, offP99, onP99 float64
	for i := 0; i < b.N; i++ {
		ec := &etcdv1alpha1.EtcdCluster{}
		ec.Name, ec.Namespace = "bench", namespace(ctx, b, c, "bench-auth-")
		ec.Spec = etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete}
		if err := c.Create(ctx, ec); err != nil {
			b.Fatal(err)
		}
		waitReadyMembers(ctx, b, c, ec, 3, "")
		writer := writerClient(ctx, b, c, ec)

		rate, p99 := writeFor(ctx, b, writer, "off")
		offRate, offP99 = offRate+rate, offP99+p99

		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
			b.Fatal(err)
		}
		on := ec.DeepCopy()
		on.Spec.Auth.Enabled = true
		if err := c.Patch(ctx, on, client.MergeFrom(ec)); err != nil {
			b.Fatal(err)
		}
		waitAuth(ctx, b, c, on)
		rate, p99 = writeFor(ctx, b, writer, "on")
		onRate, onP99 = onRate+rate, onP99+p99
	}
	n := float64(b.N)
	b.ReportMetric(offRate/n, "writes-per-s-off")
	b.ReportMetric(onRate/n, "writes-per-s-on")
	b.ReportMetric(offP99/n, "p99-ms-off")
	b.ReportMetric(onP99/n, "p99-ms-on")
	b.ReportMetric(onRate/offRate, "writes-on/off")
	b.ReportMetric(onP99/offP99, "p99-on/off")
	b.ReportMetric(0, "ns/op")
}

// writerClient makes the etcd user authUser with a role that may read and write authPrefix,
// and returns a client of the member pods with a certificate of the cluster's CA for it.
func writerClient(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster) *clientv3.Client {
	b.Helper()
	if err := c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
		b.Fatal(err)
	}
	names := cluster.For(ec)
	caSecret, clientSecret := &corev1.Secret{}, &corev1.Secret{}
	for name, s := range map[string]*corev1.Secret{names.CASecret(): caSecret, ec.Status.ClientSecret: clientSecret} {
		if err := c.Get(ctx, client.ObjectKey{Namespace: ec.Namespace, Name: name}, s); err != nil {
			b.Fatal(err)
		}
	}
	caPEM := clientSecret.Data["ca.crt"]
	admin := pods3(ctx, b, c, ec, caPEM, clientSecret.Data["tls.crt"], clientSecret.Data["tls.key"])
	defer func() { _ = admin.Close() }()
	if _, err := admin.RoleAdd(ctx, authUser); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.RoleGrantPermission(ctx, authUser, authPrefix, clientv3.GetPrefixRangeEnd(authPrefix), clientv3.PermissionType(clientv3.PermReadWrite)); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.UserAddWithOptions(ctx, authUser, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil {
		b.Fatal(err)
	}
	if _, err := admin.UserGrantRole(ctx, authUser, authUser); err != nil {
		b.Fatal(err)
	}
	ca, err := pki.LoadCA(pki.KeyPair{CertPEM: caSecret.Data["ca.crt"], KeyPEM: caSecret.Data["ca.key"]})
	if err != nil {
		b.Fatal(err)
	}
	pair, err := ca.IssueClient(authUser, time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	return pods3(ctx, b, c, ec, caPEM, pair.CertPEM, pair.KeyPEM)
}

// pods3 is a clientv3 client of the member pods of ec with the certificate certPEM/keyPEM,
// trusting caPEM.
func pods3(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, caPEM, certPEM, keyPEM []byte) *clientv3.Client {
	b.Helper()
	cfg, endpoints, err := podsTLS(ctx, c, ec.Namespace, ec.Name, caPEM, certPEM, keyPEM, ec.Status.ClientService)
	if err != nil {
		b.Fatal(err)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, TLS: cfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		b.Fatal(err)
	}
	return cli
}

// writeFor writes with authWriters writers for authWindow and returns the acknowledged
// writes a second and the p99 of their latency in milliseconds. A failed write fails the
// benchmark.
func writeFor(ctx context.Context, b *testing.B, cli *clientv3.Client, label string) (perSecond, p99ms float64) {
	b.Helper()
	value := string(make([]byte, 100))
	var mu sync.Mutex
	var latencies []time.Duration
	var failed error
	var wg sync.WaitGroup
	end := time.Now().Add(authWindow)
	for w := range authWriters {
		wg.Go(func() {
			var mine []time.Duration
			for i := 0; time.Now().Before(end); i++ {
				start := time.Now()
				wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				_, err := cli.Put(wctx, fmt.Sprintf("%s%s/%02d/%06d", authPrefix, label, w, i), value)
				cancel()
				if err != nil {
					mu.Lock()
					failed = err
					mu.Unlock()
					return
				}
				mine = append(mine, time.Since(start))
			}
			mu.Lock()
			latencies = append(latencies, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if failed != nil {
		b.Fatalf("a write with auth %s failed: %v", label, failed)
	}
	slices.Sort(latencies)
	p99 := latencies[len(latencies)*99/100]
	return float64(len(latencies)) / authWindow.Seconds(), float64(p99.Microseconds()) / 1000
}

// waitAuth waits until the cluster reports etcd's authentication on for its generation.
func waitAuth(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err == nil &&
			got.Status.Auth != nil && got.Status.Auth.Enabled && got.Status.ObservedGeneration == got.Generation {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s/%s: etcd's authentication not on after 2 minutes", ec.Namespace, ec.Name)
}
