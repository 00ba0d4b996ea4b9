package backup

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Source is a member the backup agent may stream the snapshot from.
type Source struct {
	Member    string
	ClientURL string
}

// Sources are the members of a cluster a backup may be taken from, as its status lists
// them: the healthy voting members with a client URL, but none that the consistency check
// found holding data that differs from the majority's (fenced, by etcd member ID, as
// status.Suspects gives them). The agent asks each for its status and streams from the one
// ChooseMember picks.
func Sources(members []etcdv1alpha1.MemberStatus, fenced map[uint64]string) []Source {
	var out []Source
	for _, m := range members {
		id, _ := strconv.ParseUint(m.ID, 16, 64)
		if _, suspect := fenced[id]; suspect {
			continue // its data differs from the majority's: never backed up
		}
		if m.Healthy && !m.Learner && m.ClientURL != "" {
			out = append(out, Source{Member: m.Name, ClientURL: m.ClientURL})
		}
	}
	return out
}

// MaxLag is how many raft entries a follower may be behind the most advanced healthy
// voting member and still be snapshotted instead of the leader. A follower that close is
// a fraction of a second behind on a busy cluster; one further behind is catching up
// (after a restart, or a slow disk) and its snapshot would miss recent writes.
const MaxLag = 1000

// ErrNoHealthyMember is returned, wrapped, by ChooseMember when no member can be
// snapshotted. The backup then fails with reason ClusterNotAvailable.
var ErrNoHealthyMember = errors.New("no healthy voting member")

// Candidate is one etcd member, as the backup controller observed it just before the
// snapshot.
type Candidate struct {
	// Name is the member's name.
	Name string
	// ID is etcd's member ID.
	ID uint64
	// ClientURL is the URL the snapshot is streamed from.
	ClientURL string
	// Healthy is true when the member answered its health check.
	Healthy bool
	// Leader is true for the raft leader.
	Leader bool
	// Learner is true for a non-voting member.
	Learner bool
	// RaftIndex is the member's raft index (maintenance Status).
	RaftIndex uint64
	// DBSize is the size of the member's database file in bytes, free pages included.
	DBSize int64
}

// ChooseMember picks the member to stream the snapshot from.
//
// Streaming a snapshot reads the whole database and sends it over the network, which
// competes with the member's raft work; on the leader that slows every write of the
// cluster. So a follower is preferred, as long as it is current: healthy, voting, and at
// most MaxLag entries behind the highest raft index among healthy voting members (the
// leader included). Among those the most advanced wins, then the smallest database (the
// snapshot is the database file, free pages included, so a smaller one streams faster),
// then the name, so the choice is the same on every reconcile. When no follower is
// current the leader is used, if healthy.
//
// Learners are never used: a learner may still be receiving its first snapshot from the
// leader and hold only part of the data, and it is not in the quorum anyway. Unhealthy
// members are never used.
//
// The error wraps ErrNoHealthyMember and says what the members were.
func ChooseMember(members []Candidate) (Candidate, error) {
	var voters []Candidate
	for _, m := range members {
		if m.Healthy && !m.Learner {
			voters = append(voters, m)
		}
	}
	if len(voters) == 0 {
		return Candidate{}, fmt.Errorf("%w: %s", ErrNoHealthyMember, describe(members))
	}
	highest := slices.MaxFunc(voters, func(a, b Candidate) int { return cmp.Compare(a.RaftIndex, b.RaftIndex) }).RaftIndex

	var current []Candidate
	var leader *Candidate
	for i, m := range voters {
		switch {
		case m.Leader:
			leader = &voters[i]
		case highest-m.RaftIndex <= MaxLag:
			current = append(current, m)
		}
	}
	if len(current) > 0 {
		return slices.MinFunc(current, func(a, b Candidate) int {
			return cmp.Or(
				cmp.Compare(b.RaftIndex, a.RaftIndex),
				cmp.Compare(a.DBSize, b.DBSize),
				strings.Compare(a.Name, b.Name),
			)
		}), nil
	}
	if leader != nil {
		return *leader, nil
	}
	// Unreachable: the most advanced healthy voter is either the leader or a current
	// follower. Kept so that a change above cannot return an empty Candidate.
	return Candidate{}, fmt.Errorf("%w: %s", ErrNoHealthyMember, describe(members))
}

// describe summarises members for an error message: "3 members: 2 unhealthy, 1 healthy
// learner".
func describe(members []Candidate) string {
	if len(members) == 0 {
		return "the cluster has no members"
	}
	var unhealthy, learners int
	for _, m := range members {
		switch {
		case !m.Healthy:
			unhealthy++
		case m.Learner:
			learners++
		}
	}
	return fmt.Sprintf("%d members: %d unhealthy, %d healthy %s", len(members), unhealthy, learners, plural(learners, "learner"))
}

func plural(n int, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}
