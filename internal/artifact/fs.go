package artifact

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// partialSuffix names the file a Put writes before it is complete.
const partialSuffix = ".partial"

// FS is a Store in a directory, typically the mount point of a PersistentVolumeClaim. A
// key is a path relative to that directory.
type FS struct {
	root string
}

var _ Store = (*FS)(nil)

// NewFS returns a Store of the files under root. The directory must exist when the store is
// used (a missing one is ErrNotFound); the directories a key names inside it are created as
// needed.
//
// Every access goes through an os.Root, so neither a key ("../x", "/etc/x") nor a symbolic
// link inside root can reach a file outside it.
func NewFS(root string) *FS {
	return &FS{root: root}
}

// Put writes r to <key>.partial in the key's directory, flushes it to disk, renames it to
// key and flushes the directory, so that after a crash key either holds the complete
// artifact or does not exist. On failure the partial file is removed.
func (s *FS) Put(ctx context.Context, key string, r io.Reader) (err error) {
	name, err := fsName(key)
	if err != nil {
		return err
	}
	root, err := s.openRoot()
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()

	dir := path.Dir(name)
	if err := root.MkdirAll(dir, 0o750); err != nil {
		return s.wrap("creating the directory of", key, err)
	}
	partial := name + partialSuffix
	f, err := root.OpenFile(partial, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o640)
	if err != nil {
		return s.wrap("creating", key, err)
	}
	defer func() {
		if err != nil {
			_ = f.Close()
			_ = root.Remove(partial)
		}
	}()
	if _, err := io.Copy(f, contextReader{ctx: ctx, r: r}); err != nil {
		return s.wrap("writing", key, err)
	}
	if err := f.Sync(); err != nil {
		return s.wrap("flushing", key, err)
	}
	if err := f.Close(); err != nil {
		return s.wrap("closing", key, err)
	}
	if err := root.Rename(partial, name); err != nil {
		return s.wrap("renaming the complete file to", key, err)
	}
	if err := syncDir(root, dir); err != nil {
		// The artifact is complete but its name may not survive a crash: a backup that
		// reports success must be durable, so this is a failure, and the file goes.
		_ = root.Remove(name)
		return s.wrap("flushing the directory of", key, err)
	}
	return nil
}

// Open opens the file of key.
func (s *FS) Open(_ context.Context, key string) (io.ReadCloser, error) {
	name, err := fsName(key)
	if err != nil {
		return nil, err
	}
	root, err := s.openRoot()
	if err != nil {
		return nil, err
	}
	defer func() { _ = root.Close() }() // the open file keeps its own descriptor
	f, err := root.Open(name)
	if err != nil {
		return nil, s.wrap("opening", key, err)
	}
	return f, nil
}

// Stat returns the size of the file of key.
func (s *FS) Stat(_ context.Context, key string) (int64, error) {
	name, err := fsName(key)
	if err != nil {
		return 0, err
	}
	root, err := s.openRoot()
	if err != nil {
		return 0, err
	}
	defer func() { _ = root.Close() }()
	info, err := root.Stat(name)
	if err != nil {
		return 0, s.wrap("reading the size of", key, err)
	}
	if !info.Mode().IsRegular() {
		return 0, fmt.Errorf("%s in %s is not a regular file", key, s.root)
	}
	return info.Size(), nil
}

// Delete removes the file of key, and any partial file a killed Put left beside it. Empty
// directories are left in place.
func (s *FS) Delete(_ context.Context, key string) error {
	name, err := fsName(key)
	if err != nil {
		return err
	}
	root, err := s.openRoot()
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		return err
	}
	defer func() { _ = root.Close() }()
	removed := false
	for _, n := range []string{name + partialSuffix, name} {
		switch err := root.Remove(n); {
		case err == nil:
			removed = true
		case !errors.Is(err, fs.ErrNotExist):
			return s.wrap("deleting", key, err)
		}
	}
	if !removed {
		return nil
	}
	return syncDir(root, path.Dir(name))
}

// openRoot opens the store's directory, which must exist: creating it would hide a volume
// that is not mounted where expected.
func (s *FS) openRoot() (*os.Root, error) {
	root, err := os.OpenRoot(s.root)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, notFoundError{fmt.Errorf("backup directory %s does not exist", s.root)}
		}
		return nil, fmt.Errorf("opening backup directory %s: %w", s.root, err)
	}
	return root, nil
}

// wrap describes err of doing what to key, and marks a missing file as ErrNotFound.
func (s *FS) wrap(what, key string, err error) error {
	err = fmt.Errorf("%s %s in %s: %w", what, key, s.root, err)
	if errors.Is(err, fs.ErrNotExist) {
		return notFoundError{err}
	}
	return err
}

// fsName checks that key is a clean relative path that stays inside the store, and returns
// it as an os.Root name.
func fsName(key string) (string, error) {
	if key == "" || strings.HasSuffix(key, "/") || !filepath.IsLocal(filepath.FromSlash(key)) ||
		path.Clean(key) != key || strings.HasSuffix(key, partialSuffix) {
		return "", fmt.Errorf("invalid artifact key %q: it must be a clean relative path inside the backup directory", key)
	}
	return key, nil
}

// syncDir flushes the directory dir of root, so that the entries created, renamed or
// removed in it survive a crash.
func syncDir(root *os.Root, dir string) error {
	d, err := root.Open(dir)
	if err != nil {
		return err
	}
	defer func() { _ = d.Close() }()
	return d.Sync()
}

// contextReader fails reads once ctx is done, so that copying a slow stream stops at the
// deadline.
type contextReader struct {
	ctx context.Context // lives for one copy, inside the call that received ctx
	r   io.Reader
}

func (c contextReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}
