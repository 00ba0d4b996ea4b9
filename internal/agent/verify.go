package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.etcd.io/etcd/server/v3/embed"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// DefaultVerifyTimeout bounds a verification when --timeout is not given.
const DefaultVerifyTimeout = 30 * time.Minute

// verifyMemberName names the throwaway member a verification starts.
const verifyMemberName = "verify"

// verifyQuota is the throwaway member's quota: the largest any EtcdCluster may set, so that
// no database a backup can hold is refused.
const verifyQuota = 8 << 30

// verifyFlags are the verify command's flags besides the store's.
type verifyFlags struct {
	sha256, compression, workDir string
	revision                     int64
	keys                         int64
	kvHash                       string
	hashCompactRevision          int64
	timeout                      time.Duration
}

func (v *verifyFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.sha256, "sha256", "", "Expected hex SHA-256 of the artifact, as the backup recorded it.")
	fs.StringVar(&v.compression, "compression", "", `The artifact's compression, "zstd", "gzip" or "none"; empty: found from its first bytes.`)
	fs.StringVar(&v.workDir, "work-dir", "", "An empty directory with room for the snapshot three times: fetched, restored, and the member's files.")
	fs.Int64Var(&v.revision, "revision", 0, "The revision the backup recorded: the restored member must be at it or later.")
	fs.Int64Var(&v.keys, "keys", -1, "How many keys the backup recorded at --revision; -1: not recorded.")
	fs.StringVar(&v.kvHash, "kv-hash", "", "The HashKV at --revision the backup recorded, in hex; empty: not recorded.")
	fs.Int64Var(&v.hashCompactRevision, "hash-compact-revision", 0, "The compaction --kv-hash starts from.")
	fs.DurationVar(&v.timeout, "timeout", DefaultVerifyTimeout, "Bound of the whole verification.")
}

func (v *verifyFlags) validate() (etcdv1alpha1.BackupCompression, error) {
	switch {
	case !sha256Hex.MatchString(v.sha256):
		return "", fmt.Errorf("invalid arguments: --sha256 must be 64 lowercase hex digits, not %q", v.sha256)
	case v.workDir == "" || filepath.Clean(v.workDir) == "/":
		return "", errors.New("invalid arguments: --work-dir is required")
	case v.revision <= 0:
		return "", errors.New("invalid arguments: --revision must be positive")
	case v.timeout <= 0:
		return "", errors.New("invalid arguments: --timeout must be positive")
	}
	return parseCompression(v.compression, true)
}

