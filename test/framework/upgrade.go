package framework

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"
)

// What level 2 sees of an upgrade from etcd itself, rather than from the operator's status:
// the version each member's own etcd answers, sampled through the upgrade, and how long
// writes through the client Service went unacknowledged.

// VersionSample is what the members answered at one moment: the etcd version each one's
// own Status reported, "" for a member that did not answer (down or restarting).
type VersionSample struct {
	// At is when the sample was taken: every member is asked at once, at At.
	At time.Time
	// Versions holds the answer of every member asked, by member name.
	Versions map[string]string
	// Why says, for a member that did not answer, what its call ended with (a refused
	// connection, a deadline, a name not found): a breach names it, so that a member down
	// and a member the test could not reach tell apart.
	Why map[string]string
	// Slow holds, for a member that answered only after the sample's bound, how long it took:
	// it answered on the connection it had answered on before the sample, so its process
	// served throughout (a restart breaks the connection) and it counts as answering. On a
	// loaded machine a member that serves may take longer than the bound; a member that
	// stopped cannot answer on its old connection.
	Slow map[string]time.Duration
}

// silentWhy names members with why each did not answer, when the sample knows.
func (s VersionSample) silentWhy(members []string) []string {
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m
		if why := s.Why[m]; why != "" {
			out[i] += " (" + why + ")"
		}
	}
	return out
}

// Silent names, sorted, the members of s that did not answer.
func (s VersionSample) Silent() []string {
	var silent []string
	for m, v := range s.Versions {
		if v == "" {
			silent = append(silent, m)
		}
	}
	slices.Sort(silent)
	return silent
}

// slowPatience is how long SampleVersions waits, past its bound, for a member that has
// answered on its connection before: long enough for a process starved of CPU for seconds,
// short against a restart, which ends the connection at once.
const slowPatience = 8 * time.Second

