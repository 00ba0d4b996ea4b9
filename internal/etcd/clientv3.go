package etcd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"go.etcd.io/etcd/api/v3/authpb"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdpilot/etcdpilot/internal/auth"
)

// healthKey is the key Health reads, the same one etcdctl endpoint health reads.
const healthKey = "health"

// New returns a Client for the cluster behind cfg.Endpoints. It does not wait for a
// connection: an unreachable cluster shows up as errors of the first calls, not of New, so
// New only fails on an invalid Config.
//
// The client logs nothing (clientv3's own retry and balancer logs would drown the operator's;
// what matters reaches the caller as an error), does not sync its endpoint list from the
// member list (the operator chooses the endpoints) and does not refuse old clusters (the
// operator manages etcd versions itself).
func New(cfg Config) (Client, error) {
	cli, err := newClientv3(cfg, cfg.Endpoints)
	if err != nil {
		return nil, err
	}
	return &client{cfg: cfg, cli: cli}, nil
}

// New must keep satisfying Factory, which is how the controller gets it.
var _ Factory = New

// newClientv3 builds a clientv3.Client from cfg for the given endpoints, which are either
// cfg.Endpoints or the single member a call has to reach.
func newClientv3(cfg Config, endpoints []string) (*clientv3.Client, error) {
	if len(endpoints) == 0 {
		return nil, errors.New("etcd client: no endpoints")
	}
	dialTimeout := cfg.DialTimeout
	if dialTimeout == 0 {
		dialTimeout = DefaultDialTimeout
	}
	cli, err := clientv3.New(clientv3.Config{
		Endpoints:        endpoints,
		TLS:              cfg.TLS,
		DialTimeout:      dialTimeout,
		Logger:           zap.NewNop(),
		RejectOldCluster: false,
		AutoSyncInterval: 0,
	})
	if err != nil {
		return nil, fmt.Errorf("etcd client for %v: %w", endpoints, err)
	}
	return cli, nil
}

// client is the Client backed by clientv3.
type client struct {
	cfg Config
	cli *clientv3.Client
}

func (c *client) MemberList(ctx context.Context) ([]Member, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.MemberList(ctx)
	if err != nil {
		return nil, fmt.Errorf("listing etcd members: %w", err)
	}
	return toMembers(resp.Members), nil
}

func (c *client) MemberAddAsLearner(ctx context.Context, peerURLs []string) (Member, []Member, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.MemberAddAsLearner(ctx, peerURLs)
	if err != nil {
		return Member{}, nil, fmt.Errorf("adding etcd learner %v: %w", peerURLs, err)
	}
	return toMember(resp.Member), toMembers(resp.Members), nil
}

func (c *client) MemberAdd(ctx context.Context, peerURLs []string) (Member, []Member, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.MemberAdd(ctx, peerURLs)
	if err != nil {
		return Member{}, nil, fmt.Errorf("adding etcd member %v: %w", peerURLs, err)
	}
	return toMember(resp.Member), toMembers(resp.Members), nil
}

func (c *client) MemberPromote(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.MemberPromote(ctx, id); err != nil {
		return fmt.Errorf("promoting etcd learner %s: %w", hexID(id), err)
	}
	return nil
}

func (c *client) MemberRemove(ctx context.Context, id uint64) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.MemberRemove(ctx, id); err != nil {
		return fmt.Errorf("removing etcd member %s: %w", hexID(id), err)
	}
	return nil
}

func (c *client) MoveLeader(ctx context.Context, transfereeID uint64) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	leader, err := c.leaderEndpoint(ctx)
	if err != nil {
		return fmt.Errorf("moving etcd leadership to %s: %w", hexID(transfereeID), err)
	}
	// clientv3 sends MoveLeader over its balanced connection, which may reach any of the
	// configured endpoints; a client of the leader's endpoint alone makes sure it is the
	// leader that gets it.
	err = c.withEndpoint(leader, func(cli *clientv3.Client) error {
		_, err := cli.MoveLeader(ctx, transfereeID)
		return err
	})
	if err != nil {
		return fmt.Errorf("moving etcd leadership to %s via %s: %w", hexID(transfereeID), leader, err)
	}
	return nil
}

// leaderEndpoint asks every configured endpoint for its status at once and returns the first
// one that reports being the leader. Asking in parallel keeps a down member from using up the
// deadline before the leader is asked.
func (c *client) leaderEndpoint(ctx context.Context) (string, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the status calls still running once the leader is known
	type result struct {
		status MemberStatus
		err    error
	}
	results := make(chan result, len(c.cfg.Endpoints))
	for _, endpoint := range c.cfg.Endpoints {
		go func() {
			status, err := c.status(ctx, endpoint)
			results <- result{status: status, err: err}
		}()
	}
	var errs []error
	for range c.cfg.Endpoints {
		r := <-results
		if r.err != nil {
			errs = append(errs, r.err)
			continue
		}
		if r.status.LeaderID != 0 && r.status.MemberID == r.status.LeaderID {
			return r.status.Endpoint, nil
		}
	}
	if len(errs) > 0 {
		return "", fmt.Errorf("no endpoint of %v is the leader: %w", c.cfg.Endpoints, errors.Join(errs...))
	}
	return "", fmt.Errorf("no endpoint of %v is the leader", c.cfg.Endpoints)
}

