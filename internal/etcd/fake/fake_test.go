package fake_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// threeMembers is a healthy three-member cluster, IDs 1 to 3.
func threeMembers() *fake.Client {
	return fake.New(
		etcd.Member{ID: 1, Name: "e-0", PeerURLs: []string{"https://e-0:2380"}, ClientURLs: []string{"https://e-0:2379"}},
		etcd.Member{ID: 2, Name: "e-1", PeerURLs: []string{"https://e-1:2380"}, ClientURLs: []string{"https://e-1:2379"}},
		etcd.Member{ID: 3, Name: "e-2", PeerURLs: []string{"https://e-2:2380"}, ClientURLs: []string{"https://e-2:2379"}},
	)
}

func TestNewPicksFirstVoterAsLeaderAndNextID(t *testing.T) {
	g := NewWithT(t)
	f := fake.New(
		etcd.Member{ID: 7, PeerURLs: []string{"https://l:2380"}, IsLearner: true},
		etcd.Member{ID: 4, Name: "v", PeerURLs: []string{"https://v:2380"}},
	)
	g.Expect(f.Leader()).To(Equal(uint64(4)))

	// Remove the learner first: the fake, like etcd, allows only one.
	g.Expect(f.MemberRemove(context.Background(), 7)).To(Succeed())
	added, _, err := f.MemberAddAsLearner(context.Background(), []string{"https://n:2380"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added.ID).To(Equal(uint64(8)), "IDs continue after the highest given")

	g.Expect(fake.New().Leader()).To(BeZero())
}

func TestLearnerLifecycle(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	learner, list, err := f.MemberAddAsLearner(ctx, []string{"https://e-3:2380"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(learner).To(Equal(etcd.Member{ID: 4, PeerURLs: []string{"https://e-3:2380"}, IsLearner: true}))
	g.Expect(list).To(HaveLen(4))
	g.Expect(list[3]).To(Equal(learner))

	_, _, err = f.MemberAddAsLearner(ctx, []string{"https://e-4:2380"})
	g.Expect(etcd.IsTooManyLearners(err)).To(BeTrue(), "etcd allows one learner by default: %v", err)

	err = f.MemberPromote(ctx, learner.ID)
	g.Expect(etcd.IsLearnerNotReady(err)).To(BeTrue(), "a learner that never started is not caught up: %v", err)

	g.Expect(f.StartMember(learner.ID, "e-3", "https://e-3:2379")).To(Succeed())
	f.SetLearnerCaughtUp(learner.ID, false)
	err = f.MemberPromote(ctx, learner.ID)
	g.Expect(err).To(MatchError(etcd.ErrLearnerNotReady))
	g.Expect(etcd.IsLearnerNotReady(err)).To(BeTrue())

	f.SetLearnerCaughtUp(learner.ID, true)
	g.Expect(f.MemberPromote(ctx, learner.ID)).To(Succeed())
	members, err := f.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(members[3]).To(Equal(etcd.Member{
		ID: 4, Name: "e-3", PeerURLs: []string{"https://e-3:2380"}, ClientURLs: []string{"https://e-3:2379"},
	}))

	err = f.MemberPromote(ctx, learner.ID)
	g.Expect(err).To(HaveOccurred(), "promoting a voting member fails")
	g.Expect(etcd.IsLearnerNotReady(err)).To(BeFalse())
	g.Expect(etcd.IsMemberNotFound(f.MemberPromote(ctx, 99))).To(BeTrue())

	g.Expect(f.StartMember(99, "nope")).To(HaveOccurred())
}

func TestMemberAddChecksPeerURLs(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	for _, urls := range [][]string{nil, {"e-3:2380"}, {"https://e-3"}, {"ftp://e-3:2380"}} {
		_, _, err := f.MemberAdd(ctx, urls)
		g.Expect(err).To(HaveOccurred(), "%v", urls)
	}
	_, _, err := f.MemberAdd(ctx, []string{"https://e-0:2380"})
	g.Expect(err).To(HaveOccurred(), "peer URL already used")

	added, list, err := f.MemberAdd(ctx, []string{"https://e-3:2380"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(added.IsLearner).To(BeFalse())
	g.Expect(added.ID).To(Equal(uint64(4)))
	g.Expect(list).To(HaveLen(4))
}

func TestMemberRemove(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	g.Expect(f.MemberRemove(ctx, 2)).To(Succeed())
	g.Expect(f.Members()).To(HaveLen(2))
	g.Expect(f.Leader()).To(Equal(uint64(1)))
	g.Expect(etcd.IsMemberNotFound(f.MemberRemove(ctx, 2))).To(BeTrue())

	g.Expect(f.MemberRemove(ctx, 1)).To(Succeed())
	g.Expect(f.Leader()).To(Equal(uint64(3)), "removing the leader elects the first remaining voter")
}

func TestMoveLeader(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()
	learner, _, err := f.MemberAddAsLearner(ctx, []string{"https://e-3:2380"})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(f.MoveLeader(ctx, 3)).To(Succeed())
	g.Expect(f.Leader()).To(Equal(uint64(3)))
	g.Expect(f.MoveLeader(ctx, learner.ID)).To(HaveOccurred(), "a learner cannot lead")
	g.Expect(f.MoveLeader(ctx, 99)).To(HaveOccurred())
	g.Expect(f.Leader()).To(Equal(uint64(3)))

	f.SetLeader(0)
	g.Expect(f.MoveLeader(ctx, 1)).To(HaveOccurred(), "no leader to transfer from")
}

func TestStatus(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	status, err := f.Status(ctx, "https://e-1:2379")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(etcd.MemberStatus{Endpoint: "https://e-1:2379", MemberID: 2, LeaderID: 1}))

	f.SetStatus("https://e-1:2379", etcd.MemberStatus{MemberID: 2, LeaderID: 3, Version: "3.6.16", RaftIndex: 42, Errors: []string{"alarm:NOSPACE"}})
	status, err = f.Status(ctx, "https://e-1:2379")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(status).To(Equal(etcd.MemberStatus{
		Endpoint: "https://e-1:2379", MemberID: 2, LeaderID: 3, Version: "3.6.16", RaftIndex: 42, Errors: []string{"alarm:NOSPACE"},
	}))
	status.Errors[0] = "changed"
	again, err := f.Status(ctx, "https://e-1:2379")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Errors).To(Equal([]string{"alarm:NOSPACE"}), "callers get copies")

	_, err = f.Status(ctx, "https://elsewhere:2379")
	g.Expect(err).To(HaveOccurred())
}

func TestHealth(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	g.Expect(f.Health(ctx, "https://e-0:2379")).To(Succeed())
	g.Expect(f.Health(ctx, "https://elsewhere:2379")).To(HaveOccurred())

	down := errors.New("connection refused")
	f.SetHealthError("https://e-0:2379", down)
	g.Expect(f.Health(ctx, "https://e-0:2379")).To(MatchError(down))
	g.Expect(f.Health(ctx, "https://e-1:2379")).To(Succeed())
	f.SetHealthError("https://e-0:2379", nil)
	g.Expect(f.Health(ctx, "https://e-0:2379")).To(Succeed())

	f.SetLeader(0)
	g.Expect(f.Health(ctx, "https://e-0:2379")).To(HaveOccurred(), "no leader, no linearizable read")
}

func TestPutGet(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fake.New()

	_, found, err := f.Get(ctx, "canary")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeFalse())
	g.Expect(f.Put(ctx, "canary", "1")).To(Succeed())
	value, found, err := f.Get(ctx, "canary")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(value).To(Equal("1"))
}

func TestInjectedErrorsAndCallLog(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	client, err := f.Factory()(etcd.Config{Endpoints: []string{"https://e-0:2379", "https://e-1:2379"}})
	g.Expect(err).NotTo(HaveOccurred())

	f.SetError(fake.MemberRemove, etcd.ErrUnhealthyCluster)
	err = client.MemberRemove(ctx, 3)
	g.Expect(etcd.IsUnhealthyCluster(err)).To(BeTrue())
	g.Expect(f.Members()).To(HaveLen(3), "a failed call changes nothing")
	f.SetError(fake.MemberRemove, nil)

	_, err = client.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.MemberRemove(ctx, 3)).To(Succeed())
	_, _, err = client.MemberAddAsLearner(ctx, []string{"https://e-3:2380", "https://e-3b:2380"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.MemberPromote(ctx, 10)).To(HaveOccurred())
	g.Expect(client.MoveLeader(ctx, 2)).To(Succeed())
	_, err = client.Status(ctx, "https://e-0:2379")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.Health(ctx, "https://e-0:2379")).To(Succeed())
	g.Expect(client.Put(ctx, "k", "v")).To(Succeed())
	_, _, err = client.Get(ctx, "k")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(client.Close()).To(Succeed())

	g.Expect(f.Calls()).To(Equal([]string{
		"New https://e-0:2379,https://e-1:2379",
		"MemberRemove 3",
		"MemberList",
		"MemberRemove 3",
		"MemberAddAsLearner https://e-3:2380,https://e-3b:2380",
		"MemberPromote a",
		"MoveLeader 2",
		"Status https://e-0:2379",
		"Health https://e-0:2379",
		"Put k",
		"Get k",
		"Close",
	}))
	g.Expect(f.MembershipChanges()).To(Equal([]string{
		"MemberRemove 3",
		"MemberRemove 3",
		"MemberAddAsLearner https://e-3:2380,https://e-3b:2380",
		"MemberPromote a",
	}))

	f.ResetCalls()
	g.Expect(f.Calls()).To(BeEmpty())
	_, err = client.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "the fake still works after Close")
}

func TestMembersAreCopies(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	members, err := f.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	members[0].PeerURLs[0] = "https://changed:2380"
	members[0].Name = "changed"
	g.Expect(f.Members()[0].PeerURLs).To(Equal([]string{"https://e-0:2380"}))
	g.Expect(f.Members()[0].Name).To(Equal("e-0"))
}

func TestConcurrentUse(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := threeMembers()

	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			key := fmt.Sprintf("k%d", i)
			_ = f.Put(ctx, key, "v")
			_, _ = f.MemberList(ctx)
			_, _ = f.Status(ctx, "https://e-0:2379")
			_ = f.MoveLeader(ctx, uint64(i%3+1))
		})
	}
	wg.Wait()
	g.Expect(f.Calls()).To(HaveLen(80))
}
