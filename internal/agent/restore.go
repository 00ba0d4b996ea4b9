package agent

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/storage/schema"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	backuppkg "github.com/etcdpilot/etcdpilot/internal/backup"
)

const (
	// stagingSuffix names the directory, beside the data directory, where a restore
	// prepares it: <data-dir>.restore.
	stagingSuffix = ".restore"
	// stagedSnapshot and stagedData are the snapshot and the data directory in it.
	stagedSnapshot = "snapshot.db"
	stagedData     = "data"
)

var (
	sha256Hex  = regexp.MustCompile(`^[0-9a-f]{64}$`)
	recoveryID = regexp.MustCompile(`^[0-9][0-9-]{0,62}$`)
)

// restoreFlags are the restore command's flags besides the store's.
type restoreFlags struct {
	sha256              string
	compression         string
	dataDir             string
	name                string
	initialCluster      string
	peerURLs            string
	initialClusterToken string
	bumpRevision        uint64
	markCompacted       bool
	recovery            string
	disableAuth         bool
}

func (r *restoreFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&r.sha256, "sha256", "", "Expected hex SHA-256 of the artifact; any other artifact is refused.")
	fs.StringVar(&r.compression, "compression", "",
		`The artifact's compression, "zstd", "gzip" or "none", as its backup's status says; empty: found from the artifact's first bytes.`)
	fs.StringVar(&r.dataDir, "data-dir", "", "etcd's --data-dir, which the restore creates.")
	fs.StringVar(&r.name, "name", "", "etcd's --name of the member.")
	fs.StringVar(&r.initialCluster, "initial-cluster", "", `etcd's --initial-cluster: "name=peerURL".`)
	fs.StringVar(&r.peerURLs, "initial-advertise-peer-urls", "", "etcd's --initial-advertise-peer-urls, comma-separated.")
	fs.StringVar(&r.initialClusterToken, "initial-cluster-token", "", "etcd's --initial-cluster-token of the new cluster.")
	fs.Uint64Var(&r.bumpRevision, "bump-revision", 0, "Add this to every revision (0: off); needs --mark-compacted.")
	fs.BoolVar(&r.markCompacted, "mark-compacted", false, "Mark the revisions up to the bumped one compacted; needs --bump-revision.")
	fs.BoolVar(&r.disableAuth, "disable-auth", false,
		"Turn etcd's authentication off in the restored data (users and roles stay): for a throwaway member that a client without identity checks.")
	fs.StringVar(&r.recovery, "recovery", "",
		"Recover a member that lost its quorum (recovery ID): the data directory it holds is replaced by the snapshot, once; --sha256 may be empty (the snapshot's own trailer is checked).")
}

// validate checks the flags and returns the declared compression ("" when not declared).
func (r *restoreFlags) validate() (etcdv1alpha1.BackupCompression, error) {
	switch {
	case r.recovery != "" && !recoveryID.MatchString(r.recovery):
		return "", fmt.Errorf("invalid arguments: --recovery must be a recovery ID (digits and '-'), not %q", r.recovery)
	case !sha256Hex.MatchString(r.sha256) && (r.recovery == "" || r.sha256 != ""):
		return "", fmt.Errorf("invalid arguments: --sha256 must be 64 lowercase hex digits, not %q", r.sha256)
	case r.dataDir == "" || filepath.Clean(r.dataDir) == "/":
		return "", errors.New("invalid arguments: --data-dir is required")
	case r.name == "" || r.initialCluster == "" || r.peerURLs == "" || r.initialClusterToken == "":
		return "", errors.New("invalid arguments: --name, --initial-cluster, --initial-advertise-peer-urls and --initial-cluster-token are required")
	case (r.bumpRevision > 0) != r.markCompacted:
		// etcdutl's library silently skips a bump without the mark; its CLI refuses both
		// halves alone, and so does the agent.
		return "", errors.New("invalid arguments: --bump-revision and --mark-compacted go together")
	}
	return parseCompression(r.compression, true)
}

