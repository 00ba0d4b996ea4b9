package backup_test

import (
	"slices"
	"testing"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
)

// member is a healthy voting follower at raft index 10000 with a 100 MB database.
func member(name string, mutate ...func(*backup.Candidate)) backup.Candidate {
	c := backup.Candidate{Name: name, ClientURL: "https://" + name + ":2379", Healthy: true, RaftIndex: 10000, DBSize: 100 << 20}
	for _, m := range mutate {
		m(&c)
	}
	return c
}

func leader(c *backup.Candidate)    { c.Leader = true }
func learner(c *backup.Candidate)   { c.Learner = true }
func unhealthy(c *backup.Candidate) { c.Healthy = false }
func index(i uint64) func(*backup.Candidate) {
	return func(c *backup.Candidate) { c.RaftIndex = i }
}
func dbSize(n int64) func(*backup.Candidate) {
	return func(c *backup.Candidate) { c.DBSize = n }
}

func TestChooseMember(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []backup.Candidate
		want    string
	}{
		{
			name:    "a current follower rather than the leader",
			members: []backup.Candidate{member("m0", leader), member("m1"), member("m2")},
			want:    "m1",
		},
		{
			name:    "the most advanced follower",
			members: []backup.Candidate{member("m0", leader, index(10500)), member("m1", index(10000)), member("m2", index(10400))},
			want:    "m2",
		},
		{
			name:    "at the same index, the smaller database",
			members: []backup.Candidate{member("m0", leader), member("m1", dbSize(300<<20)), member("m2", dbSize(120<<20))},
			want:    "m2",
		},
		{
			name:    "at the same index and size, the first name",
			members: []backup.Candidate{member("m2"), member("m0", leader), member("m1")},
			want:    "m1",
		},
		{
			name:    "a follower exactly MaxLag behind the leader is current",
			members: []backup.Candidate{member("m0", leader, index(11000)), member("m1", index(10000))},
			want:    "m1",
		},
		{
			name:    "a follower more than MaxLag behind is not: the leader is used",
			members: []backup.Candidate{member("m0", leader, index(11001)), member("m1", index(10000))},
			want:    "m0",
		},
		{
			name: "a follower ahead of the leader's last report is current",
			// A follower can briefly be ahead of what the leader reported a moment earlier.
			members: []backup.Candidate{member("m0", leader, index(10000)), member("m1", index(12000)), member("m2", index(10500))},
			want:    "m1",
		},
		{
			name:    "unhealthy followers are skipped",
			members: []backup.Candidate{member("m0", leader), member("m1", unhealthy, index(99999)), member("m2")},
			want:    "m2",
		},
		{
			name:    "an unhealthy member does not set the pace",
			members: []backup.Candidate{member("m0", leader), member("m1", unhealthy, index(99999)), member("m2", index(9500))},
			want:    "m2",
		},
		{
			name:    "learners are never used, even ahead",
			members: []backup.Candidate{member("m0", leader), member("m1", learner, index(10001)), member("m2", unhealthy)},
			want:    "m0",
		},
		{
			name:    "a learner does not set the pace",
			members: []backup.Candidate{member("m0", leader, index(10000)), member("m1", learner, index(50000)), member("m2", index(9500))},
			want:    "m2",
		},
		{
			name:    "the leader alone",
			members: []backup.Candidate{member("m0", leader)},
			want:    "m0",
		},
		{
			name:    "no leader known: the current followers still qualify",
			members: []backup.Candidate{member("m0", unhealthy), member("m1"), member("m2", index(9000))},
			want:    "m1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := backup.ChooseMember(tc.members)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got.Name).To(Equal(tc.want))

			// The choice does not depend on the order members were listed in.
			reversed := slices.Clone(tc.members)
			slices.Reverse(reversed)
			again, err := backup.ChooseMember(reversed)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(again).To(Equal(got))
		})
	}
}

func TestChooseMemberReturnsTheWholeCandidate(t *testing.T) {
	g := NewWithT(t)
	m1 := member("m1", func(c *backup.Candidate) { c.ID = 0xabc })
	got, err := backup.ChooseMember([]backup.Candidate{member("m0", leader), m1})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(m1))
}

func TestChooseMemberErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		members []backup.Candidate
		message string
	}{
		{"no members", nil, "no healthy voting member: the cluster has no members"},
		{"all unhealthy", []backup.Candidate{member("m0", leader, unhealthy), member("m1", unhealthy)},
			"no healthy voting member: 2 members: 2 unhealthy, 0 healthy learners"},
		{"only a healthy learner", []backup.Candidate{member("m0", leader, unhealthy), member("m1", unhealthy), member("m2", learner)},
			"no healthy voting member: 3 members: 2 unhealthy, 1 healthy learner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := backup.ChooseMember(tc.members)
			g.Expect(err).To(MatchError(backup.ErrNoHealthyMember))
			g.Expect(err).To(MatchError(tc.message))
		})
	}
}

// A backup is taken only from healthy voting members the status names with a client URL,
// and never from one the consistency check fenced.
func TestSources(t *testing.T) {
	g := NewWithT(t)
	members := []etcdv1alpha1.MemberStatus{
		{Name: "m-0", ID: "a0", Healthy: true, ClientURL: "https://m-0:2379"},
		{Name: "m-1", ID: "a1", Healthy: true, ClientURL: "https://m-1:2379"},
		{Name: "m-2", ID: "a2", Healthy: false, ClientURL: "https://m-2:2379"},
		{Name: "m-3", ID: "a3", Healthy: true, Learner: true, ClientURL: "https://m-3:2379"},
		{Name: "m-4", ID: "a4", Healthy: true},
	}
	g.Expect(backup.Sources(members, nil)).To(Equal([]backup.Source{
		{Member: "m-0", ClientURL: "https://m-0:2379"}, {Member: "m-1", ClientURL: "https://m-1:2379"}}))
	g.Expect(backup.Sources(members, map[uint64]string{0xa1: "differs"})).To(Equal([]backup.Source{
		{Member: "m-0", ClientURL: "https://m-0:2379"}}), "a fenced member is never backed up")
	g.Expect(backup.Sources(members[2:], nil)).To(BeEmpty())
}
