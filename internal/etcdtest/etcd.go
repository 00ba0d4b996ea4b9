package etcdtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// DefaultBinary is where `make test` builds the etcd that tests run, relative to the
// directory of a package under internal/ (where `go test` runs its tests).
// ETCD_TEST_BINARY overrides it, to test other etcd releases.
const DefaultBinary = "../../bin/etcd-v3.6.16/etcd"

// Options say how Start runs etcd.
type Options struct {
	// Name, DataDir and PeerURL default to a fresh member ("etcd-test") in a temporary
	// directory with an http peer URL; a restored member must get the ones it was restored
	// with.
	Name, DataDir, PeerURL string
	// ClientURLs are the URLs etcd listens on and advertises for clients; by default one
	// URL, over https when Certs is set and http otherwise.
	ClientURLs []string
	// Certs, when set, give etcd its serving certificate and make it require client
	// certificates signed by the CA on https client URLs.
	Certs *Certs
	// Args are more flags for etcd, after the ones Start sets (for example a small
	// --quota-backend-bytes).
	Args []string
}

// Etcd is a single-member etcd listening on 127.0.0.1 only.
type Etcd struct {
	Name, DataDir, PeerURL string
	ClientURLs             []string
	exited                 chan error
	pid                    int
}

// Pid is the etcd process's ID, for a benchmark that reads its CPU time.
func (e *Etcd) Pid() int { return e.pid }

// Start starts etcd from ETCD_TEST_BINARY (default DefaultBinary), kills it when the test
// ends and logs its output if the test failed. Call WaitReady before using it.
func Start(t testing.TB, opts Options) *Etcd {
	t.Helper()
	binary := Binary(t)
	dir := t.TempDir()
	srv := &Etcd{Name: opts.Name, DataDir: opts.DataDir, PeerURL: opts.PeerURL, ClientURLs: opts.ClientURLs}
	if srv.Name == "" {
		srv.Name = "etcd-test"
	}
	if srv.DataDir == "" {
		srv.DataDir = filepath.Join(dir, "data")
	}
	if srv.PeerURL == "" {
		srv.PeerURL = "http://" + FreeAddr(t)
	}
	if len(srv.ClientURLs) == 0 {
		scheme := "http"
		if opts.Certs != nil {
			scheme = "https"
		}
		srv.ClientURLs = []string{scheme + "://" + FreeAddr(t)}
	}
	clientURLs := strings.Join(srv.ClientURLs, ",")

	args := []string{
		"--name", srv.Name,
		"--data-dir", srv.DataDir,
		"--listen-peer-urls", srv.PeerURL,
		"--initial-advertise-peer-urls", srv.PeerURL,
		"--initial-cluster", srv.Name + "=" + srv.PeerURL,
		"--initial-cluster-state", "new",
		"--listen-client-urls", clientURLs,
		"--advertise-client-urls", clientURLs,
	}
	if c := opts.Certs; c != nil {
		args = append(args, "--cert-file", c.ServerCert, "--key-file", c.ServerKey,
			"--trusted-ca-file", c.CA, "--client-cert-auth")
	}
	args = append(args, "--unsafe-no-fsync", "--log-outputs", "stderr")
	args = append(args, opts.Args...)
	logPath := filepath.Join(dir, "etcd.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }() // etcd has its own descriptor once started
	cmd := exec.Command(binary, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	killWithParent(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	srv.pid = cmd.Process.Pid
	srv.exited = make(chan error, 1)
	go func() { srv.exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		exitErr := <-srv.exited
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("etcd %s exited (%v), its log:\n%s", srv.Name, exitErr, out)
		}
	})
	return srv
}

// WaitReady calls ready, with a second's timeout each time, until it succeeds, failing the
// test when etcd exits first or still fails after 30s.
func (srv *Etcd) WaitReady(t testing.TB, ready func(context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		err := ready(ctx)
		cancel()
		if err == nil {
			return
		}
		select {
		case err := <-srv.exited:
			srv.exited <- err // for the cleanup
			t.Fatalf("etcd exited before it was ready: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("etcd not ready after 30s: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Binary returns the etcd binary to test against, failing the test when it is missing: an
// integration test that skips itself silently would look like a pass.
func Binary(t testing.TB) string {
	t.Helper()
	path := os.Getenv("ETCD_TEST_BINARY")
	if path == "" {
		path = DefaultBinary
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
