package chaos

import (
	"fmt"
	"time"
)

// Sample is the members' health at one moment: the voters of the member list, and which of
// them answered with a leader.
type Sample struct {
	At      time.Time
	Voters  []string
	Healthy map[string]bool
}

// Window is a span during which the suite's own fault may keep Member down: from the
// injection until the cluster recovered from it.
type Window struct {
	Member   string
	From, To time.Time
}

// Violation is a member taken down, not by a fault, while fewer than a quorum of the other
// voters were healthy.
type Violation struct {
	At            time.Time
	Member        string
	HealthyOthers int
	Quorum        int
}

func (v Violation) String() string {
	return fmt.Sprintf("%s: %s went down, not by a fault, while %d other voters were healthy (quorum %d)",
		v.At.Format(time.TimeOnly), v.Member, v.HealthyOthers, v.Quorum)
}

// QuorumViolations returns the moments at which a voter went from healthy to down (and
// stayed down in the next sample, so that one slow answer is not taken for a restart)
// outside every window of its own faults, while the other voters were fewer than a quorum
// of the voters both in the sample before and in that one.
func QuorumViolations(samples []Sample, faults []Window) []Violation {
	var out []Violation
	for i := 1; i < len(samples); i++ {
		prev, cur := samples[i-1], samples[i]
		for _, m := range cur.Voters {
			if !prev.Healthy[m] || cur.Healthy[m] || !contains(prev.Voters, m) {
				continue
			}
			if i+1 < len(samples) && samples[i+1].Healthy[m] {
				continue
			}
			if inWindow(faults, m, cur.At) {
				continue
			}
			// The operator decided before the member went down: a fault that struck between
			// the sample before and this one is the fault's doing, not the operator's.
			others := max(healthyOthers(prev, m), healthyOthers(cur, m))
			if quorum := len(cur.Voters)/2 + 1; others < quorum {
				out = append(out, Violation{At: cur.At, Member: m, HealthyOthers: others, Quorum: quorum})
			}
		}
	}
	return out
}

// healthyOthers counts the voters of s other than m that were healthy.
func healthyOthers(s Sample, m string) int {
	n := 0
	for _, o := range s.Voters {
		if o != m && s.Healthy[o] {
			n++
		}
	}
	return n
}

// MinHealthy is the fewest healthy voters over the samples, and the voters at that moment.
func MinHealthy(samples []Sample) (healthy, voters int) {
	healthy = -1
	for _, s := range samples {
		n := 0
		for _, m := range s.Voters {
			if s.Healthy[m] {
				n++
			}
		}
		if healthy < 0 || n < healthy {
			healthy, voters = n, len(s.Voters)
		}
	}
	return max(healthy, 0), voters
}

// SampleGap is the longest time between two of the suite's samples (taken every second) that
// still says the suite's member list answered all along: a longer gap is a member list that
// failed, which is how a client sees a loss of quorum.
const SampleGap = 3 * time.Second

// UnconfirmedLosses returns the moments, among declared (when the operator reported a loss of
// quorum), that the suite's own samples contradict: over span before the declaration, the
// suite's member list answered every second and each sample had a quorum of healthy voters.
// A declaration is borne out by one sample short of a quorum, or by a gap longer than
// SampleGap, in that span.
func UnconfirmedLosses(declared []time.Time, samples []Sample, span time.Duration) []time.Time {
	var out []time.Time
	for _, d := range declared {
		from, last, confirmed := d.Add(-span), d.Add(-span), false
		for _, s := range samples {
			if s.At.Before(from) || s.At.After(d) {
				continue
			}
			if s.At.Sub(last) > SampleGap || healthyOthers(s, "") < len(s.Voters)/2+1 {
				confirmed = true
				break
			}
			last = s.At
		}
		if !confirmed && d.Sub(last) > SampleGap {
			confirmed = true
		}
		if !confirmed {
			out = append(out, d)
		}
	}
	return out
}

func inWindow(ws []Window, member string, at time.Time) bool {
	for _, w := range ws {
		if w.Member == member && !at.Before(w.From) && !at.After(w.To) {
			return true
		}
	}
	return false
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