func (c *client) Status(ctx context.Context, endpoint string) (MemberStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	return c.status(ctx, endpoint)
}

// status is Status without the cap, for callers that already applied it.
func (c *client) status(ctx context.Context, endpoint string) (MemberStatus, error) {
	// Maintenance.Status dials endpoint itself, whatever the configured endpoints are.
	resp, err := c.cli.Status(ctx, endpoint)
	if err != nil {
		return MemberStatus{}, fmt.Errorf("etcd status of %s: %w", endpoint, err)
	}
	return MemberStatus{
		Endpoint:         endpoint,
		MemberID:         resp.Header.GetMemberId(),
		LeaderID:         resp.Leader,
		Version:          resp.Version,
		DBSize:           resp.DbSize,
		DBSizeInUse:      resp.DbSizeInUse,
		RaftIndex:        resp.RaftIndex,
		RaftAppliedIndex: resp.RaftAppliedIndex,
		RaftTerm:         resp.RaftTerm,
		Revision:         resp.Header.GetRevision(),
		IsLearner:        resp.IsLearner,
		Errors:           slices.Clone(resp.Errors),
	}, nil
}

func (c *client) Health(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	// A KV read goes over the balanced connection, so it needs a client of endpoint alone
	// to be sure it is that member answering.
	err := c.withEndpoint(endpoint, func(cli *clientv3.Client) error {
		_, err := cli.Get(ctx, healthKey)
		// Like etcdctl: with authentication on, the read is denied only after it went
		// through consensus, so the member is healthy.
		if errors.Is(err, rpctypes.ErrPermissionDenied) {
			return nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("etcd member %s is not healthy: %w", endpoint, err)
	}
	return nil
}

// withEndpoint runs fn with a client connected to endpoint only, closed afterwards.
func (c *client) withEndpoint(endpoint string, fn func(*clientv3.Client) error) error {
	cli, err := newClientv3(c.cfg, []string{endpoint})
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // a close error changes nothing about fn's result
	return fn(cli)
}

func (c *client) Put(ctx context.Context, key, value string) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.Put(ctx, key, value); err != nil {
		return fmt.Errorf("writing etcd key %q: %w", key, err)
	}
	return nil
}

// noOpKey is the key of the no-op transactions: their condition (the key was created at a
// negative revision) never holds, and the write in their Then branch, which makes etcd
// send them through raft rather than serve them as reads, never happens.
const noOpKey = "\x00etcdpilot/no-op"

// noOpConcurrency is how many no-op transactions are in flight at once: etcd batches
// concurrent proposals, so thousands take seconds rather than minutes.
const noOpConcurrency = 32

func (c *client) AppendNoOps(ctx context.Context, n int) error {
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	errs := make(chan error, noOpConcurrency)
	for range noOpConcurrency {
		go func() {
			for range work {
				cctx, cancel := context.WithTimeout(ctx, CallTimeout)
				resp, err := c.cli.Txn(cctx).If(clientv3.Compare(clientv3.CreateRevision(noOpKey), "<", 0)).
					Then(clientv3.OpPut(noOpKey, "")).Commit()
				cancel()
				if err == nil && resp.Succeeded {
					err = errors.New("a no-op transaction's condition held")
				}
				if err != nil {
					errs <- fmt.Errorf("appending no-op raft entries: %w", err)
					return
				}
			}
			errs <- nil
		}()
	}
	var first error
	for range noOpConcurrency {
		if err := <-errs; err != nil && first == nil {
			first = err
		}
	}
	return first
}

func (c *client) Get(ctx context.Context, key string) (string, bool, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.Get(ctx, key)
	if err != nil {
		return "", false, fmt.Errorf("reading etcd key %q: %w", key, err)
	}
	if len(resp.Kvs) == 0 {
		return "", false, nil
	}
	return string(resp.Kvs[0].Value), true, nil
}

func (c *client) Defragment(ctx context.Context, endpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, DefragmentTimeout)
	defer cancel()
	// Maintenance.Defragment dials endpoint itself, whatever the configured endpoints are.
	if _, err := c.cli.Defragment(ctx, endpoint); err != nil {
		return fmt.Errorf("defragmenting etcd member %s: %w", endpoint, err)
	}
	return nil
}

