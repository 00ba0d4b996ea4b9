package agent_test

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// TestBackupAndRestore backs up a real etcd, over TLS, to a file store, and restores the
// artifact into new members that serve every key again. The steps share the artifact and
// run in order.
func TestBackupAndRestore(t *testing.T) {
	certs := writeCerts(t, t.TempDir())
	src := startEtcd(t, etcdOptions{name: "source", certs: certs})
	want, lastRev := fill(t, src, 300)

	root := t.TempDir()
	const key = "ns/cluster/backup-1.db.zst"
	artifactPath := filepath.Join(root, key)
	var backup agent.Result

	t.Run("Backup", func(t *testing.T) {
		g := NewWithT(t)
		code, res := runAgent(t, "backup", "--endpoint", src.clientURL,
			"--etcd-cacert", certs.CA, "--etcd-cert", certs.ClientCert, "--etcd-key", certs.ClientKey,
			"--store", "file", "--file-root", root, "--key", key, "--timeout", "1m")
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.Failed()).To(BeFalse())
		backup = res

		stored, err := os.ReadFile(artifactPath)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.SHA256).To(Equal(sha256Hex(stored)))
		g.Expect(res.Size).To(Equal(int64(len(stored))))
		g.Expect(stored).To(HavePrefix(string([]byte{0x28, 0xb5, 0x2f, 0xfd})), "zstd by default")
		g.Expect(res.Compression).To(Equal("zstd"))
		g.Expect(res.StreamSeconds).To(BeNumerically(">", 0))
		g.Expect(res.SnapshotSize).To(Equal(int64(len(unzstd(t, stored)))), "snapshotSize is the uncompressed size")
		g.Expect(res.SnapshotSize).To(BeNumerically(">", res.Size), "the snapshot is compressed")
		g.Expect(res.Revision).To(BeNumerically(">=", lastRev))
		g.Expect(res.EtcdVersion).To(MatchRegexp(`^3\.\d+\.\d+$`))
		g.Expect(res.Member).To(Equal("source"))
		status, err := src.client.Status(t.Context(), src.clientURL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(res.MemberID).To(Equal(strconv.FormatUint(status.Header.MemberId, 16)))
		g.Expect(res.ClusterID).To(Equal(strconv.FormatUint(status.Header.ClusterId, 16)))
		g.Expect(res.MaxRSSBytes).To(BeNumerically(">", 0))
		g.Expect(filesUnder(t, root)).To(ConsistOf(key), "nothing but the artifact")
	})

	t.Run("Backup from the healthy one of several members", func(t *testing.T) {
		g := NewWithT(t)
		// One member answers, one does not: the snapshot comes from the one that answers,
		// and the one that does not costs the backup seconds, not its timeout.
		start := time.Now()
		code, res := runAgent(t, "backup", "--endpoints", "gone=http://"+etcdtest.FreeAddr(t)+",source="+src.clientURL,
			"--etcd-cacert", certs.CA, "--etcd-cert", certs.ClientCert, "--etcd-key", certs.ClientKey,
			"--store", "file", "--file-root", t.TempDir(), "--key", key, "--timeout", "1m")
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.Member).To(Equal("source"))
		g.Expect(time.Since(start)).To(BeNumerically("<", 15*time.Second), "the members are asked at once, each for at most 5 s")

		// With no member fit, the members are asked again for about 30 s (a missed probe
		// does not fail the backup for good), then the backup fails, well before its timeout.
		start = time.Now()
		code, res = runAgent(t, "backup", "--endpoints", "gone=http://"+etcdtest.FreeAddr(t),
			"--store", "file", "--file-root", t.TempDir(), "--key", key, "--timeout", "1m")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal("ClusterNotAvailable"))
		g.Expect(res.Error).To(ContainSubstring("no healthy voting member"))
		g.Expect(time.Since(start)).To(SatisfyAll(BeNumerically(">=", 25*time.Second), BeNumerically("<", 45*time.Second)))
	})

	// Writes after the backup are not in it.
	_, err := src.client.Put(t.Context(), "after-backup", "x")
	NewWithT(t).Expect(err).NotTo(HaveOccurred())

	restoreArgs := func(dataDir, name, peerURL string, extra ...string) []string {
		return fileRestoreArgs(root, key, backup.SHA256, dataDir, name, peerURL, extra...)
	}

	t.Run("Check", func(t *testing.T) {
		// A verification: the artifact restored (the restore command), a member started on
		// it (as the verification Job's etcd container does), then checked.
		g := NewWithT(t)
		g.Expect(backup.SHA256).NotTo(BeEmpty(), "needs the backup")
		g.Expect(backup.Keys).To(HaveValue(Equal(int64(len(want)))), "the backup records the key count at its revision")
		g.Expect(backup.KVHash).NotTo(BeEmpty(), "and the member's hash there")
		dataDir := filepath.Join(t.TempDir(), "data")
		peerURL := "http://" + etcdtest.FreeAddr(t)
		code, res := runAgent(t, restoreArgs(dataDir, "verify", peerURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		member := startEtcd(t, etcdOptions{name: "verify", dataDir: dataDir, peerURL: peerURL})
		checkArgs := func(keys int64, hash string) []string {
			return checkAgainst(member, backup, keys, hash, backup.HashCompactRevision)
		}
		code, res = runAgent(t, checkArgs(*backup.Keys, backup.KVHash)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.SHA256).To(Equal(backup.SHA256))
		g.Expect(res.RestoredRevision).To(BeNumerically(">=", backup.Revision))
		g.Expect(res.Keys).To(Equal(backup.Keys))
		g.Expect(res.KVHash).To(Equal(backup.KVHash), "the restored member holds the same history")
		g.Expect(res.KeysChecked).To(BeTrue())
		g.Expect(res.HashChecked).To(BeTrue())

		By := func(string) {}
		By("what the backup recorded differs from what restored: VerificationFailed, saying what")
		code, res = runAgent(t, checkArgs(*backup.Keys+1, backup.KVHash)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal("VerificationFailed"))
		g.Expect(res.Error).To(ContainSubstring(fmt.Sprintf("holds %d keys at revision %d, the backup recorded %d", *backup.Keys, backup.Revision, *backup.Keys+1)))
		code, res = runAgent(t, checkArgs(*backup.Keys, "123abc")...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal("VerificationFailed"))
		g.Expect(res.Error).To(ContainSubstring("the backup recorded 123abc"))

		By("a member that never answers")
		code, res = runAgent(t, "check", "--endpoint", "http://"+etcdtest.FreeAddr(t), "--sha256", backup.SHA256, "--revision", "1", "--timeout", "3s")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal("VerificationFailed"))
		g.Expect(res.Error).To(ContainSubstring("the member restored from the backup never answered"))
	})

	t.Run("Restore", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(backup.SHA256).NotTo(BeEmpty(), "needs the backup")
		dataDir := filepath.Join(t.TempDir(), "data")
		peerURL := "http://" + etcdtest.FreeAddr(t)
		code, res := runAgent(t, restoreArgs(dataDir, "restored", peerURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.AlreadyRestored).To(BeFalse())
		g.Expect(res.SHA256).To(Equal(backup.SHA256))
		g.Expect(res.Size).To(Equal(backup.Size))
		g.Expect(res.SnapshotSize).To(Equal(backup.SnapshotSize))
		g.Expect(res.Compression).To(Equal("zstd"), "found from the artifact's first bytes")
		info, err := os.Stat(dataDir)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(info.Mode().Perm()).To(Equal(os.FileMode(0o700)), "etcd refuses a data directory others can read")
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())

		restored := startEtcd(t, etcdOptions{name: "restored", dataDir: dataDir, peerURL: peerURL})
		g.Expect(readAll(t, restored)).To(Equal(want))
		members, err := restored.client.MemberList(t.Context())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(members.Members).To(HaveLen(1))
		g.Expect(members.Members[0].Name).To(Equal("restored"))
		g.Expect(members.Members[0].PeerURLs).To(Equal([]string{peerURL}))
		g.Expect(strconv.FormatUint(members.Header.ClusterId, 16)).NotTo(Equal(backup.ClusterID), "a new cluster")

		// Run again, as a restarted init container would: nothing is done.
		code, res = runAgent(t, restoreArgs(dataDir, "restored", peerURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.AlreadyRestored).To(BeTrue())
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())
		g.Expect(readAll(t, restored)).To(Equal(want))
	})

	t.Run("RestoreBumpsRevision", func(t *testing.T) {
		g := NewWithT(t)
		dataDir := filepath.Join(t.TempDir(), "data")
		// What a run killed halfway leaves behind is cleared first.
		g.Expect(os.MkdirAll(filepath.Join(dataDir+".restore", "data", "member"), 0o700)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dataDir+".restore", "snapshot.db"), []byte("half"), 0o600)).To(Succeed())
		// An empty data directory, as a volume's fresh subdirectory would be, is fine.
		g.Expect(os.Mkdir(dataDir, 0o755)).To(Succeed())

		peerURL := "http://" + etcdtest.FreeAddr(t)
		code, res := runAgent(t, restoreArgs(dataDir, "bumped", peerURL, "--bump-revision", "1000000", "--mark-compacted")...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())

		bumped := startEtcd(t, etcdOptions{name: "bumped", dataDir: dataDir, peerURL: peerURL})
		g.Expect(readAll(t, bumped)).To(Equal(want))
		put, err := bumped.client.Put(t.Context(), "after-restore", "x")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(put.Header.Revision).To(BeNumerically(">", 1000000))
		_, err = bumped.client.Get(t.Context(), "key-0000", clientv3.WithRev(lastRev))
		g.Expect(err).To(MatchError(rpctypes.ErrCompacted), "watchers and readers of old revisions must re-list")
	})

	t.Run("RecoveryReplacesTheDataOnce", func(t *testing.T) {
		// A member that lost its quorum: the snapshot saved from it (etcdctl snapshot save
		// writes an uncompressed one with its SHA-256 trailer) replaces its data directory,
		// as a new cluster of one member with revisions raised; then never again.
		g := NewWithT(t)
		stored, err := os.ReadFile(artifactPath)
		g.Expect(err).NotTo(HaveOccurred())
		volume := t.TempDir()
		g.Expect(os.WriteFile(filepath.Join(volume, "recovery-20261126-100000.db"), unzstd(t, stored), 0o600)).To(Succeed())
		dataDir := filepath.Join(volume, "data")
		peerURL := "http://" + etcdtest.FreeAddr(t)
		code, res := runAgent(t, restoreArgs(dataDir, "survivor", peerURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(os.WriteFile(filepath.Join(dataDir, "member", "old-data"), nil, 0o600)).To(Succeed())

		args := []string{"restore", "--store", "file", "--file-root", volume, "--key", "recovery-20261126-100000.db",
			"--recovery", "20261126-100000", "--data-dir", dataDir, "--name", "survivor",
			"--initial-cluster", "survivor=" + peerURL, "--initial-advertise-peer-urls", peerURL,
			"--initial-cluster-token", "survivor-token-20261126-100000", "--bump-revision", "1000000000", "--mark-compacted"}
		code, res = runAgent(t, args...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.AlreadyRestored).To(BeFalse())
		g.Expect(filepath.Join(dataDir, "member", "old-data")).NotTo(BeAnExistingFile(), "the old data directory is replaced")
		g.Expect(dataDir + ".recovered-20261126-100000").To(BeAnExistingFile())
		g.Expect(filepath.Join(volume, "recovery-20261126-100000.db")).To(BeAnExistingFile(), "the snapshot is kept")

		code, res = runAgent(t, args...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.AlreadyRestored).To(BeTrue(), "a restarted init container does nothing")

		m := startEtcd(t, etcdOptions{name: "survivor", dataDir: dataDir, peerURL: peerURL})
		g.Expect(readAll(t, m)).To(Equal(want))
		put, err := m.client.Put(t.Context(), "after-recovery", "x")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(put.Header.Revision).To(BeNumerically(">", 1000000000))

		args[slices.Index(args, "--recovery")+1] = "../x"
		code, res = runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Error).To(ContainSubstring("--recovery must be a recovery ID"))
	})

	t.Run("RestoreRefusesWrongChecksum", func(t *testing.T) {
		g := NewWithT(t)
		dataDir := filepath.Join(t.TempDir(), "data")
		wrong := strings.Repeat("ab", 32)
		args := restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t))
		args[slices.Index(args, "--sha256")+1] = wrong
		code, res := runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(agent.ReasonChecksumMismatch))
		g.Expect(res.Error).To(Equal(fmt.Sprintf("artifact %s has sha256 %s, expected %s: refusing to restore a corrupt or different backup",
			filepath.Join(root, key), backup.SHA256, wrong)))
		g.Expect(dataDir).NotTo(BeAnExistingFile())
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())
	})

	t.Run("RestoreRefusesDamagedArtifact", func(t *testing.T) {
		g := NewWithT(t)
		stored, err := os.ReadFile(artifactPath)
		g.Expect(err).NotTo(HaveOccurred())
		damaged := bytes.Clone(stored)
		damaged[len(damaged)/2] ^= 0xff
		g.Expect(os.WriteFile(filepath.Join(root, "damaged.db.zst"), damaged, 0o600)).To(Succeed())
		dataDir := filepath.Join(t.TempDir(), "data")
		args := restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t))
		args[slices.Index(args, "--key")+1] = "damaged.db.zst"
		code, res := runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(agent.ReasonChecksumMismatch), "checked before zstd's own complaint: %s", res.Error)
		g.Expect(dataDir).NotTo(BeAnExistingFile())

		// The right checksum of something that is not a gzip stream.
		g.Expect(os.WriteFile(filepath.Join(root, "plain.db"), []byte("not gzip"), 0o600)).To(Succeed())
		args[slices.Index(args, "--key")+1] = "plain.db"
		args[slices.Index(args, "--sha256")+1] = sha256Hex([]byte("not gzip"))
		code, res = runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonRestoreFailed))
		g.Expect(res.Error).To(ContainSubstring("has the expected sha256 but it is neither zstd nor gzip nor an etcd snapshot"))

		// The right checksum of the artifact, declared in another format than it has.
		args = restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t), "--compression", "gzip")
		code, res = runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonRestoreFailed))
		g.Expect(res.Error).To(ContainSubstring("its compression was declared gzip and it is zstd"))
		g.Expect(dataDir).NotTo(BeAnExistingFile())
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())
	})

	t.Run("RestoreFailures", func(t *testing.T) {
		g := NewWithT(t)
		dataDir := filepath.Join(t.TempDir(), "data")
		args := restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t))
		args[slices.Index(args, "--key")+1] = "missing.db.gz"
		code, res := runAgent(t, args...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonDestinationNotFound), res.Error)
		g.Expect(dataDir + ".restore").NotTo(BeAnExistingFile())

		// etcdutl would silently skip a bump without --mark-compacted.
		code, res = runAgent(t, restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t), "--bump-revision", "10")...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonRestoreFailed))
		g.Expect(res.Error).To(ContainSubstring("--bump-revision and --mark-compacted go together"))

		// A data directory holding something else is not replaced.
		g.Expect(os.MkdirAll(dataDir, 0o700)).To(Succeed())
		g.Expect(os.WriteFile(filepath.Join(dataDir, "precious"), []byte("x"), 0o600)).To(Succeed())
		code, res = runAgent(t, restoreArgs(dataDir, "m", "http://"+etcdtest.FreeAddr(t))...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Error).To(ContainSubstring("not empty but holds no etcd member"))
		g.Expect(filepath.Join(dataDir, "precious")).To(BeAnExistingFile())
	})

	// Every format a backup writes restores, declared (as a backup's status says) or found
	// from the artifact (a source named by its key alone).
	for _, c := range []string{"gzip", "none"} {
		t.Run("BackupAndRestore "+c, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			code, res := runAgent(t, "backup", "--endpoint", src.clientURL, "--compression", c,
				"--etcd-cacert", certs.CA, "--etcd-cert", certs.ClientCert, "--etcd-key", certs.ClientKey,
				"--store", "file", "--file-root", root, "--key", "b", "--timeout", "1m")
			g.Expect(code).To(Equal(0), "%+v", res)
			g.Expect(res.Compression).To(Equal(c))
			stored, err := os.ReadFile(filepath.Join(root, "b"))
			g.Expect(err).NotTo(HaveOccurred())
			if c == "none" {
				g.Expect(res.Size).To(Equal(res.SnapshotSize))
			} else {
				g.Expect(res.SnapshotSize).To(Equal(int64(len(gunzip(t, stored)))))
			}
			for _, declared := range []string{c, ""} {
				dataDir := filepath.Join(t.TempDir(), "data")
				peerURL := "http://" + etcdtest.FreeAddr(t)
				code, res := runAgent(t, "restore", "--store", "file", "--file-root", root, "--key", "b",
					"--sha256", sha256Hex(stored), "--compression", declared, "--data-dir", dataDir, "--name", "r",
					"--initial-cluster", "r="+peerURL, "--initial-advertise-peer-urls", peerURL, "--initial-cluster-token", "r-token")
				g.Expect(code).To(Equal(0), "%+v", res)
				g.Expect(res.Compression).To(Equal(c))
				restored := startEtcd(t, etcdOptions{name: "r", dataDir: dataDir, peerURL: peerURL})
				g.Expect(readAll(t, restored)).To(HaveKeyWithValue("key-0000", want["key-0000"]))
				g.Expect(readAll(t, restored)).To(HaveLen(len(want)+1), "every key, and the one written after the first backup")
			}
		})
	}

	t.Run("Delete", func(t *testing.T) {
		g := NewWithT(t)
		for range 2 { // deleting a missing artifact succeeds
			code, res := runAgent(t, "delete", "--store", "file", "--file-root", root, "--key", key)
			g.Expect(code).To(Equal(0), "%+v", res)
			g.Expect(artifactPath).NotTo(BeAnExistingFile())
		}
	})
}