// verify is the verify command: it proves that a backup restores. In --work-dir it
//
//  1. fetches the artifact, which must have the SHA-256 the backup recorded
//     (ChecksumMismatch otherwise), and decompresses it;
//  2. restores it with etcdutl's library, which checks the snapshot's own SHA-256 trailer;
//  3. starts a throwaway single member on the restored data, on loopback, and asks it for
//     its revision, its key count at the backup's revision and its HashKV there (which
//     reads every key-value of that history);
//  4. compares: the revision at least the backup's, the key count and (when taken from
//     the same compaction) the hash equal to what the backup recorded. A difference is
//     VerificationFailed, saying what differs.
//
// Everything it wrote is removed when it ends, whatever the outcome.
func verify(ctx context.Context, args []string, env *environment) (res Result, err error) {
	fs := newFlagSet("verify", env)
	var sf storeFlags
	var vf verifyFlags
	sf.register(fs)
	vf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return Result{}, err
	}
	declared, err := vf.validate()
	if err != nil {
		return Result{}, err
	}
	store, location, err := sf.open(env)
	if err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, vf.timeout)
	defer cancel()
	work, err := os.MkdirTemp(vf.workDir, "verify-")
	if err != nil {
		return Result{}, fmt.Errorf("creating a directory in %s: %w", vf.workDir, err)
	}
	defer func() { _ = os.RemoveAll(work) }()

	snapshotPath := filepath.Join(work, stagedSnapshot)
	got, err := fetch(ctx, store, artifactRef{key: sf.key, location: location, sha256: vf.sha256, compression: declared}, snapshotPath)
	if err != nil {
		return Result{}, err
	}
	res = Result{SHA256: got.sha256, Size: got.size, SnapshotSize: got.snapshotSize, Compression: string(got.compression), StreamSeconds: got.seconds}
	peer, clientURL, err := loopbackURLs()
	if err != nil {
		return Result{}, err
	}
	dataDir := filepath.Join(work, stagedData)
	if err := snapshot.NewV3(newLogger(env.stderr)).Restore(snapshot.RestoreConfig{
		SnapshotPath: snapshotPath, Name: verifyMemberName, OutputDataDir: dataDir,
		PeerURLs: []string{peer.String()}, InitialCluster: verifyMemberName + "=" + peer.String(),
		InitialClusterToken: verifyMemberName,
	}); err != nil {
		return Result{}, failf(etcdv1alpha1.ReasonVerificationFailed, "the snapshot of %s does not restore: %w", location, err)
	}
	_ = os.Remove(snapshotPath) // its room goes to the member
	member, err := startThrowaway(ctx, dataDir, peer, clientURL)
	if err != nil {
		return Result{}, err
	}
	defer member.Close()
	cli := v3client.New(member.Server)
	defer func() { _ = cli.Close() }()
	if err := check(ctx, cli, vf, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// check reads the restored member's revision, key count and hash into res and fails with
// VerificationFailed when they are not what the backup recorded.
func check(ctx context.Context, cli *clientv3.Client, vf verifyFlags, res *Result) error {
	now, err := cli.Get(ctx, allKeys, clientv3.WithFromKey(), clientv3.WithCountOnly())
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored member does not answer a read: %w", err)
	}
	res.RestoredRevision = now.Header.Revision
	res.Revision = vf.revision
	if res.RestoredRevision < vf.revision {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data is at revision %d, before the revision %d the backup recorded",
			res.RestoredRevision, vf.revision)
	}
	at, err := cli.Get(ctx, allKeys, clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(vf.revision))
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be read at revision %d, which the backup recorded: %w", vf.revision, err)
	}
	n := at.Count
	res.Keys = &n
	if vf.keys >= 0 && n != vf.keys {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data holds %d keys at revision %d, the backup recorded %d", n, vf.revision, vf.keys)
	}
	res.KeysChecked = vf.keys >= 0
	h, err := cli.HashKV(ctx, "", vf.revision)
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be hashed at revision %d: %w", vf.revision, err)
	}
	res.KVHash, res.HashCompactRevision = strconv.FormatUint(uint64(h.Hash), 16), h.CompactRevision
	res.HashChecked = vf.kvHash != "" && h.CompactRevision == vf.hashCompactRevision
	if res.HashChecked && res.KVHash != vf.kvHash {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data's hash at revision %d is %s, the backup recorded %s: the keys or their history differ",
			vf.revision, res.KVHash, vf.kvHash)
	}
	return nil
}

// startThrowaway starts a single etcd member on dataDir, listening on loopback only, and
// waits until it serves.
func startThrowaway(ctx context.Context, dataDir string, peer, clientURL *url.URL) (*embed.Etcd, error) {
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = verifyMemberName, dataDir
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*peer}, []url.URL{*peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*clientURL}, []url.URL{*clientURL}
	cfg.InitialCluster = verifyMemberName + "=" + peer.String()
	cfg.InitialClusterToken = verifyMemberName
	cfg.QuotaBackendBytes = verifyQuota
	cfg.LogLevel, cfg.LogOutputs = "error", []string{"stderr"}
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, failf(etcdv1alpha1.ReasonVerificationFailed, "a member on the restored data does not start: %w", err)
	}
	select {
	case <-e.Server.ReadyNotify():
		return e, nil
	case err := <-e.Err():
		e.Close()
		return nil, failf(etcdv1alpha1.ReasonVerificationFailed, "the member on the restored data stopped: %w", err)
	case <-ctx.Done():
		e.Close()
		return nil, failf(etcdv1alpha1.ReasonBackupTimeout, "the member on the restored data did not start in time: %w", ctx.Err())
	}
}

// loopbackURLs picks two free ports of 127.0.0.1 for the throwaway member's peer and
// client URLs. It runs in the verification pod's own network namespace, where nothing
// else listens.
func loopbackURLs() (peer, client *url.URL, err error) {
	var ports [2]int
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, nil, fmt.Errorf("finding a free port on loopback: %w", err)
		}
		ports[i] = l.Addr().(*net.TCPAddr).Port
		_ = l.Close()
	}
	return &url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[0])},
		&url.URL{Scheme: "http", Host: "127.0.0.1:" + strconv.Itoa(ports[1])}, nil
}
