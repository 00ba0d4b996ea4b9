// Package fake is a deterministic, in-memory etcd.Client for tests of the membership planner
// and the controller.
//
// It models just enough of an etcd cluster for membership decisions: the member list, the
// leader, learners that are or are not caught up, per-endpoint status and health, and a
// key-value map. It answers with the same error values the real client returns (so the
// etcd.IsXxx classifiers work on them), lets tests inject an error per method, and records
// every call so a test can assert, for example, exactly one membership change per reconcile.
//
// It does not model quorum: a membership change that real etcd would refuse because members
// are down succeeds here unless the test injects etcd.ErrUnhealthyCluster.
package fake

import (
	"context"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// maxLearners is how many learners the fake accepts, etcd's default (--max-learners).
const maxLearners = 1

// Method names a Client method, to inject errors with SetError.
type Method string

// The methods of etcd.Client errors can be injected into.
const (
	MemberList         Method = "MemberList"
	MemberAddAsLearner Method = "MemberAddAsLearner"
	MemberAdd          Method = "MemberAdd"
	MemberPromote      Method = "MemberPromote"
	MemberRemove       Method = "MemberRemove"
	MoveLeader         Method = "MoveLeader"
	Status             Method = "Status"
	Health             Method = "Health"
	Put                Method = "Put"
	Get                Method = "Get"
	AppendNoOps        Method = "AppendNoOps"
	Defragment         Method = "Defragment"
	Compact            Method = "Compact"
	HashKV             Method = "HashKV"
	AlarmDisarm        Method = "AlarmDisarm"
	AuthEnabled        Method = "AuthEnabled"
	GrantRoot          Method = "GrantRoot"
	SetAuth            Method = "SetAuth"
	GrantRange         Method = "GrantRange"
	RevokeUser         Method = "RevokeUser"
	CountRange         Method = "CountRange"
	SizeRange          Method = "SizeRange"
	DeleteRange        Method = "DeleteRange"
	Close              Method = "Close"
)

// Client is the fake etcd cluster and a client of it at once. The zero value is not usable;
// create one with New. All methods are safe for concurrent use.
//
// Every call of an etcd.Client method is recorded (see Calls) as the method name followed,
// where it has any, by its argument: peer URLs joined by ",", member IDs in hexadecimal as
// etcd prints them, endpoints and keys as given. For example "MemberAddAsLearner
// https://a:2380", "MemberPromote a", "Status https://a:2379", "Put canary". Calls that fail
// are recorded too.
type Client struct {
	mu          sync.Mutex
	members     []etcd.Member
	leaderID    uint64
	nextID      uint64
	notCaughtUp map[uint64]bool
	statuses    map[string]etcd.MemberStatus
	healthErrs  map[string]error
	kv          map[string]string
	// modRev is the revision each key was last written at; rev is the latest revision.
	modRev    map[string]int64
	rev       int64
	errs      map[Method]error
	calls     []string
	compacted int64
	hashes    map[string]uint32
	// authOn is etcd's authentication; roles holds each user's roles, perms each role's
	// key range (GrantRange's roles have one).
	authOn bool
	roles  map[string][]string
	perms  map[string]etcd.Range
}

var _ etcd.Client = (*Client)(nil)

// New returns a fake cluster with the given members, in that order. The leader is the first
// voting member, if any. New members get IDs counting up from one past the highest ID given
// (from 1 when none), so tests can predict them.
func New(members ...etcd.Member) *Client {
	f := &Client{
		notCaughtUp: map[uint64]bool{},
		statuses:    map[string]etcd.MemberStatus{},
		healthErrs:  map[string]error{},
		kv:          map[string]string{},
		modRev:      map[string]int64{},
		errs:        map[Method]error{},
		hashes:      map[string]uint32{},
		roles:       map[string][]string{},
		perms:       map[string]etcd.Range{},
	}
	for _, m := range members {
		f.members = append(f.members, cloneMember(m))
		f.nextID = max(f.nextID, m.ID)
	}
	f.nextID++
	f.leaderID = f.firstVoter()
	return f
}

// Factory returns an etcd.Factory that hands out this fake whatever the Config, and records
// "New " followed by the endpoints joined by ",", so a test can check what the code under
// test dialed. Closing the returned client does not stop later factory calls from working,
// the way a new connection to a real cluster works after an old one was closed.
func (f *Client) Factory() etcd.Factory {
	return func(cfg etcd.Config) (etcd.Client, error) {
		f.mu.Lock()
		defer f.mu.Unlock()
		f.calls = append(f.calls, "New "+strings.Join(cfg.Endpoints, ","))
		return f, nil
	}
}

// SetError makes every later call of method fail with err, until it is called again with a
// nil err. The call is still recorded; it changes nothing else.
func (f *Client) SetError(method Method, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.errs, method)
		return
	}
	f.errs[method] = err
}