func (c *client) Compact(ctx context.Context, revision int64) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.Compact(ctx, revision, clientv3.WithCompactPhysical()); err != nil {
		return fmt.Errorf("compacting etcd at revision %d: %w", revision, err)
	}
	return nil
}

func (c *client) HashKV(ctx context.Context, endpoint string, revision int64) (KVHash, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.HashKV(ctx, endpoint, revision)
	if err != nil {
		return KVHash{}, fmt.Errorf("etcd HashKV of %s at revision %d: %w", endpoint, revision, err)
	}
	h := KVHash{Hash: resp.Hash, CompactRevision: resp.CompactRevision, Revision: resp.HashRevision}
	if h.Revision == 0 {
		h.Revision = revision // etcd 3.5 does not report the revision it hashed
	}
	return h, nil
}

func (c *client) AlarmDisarm(ctx context.Context, memberID uint64, alarm string) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	kind, ok := etcdserverpb.AlarmType_value[alarm]
	if !ok || kind == int32(etcdserverpb.AlarmType_NONE) {
		return fmt.Errorf("disarming etcd alarm %q: no such alarm", alarm)
	}
	am := &clientv3.AlarmMember{MemberID: memberID, Alarm: etcdserverpb.AlarmType(kind)}
	if _, err := c.cli.AlarmDisarm(ctx, am); err != nil {
		return fmt.Errorf("disarming etcd alarm %s of member %s: %w", alarm, hexID(memberID), err)
	}
	return nil
}

func (c *client) AuthEnabled(ctx context.Context) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.AuthStatus(ctx)
	if err != nil {
		return false, fmt.Errorf("reading etcd's auth status: %w", err)
	}
	return resp.Enabled, nil
}

func (c *client) GrantRoot(ctx context.Context, users []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.RoleAdd(ctx, auth.RootRole); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
		return nil, fmt.Errorf("adding etcd role %s: %w", auth.RootRole, err)
	}
	var rooted []string
	for _, u := range users {
		_, err := c.cli.UserAddWithOptions(ctx, u, "", &clientv3.UserAddOptions{NoPassword: true})
		if err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
			return rooted, fmt.Errorf("adding etcd user %s: %w", u, err)
		}
		if _, err := c.cli.UserGrantRole(ctx, u, auth.RootRole); err != nil {
			return rooted, fmt.Errorf("granting etcd role %s to user %s: %w", auth.RootRole, u, err)
		}
		resp, err := c.cli.UserGet(ctx, u)
		if err != nil {
			return rooted, fmt.Errorf("reading etcd user %s: %w", u, err)
		}
		if slices.Contains(resp.Roles, auth.RootRole) {
			rooted = append(rooted, u)
		}
	}
	return rooted, nil
}

func (c *client) SetAuth(ctx context.Context, enabled bool) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if enabled {
		if _, err := c.cli.AuthEnable(ctx); err != nil {
			return fmt.Errorf("enabling etcd's auth: %w", err)
		}
		return nil
	}
	if _, err := c.cli.AuthDisable(ctx); err != nil {
		return fmt.Errorf("disabling etcd's auth: %w", err)
	}
	return nil
}

func (c *client) GrantRange(ctx context.Context, user string, r Range) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if err := c.keepOnlyPermission(ctx, user, r); err != nil {
		return err
	}
	return c.keepOnlyRole(ctx, user)
}

// keepOnlyPermission makes role hold exactly the permission r, making the role if needed.
func (c *client) keepOnlyPermission(ctx context.Context, role string, r Range) error {
	want := authpb.READWRITE
	if r.ReadOnly {
		want = authpb.READ
	}
	// Read first: a tenant is looked at every minute, and an add of what exists is a raft
	// proposal that fails.
	var perms []*authpb.Permission
	got, err := c.cli.RoleGet(ctx, role)
	switch {
	case errors.Is(err, rpctypes.ErrRoleNotFound):
		if _, err := c.cli.RoleAdd(ctx, role); err != nil && !errors.Is(err, rpctypes.ErrRoleAlreadyExist) {
			return fmt.Errorf("adding etcd role %s: %w", role, err)
		}
	case err != nil:
		return fmt.Errorf("reading etcd role %s: %w", role, err)
	default:
		perms = got.Perm
	}
	granted := false
	for _, p := range perms {
		if p.PermType == want && string(p.Key) == r.Key && string(p.RangeEnd) == r.End {
			granted = true
			continue
		}
		if _, err := c.cli.RoleRevokePermission(ctx, role, string(p.Key), string(p.RangeEnd)); err != nil {
			return fmt.Errorf("revoking %q to %q from etcd role %s: %w", p.Key, p.RangeEnd, role, err)
		}
	}
	if granted {
		return nil
	}
	if _, err := c.cli.RoleGrantPermission(ctx, role, r.Key, r.End, clientv3.PermissionType(want)); err != nil {
		return fmt.Errorf("granting %q to %q to etcd role %s: %w", r.Key, r.End, role, err)
	}
	return nil
}