// TestBackupFailures checks the reason a backup reports when something is missing.
func TestBackupFailures(t *testing.T) {
	src := startEtcd(t, etcdOptions{})
	fill(t, src, 10)

	t.Run("ClusterNotAvailable", func(t *testing.T) {
		g := NewWithT(t)
		root := t.TempDir()
		code, res := runAgent(t, "backup", "--endpoint", "http://"+etcdtest.FreeAddr(t), "--timeout", "2s",
			"--store", "file", "--file-root", root, "--key", "a.db.gz")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonClusterNotAvailable), res.Error)
		g.Expect(filesUnder(t, root)).To(BeEmpty())
	})

	t.Run("DestinationNotFound", func(t *testing.T) {
		g := NewWithT(t)
		code, res := runAgent(t, "backup", "--endpoint", src.clientURL,
			"--store", "file", "--file-root", filepath.Join(t.TempDir(), "not-mounted"), "--key", "a.db.gz")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonDestinationNotFound), res.Error)
		g.Expect(res.Error).To(ContainSubstring("does not exist"))
	})

	t.Run("CredentialsNotFound", func(t *testing.T) {
		g := NewWithT(t)
		t.Setenv(agent.EnvAccessKeyID, "")
		t.Setenv(agent.EnvSecretAccessKey, "secret")
		code, res := runAgent(t, "backup", "--endpoint", src.clientURL,
			"--store", "s3", "--s3-endpoint", "http://"+etcdtest.FreeAddr(t), "--s3-bucket", "backups", "--key", "a.db.gz")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonCredentialsNotFound), res.Error)
		g.Expect(res.Error).To(ContainSubstring(agent.EnvAccessKeyID))
	})

	t.Run("InvalidArguments", func(t *testing.T) {
		g := NewWithT(t)
		code, res := runAgent(t, "backup", "--store", "file", "--key", "a.db.gz")
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonBackupPodFailed))
		g.Expect(res.Error).To(ContainSubstring("give one of --endpoint and --endpoints"))
	})
}