// SetLeader makes member id the leader; 0 means the cluster has no leader.
func (f *Client) SetLeader(id uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.leaderID = id
}

// Leader returns the current leader's ID, 0 when there is none.
func (f *Client) Leader() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.leaderID
}

// Members returns a copy of the member list, without recording a call.
func (f *Client) Members() []etcd.Member {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.memberList()
}

// StartMember makes an added member look started, as when its pod came up and joined: it
// gets a name and client URLs. A started learner is caught up unless SetLearnerCaughtUp says
// otherwise.
func (f *Client) StartMember(id uint64, name string, clientURLs ...string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	i := f.index(id)
	if i < 0 {
		return fmt.Errorf("fake etcd: no member %s to start", hexID(id))
	}
	f.members[i].Name = name
	f.members[i].ClientURLs = slices.Clone(clientURLs)
	return nil
}

// SetLearnerCaughtUp says whether learner id is in sync with the leader. MemberPromote of a
// learner that is not fails with etcd.ErrLearnerNotReady, like the real cluster. A learner
// that has not started is never caught up, whatever is set here.
func (f *Client) SetLearnerCaughtUp(id uint64, caughtUp bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if caughtUp {
		delete(f.notCaughtUp, id)
		return
	}
	f.notCaughtUp[id] = true
}

// SetStatus sets what Status returns for endpoint, instead of the status derived from the
// member list (see Status). Endpoint is filled in by Status.
func (f *Client) SetStatus(endpoint string, status etcd.MemberStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.statuses[endpoint] = cloneStatus(status)
}

// SetHealthError makes Health of endpoint fail with err; nil makes it healthy again.
func (f *Client) SetHealthError(endpoint string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err == nil {
		delete(f.healthErrs, endpoint)
		return
	}
	f.healthErrs[endpoint] = err
}

// Calls returns the calls recorded so far, oldest first.
func (f *Client) Calls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls)
}

// MembershipChanges returns the recorded calls that change membership (MemberAddAsLearner,
// MemberAdd, MemberPromote, MemberRemove), whether they succeeded or not: what a test checks
// to assert that a reconcile made at most one change.
func (f *Client) MembershipChanges() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, call := range f.calls {
		method, _, _ := strings.Cut(call, " ")
		switch Method(method) {
		case MemberAddAsLearner, MemberAdd, MemberPromote, MemberRemove:
			out = append(out, call)
		}
	}
	return out
}

// ResetCalls forgets the recorded calls, for instance between two reconciles of one test.
func (f *Client) ResetCalls() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

// MemberList returns the members in the order they were added.
func (f *Client) MemberList(_ context.Context) ([]etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MemberList, ""); err != nil {
		return nil, err
	}
	return f.memberList(), nil
}

// MemberAddAsLearner adds a learner with the next ID. Like etcd it refuses peer URLs that
// are not http(s)://host:port or are already used, and a learner beyond the first
// (etcd.ErrTooManyLearners).
func (f *Client) MemberAddAsLearner(_ context.Context, peerURLs []string) (etcd.Member, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MemberAddAsLearner, strings.Join(peerURLs, ",")); err != nil {
		return etcd.Member{}, nil, err
	}
	return f.add(peerURLs, true)
}

// MemberAdd adds a voting member with the next ID. Like etcd it refuses peer URLs that are
// not http(s)://host:port or are already used; it does not check quorum.
func (f *Client) MemberAdd(_ context.Context, peerURLs []string) (etcd.Member, []etcd.Member, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MemberAdd, strings.Join(peerURLs, ",")); err != nil {
		return etcd.Member{}, nil, err
	}
	return f.add(peerURLs, false)
}