// restore is the restore command. It builds the data directory of the first member of a
// new cluster from an artifact, in steps that make it safe to kill at any point and run
// again (an init container is restarted, and so is its pod):
//
//  1. If <data-dir>/member exists, an earlier run finished: report AlreadyRestored.
//  2. Remove what an interrupted run left in <data-dir>.restore.
//  3. Stream the artifact through SHA-256 and its decompressor to
//     <data-dir>.restore/snapshot.db. The format is read from the artifact's first bytes
//     (zstd, gzip, or an uncompressed bbolt database) and must be the one --compression
//     declares, when it does. Nothing is used before the artifact's SHA-256 matched
//     --sha256 (ChecksumMismatch).
//  4. Restore it with etcdutl's library into <data-dir>.restore/data, which also checks
//     the snapshot's own SHA-256 trailer, and make the result durable (fsync) and 0700.
//  5. Rename <data-dir>.restore/data to <data-dir>, atomically, and remove the rest.
//
// <data-dir>'s parent needs room for the snapshot twice (etcdutl copies it), and
// <data-dir> must be on the same filesystem as its parent. The process needs no
// privileges: it creates everything it writes and changes no owner.
func restore(ctx context.Context, args []string, env *environment) (res Result, err error) {
	fs := newFlagSet("restore", env)
	var sf storeFlags
	var rf restoreFlags
	sf.register(fs)
	rf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return Result{}, err
	}
	declared, err := rf.validate()
	if err != nil {
		return Result{}, err
	}
	dataDir := filepath.Clean(rf.dataDir)
	staging := dataDir + stagingSuffix

	done, err := restoredBefore(dataDir, rf.recovery)
	if err != nil || done {
		if done {
			_ = os.RemoveAll(staging) // left by a run killed after its rename
		}
		return Result{AlreadyRestored: done}, err
	}
	store, location, err := sf.open(env)
	if err != nil {
		return Result{}, err
	}

	if err := os.RemoveAll(staging); err != nil {
		return Result{}, fmt.Errorf("removing what an earlier restore left: %w", err)
	}
	if err := os.MkdirAll(staging, 0o700); err != nil {
		return Result{}, fmt.Errorf("creating %s: %w", staging, err)
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(staging) // the snapshot may be large: give its space back
		}
	}()

	snapshotPath := filepath.Join(staging, stagedSnapshot)
	got, err := fetch(ctx, store, artifactRef{key: sf.key, location: location, sha256: rf.sha256, compression: declared}, snapshotPath)
	if err != nil {
		return Result{}, err
	}
	staged := filepath.Join(staging, stagedData)
	if err := snapshot.NewV3(newLogger(env.stderr)).Restore(snapshot.RestoreConfig{
		SnapshotPath:        snapshotPath,
		Name:                rf.name,
		OutputDataDir:       staged,
		PeerURLs:            strings.Split(rf.peerURLs, ","),
		InitialCluster:      rf.initialCluster,
		InitialClusterToken: rf.initialClusterToken,
		SkipHashCheck:       false,
		RevisionBump:        rf.bumpRevision,
		MarkCompacted:       rf.markCompacted,
	}); err != nil {
		return Result{}, fmt.Errorf("restoring the snapshot of %s: %w", location, err)
	}
	if rf.disableAuth {
		if err := disableAuth(staged); err != nil {
			return Result{}, fmt.Errorf("turning authentication off in the restored data: %w", err)
		}
	}
	if err := place(staged, dataDir, rf.recovery); err != nil {
		return Result{}, err
	}
	_ = os.RemoveAll(staging)
	return Result{SHA256: got.sha256, Size: got.size, SnapshotSize: got.snapshotSize,
		Compression: string(got.compression), StreamSeconds: got.seconds}, nil
}

// disableAuth turns etcd's authentication off in the data directory dataDir, where etcd
// keeps it: the key authEnabled of its auth bucket. Users, roles and the key space stay as
// they are; data that never had authentication has no such bucket and is left alone.
func disableAuth(dataDir string) error {
	db, err := bolt.Open(filepath.Join(dataDir, "member", "snap", "db"), 0o600, &bolt.Options{Timeout: 10 * time.Second})
	if err != nil {
		return err
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(schema.Auth.Name())
		if b == nil || b.Get(schema.AuthEnabledKeyName) == nil {
			return nil
		}
		return b.Put(schema.AuthEnabledKeyName, []byte{0})
	})
	return errors.Join(err, db.Close())
}

