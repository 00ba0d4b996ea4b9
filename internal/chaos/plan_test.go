package chaos

import (
	"reflect"
	"testing"
	"time"
)

func TestPlan(t *testing.T) {
	for _, p := range []Profile{Short, Long} {
		t.Run(p.Name, func(t *testing.T) {
			steps := Plan(42, p)
			if !reflect.DeepEqual(steps, Plan(42, p)) {
				t.Fatal("the same seed gave two plans")
			}
			if len(steps) != len(p.Changes)*len(Faults) {
				t.Fatalf("%d steps for %d rounds", len(steps), len(p.Changes))
			}
			for r, changes := range p.Changes {
				checkRound(t, p, r+1, steps[r*len(Faults):(r+1)*len(Faults)], changes)
			}
		})
	}
	orders := map[string]bool{}
	for seed := range uint64(20) {
		s := Plan(seed, Short)
		key := ""
		for _, st := range s {
			key += string(st.Fault) + " "
		}
		orders[key] = true
	}
	if len(orders) < 5 {
		t.Fatalf("20 seeds gave only %d orders of faults", len(orders))
	}
}

// checkRound checks that a round has every fault once, the holds of the profile, and the
// round's changes.
func checkRound(t *testing.T, p Profile, r int, round []Step, changes []Change) {
	t.Helper()
	seen := map[Fault]bool{}
	var started []Change
	for _, s := range round {
		if s.Round != r {
			t.Fatalf("step of round %d in round %d", s.Round, r)
		}
		if seen[s.Fault] {
			t.Fatalf("round %d has %s twice", r, s.Fault)
		}
		seen[s.Fault] = true
		if s.Change != "" {
			started = append(started, s.Change)
		}
		held := s.Fault == Partition || s.Fault == CutAPIAccess || s.Fault == StopNode
		if held != (s.Hold == p.Hold) || (!held && s.Hold != 0) {
			t.Fatalf("%s held %s", s.Fault, s.Hold)
		}
	}
	if len(seen) != len(Faults) {
		t.Fatalf("round %d has %d kinds of fault", r, len(seen))
	}
	if len(started) != len(changes) {
		t.Fatalf("round %d starts %v, want %v", r, started, changes)
	}
}

func TestLongProfileUpgradesTwiceAndScalesBack(t *testing.T) {
	n := map[Change]int{}
	for _, s := range Plan(7, Long) {
		n[s.Change]++
	}
	if n[Upgrade] != 2 || n[ScaleUp] != n[ScaleDown] || n[ScaleUp] == 0 || n[Rollout] == 0 {
		t.Fatalf("changes: %v", n)
	}
}

// at is s seconds after the samples' epoch.
func at(s int) time.Time { return time.Unix(1000, 0).Add(time.Duration(s) * time.Second) }

// sample is a sample of voters a, b and c at second s, each healthy but down.
func sample(s int, down ...string) Sample {
	voters := []string{"a", "b", "c"}
	h := map[string]bool{}
	for _, v := range voters {
		h[v] = true
	}
	for _, d := range down {
		h[d] = false
	}
	return Sample{At: at(s), Voters: voters, Healthy: h}
}

func TestQuorumViolations(t *testing.T) {
	cases := []struct {
		name    string
		samples []Sample
		faults  []Window
		want    []string
	}{
		{"the operator restarts one member while the others are healthy",
			[]Sample{sample(0), sample(1, "a"), sample(2, "a"), sample(3)}, nil, nil},
		{"a fault takes one member down, the operator restarts another",
			[]Sample{sample(0), sample(1, "a"), sample(2, "a", "b"), sample(3, "a", "b"), sample(4)},
			[]Window{{Member: "a", From: at(1), To: at(10)}}, []string{"b"}},
		{"a fault strikes while the operator restarts another: the fault's doing",
			[]Sample{sample(0), sample(1, "a", "b"), sample(2, "a", "b"), sample(3)},
			[]Window{{Member: "a", From: at(1), To: at(10)}}, nil},
		{"a fault takes two members down: the fault's doing",
			[]Sample{sample(0), sample(1, "a"), sample(2, "a", "b"), sample(3, "a", "b")},
			[]Window{{Member: "a", From: at(1), To: at(10)}, {Member: "b", From: at(1), To: at(10)}}, nil},
		{"one slow answer is not a restart",
			[]Sample{sample(0), sample(1, "a"), sample(2, "a", "b"), sample(3, "a"), sample(4, "a")},
			[]Window{{Member: "a", From: at(1), To: at(10)}}, nil},
		{"outside the fault's window, a member going down is the operator's doing",
			[]Sample{sample(0), sample(11, "a"), sample(12, "a", "b"), sample(13, "a", "b")},
			[]Window{{Member: "a", From: at(1), To: at(10)}}, []string{"b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, v := range QuorumViolations(tc.samples, tc.faults) {
				got = append(got, v.Member)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("violations %v, want %v", got, tc.want)
			}
		})
	}
	if h, v := MinHealthy([]Sample{sample(0), sample(1, "a", "b"), sample(2)}); h != 1 || v != 3 {
		t.Fatalf("MinHealthy: %d of %d", h, v)
	}
}

// A loss of quorum the operator declares must be seen by the suite's own client: a sample
// short of a quorum, or its member list failing (a gap in the samples), in the span before.
func TestUnconfirmedLosses(t *testing.T) {
	every := func(from, to int, down ...string) []Sample {
		var out []Sample
		for s := from; s <= to; s++ {
			out = append(out, sample(s, down...))
		}
		return out
	}
	span := 10 * time.Second
	cases := []struct {
		name    string
		samples []Sample
		want    int
	}{
		{"clients saw a quorum every second: contradicted", every(0, 30, "a"), 1},
		{"a sample short of a quorum bears it out", append(every(0, 15, "a"), every(16, 30, "a", "b")...), 0},
		{"the suite's member list failed for 5 s bears it out", append(every(0, 15), every(21, 30)...), 0},
		{"no sample near the declaration bears it out", every(0, 10), 0},
		{"a shortfall long before the span does not", append(every(0, 5, "a", "b"), every(6, 30)...), 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := UnconfirmedLosses([]time.Time{at(25)}, tc.samples, span); len(got) != tc.want {
				t.Fatalf("unconfirmed %v, want %d", got, tc.want)
			}
		})
	}
}
