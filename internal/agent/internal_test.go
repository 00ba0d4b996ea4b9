package agent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/server/v3/storage/schema"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	backuppkg "github.com/etcdpilot/etcdpilot/internal/backup"
)

// snapshotStream returns a stream shaped like etcd's: a "database" of n 512-byte sectors
// that starts as a bbolt database does (a meta page header and bbolt's magic), followed by
// its SHA-256.
func snapshotStream(n int) []byte {
	db := bytes.Repeat([]byte("bbolt page "), n*512/11+1)[:n*512]
	copy(db, append(make([]byte, 16), 0xed, 0xda, 0x0c, 0xed))
	sum := sha256.Sum256(db)
	return append(db, sum[:]...)
}

func TestTrailerCheck(t *testing.T) {
	good := snapshotStream(8)
	for _, tc := range []struct {
		name    string
		stream  []byte
		chunk   int
		wantErr string
	}{
		{"whole", good, len(good), ""},
		{"byte by byte", good, 1, ""},
		{"chunks smaller than the trailer", good, 7, ""},
		{"chunks splitting the trailer", good, len(good) - 20, ""},
		{"cut short", good[:len(good)-100], 4096, "cut short"},
		{"cut at a sector", good[:len(good)-512], 4096, "damaged"},
		{"no trailer", good[:len(good)-sha256.Size], 4096, "cut short"},
		{"damaged", append([]byte{'X'}, good[1:]...), 4096, "damaged"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tr := &trailerCheck{hash: sha256.New()}
			for rest := tc.stream; len(rest) > 0; {
				n := min(tc.chunk, len(rest))
				_, _ = tr.Write(rest[:n])
				rest = rest[n:]
			}
			g.Expect(tr.n).To(Equal(int64(len(tc.stream))))
			if tc.wantErr == "" {
				g.Expect(tr.check()).To(Succeed())
			} else {
				g.Expect(tr.check()).To(MatchError(ContainSubstring(tc.wantErr)))
			}
		})
	}
}

func TestUpload(t *testing.T) {
	for _, c := range backuppkg.Compressions {
		t.Run("Stored "+string(c), func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			stream := snapshotStream(100)
			up, err := upload(t.Context(), artifact.NewFS(root), "a", bytes.NewReader(stream), c)
			g.Expect(err).NotTo(HaveOccurred())
			stored, err := os.ReadFile(filepath.Join(root, "a"))
			g.Expect(err).NotTo(HaveOccurred())
			sum := sha256.Sum256(stored)
			g.Expect(up.sha256).To(Equal(hex.EncodeToString(sum[:])))
			g.Expect(up.size).To(Equal(int64(len(stored))))
			g.Expect(up.snapshotSize).To(Equal(int64(len(stream))))
			g.Expect(backuppkg.Sniff(stored)).To(Equal(c), "the artifact is in the format asked for")
			if c != etcdv1alpha1.BackupCompressionNone {
				g.Expect(up.size).To(BeNumerically("<", up.snapshotSize/4), "the snapshot is compressed")
			}
			var out bytes.Buffer
			g.Expect(decompress(&out, bytes.NewReader(stored), c)).To(Succeed())
			g.Expect(out.Bytes()).To(Equal(stream))
		})
	}

	// A snapshot stream that breaks, or ends without a matching trailer, stores nothing.
	for name, src := range map[string]io.Reader{
		"StreamBreaks": io.MultiReader(bytes.NewReader(snapshotStream(100)[:20000]), errorReader{errors.New("rpc error: Unavailable")}),
		"StreamCut":    bytes.NewReader(snapshotStream(100)[:20000]),
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			_, err := upload(t.Context(), artifact.NewFS(root), "a.db.zst", src, etcdv1alpha1.BackupCompressionZstd)
			var srcErr *sourceError
			g.Expect(errors.As(err, &srcErr)).To(BeTrue(), "%v", err)
			entries, _ := os.ReadDir(root)
			g.Expect(entries).To(BeEmpty())
		})
	}

	// A store that gives up does not leave the compressing goroutine blocked on the pipe.
	t.Run("StoreFails", func(t *testing.T) {
		g := NewWithT(t)
		done := make(chan error, 1)
		go func() {
			_, err := upload(t.Context(), failingStore{}, "a.db.zst", bytes.NewReader(snapshotStream(10000)), etcdv1alpha1.BackupCompressionZstd)
			done <- err
		}()
		var err error
		g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&err))
		g.Expect(err).To(MatchError(errStoreFull))
		var srcErr *sourceError
		g.Expect(errors.As(err, &srcErr)).To(BeFalse(), "the store's fault, not the snapshot's")
	})
}

func TestBackupFailureReason(t *testing.T) {
	g := NewWithT(t)
	cause := fail(etcdv1alpha1.ReasonSnapshotFailed, errors.New("stream broke"))

	g.Expect(backupFailure(t.Context(), time.Minute, cause)).To(BeIdenticalTo(cause))

	expired, cancel := context.WithDeadline(t.Context(), time.Now().Add(-time.Second))
	defer cancel()
	res := failureResult(backupFailure(expired, time.Minute, cause), etcdv1alpha1.ReasonBackupPodFailed)
	g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonBackupTimeout), "whatever failed at the deadline failed of it")
	g.Expect(res.Error).To(Equal("the backup did not finish within 1m0s: stream broke"))

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	res = failureResult(backupFailure(cancelled, time.Minute, cause), etcdv1alpha1.ReasonBackupTimeout)
	g.Expect(res.Reason).To(Equal(etcdv1alpha1.ReasonBackupPodFailed))
}