// add implements MemberAddAsLearner and MemberAdd. The caller holds f.mu.
func (f *Client) add(peerURLs []string, learner bool) (etcd.Member, []etcd.Member, error) {
	if len(peerURLs) == 0 {
		return etcd.Member{}, nil, rpctypes.ErrMemberBadURLs
	}
	for _, u := range peerURLs {
		parsed, err := url.Parse(u)
		if err != nil || (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Port() == "" {
			return etcd.Member{}, nil, rpctypes.ErrMemberBadURLs
		}
		for _, m := range f.members {
			if slices.Contains(m.PeerURLs, u) {
				return etcd.Member{}, nil, rpctypes.ErrPeerURLExist
			}
		}
	}
	if learner && f.learners() >= maxLearners {
		return etcd.Member{}, nil, etcd.ErrTooManyLearners
	}
	m := etcd.Member{ID: f.nextID, PeerURLs: slices.Clone(peerURLs), IsLearner: learner}
	f.nextID++
	f.members = append(f.members, m)
	return cloneMember(m), f.memberList(), nil
}

// MemberPromote makes learner id a voting member. It fails like etcd for an unknown member
// (etcd.ErrMemberNotFound), a voting member, and a learner that has not started or is not
// caught up (etcd.ErrLearnerNotReady).
func (f *Client) MemberPromote(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MemberPromote, hexID(id)); err != nil {
		return err
	}
	i := f.index(id)
	switch {
	case i < 0:
		return etcd.ErrMemberNotFound
	case !f.members[i].IsLearner:
		return rpctypes.ErrMemberNotLearner
	case f.members[i].Name == "" || f.notCaughtUp[id]:
		return etcd.ErrLearnerNotReady
	}
	f.members[i].IsLearner = false
	return nil
}

// MemberRemove removes member id, or fails with etcd.ErrMemberNotFound. Removing the leader
// makes the first remaining voting member the leader, a deterministic stand-in for an
// election.
func (f *Client) MemberRemove(_ context.Context, id uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MemberRemove, hexID(id)); err != nil {
		return err
	}
	i := f.index(id)
	if i < 0 {
		return etcd.ErrMemberNotFound
	}
	f.members = slices.Delete(f.members, i, i+1)
	delete(f.notCaughtUp, id)
	if f.leaderID == id {
		f.leaderID = f.firstVoter()
	}
	return nil
}

// MoveLeader makes transfereeID the leader. Like etcd it fails without a leader, and for a
// transferee that is unknown or a learner.
func (f *Client) MoveLeader(_ context.Context, transfereeID uint64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(MoveLeader, hexID(transfereeID)); err != nil {
		return err
	}
	if f.leaderID == 0 {
		return rpctypes.ErrNoLeader
	}
	i := f.index(transfereeID)
	if i < 0 || f.members[i].IsLearner {
		return rpctypes.ErrBadLeaderTransferee
	}
	f.leaderID = transfereeID
	return nil
}

// Status returns the status set with SetStatus for endpoint, if any. Otherwise it derives
// one from the member whose client URLs include endpoint (its ID and learner flag, and the
// current leader), and fails when no member serves endpoint, as an unreachable member would.
func (f *Client) Status(_ context.Context, endpoint string) (etcd.MemberStatus, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Status, endpoint); err != nil {
		return etcd.MemberStatus{}, err
	}
	if status, ok := f.statuses[endpoint]; ok {
		status = cloneStatus(status)
		status.Endpoint = endpoint
		return status, nil
	}
	m, err := f.serving(endpoint)
	if err != nil {
		return etcd.MemberStatus{}, err
	}
	return etcd.MemberStatus{Endpoint: endpoint, MemberID: m.ID, LeaderID: f.leaderID, IsLearner: m.IsLearner}, nil
}

// Health fails with the error set with SetHealthError for endpoint, when no member serves
// endpoint, or when the cluster has no leader; otherwise the member is healthy.
func (f *Client) Health(_ context.Context, endpoint string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Health, endpoint); err != nil {
		return err
	}
	if err := f.healthErrs[endpoint]; err != nil {
		return err
	}
	if _, err := f.serving(endpoint); err != nil {
		return err
	}
	if f.leaderID == 0 {
		return rpctypes.ErrNoLeader
	}
	return nil
}

// Put stores key in the fake's key-value map.
func (f *Client) Put(_ context.Context, key, value string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Put, key); err != nil {
		return err
	}
	f.kv[key] = value
	f.rev++
	f.modRev[key] = f.rev
	return nil
}

// Get reads key from the fake's key-value map.
func (f *Client) Get(_ context.Context, key string) (string, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Get, key); err != nil {
		return "", false, err
	}
	value, found := f.kv[key]
	return value, found, nil
}

