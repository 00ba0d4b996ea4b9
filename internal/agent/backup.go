package agent

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	backuppkg "github.com/etcdpilot/etcdpilot/internal/backup"
)

const (
	// DefaultBackupTimeout bounds a backup when --timeout is not given; it is the default
	// of EtcdBackup spec.timeout.
	DefaultBackupTimeout = 30 * time.Minute

	// statusTimeout bounds the first call to the member: a member that does not answer it
	// is not available, however long the backup may take.
	statusTimeout = 30 * time.Second
	// probeTimeout bounds the status call to each member when the agent chooses one: as
	// strict as the operator's health check, so that a member that is down costs the
	// backup seconds, not minutes. The members are asked at the same time.
	probeTimeout = 5 * time.Second
	// chooseWithin bounds how long the agent keeps asking the members, chooseEvery apart,
	// when none is fit to be snapshotted: a member that misses one probe (an election, a
	// slow disk, a loaded node) does not fail the backup for good, and one that stays down
	// fails it in about as long as statusTimeout.
	chooseWithin = 30 * time.Second
	chooseEvery  = 2 * time.Second
	// memberListTimeout bounds the call that finds the member's name, which is optional.
	memberListTimeout = 10 * time.Second
	// dialTimeout bounds each connection attempt to the member.
	dialTimeout = 10 * time.Second
)

// errStoreGaveUp is what the snapshot stream sees when the store stopped reading it.
var errStoreGaveUp = errors.New("the store stopped reading the snapshot")

// backupFlags are the backup command's flags besides the store's.
type backupFlags struct {
	endpoint, endpoints  string
	cacert, cert, keyPEM string
	timeout              time.Duration
	compression          string
}

// validate checks the flags and returns the compression they choose.
func (bf backupFlags) validate() (etcdv1alpha1.BackupCompression, error) {
	if (bf.endpoint == "") == (bf.endpoints == "") {
		return "", errors.New("invalid arguments: give one of --endpoint and --endpoints")
	}
	if bf.timeout <= 0 {
		return "", errors.New("invalid arguments: --timeout must be positive")
	}
	return parseCompression(bf.compression, false)
}

