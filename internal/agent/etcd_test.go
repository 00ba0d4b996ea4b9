package agent_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
)

// defaultEtcdBinary is where `make test` builds the etcd these tests run, relative to this
// package's directory. ETCD_TEST_BINARY overrides it, to test other etcd releases.
const defaultEtcdBinary = "../../bin/etcd-v3.6.16/etcd"

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
	certs *testCerts
}

// startEtcd starts etcd from ETCD_TEST_BINARY (default defaultEtcdBinary), waits until it
// answers and kills it when the test ends.
func startEtcd(t *testing.T, opts etcdOptions) *testEtcd {
	t.Helper()
	binary := etcdBinary(t)
	dir := t.TempDir()
	srv := &testEtcd{name: opts.name, dataDir: opts.dataDir, peerURL: opts.peerURL}
	if srv.name == "" {
		srv.name = "etcd-test"
	}
	if srv.dataDir == "" {
		srv.dataDir = filepath.Join(dir, "data")
	}
	if srv.peerURL == "" {
		srv.peerURL = "http://" + unusedAddr(t)
	}
	scheme := "http"
	if opts.certs != nil {
		scheme = "https"
	}
	srv.clientURL = scheme + "://" + unusedAddr(t)

	args := []string{
		"--name", srv.name,
		"--data-dir", srv.dataDir,
		"--listen-peer-urls", srv.peerURL,
		"--initial-advertise-peer-urls", srv.peerURL,
		"--initial-cluster", srv.name + "=" + srv.peerURL,
		"--initial-cluster-state", "new",
		"--listen-client-urls", srv.clientURL,
		"--advertise-client-urls", srv.clientURL,
		"--unsafe-no-fsync",
		"--log-outputs", "stderr",
	}
	if c := opts.certs; c != nil {
		args = append(args, "--cert-file", c.serverCert, "--key-file", c.serverKey,
			"--trusted-ca-file", c.ca, "--client-cert-auth")
	}
	logPath := filepath.Join(dir, "etcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }() // etcd has its own descriptor once started
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	// The kernel kills etcd if the test binary dies, for instance of its timeout.
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		exitErr := <-exited
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("etcd %s exited (%v), its log:\n%s", srv.name, exitErr, out)
		}
	})

	cfg := clientv3.Config{Endpoints: []string{srv.clientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()}
	if opts.certs != nil {
		cfg.TLS = opts.certs.clientTLS(t)
	}
	srv.client, err = clientv3.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.client.Close() })

	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		_, err := srv.client.Get(ctx, "health")
		cancel()
		if err == nil {
			return srv
		}
		select {
		case err := <-exited:
			exited <- err // for the cleanup
			t.Fatalf("etcd exited before it answered: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd not answering after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// etcdBinary returns the etcd binary to test against, failing the test when it is missing:
// an integration test that skips itself silently would look like a pass.
func etcdBinary(t *testing.T) string {
	t.Helper()
	path := os.Getenv("ETCD_TEST_BINARY")
	if path == "" {
		path = defaultEtcdBinary
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(abs); err != nil {
		t.Fatalf("etcd binary for the integration test not found: %v; run `make test`, which builds it, or point ETCD_TEST_BINARY at one", err)
	}
	return abs
}

// unusedAddr returns 127.0.0.1:port for a port that was free a moment ago.
func unusedAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return "127.0.0.1:" + strconv.Itoa(l.Addr().(*net.TCPAddr).Port)
}

// testCerts are the PEM files of a throwaway CA, a server certificate for 127.0.0.1 and a
// client certificate.
type testCerts struct {
	ca                    string
	serverCert, serverKey string
	clientCert, clientKey string
}

// writeCerts creates the certificates in dir.
func writeCerts(t *testing.T, dir string) *testCerts {
	t.Helper()
	now := time.Now()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "agent-test-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER := sign(t, caTemplate, caTemplate, caKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
	}
	serverKey := newKey(t)
	serverTemplate := leaf(2, "etcd-test", x509.ExtKeyUsageServerAuth)
	// etcd's gRPC gateway dials the member with the serving certificate as a client one.
	serverTemplate.ExtKeyUsage = append(serverTemplate.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	serverTemplate.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	clientKey := newKey(t)

	c := &testCerts{
		ca:         writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER),
		serverCert: writePEM(t, filepath.Join(dir, "server.crt"), "CERTIFICATE", sign(t, serverTemplate, ca, serverKey, caKey)),
		serverKey:  writePEM(t, filepath.Join(dir, "server.key"), "EC PRIVATE KEY", marshalKey(t, serverKey)),
		clientCert: writePEM(t, filepath.Join(dir, "client.crt"), "CERTIFICATE",
			sign(t, leaf(3, "etcdpilot-backup", x509.ExtKeyUsageClientAuth), ca, clientKey, caKey)),
		clientKey: writePEM(t, filepath.Join(dir, "client.key"), "EC PRIVATE KEY", marshalKey(t, clientKey)),
	}
	return c
}

// clientTLS is the test's own TLS configuration for etcd.
func (c *testCerts) clientTLS(t *testing.T) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(c.clientCert, c.clientKey)
	if err != nil {
		t.Fatal(err)
	}
	caPEM, err := os.ReadFile(c.ca)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(caPEM)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func newKey(t *testing.T) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func marshalKey(t *testing.T, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func sign(t *testing.T, template, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t *testing.T, path, blockType string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