// TestCheckComparesTheHashAcrossCompactions backs up a member whose history a compaction
// changes the hash of (overwrites, a deletion), and checks the artifact against hashes from
// another compaction than its snapshot's: the cluster compacted between the snapshot and
// the hash, or right before the backup, at the revision backed up.
func TestCheckComparesTheHashAcrossCompactions(t *testing.T) {
	g := NewWithT(t)
	src := startEtcd(t, etcdOptions{name: "source"})
	var mid int64
	for i := range 4 {
		for _, k := range []string{"a", "b", "c"} {
			put, err := src.client.Put(t.Context(), k, strconv.Itoa(i))
			g.Expect(err).NotTo(HaveOccurred())
			if i == 1 {
				mid = put.Header.Revision
			}
		}
	}
	_, err := src.client.Delete(t.Context(), "b")
	g.Expect(err).NotTo(HaveOccurred())
	root := t.TempDir()
	backupTo := func(t *testing.T, g Gomega, key string) agent.Result {
		code, res := runAgent(t, "backup", "--endpoint", src.clientURL, "--store", "file", "--file-root", root, "--key", key, "--timeout", "1m")
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.Keys).To(HaveValue(Equal(int64(2))))
		return res
	}
	restored := func(t *testing.T, g Gomega, key string, backup agent.Result) *testEtcd {
		dataDir, peerURL := filepath.Join(t.TempDir(), "data"), "http://"+etcdtest.FreeAddr(t)
		code, res := runAgent(t, fileRestoreArgs(root, key, backup.SHA256, dataDir, "verify", peerURL)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		return startEtcd(t, etcdOptions{name: "verify", dataDir: dataDir, peerURL: peerURL})
	}

	t.Run("CompactedAfterTheSnapshot", func(t *testing.T) {
		g := NewWithT(t)
		backup := backupTo(t, g, "first.db.zst")
		g.Expect(backup.HashCompactRevision).To(BeNumerically("<", 1), "never compacted yet")
		// What the backup records when the cluster compacts between its snapshot and its hash.
		_, err := src.client.Compact(t.Context(), mid, clientv3.WithCompactPhysical())
		g.Expect(err).NotTo(HaveOccurred())
		h, err := src.client.HashKV(t.Context(), src.clientURL, backup.Revision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.CompactRevision).To(Equal(mid))
		compacted := strconv.FormatUint(uint64(h.Hash), 16)
		g.Expect(compacted).NotTo(Equal(backup.KVHash), "the compaction changes the hash of this history")

		member := restored(t, g, "first.db.zst", backup)
		code, res := runAgent(t, checkAgainst(member, backup, *backup.Keys, compacted, mid)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.KeysChecked).To(BeTrue())
		g.Expect(res.HashChecked).To(BeTrue(), res.HashNotCompared)
		g.Expect(res.HashNotCompared).To(BeEmpty())
		g.Expect(res.HashCompactRevision).To(Equal(mid), "the throwaway member is compacted as the source was")
		g.Expect(res.KVHash).To(Equal(compacted))

		code, res = runAgent(t, checkAgainst(member, backup, *backup.Keys, "123abc", mid)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Reason).To(Equal("VerificationFailed"))
		g.Expect(res.Error).To(ContainSubstring("the backup recorded 123abc"))

		// The member, compacted at mid, lacks the history the hash from before covers.
		code, res = runAgent(t, checkAgainst(member, backup, *backup.Keys, backup.KVHash, backup.HashCompactRevision)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.KeysChecked).To(BeTrue())
		g.Expect(res.HashChecked).To(BeFalse())
		g.Expect(res.HashNotCompared).To(Equal(fmt.Sprintf("the backup's hash covers the history from its beginning (no compaction), "+
			"the restored member's from the compaction at revision %d: hashes from different compactions do not compare", mid)))

		code, res = runAgent(t, "check", "--endpoint", member.clientURL, "--sha256", backup.SHA256, "--revision", strconv.FormatInt(backup.Revision, 10), "--timeout", "1m")
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.KeysChecked).To(BeFalse())
		g.Expect(res.HashChecked).To(BeFalse())
		g.Expect(res.HashNotCompared).To(Equal("the backup recorded no hash"))

		code, res = runAgent(t, checkAgainst(member, backup, *backup.Keys, compacted, backup.Revision+1)...)
		g.Expect(code).To(Equal(1))
		g.Expect(res.Error).To(ContainSubstring("--hash-compact-revision must not be past --revision"), "etcd hashes no revision before its compaction")
	})

	t.Run("CompactedAtTheRevisionBackedUp", func(t *testing.T) {
		g := NewWithT(t)
		// etcd answers a hash at a revision it compacted at from that compaction's own hash,
		// which starts from the compaction before: the snapshot, taken after, lacks that history.
		now, err := src.client.Get(t.Context(), "a")
		g.Expect(err).NotTo(HaveOccurred())
		_, err = src.client.Compact(t.Context(), now.Header.Revision, clientv3.WithCompactPhysical())
		g.Expect(err).NotTo(HaveOccurred())
		backup := backupTo(t, g, "second.db.zst")
		g.Expect(backup.Revision).To(Equal(now.Header.Revision))
		g.Expect(backup.HashCompactRevision).To(Equal(now.Header.Revision), "hashed afresh, from the member's own compaction")

		code, res := runAgent(t, checkAgainst(restored(t, g, "second.db.zst", backup), backup, *backup.Keys, backup.KVHash, backup.HashCompactRevision)...)
		g.Expect(code).To(Equal(0), "%+v", res)
		g.Expect(res.KeysChecked).To(BeTrue())
		g.Expect(res.HashChecked).To(BeTrue(), res.HashNotCompared)
	})
}