// backup is the backup command. It connects to the one member --endpoint names (no
// endpoint discovery: the operator chose that member), reads its status, then streams its
// snapshot through a pipeline that never holds the snapshot whole:
//
//	etcd snapshot stream -> count (snapshotSize) and check etcd's own SHA-256 trailer
//	  -> --compression (zstd, gzip or none) -> SHA-256 and count (sha256, size) -> store.Put
//
// The artifact is stored only if the whole stream arrived and its trailer matched. The
// result says which compression was used, and how long the stream took from its opening
// to the store's acknowledgment (streamSeconds): the backup's throughput, without the
// pod's start.
//
// Revision: etcd 3.6 sends no response header with the snapshot stream (SnapshotWithVersion
// returns a nil Header), so the revision reported is that of the member's Status, taken
// just before the snapshot: a lower bound, as every key at that revision is in the
// snapshot. Should a later etcd fill the snapshot's header, its exact revision is used.
func backup(ctx context.Context, args []string, env *environment) (Result, error) {
	fs := newFlagSet("backup", env)
	var sf storeFlags
	var bf backupFlags
	sf.register(fs)
	fs.StringVar(&bf.endpoint, "endpoint", "", "Client URL of the etcd member to snapshot.")
	fs.StringVar(&bf.endpoints, "endpoints", "",
		"Instead of --endpoint, the members to choose from, as name=clientURL,...: the snapshot comes from the healthiest, a current follower rather than the leader.")
	fs.StringVar(&bf.cacert, "etcd-cacert", "", "PEM CA bundle that signed the member's serving certificate.")
	fs.StringVar(&bf.cert, "etcd-cert", "", "PEM client certificate for etcd.")
	fs.StringVar(&bf.keyPEM, "etcd-key", "", "PEM key of the client certificate.")
	fs.DurationVar(&bf.timeout, "timeout", DefaultBackupTimeout, "Bound of the whole backup.")
	fs.StringVar(&bf.compression, "compression", string(backuppkg.DefaultCompression),
		`How the snapshot is compressed: "zstd", "gzip" or "none" (EtcdBackup spec.compression).`)
	if err := parseFlags(fs, args); err != nil {
		return Result{}, err
	}
	compression, err := bf.validate()
	if err != nil {
		return Result{}, err
	}
	store, location, err := sf.open(env)
	if err != nil {
		return Result{}, err
	}
	tlsConfig, err := clientTLS(bf.cacert, bf.cert, bf.keyPEM)
	if err != nil {
		return Result{}, err
	}
	chosen := ""
	if bf.endpoints != "" {
		c, err := chooseMemberWithin(ctx, tlsConfig, bf.endpoints, chooseWithin, chooseEvery)
		if err != nil {
			return Result{}, err
		}
		bf.endpoint, chosen = c.ClientURL, c.Name
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:        []string{bf.endpoint},
		TLS:              tlsConfig,
		DialTimeout:      dialTimeout,
		Logger:           zap.NewNop(), // failures reach the result; the client's retry logs would bury them
		AutoSyncInterval: 0,
		RejectOldCluster: false,
	})
	if err != nil {
		return Result{}, failf(etcdv1alpha1.ReasonClusterNotAvailable, "etcd client for %s: %w", bf.endpoint, err)
	}
	defer func() { _ = cli.Close() }()

	ctx, cancel := context.WithTimeout(ctx, bf.timeout)
	defer cancel()
	res, err := memberInfo(ctx, cli, bf.endpoint)
	if err != nil {
		return Result{}, err
	}
	if res.Member == "" {
		res.Member = chosen
	}
	started := time.Now()
	snap, err := cli.SnapshotWithVersion(ctx)
	if err != nil {
		return Result{}, backupFailure(ctx, bf.timeout, fail(etcdv1alpha1.ReasonSnapshotFailed,
			fmt.Errorf("opening the snapshot stream of %s: %w", bf.endpoint, err)))
	}
	defer func() { _ = snap.Snapshot.Close() }()
	if snap.Header != nil && snap.Header.Revision > 0 {
		res.Revision = snap.Header.Revision
	}

	up, err := upload(ctx, store, sf.key, snap.Snapshot, compression)
	if err != nil {
		var srcErr *sourceError
		if errors.As(err, &srcErr) {
			err = fail(etcdv1alpha1.ReasonSnapshotFailed, fmt.Errorf("streaming the snapshot of %s: %w", bf.endpoint, srcErr.err))
		} else {
			err = storeFailure(fmt.Errorf("writing the artifact to %s: %w", location, err), etcdv1alpha1.ReasonBackupPodFailed)
		}
		return Result{}, backupFailure(ctx, bf.timeout, err)
	}
	res.SHA256, res.Size, res.SnapshotSize = up.sha256, up.size, up.snapshotSize
	res.Compression, res.StreamSeconds = string(compression), time.Since(started).Seconds()
	res.Keys, res.KVHash, res.HashCompactRevision = content(ctx, cli, bf.endpoint, res.Revision)
	return res, nil
}

// content reads, from the member the snapshot came from, how many keys the cluster held at
// rev and the member's HashKV at rev: what a verification compares the member restored
// from the snapshot with. Either is left out when the member cannot answer (a compaction
// past rev meanwhile): the verification then checks what was recorded.
func content(ctx context.Context, cli *clientv3.Client, endpoint string, rev int64) (keys *int64, hash string, compact int64) {
	cctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	current := int64(0)
	if resp, err := cli.Get(cctx, allKeys, clientv3.WithFromKey(), clientv3.WithCountOnly(), clientv3.WithRev(rev), clientv3.WithSerializable()); err == nil {
		n := resp.Count
		keys, current = &n, resp.Header.Revision
	}
	if h, err := kvHash(cctx, cli, endpoint, rev, current); err == nil {
		hash, compact = strconv.FormatUint(uint64(h.Hash), 16), h.CompactRevision
	}
	return keys, hash, compact
}

// kvHash is the member's HashKV at rev; current is the member's revision as last seen (0:
// unknown). etcd answers a hash at a revision it compacted at from the hash that compaction
// computed, which starts from the compaction before: a snapshot taken after that compaction
// lacks the history between the two, so no member restored from it could ever give that hash
// again. Asked for revision 0, etcd hashes its current revision afresh, from its current
// compaction: while the member is still at rev, that is the hash at rev (on an idle cluster,
// the one most likely to be backed up at the very revision it compacted at). The response's
// header holds the revision hashed: after a write in between, the hash is asked for at rev.
func kvHash(ctx context.Context, cli *clientv3.Client, endpoint string, rev, current int64) (*clientv3.HashKVResponse, error) {
	if current == rev {
		if h, err := cli.HashKV(ctx, endpoint, 0); err == nil && h.Header.Revision == rev {
			return h, nil
		}
	}
	return cli.HashKV(ctx, endpoint, rev)
}

// allKeys with clientv3.WithFromKey ranges over every key.
const allKeys = "\x00"