func TestFailureResult(t *testing.T) {
	g := NewWithT(t)
	inner := fail(etcdv1alpha1.ReasonDestinationFull, errors.New("no space left on device"))
	g.Expect(failureResult(fail(etcdv1alpha1.ReasonSnapshotFailed, inner), "X").Reason).
		To(Equal(etcdv1alpha1.ReasonDestinationFull), "the deepest reason wins")
	g.Expect(failureResult(errors.New("plain"), "Fallback").Reason).To(Equal("Fallback"))

	// A huge message still fits in a termination message, cut on a character boundary.
	huge := errors.New(strings.Repeat("é", 5000))
	res := failureResult(fail(etcdv1alpha1.ReasonSnapshotFailed, huge), "X")
	res.MaxRSSBytes = 1 << 40
	data, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(len(data)).To(BeNumerically("<", 2048))
	g.Expect(len(res.Error)).To(BeNumerically("<=", maxErrorLen))
	g.Expect(res.Error).To(HaveSuffix("é…"))
}

// TestResultJSON pins the JSON names the operator decodes.
func TestResultJSON(t *testing.T) {
	g := NewWithT(t)
	data, err := json.Marshal(Result{
		SHA256: "ab", Size: 1, SnapshotSize: 2, Revision: 3, EtcdVersion: "3.6.16",
		MemberID: "a1", ClusterID: "c1", Member: "m", MaxRSSBytes: 4, Compression: "zstd", StreamSeconds: 1.5,
	})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(MatchJSON(`{"sha256":"ab","size":1,"snapshotSize":2,"revision":3,
		"etcdVersion":"3.6.16","memberID":"a1","clusterID":"c1","member":"m","maxRSSBytes":4,
		"compression":"zstd","streamSeconds":1.5}`))

	data, err = json.Marshal(Result{Reason: "Timeout", Error: "too slow"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(data)).To(MatchJSON(`{"reason":"Timeout","error":"too slow"}`))
}

func TestMainWithoutCommand(t *testing.T) {
	g := NewWithT(t)
	var stderr bytes.Buffer
	env := &environment{stderr: &stderr, getenv: func(string) string { return "" }}
	g.Expect(run(t.Context(), nil, env)).To(Equal(2))
	g.Expect(run(t.Context(), []string{"frobnicate"}, env)).To(Equal(2))
	g.Expect(stderr.String()).To(ContainSubstring("usage: manager agent <command>"))
}

var errStoreFull = errors.New("store full")

// failingStore reads a little of what it is given, then fails.
type failingStore struct{ artifact.Store }

func (failingStore) Put(_ context.Context, _ string, r io.Reader) error {
	_, _ = io.CopyN(io.Discard, r, 1000)
	return errStoreFull
}

type errorReader struct{ err error }

func (e errorReader) Read([]byte) (int, error) { return 0, e.err }

// disableAuth turns authentication off where etcd keeps it, leaves the rest of the auth
// bucket as it was, and leaves data without authentication alone.
func TestDisableAuth(t *testing.T) {
	g := NewWithT(t)
	write := func(withAuth bool) string {
		dir := t.TempDir()
		g.Expect(os.MkdirAll(filepath.Join(dir, "member", "snap"), 0o700)).To(Succeed())
		db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, nil)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(db.Update(func(tx *bolt.Tx) error {
			if !withAuth {
				_, err := tx.CreateBucket([]byte("key"))
				return err
			}
			b, err := tx.CreateBucket(schema.Auth.Name())
			if err != nil {
				return err
			}
			if err := b.Put([]byte("authRevision"), []byte{0, 0, 0, 0, 0, 0, 0, 7}); err != nil {
				return err
			}
			return b.Put(schema.AuthEnabledKeyName, []byte{1})
		})).To(Succeed())
		g.Expect(db.Close()).To(Succeed())
		return dir
	}
	read := func(dir string) (enabled, revision []byte, hasBucket bool) {
		db, err := bolt.Open(filepath.Join(dir, "member", "snap", "db"), 0o600, &bolt.Options{ReadOnly: true})
		g.Expect(err).NotTo(HaveOccurred())
		defer func() { g.Expect(db.Close()).To(Succeed()) }()
		g.Expect(db.View(func(tx *bolt.Tx) error {
			if b := tx.Bucket(schema.Auth.Name()); b != nil {
				hasBucket = true
				enabled, revision = slices.Clone(b.Get(schema.AuthEnabledKeyName)), slices.Clone(b.Get([]byte("authRevision")))
			}
			return nil
		})).To(Succeed())
		return enabled, revision, hasBucket
	}

	dir := write(true)
	g.Expect(disableAuth(dir)).To(Succeed())
	enabled, revision, _ := read(dir)
	g.Expect(enabled).To(Equal([]byte{0}), "authentication off")
	g.Expect(revision).To(Equal([]byte{0, 0, 0, 0, 0, 0, 0, 7}), "the rest of the auth bucket kept")

	dir = write(false)
	g.Expect(disableAuth(dir)).To(Succeed())
	_, _, hasBucket := read(dir)
	g.Expect(hasBucket).To(BeFalse(), "no auth bucket made")
}
