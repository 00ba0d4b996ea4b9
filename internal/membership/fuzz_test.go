package membership_test

import (
	"testing"
	"time"

	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// bytesource hands out the fuzzer's bytes as small choices; past the end it answers 0.
type bytesource struct {
	b []byte
	i int
}

func (s *bytesource) pick(n int) int {
	if s.i >= len(s.b) {
		return 0
	}
	v := int(s.b[s.i]) % n
	s.i++
	return v
}

func (s *bytesource) flag() bool { return s.pick(2) == 1 }

// generated builds an observation from the fuzzer's bytes: any size, up to seven members
// (voters or learners, healthy or not, started or not, Ready or not, at most one leader,
// healthy), pods at any supported release and spec hash or missing, claims present or not,
// an upgrade target, a rolled-back upgrade, members unhealthy for a while.
func generated(data []byte) membership.Observed {
	s := &bytesource{b: data}
	releases := []string{"3.5.35", "3.6.15", "3.6.16", "3.7.3"}
	o := membership.Observed{
		Cluster: c, Size: []int{1, 3, 5, 7}[s.pick(4)], Now: now, Ephemeral: s.pick(8) == 0,
		Pods: map[string]membership.Pod{}, PVCs: map[string]membership.PVC{}, SpecHashes: map[string]string{},
		ReplaceUnhealthyAfter: 10 * time.Minute,
		Upgrade: membership.Upgrade{Target: releases[s.pick(len(releases))], MemberTimeout: 5 * time.Minute,
			SnapshotTaken: s.flag(), RaftSnapshotsForced: s.flag(), SnapshotCount: 10000},
	}
	if s.flag() {
		o.Upgrade.From = releases[s.pick(len(releases))]
		o.Upgrade.RolledBack = s.pick(4) == 0
	}
	// Half the observations are of a steady cluster (every member a healthy, Ready voter
	// with its pod and claim, caught up), where only releases and spec hashes differ: the
	// upgrades and rollouts the planner must carry out without losing quorum.
	steady := s.flag()
	chance := func(n int) bool { return !steady && s.pick(n) == 0 }
	n := s.pick(8)
	if steady {
		n = o.Size - s.pick(2)
	} else if s.pick(6) == 0 {
		n = -1 // no member answered
	}
	leaderAt := s.pick(8)
	for i := 0; i < 8; i++ {
		name := c.MemberName(i)
		if i < n {
			m := voter(i, uint64(10+i))
			m.Learner = chance(5)
			m.Healthy = !chance(4)
			m.Ready = m.Healthy && !chance(5)
			m.Started = m.Healthy || !chance(3)
			m.Leader = i == leaderAt%n && !m.Learner && m.Healthy
			m.RaftIndex = 5000
			if chance(3) {
				m.RaftIndex -= uint64(10 * s.pick(4) * s.pick(200))
			}
			if !m.Healthy && m.Started {
				m.UnhealthySince = now.Add(-time.Duration(s.pick(30)) * time.Minute)
			}
			o.Members = append(o.Members, m)
		}
		if steady && i < n || !steady && i < n+s.pick(3) && s.pick(6) != 0 {
			o.Pods[name] = membership.Pod{Ready: !chance(2), Version: releases[s.pick(len(releases))],
				Created: now.Add(-time.Duration(s.pick(20)) * time.Minute), Terminating: chance(8),
				SpecHash: []string{"", "old", "new"}[s.pick(3)]}
			o.SpecHashes[name] = "new"
		}
		if steady && i < n || !steady && i < n+s.pick(3) && s.pick(6) != 0 {
			o.PVCs[name] = membership.PVC{Bootstrapped: !chance(2), Removed: chance(8)}
		}
	}
	return o
}

// checkPlan states what no plan may ever do, whatever the cluster looks like.
func checkPlan(t *testing.T, o membership.Observed, a membership.Action) {
	t.Helper()
	byName := map[string]membership.Member{}
	voters, healthy := 0, 0
	for _, m := range o.Members {
		byName[m.Name] = m
		if !m.Learner {
			voters++
			if m.Healthy {
				healthy++
			}
		}
	}
	target, inList := byName[a.Member]
	takesDown := inList && !target.Learner && target.Healthy
	switch a.Kind {
	case membership.RemoveMember:
		if !inList {
			t.Fatalf("removes %s, which is not a member: %+v", a.Member, a)
		}
		left, leftHealthy := voters, healthy
		if !target.Learner {
			left--
			if target.Healthy {
				leftHealthy--
			}
		}
		if left > 0 && leftHealthy < left/2+1 {
			t.Fatalf("removing %s leaves %d healthy of %d voters, short of a quorum: %+v", a.Member, leftHealthy, left, a)
		}
		if target.Leader {
			t.Fatalf("removes the leader %s before moving leadership: %+v", a.Member, a)
		}
	case membership.RestartMember:
		if takesDown && voters > 1 && healthy-1 < voters/2+1 {
			t.Fatalf("restarting %s leaves %d healthy of %d voters, short of a quorum: %+v", a.Member, healthy-1, voters, a)
		}
		if takesDown && voters > 1 && healthy < voters {
			t.Fatalf("restarts healthy %s while another voter is unhealthy: %+v", a.Member, a)
		}
		if target.Leader && voters > 1 {
			t.Fatalf("restarts the leader %s before moving leadership: %+v", a.Member, a)
		}
	case membership.DeletePod:
		if takesDown {
			t.Fatalf("deletes the pod of healthy voter %s: %+v", a.Member, a)
		}
	case membership.MoveLeader:
		var to *membership.Member
		for i := range o.Members {
			if o.Members[i].ID == a.MemberID {
				to = &o.Members[i]
			}
		}
		if to == nil || to.Learner || !to.Healthy || to.Name == a.Member {
			t.Fatalf("moves leadership to %d, not another healthy voter: %+v", a.MemberID, a)
		}
	case membership.AddLearner:
		if len(o.Members) >= o.Size {
			t.Fatalf("adds a member to %d members of spec.size %d: %+v", len(o.Members), o.Size, a)
		}
		for _, m := range o.Members {
			if !m.Healthy || m.Learner {
				t.Fatalf("adds a member while %s is unhealthy or a learner: %+v", m.Name, a)
			}
		}
	}
	// A member of the membership without a pod is brought back (or replaced) before any
	// other change: none is forgotten while the membership changes.
	if o.Members != nil {
		for _, m := range o.Members {
			if _, ok := o.Pods[m.Name]; !ok {
				switch a.Kind {
				case membership.AddLearner, membership.Promote, membership.RestartMember, membership.ExpandVolume, membership.None:
					t.Fatalf("member %s has no pod, yet the plan is %s: %+v", m.Name, a.Kind, a)
				}
			}
		}
	}
}

// The planner's safety, for observations no table test thought of. `make test` runs the
// seeds and the corpus; `go test -fuzz FuzzPlan ./internal/membership` looks for more.
func FuzzPlan(f *testing.F) {
	for _, seed := range [][]byte{
		{}, {1, 3, 3, 0, 1, 2}, {2, 1, 2, 1, 1, 5, 1, 1, 1, 1, 1, 1, 2, 3, 1, 1},
		{3, 0, 1, 1, 1, 1, 2, 0, 7, 0, 3, 1, 1, 1, 0, 2, 2, 1, 3, 1, 0, 0, 1, 1, 2, 1},
		[]byte("etcdpilot keeps quorum while it rolls out, upgrades and scales"),
		[]byte("\x01\x02\x03\x04\x05\x06\x07\x08\x09\x0a\x0b\x0c\x0d\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19"),
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		o := generated(data)
		checkPlan(t, o, membership.Plan(o))
	})
}

// A few thousand generated observations on every `make test`, beyond the fuzzer's seeds.
func TestPlanIsSafeForGeneratedObservations(t *testing.T) {
	for i := 0; i < 20000; i++ {
		data := make([]byte, 64)
		x := uint32(i)*2654435761 + 1
		for j := range data {
			x ^= x << 13
			x ^= x >> 17
			x ^= x << 5
			data[j] = byte(x)
		}
		o := generated(data)
		checkPlan(t, o, membership.Plan(o))
	}
}
