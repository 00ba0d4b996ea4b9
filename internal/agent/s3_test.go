package agent_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	"github.com/etcdpilot/etcdpilot/internal/artifact/s3test"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// TestS3 backs up to and restores from a real S3 server, versitygw, on 127.0.0.1 (skipped
// when VERSITYGW is unset), and checks what a failed upload leaves: nothing.
func TestS3(t *testing.T) {
	gw := s3test.Start(t, s3test.Options{})
	gw.MakeBucket(t, "backups")
	src := startEtcd(t, etcdOptions{name: "source"})
	want, lastRev := fill(t, src, 200)
	t.Setenv(agent.EnvAccessKeyID, gw.AccessKey)
	t.Setenv(agent.EnvSecretAccessKey, gw.SecretKey)
	t.Setenv(agent.EnvSessionToken, "")
	const key = "etcd/ns/cluster/backup-1.db.zst"
	s3Args := func(command, bucket string, extra ...string) []string {
		return append([]string{command, "--store", "s3", "--s3-endpoint", gw.Endpoint, "--s3-bucket", bucket,
			"--s3-path-style", "--key", key}, extra...)
	}
	var backup agent.Result

	t.Run("Backup", func(t *testing.T) {
		g := NewWithT(t)
		code, res := runAgent(t, s3Args("backup", "backups", "--endpoint", src.clientURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		backup = res
		g.Expect(res.Revision).To(BeNumerically(">=", lastRev))
		g.Expect(gw.Objects(t, "backups")).To(ConsistOf(key))

		store, err := artifact.NewS3(gw.Config("backups"))
		g.Expect(err).NotTo(HaveOccurred())
		stored := readArtifact(t, store, key)
		g.Expect(res.SHA256).To(Equal(sha256Hex(stored)))
		g.Expect(res.Size).To(Equal(int64(len(stored))))
	})

	t.Run("Restore", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(backup.SHA256).NotTo(BeEmpty(), "needs the backup")
		dataDir := filepath.Join(t.TempDir(), "data")
		peerURL := "http://" + etcdtest.FreeAddr(t)
		code, res := runAgent(t, s3Args("restore", "backups", "--sha256", backup.SHA256, "--data-dir", dataDir,
			"--name", "restored", "--initial-cluster", "restored="+peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster-token", "restored-token")...)
		g.Expect(code).To(Equal(0), "%+v", res)
		restored := startEtcd(t, etcdOptions{name: "restored", dataDir: dataDir, peerURL: peerURL})
		g.Expect(readAll(t, restored)).To(Equal(want))
	})

	t.Run("WrongSecret", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv(agent.EnvSecretAccessKey, "wrong")
		code, res := runAgent(t, s3Args("backup", "backups", "--endpoint", src.clientURL)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonDestinationRejected), res.Error)
		g.Expect(gw.Objects(t, "backups")).To(ConsistOf(key), "the earlier backup only")
	})

	t.Run("MissingBucket", func(t *testing.T) {
		g := NewWithT(t)
		code, res := runAgent(t, s3Args("backup", "no-such-bucket", "--endpoint", src.clientURL)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonDestinationNotFound), res.Error)
		g.Expect(res.Error).To(ContainSubstring("bucket no-such-bucket does not exist"))
	})

	t.Run("Delete", func(t *testing.T) {
		g := NewWithT(t)
		for range 2 { // deleting a missing artifact succeeds
			code, res := runAgent(t, s3Args("delete", "backups")...)
			g.Expect(code).To(Equal(0), "%+v", res)
			g.Expect(gw.Objects(t, "backups")).To(BeEmpty())
		}
	})

	// Last: it stops the server.
	t.Run("ServerDown", func(t *testing.T) {
		g := NewWithT(t)
		gw.Stop(t)
		code, res := runAgent(t, s3Args("backup", "backups", "--endpoint", src.clientURL)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonDestinationUnreachable), res.Error)
		// Nothing reached the bucket's directory: neither the object nor an upload's parts.
		g.Expect(filesUnder(t, filepath.Join(gw.Dir, "backups"))).To(BeEmpty())
	})
}

// readArtifact reads the whole artifact of key.
func readArtifact(t *testing.T, store artifact.Store, key string) []byte {
	t.Helper()
	r, err := store.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	f, err := os.CreateTemp(t.TempDir(), "artifact")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.ReadFrom(r); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return data
}