// memberInfo reads the member's status (its ID, cluster, version and revision) and, when
// it can, its name. A member that does not answer is ClusterNotAvailable.
func memberInfo(ctx context.Context, cli *clientv3.Client, endpoint string) (Result, error) {
	sctx, cancel := context.WithTimeout(ctx, statusTimeout)
	defer cancel()
	status, err := cli.Status(sctx, endpoint)
	if err != nil {
		return Result{}, failf(etcdv1alpha1.ReasonClusterNotAvailable, "etcd member %s did not answer: %w", endpoint, err)
	}
	res := Result{
		Revision:    status.Header.Revision,
		EtcdVersion: status.Version,
		MemberID:    strconv.FormatUint(status.Header.MemberId, 16),
		ClusterID:   strconv.FormatUint(status.Header.ClusterId, 16),
	}
	lctx, cancel := context.WithTimeout(ctx, memberListTimeout)
	defer cancel()
	if members, err := cli.MemberList(lctx); err == nil {
		for _, m := range members.Members {
			if m.ID == status.Header.MemberId {
				res.Member = m.Name
			}
		}
	}
	return res, nil
}

// backupFailure reports err as a timeout when the backup ran out of time, and as an
// interruption when it was cancelled: whatever failed then failed because of that.
func backupFailure(ctx context.Context, timeout time.Duration, err error) error {
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return &failure{reason: etcdv1alpha1.ReasonBackupTimeout,
			err: fmt.Errorf("the backup did not finish within %s: %w", timeout, err)}
	case ctx.Err() != nil:
		return &failure{reason: etcdv1alpha1.ReasonBackupPodFailed,
			err: fmt.Errorf("the backup was interrupted: %w", err)}
	}
	return err
}

// uploaded describes a stored artifact.
type uploaded struct {
	sha256       string
	size         int64
	snapshotSize int64
}

// sourceError marks an error of the snapshot stream, as opposed to one of the store.
type sourceError struct{ err error }

func (e *sourceError) Error() string { return e.err.Error() }
func (e *sourceError) Unwrap() error { return e.err }

// upload stores the snapshot src under key, compressed with c. Compression runs in its own
// goroutine, feeding store.Put through a pipe, so memory holds the compressor's window and
// blocks and the store's buffer, never the snapshot. The artifact is stored only if src
// ended cleanly and etcd's checksum trailer matched; an error of src comes back as a
// *sourceError.
func upload(ctx context.Context, store artifact.Store, key string, src io.Reader, c etcdv1alpha1.BackupCompression) (uploaded, error) {
	pr, pw := io.Pipe()
	digest := sha256.New()
	var stored counter
	trailer := &trailerCheck{hash: sha256.New()}
	produced := make(chan error, 1)
	go func() {
		err := compress(io.MultiWriter(pw, digest, &stored), io.TeeReader(src, trailer), trailer, c)
		_ = pw.CloseWithError(err) // nil: the store reads io.EOF
		produced <- err
	}()
	putErr := store.Put(ctx, key, pr)
	_ = pr.CloseWithError(errStoreGaveUp) // unblocks the producer if Put returned early
	srcErr := <-produced

	switch {
	case srcErr != nil && !errors.Is(srcErr, errStoreGaveUp):
		if putErr == nil {
			// Cannot happen (Put only succeeds on io.EOF), but a stored artifact that
			// missed part of the snapshot must not survive.
			_ = store.Delete(context.WithoutCancel(ctx), key)
		}
		return uploaded{}, &sourceError{srcErr}
	case putErr != nil:
		return uploaded{}, putErr
	}
	return uploaded{sha256: hex.EncodeToString(digest.Sum(nil)), size: stored.n, snapshotSize: trailer.n}, nil
}