// restoredBefore reports whether an earlier run finished: dataDir holds a member, or, for a
// recovery, the recovery replaced it.
func restoredBefore(dataDir, recovery string) (bool, error) {
	if recovery != "" {
		return recovered(dataDir, recovery)
	}
	return alreadyRestored(dataDir)
}

// place moves the restored data into place. For a recovery, the data the member held is
// replaced first (the snapshot was taken from it and restored: a crash from here on
// restores it again), and the recovery is recorded after.
func place(staged, dataDir, recovery string) error {
	if recovery != "" {
		if err := os.RemoveAll(dataDir); err != nil {
			return fmt.Errorf("removing the data the snapshot replaces: %w", err)
		}
	}
	if err := install(staged, dataDir); err != nil || recovery == "" {
		return err
	}
	if err := os.WriteFile(recoveredMarker(dataDir, recovery), nil, 0o600); err != nil {
		return fmt.Errorf("recording the recovery: %w", err)
	}
	if err := fsyncPath(filepath.Dir(dataDir)); err != nil {
		return fmt.Errorf("recording the recovery: %w", err)
	}
	return nil
}

// recoveredMarker is the file, beside the data directory, that records that recovery id
// replaced it.
func recoveredMarker(dataDir, id string) string { return dataDir + ".recovered-" + id }

// recovered reports whether recovery id has replaced dataDir already.
func recovered(dataDir, id string) (bool, error) {
	_, err := os.Stat(recoveredMarker(dataDir, id))
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	}
	return false, fmt.Errorf("checking for an earlier recovery: %w", err)
}

// alreadyRestored reports whether dataDir holds a member, and fails when it holds something
// else, which a restore would have to destroy.
func alreadyRestored(dataDir string) (bool, error) {
	if _, err := os.Stat(filepath.Join(dataDir, "member")); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, fmt.Errorf("checking for an earlier restore: %w", err)
	}
	entries, err := os.ReadDir(dataDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading data directory %s: %w", dataDir, err)
	case len(entries) > 0:
		return false, fmt.Errorf("data directory %s is not empty but holds no etcd member: refusing to replace what it holds (%s...)",
			dataDir, entries[0].Name())
	}
	return false, nil
}

// artifactRef is the artifact a restore fetches: its key and location in the store, its
// expected SHA-256, and its declared compression ("" when unknown).
type artifactRef struct {
	key, location, sha256 string
	compression           etcdv1alpha1.BackupCompression
}

// fetched describes an artifact fetched to disk.
type fetched struct {
	uploaded
	compression etcdv1alpha1.BackupCompression
	// seconds is how long the fetch took, from opening the artifact to the snapshot synced
	// to disk.
	seconds float64
}

// fetch streams the artifact ref names to dst, uncompressed, and fails unless the
// artifact's SHA-256 is ref.sha256. Its format comes from its first bytes, and must be
// ref.compression when that is set. The whole artifact is hashed even when it turns out
// not to be readable, so that a damaged or different artifact is reported as such, before
// what is wrong with its content.
func fetch(ctx context.Context, store artifact.Store, ref artifactRef, dst string) (fetched, error) {
	started := time.Now()
	r, err := store.Open(ctx, ref.key)
	if err != nil {
		return fetched{}, storeFailure(fmt.Errorf("fetching %s: %w", ref.location, err), etcdv1alpha1.ReasonRestoreFailed)
	}
	defer func() { _ = r.Close() }()
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fetched{}, err
	}
	defer func() { _ = f.Close() }()

	src := &errRecorder{r: r}
	digest := sha256.New()
	var stored, written counter
	raw := bufio.NewReaderSize(io.TeeReader(src, io.MultiWriter(digest, &stored)), 1<<20)
	out := &errRecorder{w: f}
	format, formatErr := sniff(raw, ref.compression)
	if formatErr == nil {
		if err := decompress(io.MultiWriter(out, &written), raw, format); err != nil {
			formatErr = fmt.Errorf("it is not a valid %s stream: %w", format, err)
		}
	}
	if out.err != nil {
		return fetched{}, fmt.Errorf("writing the snapshot to %s: %w", dst, out.err)
	}
	if _, err := io.Copy(io.Discard, raw); err != nil && src.err == nil {
		src.err = err
	}
	if src.err != nil {
		return fetched{}, storeFailure(fmt.Errorf("reading %s: %w", ref.location, src.err), etcdv1alpha1.ReasonRestoreFailed)
	}
	got := hex.EncodeToString(digest.Sum(nil))
	if ref.sha256 != "" && got != ref.sha256 {
		return fetched{}, failf(ReasonChecksumMismatch,
			"artifact %s has sha256 %s, expected %s: refusing to restore a corrupt or different backup", ref.location, got, ref.sha256)
	}
	if formatErr != nil {
		return fetched{}, fmt.Errorf("artifact %s has the expected sha256 but %w", ref.location, formatErr)
	}
	if err := f.Sync(); err != nil {
		return fetched{}, fmt.Errorf("writing the snapshot to %s: %w", dst, err)
	}
	if err := f.Close(); err != nil {
		return fetched{}, fmt.Errorf("writing the snapshot to %s: %w", dst, err)
	}
	return fetched{
		uploaded:    uploaded{sha256: got, size: stored.n, snapshotSize: written.n},
		compression: format,
		seconds:     time.Since(started).Seconds(),
	}, nil
}