// AppendNoOps records the call and advances every member's raft index by n.
func (f *Client) AppendNoOps(_ context.Context, n int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(AppendNoOps, strconv.Itoa(n)); err != nil {
		return err
	}
	for ep, st := range f.statuses {
		st.RaftIndex += uint64(n)
		f.statuses[ep] = st
	}
	return nil
}

// Defragment shrinks the DBSize of the status set for endpoint (SetStatus) to its
// DBSizeInUse, and fails when no status is set and no member serves endpoint.
func (f *Client) Defragment(_ context.Context, endpoint string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Defragment, endpoint); err != nil {
		return err
	}
	if st, ok := f.statuses[endpoint]; ok {
		st.DBSize = st.DBSizeInUse
		f.statuses[endpoint] = st
		return nil
	}
	_, err := f.serving(endpoint)
	return err
}

// Compact records the compacted revision (see Compacted) and fails with etcd.ErrCompacted
// at or below one compacted before, as etcd does.
func (f *Client) Compact(_ context.Context, revision int64) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(Compact, strconv.FormatInt(revision, 10)); err != nil {
		return err
	}
	if revision <= f.compacted {
		return etcd.ErrCompacted
	}
	f.compacted = revision
	return nil
}

// SetHash makes the member serving endpoint answer HashKV with hash; members without one
// answer 0, so that by default every member agrees.
func (f *Client) SetHash(endpoint string, hash uint32) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.hashes[endpoint] = hash
}

// HashKV answers the hash SetHash gave endpoint, at revision and the fake's compaction;
// it fails with etcd.ErrCompacted at or below the compaction, as etcd does, and like
// Status for an endpoint no started member serves.
func (f *Client) HashKV(_ context.Context, endpoint string, revision int64) (etcd.KVHash, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(HashKV, endpoint+" "+strconv.FormatInt(revision, 10)); err != nil {
		return etcd.KVHash{}, err
	}
	if revision <= f.compacted {
		return etcd.KVHash{}, etcd.ErrCompacted
	}
	if _, ok := f.statuses[endpoint]; !ok {
		if _, err := f.serving(endpoint); err != nil {
			return etcd.KVHash{}, err
		}
	}
	return etcd.KVHash{Hash: f.hashes[endpoint], CompactRevision: f.compacted, Revision: revision}, nil
}

// Compacted returns the highest revision compacted, 0 before any compaction.
func (f *Client) Compacted() int64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.compacted
}

// AlarmDisarm removes alarm of memberID from the Errors of every status set with
// SetStatus, in the form etcd reports it ("memberID:<decimal ID> alarm:<alarm>").
func (f *Client) AlarmDisarm(_ context.Context, memberID uint64, alarm string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(AlarmDisarm, hexID(memberID)+" "+alarm); err != nil {
		return err
	}
	raised := fmt.Sprintf("memberID:%d alarm:%s", memberID, alarm)
	for ep, st := range f.statuses {
		st.Errors = slices.DeleteFunc(slices.Clone(st.Errors), func(e string) bool { return e == raised })
		f.statuses[ep] = st
	}
	return nil
}

// Close only records the call: the fake's state outlives its clients, like a real cluster.
func (f *Client) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.record(Close, "")
}

// AuthEnabled records "AuthEnabled".
func (f *Client) AuthEnabled(context.Context) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(AuthEnabled, ""); err != nil {
		return false, err
	}
	return f.authOn, nil
}

// GrantRoot records "GrantRoot" followed by the users joined by ",".
func (f *Client) GrantRoot(_ context.Context, users []string) ([]string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(GrantRoot, strings.Join(users, ",")); err != nil {
		return nil, err
	}
	for _, u := range users {
		if !slices.Contains(f.roles[u], "root") {
			f.roles[u] = append(f.roles[u], "root")
		}
	}
	return slices.Clone(users), nil
}

// SetAuth records "SetAuth on" or "SetAuth off". Like etcd, it refuses to turn
// authentication on before the user root holds the root role.
func (f *Client) SetAuth(_ context.Context, enabled bool) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	arg := "off"
	if enabled {
		arg = "on"
	}
	if err := f.record(SetAuth, arg); err != nil {
		return err
	}
	if enabled {
		roles, ok := f.roles["root"]
		switch {
		case !ok:
			return rpctypes.ErrRootUserNotExist
		case !slices.Contains(roles, "root"):
			return rpctypes.ErrRootRoleNotExist
		}
	}
	f.authOn = enabled
	return nil
}

