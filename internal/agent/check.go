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
// at least the recorded one, the key count and (when from the same compaction) the hash
// equal. A difference, or a member that never answers, is VerificationFailed.
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
	h, err := cli.HashKV(ctx, cli.Endpoints()[0], cf.revision)
	if err != nil {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data cannot be hashed at revision %d: %w", cf.revision, err)
	}
	res.KVHash, res.HashCompactRevision = strconv.FormatUint(uint64(h.Hash), 16), h.CompactRevision
	res.HashChecked = cf.kvHash != "" && h.CompactRevision == cf.hashCompactRevision
	if res.HashChecked && res.KVHash != cf.kvHash {
		return failf(etcdv1alpha1.ReasonVerificationFailed, "the restored data's hash at revision %d is %s, the backup recorded %s: the keys or their history differ",
			cf.revision, res.KVHash, cf.kvHash)
	}
	return nil
}
