package agent_test

import (
	"context"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// testEtcd is a single-member etcd listening on 127.0.0.1 only.
type testEtcd struct {
	name      string
	dataDir   string
	peerURL   string
	clientURL string
	client    *clientv3.Client
}

// etcdOptions say how startEtcd runs etcd.
type etcdOptions struct {
	// name, dataDir and peerURL default to a fresh member in a temporary directory; a
	// restored member must get the ones it was restored with.
	name, dataDir, peerURL string
	// certs serves clients over https, requiring a client certificate.
	certs *etcdtest.Certs
}

// startEtcd starts etcd with etcdtest.Start, waits until it answers and kills it when the
// test ends.
func startEtcd(t *testing.T, opts etcdOptions) *testEtcd {
	t.Helper()
	e := etcdtest.Start(t, etcdtest.Options{Name: opts.name, DataDir: opts.dataDir, PeerURL: opts.peerURL, Certs: opts.certs})
	srv := &testEtcd{name: e.Name, dataDir: e.DataDir, peerURL: e.PeerURL, clientURL: e.ClientURLs[0]}

	cfg := clientv3.Config{Endpoints: []string{srv.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if opts.certs != nil {
		cfg.TLS = opts.certs.ClientTLS(t)
	}
	var err error
	srv.client, err = clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.client.Close() })

	e.WaitReady(t, func(ctx context.Context) error {
		_, err := srv.client.Get(ctx, "health")
		return err
	})
	return srv
}

// writeCerts creates a throwaway CA, a server certificate for 127.0.0.1 and a client
// certificate in dir.
func writeCerts(t *testing.T, dir string) *etcdtest.Certs {
	t.Helper()
	return etcdtest.WriteCerts(t, dir, etcdtest.CertOptions{
		CAName: "agent-test-ca", ServerName: "etcd-test", ClientName: "etcdpilot-backup",
		// etcd's gRPC gateway dials the member with the serving certificate as a client one.
		ServerClientAuth: true,
	})
}
