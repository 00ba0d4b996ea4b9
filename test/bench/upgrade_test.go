package bench

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// BenchmarkUpgrade3Members reports, for a 3-member TLS cluster going from 3.6.16 to 3.7.3
// while a client writes 10 keys a second:
//
//   - s-upgrade: spec.version changed until status.upgrade.completedAt (every member
//     restarted at the new version, one at a time, health-gated);
//   - failed-writes: writes the client saw fail meanwhile (acknowledged writes are never
//     lost; the e2e suite checks that);
//   - s-floor: one member pod deleted until its new pod is Ready, and upgrade/floor: what the
//     gates cost over three bare restarts.
func BenchmarkUpgrade3Members(b *testing.B) {
	changeUnderWrites(b, "upgrade", "3.6.16", func(ec *etcdv1alpha1.EtcdCluster) { ec.Spec.Version = "3.7.3" },
		func(ctx context.Context, c client.Client, ec *etcdv1alpha1.EtcdCluster) {
			waitUpgraded(ctx, b, c, ec, "3.7.3")
		})
}

// changeUnderWrites measures, b.N times on a fresh 3-member cluster at version, the floor of
// one bare member restart, then how long change takes until wait returns while a client
// writes 10 keys a second, and reports both with their ratio as s-<what>, failed-writes,
// s-floor and <what>/(3*floor).
func changeUnderWrites(b *testing.B, what, version string, change func(*etcdv1alpha1.EtcdCluster),
	wait func(context.Context, client.Client, *etcdv1alpha1.EtcdCluster)) {
	ctx := context.Background()
	c := newClient(b)
	var floor, took time.Duration
	var failed int64
	for i := 0; i < b.N; i++ {
		ec, restart := threeMembersAndFloor(ctx, b, c, "bench-"+what+"-", version)
		floor += restart

		wctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() {
			defer close(done)
			writeUntilDone(wctx, c, ec.Namespace, ec.Name, &failed)
		}()
		start := time.Now()
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(got.DeepCopy())
		change(got)
		if err := c.Patch(ctx, got, patch); err != nil {
			b.Fatal(err)
		}
		ec.Generation = got.Generation
		wait(ctx, c, ec)
		took += time.Since(start)
		stop()
		<-done
	}
	n := float64(b.N)
	b.ReportMetric(took.Seconds()/n, "s-"+what)
	b.ReportMetric(float64(failed)/n, "failed-writes")
	b.ReportMetric(floor.Seconds()/n, "s-floor")
	b.ReportMetric(took.Seconds()/3/floor.Seconds(), what+"/(3*floor)")
	b.ReportMetric(0, "ns/op")
}

func waitUpgraded(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, version string) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err == nil && got.Status.Upgrade != nil &&
			got.Status.Upgrade.ToVersion == version && got.Status.Upgrade.CompletedAt != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s/%s: not upgraded to %s after 10 minutes", ec.Namespace, ec.Name, version)
}

// writeUntilDone writes a key every 100 ms through the member pods that have an address
// (looked up again for every write, as pods restart) and counts the writes that fail.
func writeUntilDone(ctx context.Context, c client.Client, ns, name string, failed *int64) {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		cli, err := memberClient(ctx, c, ns, name)
		if err == nil {
			wctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err = cli.Put(wctx, fmt.Sprintf("/bench/upgrade/%06d", i), "v")
			cancel()
			_ = cli.Close()
		}
		if err != nil && ctx.Err() == nil {
			atomic.AddInt64(failed, 1)
		}
	}
}

// memberClient connects to the member pods of a cluster (their pod IPs, on the local
// cluster's bridge) with the client certificate, checking the member certificate against
// the client Service name.
func memberClient(ctx context.Context, c client.Client, ns, name string) (etcd.Client, error) {
	ec := &etcdv1alpha1.EtcdCluster{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, ec); err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: ec.Status.ClientSecret}, secret); err != nil {
		return nil, err
	}
	return podsClient(ctx, c, ns, name, secret.Data["ca.crt"], secret.Data["tls.crt"], secret.Data["tls.key"], ec.Status.ClientService)
}

// podsClient connects to the pods of cluster name in ns (their pod IPs, on the local
// cluster's bridge, never another address) with the client certificate certPEM/keyPEM,
// checking each member's certificate against caPEM and serverName.
func podsClient(ctx context.Context, c client.Client, ns, name string, caPEM, certPEM, keyPEM []byte, serverName string) (etcd.Client, error) {
	cfg, endpoints, err := podsTLS(ctx, c, ns, name, caPEM, certPEM, keyPEM, serverName)
	if err != nil {
		return nil, err
	}
	return etcd.New(etcd.Config{Endpoints: endpoints, TLS: cfg, DialTimeout: 2 * time.Second})
}

// podsTLS is what podsClient connects with: the TLS configuration and the members' client
// endpoints.
func podsTLS(ctx context.Context, c client.Client, ns, name string, caPEM, certPEM, keyPEM []byte, serverName string) (*tls.Config, []string, error) {
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(caPEM)
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair},
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection, against the Service name
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("no server certificate")
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, DNSName: serverName})
			return err
		}}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name}); err != nil {
		return nil, nil, err
	}
	var endpoints []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Status.PodIP, "198.18.") {
			endpoints = append(endpoints, "https://"+net.JoinHostPort(p.Status.PodIP, "2379"))
		}
	}
	if len(endpoints) == 0 {
		return nil, nil, fmt.Errorf("no pod of %s/%s has an address on the local cluster's pod network", ns, name)
	}
	return cfg, endpoints, nil
}
