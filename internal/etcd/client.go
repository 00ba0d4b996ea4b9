package etcd

import (
	"context"
	"crypto/tls"
	"regexp"
	"slices"
	"strconv"
	"time"
)

const (
	// CallTimeout caps every Client call, on top of the deadline of the context passed in:
	// the call gives up at whichever comes first. clientv3 waits for a connection instead of
	// failing fast, so without a cap a call to an unreachable member would hang for as long as
	// the reconcile context allows.
	CallTimeout = 10 * time.Second

	// HealthTimeout caps Client.Health, shorter than CallTimeout because a health probe that
	// takes seconds already means the member is not healthy, and the operator probes every
	// member in turn.
	HealthTimeout = 5 * time.Second

	// DefragmentTimeout caps Client.Defragment. A member rewrites its whole database file
	// while it defragments, at disk speed (seconds for a gigabyte on a local disk), and
	// answers nothing else meanwhile; a call that takes longer than this is given up, and
	// the member finishes on its own.
	DefragmentTimeout = 3 * time.Minute

	// DefaultDialTimeout is used when Config.DialTimeout is zero.
	DefaultDialTimeout = 5 * time.Second
)

// Member is one etcd cluster member as reported by the member list.
type Member struct {
	// ID is etcd's member ID. etcd and etcdctl print it in hexadecimal.
	ID uint64
	// Name is the member's --name. It is empty for a member that was added but has not
	// started and joined yet.
	Name string
	// PeerURLs are the URLs other members reach this member on.
	PeerURLs []string
	// ClientURLs are the URLs the member advertises to clients; empty until it has started.
	ClientURLs []string
	// IsLearner is true for a non-voting member that still has to be promoted.
	IsLearner bool
}

// KVHash is what a member answers to HashKV.
type KVHash struct {
	// Hash is the hash of the key-value history from CompactRevision up to Revision.
	Hash uint32
	// CompactRevision is the member's compaction when it hashed; Revision the revision the
	// hash covers. Hashes are comparable only when both are equal.
	CompactRevision, Revision int64
}

// MemberStatus is what one member reports about itself, from the maintenance Status call.
type MemberStatus struct {
	// Endpoint is the client URL the status was read from.
	Endpoint string
	// MemberID is the ID of the member serving Endpoint.
	MemberID uint64
	// LeaderID is the ID of the leader as this member sees it; 0 when it knows no leader.
	LeaderID uint64
	// Version is the etcd server version, such as "3.6.16".
	Version string
	// DBSize is the size of the backend database file in bytes, including free pages.
	DBSize int64
	// DBSizeInUse is the part of DBSize in use; the rest is reclaimed by defragmentation.
	DBSizeInUse int64
	// RaftIndex is the member's current raft index.
	RaftIndex uint64
	// RaftAppliedIndex is the raft index the member has applied.
	RaftAppliedIndex uint64
	// RaftTerm is the member's current raft term.
	RaftTerm uint64
	// Revision is the key-value store's current revision, as this member has applied it.
	Revision int64
	// IsLearner is true when the member is a learner.
	IsLearner bool
	// Errors are the alarms and other errors the member reports, such as
	// "memberID:... alarm:NOSPACE".
	Errors []string
}

