package artifact_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
)

func TestFSRoundTrip(t *testing.T) {
	g := NewWithT(t)
	ctx := t.Context()
	root := t.TempDir()
	store := artifact.NewFS(root)
	content := bytes.Repeat([]byte("etcd snapshot "), 100_000)

	g.Expect(store.Put(ctx, "ns/cluster/backup.db.gz", bytes.NewReader(content))).To(Succeed())
	g.Expect(os.ReadFile(filepath.Join(root, "ns/cluster/backup.db.gz"))).To(Equal(content))
	g.Expect(filesUnder(t, root)).To(ConsistOf("ns/cluster/backup.db.gz"), "no partial file is left")

	size, err := store.Stat(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(size).To(Equal(int64(len(content))))
	g.Expect(readAll(t, store, "ns/cluster/backup.db.gz")).To(Equal(content))

	// Put replaces an artifact of the same key.
	g.Expect(store.Put(ctx, "ns/cluster/backup.db.gz", bytes.NewReader([]byte("v2")))).To(Succeed())
	g.Expect(readAll(t, store, "ns/cluster/backup.db.gz")).To(Equal([]byte("v2")))

	g.Expect(store.Delete(ctx, "ns/cluster/backup.db.gz")).To(Succeed())
	g.Expect(filesUnder(t, root)).To(BeEmpty())
	g.Expect(store.Delete(ctx, "ns/cluster/backup.db.gz")).To(Succeed(), "deleting twice is fine")

	_, err = store.Open(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).To(MatchError(artifact.ErrNotFound))
	g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationNotFound))
	_, err = store.Stat(ctx, "ns/cluster/backup.db.gz")
	g.Expect(err).To(MatchError(artifact.ErrNotFound))
}

// A Put whose reader fails, or whose context ends, halfway leaves neither the artifact nor
// a partial file, and does not touch an older artifact of the same key.
func TestFSPutFailureLeavesNothing(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	store := artifact.NewFS(root)
	g.Expect(store.Put(t.Context(), "old.db.gz", bytes.NewReader([]byte("old")))).To(Succeed())

	errBroken := errors.New("snapshot stream broke")
	err := store.Put(t.Context(), "new.db.gz", failingReader(1<<20, errBroken))
	g.Expect(err).To(MatchError(errBroken))
	g.Expect(filesUnder(t, root)).To(ConsistOf("old.db.gz"))

	err = store.Put(t.Context(), "old.db.gz", failingReader(1<<20, errBroken))
	g.Expect(err).To(MatchError(errBroken))
	g.Expect(readAll(t, store, "old.db.gz")).To(Equal([]byte("old")), "the old artifact is intact")

	ctx, cancel := context.WithCancel(t.Context())
	r := &cancelAfter{r: bytes.NewReader(make([]byte, 4<<20)), n: 1 << 20, cancel: cancel}
	err = store.Put(ctx, "new.db.gz", r)
	g.Expect(err).To(MatchError(context.Canceled))
	g.Expect(filesUnder(t, root)).To(ConsistOf("old.db.gz"))
}

// Keys cannot reach outside the root, neither by their own name nor through a symbolic
// link inside the root.
func TestFSRefusesKeysOutsideRoot(t *testing.T) {
	g := NewWithT(t)
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	g.Expect(os.Mkdir(root, 0o750)).To(Succeed())
	g.Expect(os.Mkdir(outside, 0o750)).To(Succeed())
	g.Expect(os.Symlink(outside, filepath.Join(root, "link"))).To(Succeed())
	store := artifact.NewFS(root)

	for _, key := range []string{
		"", "../x", "a/../../x", "/etc/x", filepath.Join(outside, "x"), "a/", "a//b", "./a", "a/./b",
		"x.partial", "link/x",
	} {
		g.Expect(store.Put(t.Context(), key, bytes.NewReader([]byte("x")))).NotTo(Succeed(), "Put %q", key)
		_, err := store.Open(t.Context(), key)
		g.Expect(err).To(HaveOccurred(), "Open %q", key)
		g.Expect(store.Delete(t.Context(), key)).NotTo(Succeed(), "Delete %q", key)
	}
	g.Expect(filesUnder(t, outside)).To(BeEmpty())
	g.Expect(filesUnder(t, base)).To(BeEmpty(), "nothing was written anywhere")
}

func TestFSMissingRoot(t *testing.T) {
	g := NewWithT(t)
	store := artifact.NewFS(filepath.Join(t.TempDir(), "not-mounted"))
	err := store.Put(t.Context(), "a.db.gz", bytes.NewReader([]byte("x")))
	g.Expect(err).To(MatchError(ContainSubstring("not-mounted does not exist")))
	g.Expect(artifact.Reason(err)).To(Equal(etcdv1alpha1.ReasonDestinationNotFound))
	g.Expect(store.Delete(t.Context(), "a.db.gz")).To(Succeed(), "nothing to delete")
}

// Delete also removes the partial file of a Put that was killed.
func TestFSDeleteRemovesPartial(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, "ns"), 0o750)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, "ns/a.db.gz.partial"), []byte("half"), 0o600)).To(Succeed())
	g.Expect(artifact.NewFS(root).Delete(t.Context(), "ns/a.db.gz")).To(Succeed())
	g.Expect(filesUnder(t, root)).To(BeEmpty())
}

// filesUnder lists the regular files and symbolic links under dir, relative to it.
func filesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && d.Type()&os.ModeSymlink == 0 {
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

// readAll reads the artifact of key.
func readAll(t *testing.T, store artifact.Store, key string) []byte {
	t.Helper()
	r, err := store.Open(t.Context(), key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Close() }()
	data, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// failingReader yields n bytes, then fails with err.
func failingReader(n int64, err error) io.Reader {
	return io.MultiReader(io.LimitReader(zeros{}, n), errReader{err})
}

type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

type errReader struct{ err error }

func (e errReader) Read([]byte) (int, error) { return 0, e.err }

// cancelAfter reads from r and calls cancel once n bytes were read.
type cancelAfter struct {
	r      io.Reader
	n      int64
	read   int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read >= c.n {
		c.cancel()
	}
	return n, err
}
