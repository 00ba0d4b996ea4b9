// Package s3test runs a real S3 server for tests: versitygw, serving a temporary directory
// on 127.0.0.1.
//
// The binary comes from the VERSITYGW environment variable (the Makefile builds it); when
// it is unset, Start skips the test with a message saying so.
package s3test

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/etcdpilot/etcdpilot/internal/artifact"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// EnvBinary names the environment variable holding the versitygw binary's path.
const EnvBinary = "VERSITYGW"

// Gateway is a running versitygw with one account.
type Gateway struct {
	// Endpoint is the gateway's URL: http://127.0.0.1:<port>, or https:// with TLS.
	Endpoint string
	// AccessKey and SecretKey are its root account's credentials.
	AccessKey, SecretKey string
	// CABundle is the PEM CA that signed the gateway's certificate, with TLS.
	CABundle []byte
	// Dir is the directory it serves: each top-level directory is a bucket.
	Dir string

	cmd    *exec.Cmd
	exited chan error
}

// Options change how Start runs the gateway.
type Options struct {
	// TLS serves https with a certificate for 127.0.0.1 signed by a throwaway CA.
	TLS bool
}

// Start starts versitygw on a free port of 127.0.0.1, waits until it accepts connections
// and stops it when the test ends. It skips the test when VERSITYGW is unset.
func Start(t testing.TB, opts Options) *Gateway {
	t.Helper()
	binary := os.Getenv(EnvBinary)
	if binary == "" {
		t.Skipf("%s is unset: S3 tests need the versitygw binary (make test builds it)", EnvBinary)
	}
	base := t.TempDir()
	gw := &Gateway{
		AccessKey: "etcdpilot-test",
		SecretKey: "etcdpilot-test-secret",
		Dir:       filepath.Join(base, "root"),
		exited:    make(chan error, 1),
	}
	if err := os.Mkdir(gw.Dir, 0o750); err != nil {
		t.Fatal(err)
	}
	addr := etcdtest.FreeAddr(t)
	args := []string{"--port", addr, "--quiet"}
	scheme := "http"
	if opts.TLS {
		certFile, keyFile := gw.writeCerts(t, base)
		args = append(args, "--cert", certFile, "--key", keyFile)
		scheme = "https"
	}
	gw.Endpoint = scheme + "://" + addr
	args = append(args, "posix", gw.Dir)

	logPath := filepath.Join(base, "versitygw.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = logFile.Close() }() // the gateway has its own descriptor once started
	gw.cmd = exec.Command(binary, args...)
	gw.cmd.Env = append(os.Environ(), "ROOT_ACCESS_KEY="+gw.AccessKey, "ROOT_SECRET_KEY="+gw.SecretKey)
	gw.cmd.Stdout = logFile
	gw.cmd.Stderr = logFile
	// The kernel kills the gateway if the test binary dies, for instance of its timeout.
	gw.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := gw.cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", binary, err)
	}
	go func() { gw.exited <- gw.cmd.Wait() }()
	t.Cleanup(func() {
		gw.Stop(t)
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("versitygw log:\n%s", out)
		}
	})

	deadline := time.Now().Add(20 * time.Second)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			_ = conn.Close()
			return gw
		}
		select {
		case err := <-gw.exited:
			gw.exited <- err
			t.Fatalf("versitygw exited before it listened: %v", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw not listening on %s after 20s: %v", addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Stop kills the gateway and waits for it to exit; it is idempotent. The port then refuses
// connections, as a store that is down does.
func (gw *Gateway) Stop(t testing.TB) {
	t.Helper()
	if gw.cmd == nil {
		return
	}
	_ = gw.cmd.Process.Kill()
	err := <-gw.exited
	gw.exited <- err // for a second Stop
	gw.cmd.Process = nil
	gw.cmd = nil
}

// Pid is the gateway process's ID (0 once stopped), for a benchmark that reads its CPU
// time.
func (gw *Gateway) Pid() int {
	if gw.cmd == nil || gw.cmd.Process == nil {
		return 0
	}
	return gw.cmd.Process.Pid
}

// MakeBucket creates bucket, as a directory of the served tree.
func (gw *Gateway) MakeBucket(t testing.TB, bucket string) {
	t.Helper()
	if err := os.Mkdir(filepath.Join(gw.Dir, bucket), 0o750); err != nil {
		t.Fatal(err)
	}
}

// Config returns the S3Config of bucket with the gateway's credentials and CA.
func (gw *Gateway) Config(bucket string) artifact.S3Config {
	return artifact.S3Config{
		Endpoint:        gw.Endpoint,
		Bucket:          bucket,
		AccessKeyID:     gw.AccessKey,
		SecretAccessKey: gw.SecretKey,
		CABundle:        gw.CABundle,
		ForcePathStyle:  true,
	}
}

// Objects lists, through the S3 API, the keys of bucket's objects and of its unfinished
// multipart uploads (as "upload:<key>"), so a test can check that a failed upload left
// nothing behind, visible or not.
func (gw *Gateway) Objects(t testing.TB, bucket string) []string {
	t.Helper()
	client := gw.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	keys := []string{}
	for obj := range client.ListObjects(ctx, bucket, minio.ListObjectsOptions{Recursive: true}) {
		if obj.Err != nil {
			t.Fatalf("listing bucket %s: %v", bucket, obj.Err)
		}
		keys = append(keys, obj.Key)
	}
	for up := range client.ListIncompleteUploads(ctx, bucket, "", true) {
		if up.Err != nil {
			t.Fatalf("listing unfinished uploads of bucket %s: %v", bucket, up.Err)
		}
		keys = append(keys, "upload:"+up.Key)
	}
	return keys
}

// client is a minio client of the gateway, for test assertions.
func (gw *Gateway) client(t testing.TB) *minio.Client {
	t.Helper()
	u, err := url.Parse(gw.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	transport, err := minio.DefaultTransport(u.Scheme == "https")
	if err != nil {
		t.Fatal(err)
	}
	if gw.CABundle != nil {
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(gw.CABundle)
		transport.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	}
	client, err := minio.New(u.Host, &minio.Options{
		Creds:        credentials.NewStaticV4(gw.AccessKey, gw.SecretKey, ""),
		Secure:       u.Scheme == "https",
		Transport:    transport,
		Region:       artifact.DefaultRegion,
		BucketLookup: minio.BucketLookupPath,
	})
	if err != nil {
		t.Fatal(err)
	}
	return client
}

// writeCerts writes a throwaway CA's certificate for 127.0.0.1 and its key to dir, sets
// gw.CABundle and returns the files.
func (gw *Gateway) writeCerts(t testing.TB, dir string) (certFile, keyFile string) {
	t.Helper()
	certs := etcdtest.WriteCerts(t, dir, etcdtest.CertOptions{CAName: "s3test-ca", ServerName: "s3test", ClientName: "s3test-client"})
	gw.CABundle = certs.CABundle(t)
	return certs.ServerCert, certs.ServerKey
}