// sniff reads the format of the artifact r starts, without consuming it, and checks it
// against the declared one ("" when unknown). The error completes "the artifact has the
// expected sha256 but".
func sniff(r *bufio.Reader, declared etcdv1alpha1.BackupCompression) (etcdv1alpha1.BackupCompression, error) {
	head, _ := r.Peek(backuppkg.SniffLen) // a shorter artifact is judged on what it has
	found := backuppkg.Sniff(head)
	switch {
	case found == "" && declared != "":
		return "", fmt.Errorf("it is not %s as declared, nor any format a backup writes: it starts with %x", declared, head)
	case found == "":
		return "", fmt.Errorf("it is neither zstd nor gzip nor an etcd snapshot (a bbolt database): it starts with %x", head)
	case declared != "" && found != declared:
		return "", fmt.Errorf("its compression was declared %s and it is %s: was the artifact replaced?", declared, found)
	}
	return found, nil
}

// errRecorder passes reads or writes through and records the first error other than
// io.EOF, telling the source's and the destination's errors from the decompressor's.
type errRecorder struct {
	r   io.Reader
	w   io.Writer
	err error
}

func (e *errRecorder) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil && !errors.Is(err, io.EOF) && e.err == nil {
		e.err = err
	}
	return n, err
}

func (e *errRecorder) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// install makes staged, a restored data directory, durable and private, and renames it to
// dataDir. The rename is the step that makes the restore visible, and is atomic.
func install(staged, dataDir string) error {
	if err := os.Chmod(staged, 0o700); err != nil { // etcd refuses a data directory others can read
		return err
	}
	if err := syncTree(staged); err != nil {
		return fmt.Errorf("flushing the restored data to disk: %w", err)
	}
	// An empty data directory (alreadyRestored refused any other) is removed first: Go's
	// os.Rename will not replace a directory. A crash in between leaves no data directory,
	// which the next run restores again.
	if err := os.Remove(dataDir); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("replacing the empty data directory (it must not be a mount point): %w", err)
	}
	if err := os.Rename(staged, dataDir); err != nil {
		return fmt.Errorf("moving the restored data into place (the data directory must be on the same filesystem as its parent): %w", err)
	}
	if err := fsyncPath(filepath.Dir(dataDir)); err != nil {
		return fmt.Errorf("flushing %s: %w", filepath.Dir(dataDir), err)
	}
	return nil
}

// syncTree flushes every file and directory under root to disk.
func syncTree(root string) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		return fsyncPath(path)
	})
}

// fsyncPath flushes the file or directory path to disk.
func fsyncPath(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }()
	return f.Sync()
}

// newLogger returns the logger etcdutl's restore logs its steps with: JSON lines to w, at
// info level, as etcd logs.
func newLogger(w io.Writer) *zap.Logger {
	enc := zap.NewProductionEncoderConfig()
	enc.EncodeTime = zapcore.ISO8601TimeEncoder
	return zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(enc), zapcore.AddSync(w), zapcore.InfoLevel))
}