// compress writes src, compressed with c, to dst, and fails unless the snapshot's checksum
// trailer matched.
func compress(dst io.Writer, src io.Reader, trailer *trailerCheck, c etcdv1alpha1.BackupCompression) error {
	w, err := newCompressor(dst, c)
	if err != nil {
		return err
	}
	if _, err := io.Copy(w, src); err != nil {
		_ = w.Close() // stops the compressor's goroutines; the stream is abandoned
		return err
	}
	if err := trailer.check(); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// counter counts the bytes written to it.
type counter struct{ n int64 }

func (c *counter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// trailerCheck verifies the SHA-256 etcd appends to a snapshot stream: the stream is a
// bbolt database followed by the 32-byte SHA-256 of that database. It hashes everything
// written to it but the last 32 bytes, which it keeps, and check compares the two. This is
// the check `etcdutl snapshot restore` makes; making it here fails a backup whose stream
// was cut or damaged, instead of a restore months later.
type trailerCheck struct {
	hash hash.Hash
	tail []byte
	n    int64
}

func (t *trailerCheck) Write(p []byte) (int, error) {
	t.n += int64(len(p))
	if len(p) >= sha256.Size {
		_, _ = t.hash.Write(t.tail)
		_, _ = t.hash.Write(p[:len(p)-sha256.Size])
		t.tail = append(t.tail[:0], p[len(p)-sha256.Size:]...)
		return len(p), nil
	}
	t.tail = append(t.tail, p...)
	if over := len(t.tail) - sha256.Size; over > 0 {
		_, _ = t.hash.Write(t.tail[:over])
		t.tail = append(t.tail[:0], t.tail[over:]...)
	}
	return len(p), nil
}

// check reports whether the stream ended with the SHA-256 of what came before it.
func (t *trailerCheck) check() error {
	// etcd's own test for a trailer: a database is a whole number of 512-byte sectors.
	if t.n%512 != sha256.Size {
		return fmt.Errorf("the snapshot stream is %d bytes long, which is not a database followed by its SHA-256: it was cut short", t.n)
	}
	if sum := t.hash.Sum(nil); string(sum) != string(t.tail) {
		return fmt.Errorf("the snapshot's SHA-256 trailer %x does not match its content %x: the stream was damaged", t.tail, sum)
	}
	return nil
}

// clientTLS returns the TLS configuration for etcd from PEM files, or nil when none is
// given (plain http).
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	if caFile == "" && certFile == "" && keyFile == "" {
		return nil, nil
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("reading the etcd CA: %w", err)
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("the etcd CA %s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("invalid arguments: --etcd-cert and --etcd-key go together")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("reading the etcd client certificate: %w", err)
		}
		cfg.Certificates = []tls.Certificate{pair}
	}
	return cfg, nil
}

// chooseMemberWithin is chooseMember asked again, every pause, while no member is fit and
// within has not passed; its last answer is the one returned.
func chooseMemberWithin(ctx context.Context, tlsConfig *tls.Config, list string, within, pause time.Duration) (backuppkg.Candidate, error) {
	deadline := time.Now().Add(within)
	for {
		c, err := chooseMember(ctx, tlsConfig, list)
		var f *failure
		if err == nil || !errors.As(err, &f) || f.reason != etcdv1alpha1.ReasonClusterNotAvailable || time.Now().Add(pause).After(deadline) {
			return c, err
		}
		select {
		case <-ctx.Done():
			return c, err
		case <-time.After(pause):
		}
	}
}

// chooseMember asks every member of list (name=clientURL,...) for its status, all at once,
// and returns the one the snapshot should come from (backup.ChooseMember): a healthy,
// current follower rather than the leader. A member that does not answer within
// probeTimeout is unhealthy.
func chooseMember(ctx context.Context, tlsConfig *tls.Config, list string) (backuppkg.Candidate, error) {
	var candidates []backuppkg.Candidate
	var urls []string
	for _, entry := range strings.Split(list, ",") {
		name, url, ok := strings.Cut(entry, "=")
		if !ok || name == "" || url == "" {
			return backuppkg.Candidate{}, fmt.Errorf("invalid arguments: --endpoints entry %q is not name=clientURL", entry)
		}
		candidates = append(candidates, backuppkg.Candidate{Name: name, ClientURL: url})
		urls = append(urls, url)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: urls, TLS: tlsConfig, DialTimeout: dialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return backuppkg.Candidate{}, failf(etcdv1alpha1.ReasonClusterNotAvailable, "etcd client for %s: %w", list, err)
	}
	defer func() { _ = cli.Close() }()
	var wg sync.WaitGroup
	for i := range candidates {
		c := &candidates[i] // each goroutine writes its own candidate only
		wg.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			st, err := cli.Status(sctx, c.ClientURL)
			if err != nil {
				return
			}
			c.ID, c.Healthy = st.Header.MemberId, len(st.Errors) == 0
			c.Leader, c.Learner = st.Leader == st.Header.MemberId, st.IsLearner
			c.RaftIndex, c.DBSize = st.RaftIndex, st.DbSize
		})
	}
	wg.Wait()
	chosen, err := backuppkg.ChooseMember(candidates)
	if err != nil {
		return backuppkg.Candidate{}, fail(etcdv1alpha1.ReasonClusterNotAvailable, err)
	}
	return chosen, nil
}
