package membership_test

import (
	"fmt"
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
// healthy), pods at any supported release and spec hash or missing, on a lost node or not,
// claims present or not,
// an upgrade target, a rolled-back upgrade, members unhealthy for a while. Half of them are
// of a steady cluster (every member a healthy, Ready voter with its pod and claim, caught
// up), where only releases and spec hashes differ: the upgrades and rollouts the planner
// must carry out without losing quorum.
func generated(data []byte) membership.Observed {
	s := &bytesource{b: data}
	o := membership.Observed{
		Cluster: c, Size: []int{1, 3, 5, 7}[s.pick(4)], Now: now, Ephemeral: s.pick(8) == 0,
		Pods: map[string]membership.Pod{}, PVCs: map[string]membership.PVC{}, SpecHashes: map[string]string{},
		ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
		Upgrade: membership.Upgrade{Target: releases[s.pick(len(releases))], MemberTimeout: 5 * time.Minute,
			SnapshotTaken: s.flag(), RaftSnapshotsForced: s.flag(), SnapshotCount: 10000},
	}
	if s.flag() {
		o.Upgrade.From = releases[s.pick(len(releases))]
		o.Upgrade.RolledBack = s.pick(4) == 0
	}
	g := generator{s: s, steady: s.flag()}
	n := s.pick(8)
	if g.steady {
		n = o.Size - s.pick(2)
	} else if s.pick(6) == 0 {
		n = -1 // no member answered
	}
	leaderAt := s.pick(8)
	for i := 0; i < 8; i++ {
		name := c.MemberName(i)
		if i < n {
			o.Members = append(o.Members, g.member(i, i == leaderAt%n))
		}
		if g.present(i, n) {
			o.Pods[name] = g.pod()
			o.SpecHashes[name] = "new"
		}
		if g.present(i, n) {
			o.PVCs[name] = membership.PVC{Bootstrapped: !g.chance(2), Removed: g.chance(8)}
		}
	}
	// A static bootstrap: allowed for this cluster, or recorded on some of its claims.
	o.StaticBootstrap = s.flag()
	if !g.steady && s.flag() {
		static := make([]string, o.Size)
		for i := range static {
			static[i] = c.MemberName(i) + "=" + c.PeerURL(c.MemberName(i))
		}
		for name, pvc := range o.PVCs {
			if s.flag() {
				pvc.InitialCluster = static
				o.PVCs[name] = pvc
			}
		}
	}
	return o
}

var releases = []string{"3.5.35", "3.6.15", "3.6.16", "3.7.3"}

// generator draws the parts of an observation; in a steady one, nothing is wrong by chance.
type generator struct {
	s      *bytesource
	steady bool
}

func (g generator) chance(n int) bool { return !g.steady && g.s.pick(n) == 0 }

func (g generator) member(i int, leads bool) membership.Member {
	m := voter(i, uint64(10+i))
	m.Learner = g.chance(5)
	m.Healthy = !g.chance(4)
	m.Ready = m.Healthy && !g.chance(5)
	m.Started = m.Healthy || !g.chance(3)
	m.Leader = leads && !m.Learner && m.Healthy
	m.RaftIndex = 5000
	if g.chance(3) {
		m.RaftIndex -= uint64(10 * g.s.pick(4) * g.s.pick(200))
	}
	if !m.Healthy && m.Started {
		m.UnhealthySince = now.Add(-time.Duration(g.s.pick(30)) * time.Minute)
	}
	return m
}

// present says whether member i (of n in the membership) has a pod, or a claim: always in a
// steady cluster, by chance otherwise (and by chance for a few beyond the membership).
func (g generator) present(i, n int) bool {
	if g.steady {
		return i < n
	}
	return i < n+g.s.pick(3) && g.s.pick(6) != 0
}

func (g generator) pod() membership.Pod {
	p := membership.Pod{Ready: !g.chance(2), Version: releases[g.s.pick(len(releases))],
		Created: now.Add(-time.Duration(g.s.pick(20)) * time.Minute), Terminating: g.chance(8),
		SpecHash: []string{"", "old", "new"}[g.s.pick(3)], Node: "n"}
	if g.chance(6) {
		p.LostNode = membership.NodeLoss{Node: "n", How: membership.NodeNotReady, Since: now.Add(-time.Duration(g.s.pick(10)) * time.Minute)}
	}
	return p
}

// view is what the safety properties look at: the members by name, and the voters.
type view struct {
	o               membership.Observed
	byName          map[string]membership.Member
	voters, healthy int
}

// liveClaims counts the claims not marked removed.
func (v view) liveClaims() int {
	n := 0
	for _, pvc := range v.o.PVCs {
		if !pvc.Removed {
			n++
		}
	}
	return n
}

func viewOf(o membership.Observed) view {
	v := view{o: o, byName: map[string]membership.Member{}}
	for _, m := range o.Members {
		v.byName[m.Name] = m
		if !m.Learner {
			v.voters++
			if m.Healthy {
				v.healthy++
			}
		}
	}
	return v
}

// properties are what no plan may ever do, whatever the cluster looks like; each returns
// what went wrong, or "".
var properties = map[membership.Kind]func(v view, a membership.Action) string{
	membership.RemoveMember: func(v view, a membership.Action) string {
		target, ok := v.byName[a.Member]
		if !ok {
			return "removes a member that is not in the membership"
		}
		left, leftHealthy := v.voters, v.healthy
		if !target.Learner {
			left--
			if target.Healthy {
				leftHealthy--
			}
		}
		switch {
		case left > 0 && leftHealthy < left/2+1:
			return fmt.Sprintf("the removal leaves %d healthy of %d voters, short of a quorum", leftHealthy, left)
		case target.Leader:
			return "removes the leader before moving leadership"
		}
		return ""
	},
	membership.RestartMember: func(v view, a membership.Action) string {
		target, ok := v.byName[a.Member]
		takesDown := ok && !target.Learner && target.Healthy
		switch {
		case takesDown && v.voters > 1 && v.healthy-1 < v.voters/2+1:
			return fmt.Sprintf("the restart leaves %d healthy of %d voters, short of a quorum", v.healthy-1, v.voters)
		case takesDown && v.voters > 1 && v.healthy < v.voters:
			return "restarts a healthy member while another voter is unhealthy"
		case target.Leader && v.voters > 1:
			return "restarts the leader before moving leadership"
		}
		return ""
	},
	membership.DeletePod: func(v view, a membership.Action) string {
		if target, ok := v.byName[a.Member]; ok && !target.Learner && target.Healthy {
			return "deletes the pod of a healthy voter"
		}
		return ""
	},
	membership.MoveLeader: func(v view, a membership.Action) string {
		for _, m := range v.o.Members {
			if m.ID == a.MemberID && !m.Learner && m.Healthy && m.Name != a.Member {
				return ""
			}
		}
		return "moves leadership to a member that is not another healthy voter"
	},
	membership.CreateSeed: func(v view, a membership.Action) string {
		switch {
		case v.o.Members != nil:
			return "starts a new cluster while members answer"
		case len(v.o.Pods) > 0:
			return "starts a new cluster beside a member pod"
		case !v.o.Ephemeral && v.liveClaims() > 0:
			return "starts a new cluster beside a member's claim"
		case len(a.Members) > 1 && (v.o.Ephemeral || !v.o.StaticBootstrap || len(a.Members) != v.o.Size):
			return "starts several members where the cluster may not bootstrap statically"
		}
		return ""
	},
	membership.CreatePod: func(v view, a membership.Action) string {
		if a.InitialClusterState != "new" {
			return ""
		}
		pvc, hasPVC := v.o.PVCs[a.Member]
		switch {
		case v.o.Members != nil:
			return "starts a member as a new cluster while members answer"
		case !hasPVC || pvc.Removed:
			return "starts a member as a new cluster on a claim that was not made for it"
		case pvc.Bootstrapped:
			return "starts a member that once joined as a new cluster"
		case v.o.Ephemeral:
			return "starts an ephemeral member as a new cluster beside others"
		}
		for name, other := range v.o.PVCs {
			if other.Bootstrapped && !other.Removed {
				return "starts a member as a new cluster while member " + name + " holds data"
			}
		}
		return ""
	},
	membership.AddLearner: func(v view, _ membership.Action) string {
		if len(v.o.Members) >= v.o.Size {
			return "grows beyond spec.size"
		}
		for _, m := range v.o.Members {
			if !m.Healthy || m.Learner {
				return "grows while a member is unhealthy or a learner"
			}
		}
		return ""
	},
}

// forgets: a member of the membership without a pod is brought back (or replaced) before
// any other change, so none is left behind while the cluster changes.
func forgets(v view, a membership.Action) string {
	switch a.Kind {
	case membership.AddLearner, membership.Promote, membership.RestartMember, membership.ExpandVolume, membership.None:
		for _, m := range v.o.Members {
			if _, ok := v.o.Pods[m.Name]; !ok {
				return "member " + m.Name + " has no pod, and the plan is about something else"
			}
		}
	}
	return ""
}

func checkPlan(t *testing.T, o membership.Observed, a membership.Action) {
	t.Helper()
	v := viewOf(o)
	for _, property := range []func(view, membership.Action) string{properties[a.Kind], forgets} {
		if property == nil {
			continue
		}
		if what := property(v, a); what != "" {
			t.Fatalf("%s: %+v\nobserved: %+v", what, a, o)
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