// keepOnlyRole makes user, without a password, hold exactly the role of its own name.
func (c *client) keepOnlyRole(ctx context.Context, user string) error {
	var roles []string
	got, err := c.cli.UserGet(ctx, user)
	switch {
	case errors.Is(err, rpctypes.ErrUserNotFound):
		if _, err := c.cli.UserAddWithOptions(ctx, user, "", &clientv3.UserAddOptions{NoPassword: true}); err != nil && !errors.Is(err, rpctypes.ErrUserAlreadyExist) {
			return fmt.Errorf("adding etcd user %s: %w", user, err)
		}
	case err != nil:
		return fmt.Errorf("reading etcd user %s: %w", user, err)
	default:
		roles = got.Roles
	}
	for _, other := range roles {
		if other == user {
			continue
		}
		if _, err := c.cli.UserRevokeRole(ctx, user, other); err != nil {
			return fmt.Errorf("revoking etcd role %s from user %s: %w", other, user, err)
		}
	}
	if slices.Contains(roles, user) {
		return nil
	}
	if _, err := c.cli.UserGrantRole(ctx, user, user); err != nil {
		return fmt.Errorf("granting etcd role %s to user %s: %w", user, user, err)
	}
	return nil
}

func (c *client) RevokeUser(ctx context.Context, user string) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if _, err := c.cli.UserDelete(ctx, user); err != nil && !errors.Is(err, rpctypes.ErrUserNotFound) {
		return fmt.Errorf("deleting etcd user %s: %w", user, err)
	}
	if _, err := c.cli.RoleDelete(ctx, user); err != nil && !errors.Is(err, rpctypes.ErrRoleNotFound) {
		return fmt.Errorf("deleting etcd role %s: %w", user, err)
	}
	return nil
}

func (c *client) CountRange(ctx context.Context, r Range) (int64, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	count, err := c.cli.Get(ctx, r.Key, clientv3.WithRange(r.End), clientv3.WithCountOnly())
	if err != nil {
		return 0, 0, fmt.Errorf("counting the keys from %q to %q: %w", r.Key, r.End, err)
	}
	newest, err := c.cli.Get(ctx, r.Key, clientv3.WithRange(r.End), clientv3.WithKeysOnly(),
		clientv3.WithSort(clientv3.SortByModRevision, clientv3.SortDescend), clientv3.WithLimit(1))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the newest key from %q to %q: %w", r.Key, r.End, err)
	}
	var revision int64
	if len(newest.Kvs) > 0 {
		revision = newest.Kvs[0].ModRevision
	}
	return count.Count, revision, nil
}

// SizePageKeys is how many keys SizeRange reads at a time. A Kubernetes object is a few
// KiB and at most 1.5 MiB (the API server's limit), so a page holds at most 150 MiB.
const SizePageKeys = 100

func (c *client) SizeRange(ctx context.Context, r Range) (int64, error) {
	var size int64
	for from := r.Key; ; {
		pctx, cancel := context.WithTimeout(ctx, CallTimeout)
		page, err := c.cli.Get(pctx, from, clientv3.WithRange(r.End), clientv3.WithLimit(SizePageKeys))
		cancel()
		if err != nil {
			return 0, fmt.Errorf("reading the keys from %q to %q: %w", from, r.End, err)
		}
		for _, kv := range page.Kvs {
			size += int64(len(kv.Key) + len(kv.Value))
		}
		if !page.More || len(page.Kvs) == 0 {
			return size, nil
		}
		// The next page starts right after the last key read.
		from = string(page.Kvs[len(page.Kvs)-1].Key) + "\x00"
	}
}

func (c *client) DeleteRange(ctx context.Context, r Range) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	resp, err := c.cli.Delete(ctx, r.Key, clientv3.WithRange(r.End))
	if err != nil {
		return 0, fmt.Errorf("deleting the keys from %q to %q: %w", r.Key, r.End, err)
	}
	return resp.Deleted, nil
}

func (c *client) Close() error {
	return c.cli.Close()
}

func toMember(m *etcdserverpb.Member) Member {
	return Member{
		ID:         m.GetID(),
		Name:       m.GetName(),
		PeerURLs:   slices.Clone(m.GetPeerURLs()),
		ClientURLs: slices.Clone(m.GetClientURLs()),
		IsLearner:  m.GetIsLearner(),
	}
}

func toMembers(ms []*etcdserverpb.Member) []Member {
	out := make([]Member, 0, len(ms))
	for _, m := range ms {
		out = append(out, toMember(m))
	}
	return out
}

// hexID formats a member ID the way etcd and etcdctl print it.
func hexID(id uint64) string {
	return strconv.FormatUint(id, 16)
}