// Client is everything the operator asks of an etcd cluster. Implementations are New (a
// real cluster) and internal/etcd/fake (tests).
//
// Every call is bounded by ctx and additionally capped by CallTimeout (HealthTimeout for
// Health). Errors from etcd keep their identity through wrapping, so the IsXxx classifiers
// of this package work on them.
type Client interface {
	// MemberList returns the cluster's members. The read is linearizable, so the answer
	// reflects every membership change committed before the call.
	MemberList(ctx context.Context) ([]Member, error)

	// MemberAddAsLearner adds a non-voting member with the given peer URLs and returns it
	// together with the resulting member list. A learner does not count towards quorum, so
	// adding one is always safe; it must be promoted once it has caught up. etcd refuses a
	// second learner by default (IsTooManyLearners).
	MemberAddAsLearner(ctx context.Context, peerURLs []string) (Member, []Member, error)

	// MemberAdd adds a voting member and returns it together with the resulting member
	// list. Unlike MemberAddAsLearner this raises the quorum immediately, before the new
	// member has started; etcd refuses it when that would lose quorum (IsUnhealthyCluster).
	MemberAdd(ctx context.Context, peerURLs []string) (Member, []Member, error)

	// MemberPromote makes learner id a voting member. etcd refuses while the learner has
	// not caught up with the leader (IsLearnerNotReady); that is the normal answer for a
	// while after the learner started, so callers retry later.
	MemberPromote(ctx context.Context, id uint64) error

	// MemberRemove removes member id. Removing a member that is already gone fails with an
	// error for which IsMemberNotFound is true, which callers may treat as done.
	MemberRemove(ctx context.Context, id uint64) error

	// MoveLeader transfers leadership to the voting member transfereeID and waits until the
	// transfer is done. etcd only accepts this from the current leader, so the
	// implementation finds which configured endpoint is the leader (via Status) and sends
	// the request there.
	MoveLeader(ctx context.Context, transfereeID uint64) error

	// Status returns the status of the member serving endpoint, which need not be one of
	// the configured endpoints.
	Status(ctx context.Context, endpoint string) (MemberStatus, error)

	// Health checks the member serving endpoint the way `etcdctl endpoint health` does: a
	// linearizable read of the key "health", which only succeeds when the member is part of
	// a cluster with a leader and quorum. It returns nil when the member is healthy.
	Health(ctx context.Context, endpoint string) error

	// Put writes key. The operator uses it for its own canary key; tests use it too.
	Put(ctx context.Context, key, value string) error

	// Get reads key linearizably. found is false when the key does not exist.
	Get(ctx context.Context, key string) (value string, found bool, err error)

	// AppendNoOps appends n entries to the raft log that change nothing (transactions whose
	// condition never holds), so that every member's log moves on by n entries and each
	// takes a raft snapshot once n exceeds its --snapshot-count.
	AppendNoOps(ctx context.Context, n int) error

	// Defragment defragments the member serving endpoint: it rewrites its database file
	// without the free pages, so its DBSize shrinks to about DBSizeInUse. The member serves
	// nothing else meanwhile. Capped by DefragmentTimeout rather than CallTimeout.
	Defragment(ctx context.Context, endpoint string) error

	// Compact discards the key-value history older than revision, on every member, and
	// waits until the compaction is applied (so a defragmentation afterwards reclaims its
	// space). Compacting at or below an already compacted revision fails with an error for
	// which IsCompacted is true, which callers may treat as done.
	Compact(ctx context.Context, revision int64) error

	// HashKV returns the hash of the key-value history held by the member serving
	// endpoint, from its last compaction up to revision, which the member must have
	// applied: members holding the same data report the same hash. A revision already
	// compacted fails with an error for which IsCompacted is true.
	HashKV(ctx context.Context, endpoint string, revision int64) (KVHash, error)

	// AlarmDisarm clears alarm (such as "NOSPACE") raised on member memberID. etcd raises
	// it again at once if its cause remains.
	AlarmDisarm(ctx context.Context, memberID uint64, alarm string) error

	// AuthEnabled returns whether etcd's authentication is on (etcd's AuthStatus; with auth
	// on, etcd 3.6 answers only a client with the root role).
	AuthEnabled(ctx context.Context) (bool, error)

	// GrantRoot makes each of users, without a password where it does not exist yet, and
	// gives it the root role (making the role if needed), then returns those of users that
	// etcd lists holding the role. Each part is harmless when already done.
	GrantRoot(ctx context.Context, users []string) ([]string, error)

	// SetAuth turns etcd's authentication on or off. etcd refuses to turn it on until the
	// user root holds the root role.
	SetAuth(ctx context.Context, enabled bool) error

	// GrantRange makes user hold exactly one role, of the same name, whose one permission is
	// the key range r, read-only or read-write: the user (without a password) and the role
	// are made where missing, and any other permission or role they hold is taken away.
	// Each part is harmless when already done.
	GrantRange(ctx context.Context, user string, r Range) error

	// RevokeUser deletes user and its role of the same name; either already gone counts
	// as done.
	RevokeUser(ctx context.Context, user string) error

	// CountRange returns how many keys are in r and the highest revision at which one of
	// them was written (zero when none). It reads every key of r in the member (not their
	// values), so callers bound how often they call it.
	CountRange(ctx context.Context, r Range) (keys, revision int64, err error)

	// SizeRange returns the bytes of the keys and values in r: what reading them all returns.
	// It reads them in pages of SizePageKeys keys, so the operator holds at most one page at
	// a time, and callers bound how often they call it.
	SizeRange(ctx context.Context, r Range) (int64, error)

	// DeleteRange deletes every key in r and returns how many there were.
	DeleteRange(ctx context.Context, r Range) (int64, error)

	// Close releases the connections. The Client must not be used afterwards.
	Close() error
}