// SampleVersions asks every member for its release through its probe (ProbeMembers), all at
// once and each for at most within, and returns what they answered. A member that does not
// answer within, on a connection it has answered on before, is asked once more, for up to
// slowPatience: when it answers on that same connection, it served all along, and the sample
// records its version and how long it took (Slow); otherwise it is silent.
func SampleVersions(ctx context.Context, probes map[string]VersionProbe, within time.Duration) VersionSample {
	s := VersionSample{At: time.Now(), Versions: make(map[string]string, len(probes)), Why: map[string]string{}, Slow: map[string]time.Duration{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for member, probe := range probes {
		wg.Go(func() {
			version, slow, err := askVersion(ctx, probe, within)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				s.Versions[member], s.Why[member] = "", err.Error()
				return
			}
			s.Versions[member] = version
			if slow > 0 {
				s.Slow[member] = slow
			}
		})
	}
	wg.Wait()
	return s
}

// askVersion is one member's part of SampleVersions: its version, and how long it took when
// that was more than within.
func askVersion(ctx context.Context, probe VersionProbe, within time.Duration) (string, time.Duration, error) {
	start := time.Now()
	conn, answered := probe.Connection()
	sctx, cancel := context.WithTimeout(ctx, within)
	defer cancel()
	version, err := probe.Version(sctx)
	if err == nil || !answered || sctx.Err() != context.DeadlineExceeded || ctx.Err() != nil {
		return version, 0, err
	}
	pctx, pcancel := context.WithTimeout(ctx, slowPatience)
	defer pcancel()
	version, again := probe.Version(pctx)
	if now, _ := probe.Connection(); again != nil || now != conn {
		return "", 0, err
	}
	return version, time.Since(start), nil
}

// CheckRollingUpgrade judges what members answered, sample after sample (samples in time
// order, the last one taken once the upgrade is over), while their version went from from to
// to. An upgrade that keeps the cluster serving restarts one member at a time, and the next
// one only once the one before answers again at the new version:
//
//   - every answer is from or to;
//   - at no sample are two members or more silent: with one down, the other two keep quorum
//     and the client Service's endpoints;
//   - no member answers from after it answered to: none goes back;
//   - a member stops answering only when every member seen silent before answered to in the
//     sample before: the next member is restarted only once the one before runs the new
//     version (health gating). A member that was silent in the sample before and answers in
//     the sample where the next one stops came back within the same interval: the samples
//     cannot order the two, and a health-gated operator restarts the next member as soon as
//     the one before answers, so that is no breach, unless it came back at from (two
//     silent in one sample is one too);
//   - a member that went from from to to between two samples without one seeing it silent was
//     restarted between them: then every other member answered in both samples, each the same
//     version in both, so no two members changed at once;
//   - in the last sample every member answers to.
//
// It returns the first breach in the samples' order, timed from the first sample.
func CheckRollingUpgrade(members []string, from, to string, samples []VersionSample) error {
	if len(samples) == 0 {
		return errors.New("no sample of the members' versions")
	}
	at := sampleClock(samples[0].At)
	upgraded, restarted := map[string]bool{}, map[string]bool{}
	for i, s := range samples {
		if err := checkAnswers(members, from, to, s, upgraded, at); err != nil {
			return err
		}
		if i > 0 {
			if err := checkRollingStep(members, from, to, samples[i-1], s, restarted, at); err != nil {
				return err
			}
		}
		for _, m := range members {
			switch s.Versions[m] {
			case "":
				restarted[m] = true
			case to:
				upgraded[m] = true
			}
		}
	}
	last := samples[len(samples)-1]
	var behind []string
	for _, m := range members {
		if v := last.Versions[m]; v != to {
			behind = append(behind, fmt.Sprintf("%s (%s)", m, answer(v)))
		}
	}
	if len(behind) > 0 {
		return fmt.Errorf("once the upgrade was over (%s), not every member answered etcd %s: %s", at(last), to, strings.Join(behind, ", "))
	}
	return nil
}

// checkAnswers judges one sample alone (CheckRollingUpgrade): every answer from or to, no
// member back at from once upgraded (it answered to before), at most one member silent.
func checkAnswers(members []string, from, to string, s VersionSample, upgraded map[string]bool, at func(VersionSample) string) error {
	var silent []string
	for _, m := range members {
		switch v := s.Versions[m]; {
		case v == "":
			silent = append(silent, m)
		case v != from && v != to:
			return fmt.Errorf("at %s member %s answered etcd %s, neither %s nor %s", at(s), m, v, from, to)
		case v == from && upgraded[m]:
			return fmt.Errorf("at %s member %s answered etcd %s after it had answered %s: it went back", at(s), m, from, to)
		}
	}
	if len(silent) > 1 {
		return fmt.Errorf("at %s members %s did not answer at the same time: more than one member was down or restarting",
			at(s), strings.Join(s.silentWhy(silent), " and "))
	}
	return nil
}

// checkRollingStep judges the change from sample p to sample q (CheckRollingUpgrade);
// restarted holds the members seen silent before q.
func checkRollingStep(members []string, from, to string, p, q VersionSample, restarted map[string]bool, at func(VersionSample) string) error {
	for _, m := range members {
		was, is := p.Versions[m], q.Versions[m]
		switch {
		case was != "" && is == "":
			if err := checkStopped(m, members, to, p, q, restarted, at); err != nil {
				return err
			}
		case was == from && is == to:
			for _, o := range members {
				if o != m && (p.Versions[o] == "" || p.Versions[o] != q.Versions[o]) {
					return fmt.Errorf("member %s went from etcd %s to %s between %s and %s, a restart no sample saw, while %s: "+
						"more than one member changed at once", m, from, to, at(p), at(q), change(o, p.Versions[o], q.Versions[o]))
				}
			}
		}
	}
	return nil
}

// checkStopped judges member m, which answered in sample p and not in q
// (checkRollingStep): every member restarted before it runs to by then.
func checkStopped(m string, members []string, to string, p, q VersionSample, restarted map[string]bool, at func(VersionSample) string) error {
	for _, o := range members {
		switch v := p.Versions[o]; {
		case o == m:
		case v == "" && q.Versions[o] != to:
			return fmt.Errorf("member %s stopped answering between %s and %s while member %s, silent at %s, came back at etcd %s, not %s: "+
				"the next member was restarted before the one before ran the new version", m, at(p), at(q), o, at(p), q.Versions[o], to)
		case v == "":
		case restarted[o] && v != to:
			return fmt.Errorf("member %s stopped answering between %s and %s while member %s, restarted before, answered etcd %s, not %s: "+
				"the next member was restarted before the one before ran the new version", m, at(p), at(q), o, v, to)
		}
	}
	return nil
}

// DescribeRestarts says, for the log, when each member was seen silent and when it first
// answered version to after that, in the order the members went down, with times from the
// first sample.
func DescribeRestarts(members []string, to string, samples []VersionSample) string {
	if len(samples) == 0 {
		return "no sample"
	}
	at := sampleClock(samples[0].At)
	type restart struct {
		member     string
		down, back int // sample indexes; len(samples) when not seen
	}
	never := len(samples)
	rs := make([]restart, 0, len(members))
	for _, m := range members {
		r := restart{member: m, down: never, back: never}
		for i, s := range samples {
			v := s.Versions[m]
			if v == "" && r.down == never {
				r.down = i
			}
			if v == to && r.back == never && (r.down < i || i == 0 || samples[i-1].Versions[m] != to) {
				r.back = i
			}
		}
		rs = append(rs, r)
	}
	slices.SortStableFunc(rs, func(a, b restart) int { return min(a.down, a.back) - min(b.down, b.back) })
	parts := []string{fmt.Sprintf("%d samples over %s", len(samples), at(samples[len(samples)-1]))}
	for _, r := range rs {
		parts = append(parts, describeRestart(r.member, to, r.down, r.back, never, samples, at))
	}
	if slow, longest := slowAnswers(samples); slow > 0 {
		parts = append(parts, fmt.Sprintf("%d answers slower than the samples' bound, each on the connection that had answered before, the slowest in %.1f s", slow, longest.Seconds()))
	}
	return strings.Join(parts, "; ")
}

// describeRestart is DescribeRestarts' part for one member, silent first at sample down and
// answering to from sample back (never when not seen).
func describeRestart(member, to string, down, back, never int, samples []VersionSample, at func(VersionSample) string) string {
	var part string
	switch {
	case down < never:
		part = fmt.Sprintf("%s silent from %s", member, at(samples[down]))
	case back < never:
		part = fmt.Sprintf("%s never seen silent", member)
	default:
		part = fmt.Sprintf("%s never seen silent nor answering %s", member, to)
	}
	if back < never {
		part += fmt.Sprintf(", answering %s from %s", to, at(samples[back]))
	}
	return part
}

// slowAnswers counts the answers of samples that came after the sample's bound (Slow), and
// the longest one.
func slowAnswers(samples []VersionSample) (n int, longest time.Duration) {
	for _, s := range samples {
		for _, d := range s.Slow {
			n, longest = n+1, max(longest, d)
		}
	}
	return n, longest
}

// sampleClock formats a sample's time as seconds from t0.
func sampleClock(t0 time.Time) func(VersionSample) string {
	return func(s VersionSample) string { return seconds(s.At.Sub(t0)) }
}

func seconds(d time.Duration) string { return fmt.Sprintf("%.1f s", d.Seconds()) }

// change says how member's answer went from was to is, between two samples.
func change(member, was, is string) string {
	switch {
	case was == "" && is == "":
		return "member " + member + " did not answer"
	case was == "":
		return fmt.Sprintf("member %s came back at %s", member, is)
	case is == "":
		return "member " + member + " stopped answering"
	}
	return fmt.Sprintf("member %s went from %s to %s", member, was, is)
}

// answer shows a member's answer: its version, or that it did not answer.
func answer(v string) string {
	if v == "" {
		return "no answer"
	}
	return v
}

// WriteAttempt is one write tried while the cluster is upgraded: when it started and ended,
// and whether etcd acknowledged it.
type WriteAttempt struct {
	Start, End time.Time
	Acked      bool
}

// Outage is a stretch in which writes went unacknowledged: from the start of the first
// attempt that failed to the end of the next one acknowledged, or of the last attempt when
// none was acknowledged after.
type Outage struct{ From, To time.Time }

// Outages finds the outages in attempts (in the order they were tried).
func Outages(attempts []WriteAttempt) []Outage {
	var out []Outage
	var from time.Time
	failing := false
	for _, a := range attempts {
		switch {
		case !a.Acked && !failing:
			from, failing = a.Start, true
		case a.Acked && failing:
			out, failing = append(out, Outage{From: from, To: a.End}), false
		}
	}
	if failing {
		out = append(out, Outage{From: from, To: attempts[len(attempts)-1].End})
	}
	return out
}

// CheckOutages adds up outages and fails when they come to more than limit, listing each
// with its start timed from since.
func CheckOutages(outages []Outage, limit time.Duration, since time.Time) (total time.Duration, err error) {
	var each []string
	for _, o := range outages {
		total += o.To.Sub(o.From)
		each = append(each, fmt.Sprintf("%s from %s", seconds(o.To.Sub(o.From)), seconds(o.From.Sub(since))))
	}
	if total > limit {
		return total, fmt.Errorf("writes through the client Service went unacknowledged for %s in all, more than %s (%s)",
			seconds(total), seconds(limit), strings.Join(each, ", "))
	}
	return total, nil
}