// GrantRange records "GrantRange" followed by the user and the range's key: the user then
// holds exactly the role of its name, whose permission is r.
func (f *Client) GrantRange(_ context.Context, user string, r etcd.Range) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(GrantRange, user+" "+r.Key); err != nil {
		return err
	}
	f.perms[user] = r
	f.roles[user] = []string{user}
	return nil
}

// RevokeUser records "RevokeUser" followed by the user, and deletes the user and its role.
func (f *Client) RevokeUser(_ context.Context, user string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(RevokeUser, user); err != nil {
		return err
	}
	delete(f.roles, user)
	delete(f.perms, user)
	return nil
}

// CountRange records "CountRange" followed by the range's key.
func (f *Client) CountRange(_ context.Context, r etcd.Range) (int64, int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(CountRange, r.Key); err != nil {
		return 0, 0, err
	}
	var keys, revision int64
	for k := range f.kv {
		if k >= r.Key && k < r.End {
			keys++
			revision = max(revision, f.modRev[k])
		}
	}
	return keys, revision, nil
}

// SizeRange records "SizeRange" followed by the range's key.
func (f *Client) SizeRange(_ context.Context, r etcd.Range) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(SizeRange, r.Key); err != nil {
		return 0, err
	}
	var size int64
	for k, v := range f.kv {
		if k >= r.Key && k < r.End {
			size += int64(len(k) + len(v))
		}
	}
	return size, nil
}

// DeleteRange records "DeleteRange" followed by the range's key.
func (f *Client) DeleteRange(_ context.Context, r etcd.Range) (int64, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.record(DeleteRange, r.Key); err != nil {
		return 0, err
	}
	var deleted int64
	for k := range f.kv {
		if k >= r.Key && k < r.End {
			delete(f.kv, k)
			delete(f.modRev, k)
			deleted++
		}
	}
	if deleted > 0 {
		f.rev++
	}
	return deleted, nil
}

// Permission returns the key range of role, without recording a call; false when the role
// has none.
func (f *Client) Permission(role string) (etcd.Range, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	r, ok := f.perms[role]
	return r, ok
}

// Keys returns the keys of the fake's key-value map, sorted, without recording a call.
func (f *Client) Keys() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	keys := make([]string, 0, len(f.kv))
	for k := range f.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Roles returns the roles of user, without recording a call.
func (f *Client) Roles(user string) []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.roles[user])
}

// record appends a call to the log and returns the error injected for method, if any.
// The caller holds f.mu.
func (f *Client) record(method Method, arg string) error {
	call := string(method)
	if arg != "" {
		call += " " + arg
	}
	f.calls = append(f.calls, call)
	return f.errs[method]
}

// index returns the position of member id in f.members, or -1. The caller holds f.mu.
func (f *Client) index(id uint64) int {
	return slices.IndexFunc(f.members, func(m etcd.Member) bool { return m.ID == id })
}

// serving returns the member whose client URLs include endpoint. The caller holds f.mu.
func (f *Client) serving(endpoint string) (etcd.Member, error) {
	for _, m := range f.members {
		if slices.Contains(m.ClientURLs, endpoint) {
			return m, nil
		}
	}
	return etcd.Member{}, fmt.Errorf("fake etcd: no member serves %s", endpoint)
}

// firstVoter returns the ID of the first voting member, 0 when there is none. The caller
// holds f.mu.
func (f *Client) firstVoter() uint64 {
	for _, m := range f.members {
		if !m.IsLearner {
			return m.ID
		}
	}
	return 0
}

// learners counts the learners. The caller holds f.mu.
func (f *Client) learners() int {
	n := 0
	for _, m := range f.members {
		if m.IsLearner {
			n++
		}
	}
	return n
}

// memberList returns a deep copy of the members. The caller holds f.mu.
func (f *Client) memberList() []etcd.Member {
	out := make([]etcd.Member, 0, len(f.members))
	for _, m := range f.members {
		out = append(out, cloneMember(m))
	}
	return out
}

func cloneMember(m etcd.Member) etcd.Member {
	m.PeerURLs = slices.Clone(m.PeerURLs)
	m.ClientURLs = slices.Clone(m.ClientURLs)
	return m
}

func cloneStatus(s etcd.MemberStatus) etcd.MemberStatus {
	s.Errors = slices.Clone(s.Errors)
	return s
}

// hexID formats a member ID the way etcd prints it, as the recorded calls show it.
func hexID(id uint64) string {
	return strconv.FormatUint(id, 16)
}