// fileRestoreArgs are the restore command's arguments for the artifact key under root of
// a file store, restored into dataDir as member name of a new cluster of one.
func fileRestoreArgs(root, key, sha256, dataDir, name, peerURL string, extra ...string) []string {
	return append([]string{"restore", "--store", "file", "--file-root", root, "--key", key,
		"--sha256", sha256, "--data-dir", dataDir, "--name", name,
		"--initial-cluster", name + "=" + peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster-token", name + "-token"}, extra...)
}

// checkAgainst are the check command's arguments for the member restored from backup,
// with the key count and the hash (from compaction compact) given as recorded.
func checkAgainst(member *testEtcd, backup agent.Result, keys int64, hash string, compact int64) []string {
	return []string{"check", "--endpoint", member.clientURL, "--sha256", backup.SHA256,
		"--revision", strconv.FormatInt(backup.Revision, 10), "--keys", strconv.FormatInt(keys, 10), "--kv-hash", hash,
		"--hash-compact-revision", strconv.FormatInt(compact, 10), "--timeout", "1m"}
}

// runAgent runs the agent with args and a result file in a temporary directory, and returns
// its exit code and the result it wrote, after checking the result fits in a termination
// message.
func runAgent(t *testing.T, args ...string) (int, agent.Result) {
	t.Helper()
	resultFile := filepath.Join(t.TempDir(), "termination-log")
	// --result-file first, so that even a flag error is reported there.
	args = append([]string{args[0], "--result-file", resultFile}, args[1:]...)
	code := agent.Main(args)
	data, err := os.ReadFile(resultFile)
	if err != nil {
		t.Fatalf("agent %v wrote no result: %v", args, err)
	}
	if len(data) > 4096 {
		t.Fatalf("the result is %d bytes, more than a termination message holds", len(data))
	}
	var res agent.Result
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatalf("the result %q is not JSON: %v", data, err)
	}
	return code, res
}

// fill puts n keys of a few hundred bytes each and deletes one, and returns the keys etcd
// then holds and the revision of the last write.
func fill(t *testing.T, srv *testEtcd, n int) (map[string]string, int64) {
	t.Helper()
	want := map[string]string{}
	for i := range n {
		key := fmt.Sprintf("key-%04d", i)
		value := strings.Repeat(fmt.Sprintf("value %d of %s; ", i, key), 20)
		if _, err := srv.client.Put(t.Context(), key, value); err != nil {
			t.Fatal(err)
		}
		want[key] = value
	}
	resp, err := srv.client.Delete(t.Context(), "key-0001")
	if err != nil {
		t.Fatal(err)
	}
	delete(want, "key-0001")
	return want, resp.Header.Revision
}

// readAll returns every key etcd holds.
func readAll(t *testing.T, srv *testEtcd) map[string]string {
	t.Helper()
	resp, err := srv.client.Get(t.Context(), "", clientv3.WithFromKey())
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	return got
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

func unzstd(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := zstd.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	defer zr.Close()
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func gunzip(t *testing.T, data []byte) []byte {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	out, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// filesUnder lists the files under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			rel, _ := filepath.Rel(dir, path)
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