// Range is the keys k with Key <= k < End, and whether a permission on them is read-only.
type Range struct {
	Key, End string
	ReadOnly bool
}

// Config says how to reach a cluster.
type Config struct {
	// Endpoints are the client URLs to talk to. The client does not discover further
	// members: it uses exactly these, so the operator decides which members it reaches and
	// over which addresses.
	Endpoints []string
	// TLS is used for https endpoints; nil for plain http.
	TLS *tls.Config
	// DialTimeout is clientv3's dial timeout; zero means DefaultDialTimeout. Connections are
	// made in the background (New does not wait for one), so an unreachable endpoint shows as
	// calls failing at their deadline rather than as New failing.
	DialTimeout time.Duration
}

// Factory creates a Client. The controller holds a Factory rather than calling New, so tests
// can hand it one that returns a fake.
type Factory func(cfg Config) (Client, error)

// The alarms etcd raises, as Alarms reads them: NOSPACE when a member's database reached
// its quota (the cluster then accepts only reads and deletes), CORRUPT on a member etcd's
// own corruption checks found diverged.
const (
	AlarmNoSpace = "NOSPACE"
	AlarmCorrupt = "CORRUPT"
)

// MemberHealthy says whether a member that answered its status call with errs (its
// reported Errors) is healthy, as far as alarms go: an error that is not an alarm makes it
// unhealthy, and so does a CORRUPT alarm raised on the member itself. A NOSPACE alarm does
// not: the member still serves reads and deletes, and the recovery from it needs the member
// counted as healthy. Every member reports every alarm of the cluster, so only the member's
// own alarms count.
func MemberHealthy(memberID uint64, errs []string) bool {
	for _, e := range errs {
		if !IsAlarm(e) {
			return false
		}
	}
	return !slices.Contains(Alarms(errs)[memberID], AlarmCorrupt)
}

// alarmPattern matches one alarm as the maintenance Status call reports it in Errors: the
// text form of etcd's AlarmMember, "memberID:1234 alarm:NOSPACE".
var alarmPattern = regexp.MustCompile(`memberID:(\d+)\s+alarm:([A-Z]+)`)

// IsAlarm reports whether one of a member's reported Errors is an alarm.
func IsAlarm(err string) bool { return alarmPattern.MatchString(err) }

// Alarms reads the alarms out of a member's reported Errors, by the ID of the member each
// is raised on. Every member reports every alarm of the cluster; errors that are not alarms
// are left out.
func Alarms(errs []string) map[uint64][]string {
	var out map[uint64][]string
	for _, e := range errs {
		m := alarmPattern.FindStringSubmatch(e)
		if m == nil {
			continue
		}
		id, err := strconv.ParseUint(m[1], 10, 64)
		if err != nil {
			continue
		}
		if out == nil {
			out = map[uint64][]string{}
		}
		if !slices.Contains(out[id], m[2]) {
			out[id] = append(out[id], m[2])
		}
	}
	return out
}
