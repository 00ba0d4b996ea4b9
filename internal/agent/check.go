package agent

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"strconv"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// DefaultCheckTimeout bounds a check when --timeout is not given.
const DefaultCheckTimeout = 30 * time.Minute

// memberStartTimeout bounds the wait for the restored member's first answer: it starts
// beside the check, on data already restored, which takes seconds (a minute for gigabytes).
const memberStartTimeout = 5 * time.Minute

// checkFlags are the check command's flags.
type checkFlags struct {
	endpoint, sha256    string
	revision, keys      int64
	kvHash              string
	hashCompactRevision int64
	timeout             time.Duration
}

func (v *checkFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&v.endpoint, "endpoint", "", "Client URL of the throwaway member restored from the backup (plain http, loopback).")
	fs.StringVar(&v.sha256, "sha256", "", "The artifact's SHA-256, which the restore checked: reported with the result.")
	fs.Int64Var(&v.revision, "revision", 0, "The revision the backup recorded: the restored member must be at it or later.")
	fs.Int64Var(&v.keys, "keys", -1, "How many keys the backup recorded at --revision; -1: not recorded.")
	fs.StringVar(&v.kvHash, "kv-hash", "", "The HashKV at --revision the backup recorded, in hex; empty: not recorded.")
	fs.Int64Var(&v.hashCompactRevision, "hash-compact-revision", 0, "The compaction --kv-hash starts from.")
	fs.DurationVar(&v.timeout, "timeout", DefaultCheckTimeout, "Bound of the whole check, the member's start included.")
}

func (v *checkFlags) validate() error {
	switch {
	case v.endpoint == "":
		return errors.New("invalid arguments: --endpoint is required")
	case !sha256Hex.MatchString(v.sha256):
		return fmt.Errorf("invalid arguments: --sha256 must be 64 lowercase hex digits, not %q", v.sha256)
	case v.revision <= 0:
		return errors.New("invalid arguments: --revision must be positive")
	case v.hashCompactRevision > v.revision:
		// etcd hashes no revision before its compaction
		return errors.New("invalid arguments: --hash-compact-revision must not be past --revision")
	case v.timeout <= 0:
		return errors.New("invalid arguments: --timeout must be positive")
	}
	return nil
}

// check is the check command, the last step of a backup's verification. The verification
// Job restores the artifact with the restore command (which checks its SHA-256 and the
// snapshot's own trailer) and starts a throwaway member on it, of the etcd release the
// backup was taken from; check waits until that member answers, then asks it for its
// revision, its key count at the backup's revision and its HashKV there (which reads every
// key-value of that history), and compares them with what the backup recorded: the revision
// at least the recorded one, the key count and the hash (from the recorded compaction,
// compareHash) equal. A difference, or a member that never answers, is VerificationFailed.
// What was not recorded, or a hash that cannot be had from the recorded compaction, is not
// compared: KeysChecked and HashChecked say what was, HashNotCompared why the hash was not.
func check(ctx context.Context, args []string, env *environment) (Result, error) {
	fs := newFlagSet("check", env)
	var cf checkFlags
	cf.register(fs)
	if err := parseFlags(fs, args); err != nil {
		return Result{}, err
	}
	if err := cf.validate(); err != nil {
		return Result{}, err
	}
	ctx, cancel := context.WithTimeout(ctx, cf.timeout)
	defer cancel()
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{cf.endpoint}, DialTimeout: dialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return Result{}, failf(etcdv1alpha1.ReasonVerificationFailed, "etcd client for the restored member %s: %w", cf.endpoint, err)
	}
	defer func() { _ = cli.Close() }()
	res := Result{SHA256: cf.sha256}
	if err := compare(ctx, cli, cf, &res); err != nil {
		return Result{}, err
	}
	return res, nil
}

// compare reads the restored member's revision, key count and hash into res and fails with
// VerificationFailed when they are not what the backup recorded. It waits for the member's
// first answer: the member starts beside it.
func compare(ctx context.Context, cli *clientv3.Client, cf checkFlags, res *Result) error {
	var now *clientv3.GetResponse
	startBy := time.After(memberStartTimeout) // a member that cannot start on the data crash-loops: no need to wait for --timeout
	for {
		rctx, cancel := context.WithTimeout(ctx, statusTimeout)
		resp, err := cli.Get(rctx, allKeys, clientv3.WithFromKey(), clientv3.WithCountOnly())
		cancel()
		if err == nil {
			now = resp
			break
		}
		select {
		case <-ctx.Done():
			return failf(etcdv1alpha1.ReasonVerificationFailed, "the member restored from the backup never answered: %w", err)
		case <-startBy:
			return failf(etcdv1alpha1.ReasonVerificationFailed, "the member restored from the backup did not answer within %s of the check's start (its etcd container's log says why): %w",
				memberStartTimeout, err)
		case <-time.After(time.Second):
		}
	}
	res.RestoredRevision, res.Revision = now.Header.Revision, cf.revision
	if res.RestoredRevision < cf.revision {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data is at revision %d, before the revision %d the backup recorded",
			res.RestoredRevision, cf.revision)
	}
	at, err := cli.Get(ctx, allKeys, clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(cf.revision))
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be read at revision %d, which the backup recorded: %w", cf.revision, err)
	}
	n := at.Count
	res.Keys = &n
	if cf.keys >= 0 && n != cf.keys {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data holds %d keys at revision %d, the backup recorded %d", n, cf.revision, cf.keys)
	}
	res.KeysChecked = cf.keys >= 0
	return compareHash(ctx, cli, cf, res)
}

// compareHash hashes the restored data at cf.revision into res and compares the hash with
// the one the backup recorded. A HashKV covers the history from the member's compaction on,
// so two hashes compare only from the same compaction. The restored member starts at the
// compaction its snapshot holds, older than the recorded one when the cluster compacted
// between the snapshot and the hash: being a throwaway, it is compacted to the recorded one
// first, physically (etcd hashes what its store holds), which leaves it the history that
// hash covers. A restored member whose hash starts from a later compaction lacks part of
// that history: res.HashNotCompared says so, and the hash is not compared.
func compareHash(ctx context.Context, cli *clientv3.Client, cf checkFlags, res *Result) error {
	h, err := restoredHash(ctx, cli, cf.revision, res.RestoredRevision)
	if err == nil && cf.kvHash != "" && h.CompactRevision < cf.hashCompactRevision {
		if _, err := cli.Compact(ctx, cf.hashCompactRevision, clientv3.WithCompactPhysical()); err != nil {
			return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be compacted at revision %d, the compaction the backup's hash starts from: %w",
				cf.hashCompactRevision, err)
		}
		h, err = restoredHash(ctx, cli, cf.revision, res.RestoredRevision)
	}
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be hashed at revision %d: %w", cf.revision, err)
	}
	res.KVHash, res.HashCompactRevision = strconv.FormatUint(uint64(h.Hash), 16), h.CompactRevision
	switch {
	case cf.kvHash == "":
		res.HashNotCompared = "the backup recorded no hash"
	case h.CompactRevision != cf.hashCompactRevision:
		res.HashNotCompared = fmt.Sprintf("the backup's hash covers the history from %s, the restored member's from %s: hashes from different compactions do not compare",
			historyStart(cf.hashCompactRevision), historyStart(h.CompactRevision))
	case res.KVHash != cf.kvHash:
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data's hash at revision %d is %s, the backup recorded %s: the keys or their history differ",
			cf.revision, res.KVHash, cf.kvHash)
	default:
		res.HashChecked = true
	}
	return nil
}

// historyStart names where the history a hash from compaction rev covers starts, for a
// user: etcd gives no revision (0, or -1 from 3.6 on) for a member never compacted.
func historyStart(rev int64) string {
	if rev < 1 {
		return "its beginning (no compaction)"
	}
	return fmt.Sprintf("the compaction at revision %d", rev)
}

// restoredHash is the restored member's HashKV at rev; restored is the member's revision,
// which stays put (nothing writes to it). etcd answers a hash at a revision it compacted at
// from the hash that compaction computed, which starts from the compaction before; asked for
// revision 0, it hashes its current revision afresh, from its current compaction. A member
// compacted at its own revision is thus asked for revision 0.
func restoredHash(ctx context.Context, cli *clientv3.Client, rev, restored int64) (*clientv3.HashKVResponse, error) {
	if rev == restored {
		rev = 0
	}
	return cli.HashKV(ctx, cli.Endpoints()[0], rev)
}
