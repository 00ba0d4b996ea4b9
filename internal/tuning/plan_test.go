package tuning_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

const ms = time.Millisecond

func timing(heartbeat, election int32) tuning.Timing {
	return tuning.Timing{HeartbeatMillis: heartbeat, ElectionMillis: election}
}

func TestProfiles(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tuning.Standard).To(Equal(timing(100, 1000)))
	g.Expect(tuning.Slower).To(Equal(timing(500, 2500)))
	g.Expect(tuning.Standard.String()).To(Equal("heartbeat 100ms, election timeout 1000ms"))
}

func TestForRoundTrip(t *testing.T) {
	cases := []struct {
		rtt  time.Duration
		want tuning.Timing
	}{
		{rtt: -time.Second, want: tuning.Standard},
		{rtt: 0, want: tuning.Standard},
		{rtt: 6400 * time.Microsecond, want: tuning.Standard},
		{rtt: 100 * ms, want: timing(100, 1000)},
		{rtt: 100*ms + time.Nanosecond, want: timing(110, 1100)},
		{rtt: 102400 * time.Microsecond, want: timing(110, 1100)},
		{rtt: 204800 * time.Microsecond, want: timing(210, 2100)},
		{rtt: 999 * ms, want: timing(1000, 10000)},
		{rtt: 1638400 * time.Microsecond, want: timing(1640, 16400)},
		{rtt: 3276800 * time.Microsecond, want: timing(3280, 32800)},
		{rtt: 5 * time.Second, want: timing(5000, 50000)},
		{rtt: time.Hour, want: timing(5000, 50000)},
		{rtt: time.Duration(1<<63 - 1), want: timing(5000, 50000)},
	}
	for _, tc := range cases {
		t.Run(tc.rtt.String(), func(t *testing.T) {
			NewWithT(t).Expect(tuning.ForRoundTrip(tc.rtt)).To(Equal(tc.want))
		})
	}
}

// expectWithinLimits expects t to be a timing ForRoundTrip can give: within the API's and
// etcd's limits, the election timeout ten heartbeats.
func expectWithinLimits(g Gomega, t tuning.Timing, what string) {
	g.Expect(t.HeartbeatMillis).To(BeNumerically(">=", 100), what)
	g.Expect(t.HeartbeatMillis).To(BeNumerically("<=", 5000), what)
	g.Expect(t.ElectionMillis).To(Equal(min(10*t.HeartbeatMillis, 50000)), what)
	g.Expect(t.ElectionMillis).To(BeNumerically(">=", 5*t.HeartbeatMillis), what)
	g.Expect(t.ElectionMillis).To(BeNumerically("<=", 50000), what)
	g.Expect(t.HeartbeatMillis%10).To(BeZero(), what)
}

func TestForRoundTripProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 10000 {
		rtt := time.Duration(r.Int64N(int64(8 * time.Second)))
		got := tuning.ForRoundTrip(rtt)
		expectWithinLimits(g, got, rtt.String())
		if rtt <= 5*time.Second {
			g.Expect(time.Duration(got.HeartbeatMillis)*ms).To(BeNumerically(">=", rtt), "case %d: below the round trip", i)
			g.Expect(time.Duration(got.HeartbeatMillis)*ms).To(BeNumerically("<", max(rtt+tuning.Step, 100*ms+1)), "case %d", i)
		}
		longer := rtt + time.Duration(r.Int64N(int64(time.Second)))
		g.Expect(tuning.ForRoundTrip(longer).HeartbeatMillis).To(BeNumerically(">=", got.HeartbeatMillis), "case %d: not growing", i)
		// Plan's band relies on this: twice the round trip, at most twice the heartbeat.
		g.Expect(tuning.ForRoundTrip(2*rtt).HeartbeatMillis).To(BeNumerically("<=", 2*got.HeartbeatMillis), "case %d", i)
	}
}

// measured is an Input of a full window, long after the last change, that measured
// 240 round trips of rtt, 80 in each part.
func measured(current tuning.Timing, rtt time.Duration) tuning.Input {
	return tuning.Input{
		Current:     current,
		Observed:    steady(10*time.Minute, many(240, rtt)...),
		Window:      10 * time.Minute,
		SinceChange: time.Hour,
	}
}

// steady is an Observation over covered of the round trips rtts, spread evenly over its
// parts.
func steady(covered time.Duration, rtts ...time.Duration) tuning.Observation {
	parts := make([][]time.Duration, tuning.Parts)
	for i, d := range rtts {
		parts[i*tuning.Parts/len(rtts)] = append(parts[i*tuning.Parts/len(rtts)], d)
	}
	o := tuning.Observation{Measured: observe(rtts...), Covered: covered}
	for _, p := range parts {
		o.Parts = append(o.Parts, observe(p...))
	}
	return o
}

func with(in tuning.Input, change func(*tuning.Input)) tuning.Input {
	change(&in)
	return in
}

func TestPlan(t *testing.T) {
	lan := 1500 * time.Microsecond // p99 bucket 1.6 ms: Standard
	wan := 150 * ms                // p99 bucket 204.8 ms: 210/2100
	far := 300 * ms                // p99 bucket 409.6 ms: 410/4100
	halfWindow := func(in *tuning.Input) { in.Observed.Covered = 5 * time.Minute }
	cases := []struct {
		name    string
		in      tuning.Input
		want    tuning.Timing
		changed bool
		reason  tuning.Reason
		p99     time.Duration
	}{
		// Not enough measured.
		{
			name:   "nothing measured yet",
			in:     with(measured(tuning.Standard, lan), func(in *tuning.Input) { in.Observed = tuning.Observation{} }),
			want:   tuning.Standard,
			reason: tuning.ReasonMeasuring,
		},
		{
			name: "too few round trips, the window still filling",
			in: with(measured(tuning.Standard, far), func(in *tuning.Input) {
				in.Observed = steady(time.Minute, many(5, far)...)
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonMeasuring,
		},
		{
			name:   "a member alone: a full window without round trips",
			in:     with(measured(tuning.Standard, lan), func(in *tuning.Input) { in.Observed = steady(10 * time.Minute) }),
			want:   tuning.Standard,
			reason: tuning.ReasonTooFewSamples,
		},
		{
			name:   "a full window with too few round trips",
			in:     with(measured(tuning.Slower, far), func(in *tuning.Input) { in.Observed = steady(10*time.Minute, many(5, far)...) }),
			want:   tuning.Slower,
			reason: tuning.ReasonTooFewSamples,
		},
		{
			name: "the minimum given replaces the default",
			in: with(measured(tuning.Standard, far), func(in *tuning.Input) {
				in.Observed, in.MinObservations = steady(10*time.Minute, many(100, far)...), 101
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonTooFewSamples,
		},
		{
			name:    "exactly the minimum is enough",
			in:      with(measured(tuning.Standard, far), func(in *tuning.Input) { in.Observed = steady(10*time.Minute, many(6, far)...) }),
			want:    timing(410, 4100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     409600 * time.Microsecond,
		},
		// Within the band.
		{
			name:   "a LAN cluster on Standard",
			in:     measured(tuning.Standard, lan),
			want:   tuning.Standard,
			reason: tuning.ReasonWithinBand,
			p99:    1600 * time.Microsecond,
		},
		{
			name:   "a target of 110 ms is within the band of 100 ms",
			in:     measured(tuning.Standard, 101*ms),
			want:   tuning.Standard,
			reason: tuning.ReasonWithinBand,
			p99:    102400 * time.Microsecond,
		},
		{
			name:   "a current timing of another shape is kept within the band",
			in:     measured(timing(300, 1500), wan),
			want:   timing(300, 1500),
			reason: tuning.ReasonWithinBand,
			p99:    204800 * time.Microsecond,
		},
		{
			name:   "zero current timing is Standard",
			in:     measured(tuning.Timing{}, lan),
			want:   tuning.Standard,
			reason: tuning.ReasonWithinBand,
			p99:    1600 * time.Microsecond,
		},
		{
			name:   "a target just under 150 % is within the band",
			in:     measured(timing(141, 1410), wan),
			want:   timing(141, 1410),
			reason: tuning.ReasonWithinBand,
			p99:    204800 * time.Microsecond,
		},
		{
			name:   "a target of exactly half is within the band",
			in:     measured(timing(220, 2200), 101*ms),
			want:   timing(220, 2200),
			reason: tuning.ReasonWithinBand,
			p99:    102400 * time.Microsecond,
		},
		// Raising.
		{
			name:    "a target of exactly 150 % raises",
			in:      measured(timing(140, 1400), wan),
			want:    timing(210, 2100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     204800 * time.Microsecond,
		},
		{
			name:    "Standard raised for a WAN",
			in:      measured(tuning.Standard, wan),
			want:    timing(210, 2100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     204800 * time.Microsecond,
		},
		{
			name:    "raising needs half the window only",
			in:      with(measured(tuning.Standard, wan), halfWindow),
			want:    timing(210, 2100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     204800 * time.Microsecond,
		},
		{
			name:   "raising waits for half the window",
			in:     with(measured(tuning.Standard, wan), func(in *tuning.Input) { in.Observed.Covered = 5*time.Minute - time.Second }),
			want:   tuning.Standard,
			reason: tuning.ReasonMeasuring,
			p99:    204800 * time.Microsecond,
		},
		{
			name:   "raising waits a window after the last change",
			in:     with(measured(tuning.Standard, wan), func(in *tuning.Input) { in.SinceChange = 10*time.Minute - time.Second }),
			want:   tuning.Standard,
			reason: tuning.ReasonRecentlyChanged,
			p99:    204800 * time.Microsecond,
		},
		{
			name:    "a window after the last change, raising may",
			in:      with(measured(tuning.Standard, wan), func(in *tuning.Input) { in.SinceChange = 10 * time.Minute }),
			want:    timing(210, 2100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     204800 * time.Microsecond,
		},
		{
			name:    "round trips past the largest bucket: the largest bound",
			in:      measured(tuning.Slower, 10*time.Second),
			want:    timing(3280, 32800),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     3276800 * time.Microsecond,
		},
		{
			name: "a few slow round trips in many do not make the p99",
			in: with(measured(tuning.Standard, lan), func(in *tuning.Input) {
				in.Observed = steady(10*time.Minute, append(many(500, lan), many(5, 3*time.Second)...)...)
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonWithinBand,
			p99:    1600 * time.Microsecond,
		},
		{
			name: "a rise in one part of the window only is a passing one",
			in: with(measured(tuning.Standard, wan), func(in *tuning.Input) {
				in.Observed.Parts = []tuning.Histogram{observe(many(80, lan)...), observe(many(80, wan)...), observe(many(80, lan)...)}
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonNotSustained,
			p99:    204800 * time.Microsecond,
		},
		{
			name: "a rise in two parts of three is a passing one",
			in: with(measured(tuning.Standard, wan), func(in *tuning.Input) {
				in.Observed.Parts = []tuning.Histogram{observe(many(80, lan)...), observe(many(80, wan)...), observe(many(80, wan)...)}
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonNotSustained,
			p99:    204800 * time.Microsecond,
		},
		{
			name: "rises of different sizes in the parts raise to the latest",
			in: with(measured(tuning.Standard, far), func(in *tuning.Input) {
				in.Observed.Parts = []tuning.Histogram{observe(many(80, far)...), observe(many(80, far)...), observe(many(80, wan)...)}
			}),
			want:    timing(210, 2100),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     409600 * time.Microsecond,
		},
		{
			// etcd's smoothed round trip climbing towards a new latency: one raise, to
			// where it got, not one to each step of the climb.
			name: "a climbing round trip raises to the latest part",
			in: with(measured(tuning.Standard, far), func(in *tuning.Input) {
				in.Observed.Parts = []tuning.Histogram{observe(many(80, wan)...), observe(many(80, far)...), observe(many(80, far)...)}
			}),
			want:    tuning.ForRoundTrip(409600 * time.Microsecond),
			changed: true,
			reason:  tuning.ReasonRaised,
			p99:     409600 * time.Microsecond,
		},
		{
			name: "without parts nothing is raised",
			in: with(measured(tuning.Standard, wan), func(in *tuning.Input) {
				in.Observed.Parts = nil
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonNotSustained,
			p99:    204800 * time.Microsecond,
		},
		{
			name: "a part without round trips does not ask for a raise",
			in: with(measured(tuning.Standard, wan), func(in *tuning.Input) {
				in.Observed.Parts[1] = tuning.Histogram{}
			}),
			want:   tuning.Standard,
			reason: tuning.ReasonNotSustained,
			p99:    204800 * time.Microsecond,
		},
		// Lowering.
		{
			// The smoothed round trip still falling through the window: one lowering, to
			// where it got.
			name: "a falling round trip lowers to the latest part",
			in: with(measured(tuning.Slower, wan), func(in *tuning.Input) {
				in.Observed.Parts = []tuning.Histogram{observe(many(80, wan)...), observe(many(80, lan)...), observe(many(80, lan)...)}
			}),
			want:    tuning.Standard,
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     204800 * time.Microsecond,
		},
		{
			name: "lowering needs no parts",
			in: with(measured(tuning.Slower, lan), func(in *tuning.Input) {
				in.Observed.Parts = nil
			}),
			want:    tuning.Standard,
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     1600 * time.Microsecond,
		},
		{
			name:    "Slower lowered to Standard on a LAN",
			in:      measured(tuning.Slower, lan),
			want:    tuning.Standard,
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     1600 * time.Microsecond,
		},
		{
			name:    "a small raise comes back to etcd's default once the round trip is far below it",
			in:      measured(timing(140, 1400), lan),
			want:    tuning.Standard,
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     1600 * time.Microsecond,
		},
		{
			name:    "a target just under half lowers",
			in:      measured(timing(230, 2300), 101*ms),
			want:    timing(110, 1100),
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     102400 * time.Microsecond,
		},
		{
			name:   "lowering waits for the whole window",
			in:     with(measured(tuning.Slower, lan), func(in *tuning.Input) { in.Observed.Covered = 10*time.Minute - time.Second }),
			want:   tuning.Slower,
			reason: tuning.ReasonMeasuring,
			p99:    1600 * time.Microsecond,
		},
		{
			name:   "lowering waits a window after the last change",
			in:     with(measured(tuning.Slower, lan), func(in *tuning.Input) { in.SinceChange = 9 * time.Minute }),
			want:   tuning.Slower,
			reason: tuning.ReasonRecentlyChanged,
			p99:    1600 * time.Microsecond,
		},
		{
			name: "the window given replaces the default",
			in: with(measured(tuning.Slower, lan), func(in *tuning.Input) {
				in.Window, in.Observed.Covered, in.SinceChange = time.Hour, 30*time.Minute, 2*time.Hour
			}),
			want:   tuning.Slower,
			reason: tuning.ReasonMeasuring,
			p99:    1600 * time.Microsecond,
		},
		{
			name: "no window given means DefaultWindow",
			in: with(measured(tuning.Slower, lan), func(in *tuning.Input) {
				in.Window = 0
			}),
			want:    tuning.Standard,
			changed: true,
			reason:  tuning.ReasonLowered,
			p99:     1600 * time.Microsecond,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got := tuning.Plan(tc.in)
			g.Expect(got.Message).NotTo(BeEmpty())
			got.Message = ""
			g.Expect(got).To(Equal(tuning.Decision{Target: tc.want, Changed: tc.changed, Reason: tc.reason, MeasuredP99: tc.p99}))
		})
	}
}

func TestDecideMessages(t *testing.T) {
	g := NewWithT(t)
	// TLS members: the stream prober's p99 is three round trips.
	tls := measured(tuning.Standard, 900*ms)
	tls.ProbeRoundTrips = tuning.ProbeRoundTripsTLS
	d := tuning.Plan(tls)
	g.Expect(d.Target).To(Equal(timing(550, 5500)))
	g.Expect(d.MeasuredP99).To(Equal(1638400 * time.Microsecond / 3))
	g.Expect(d.Message).To(HavePrefix("the peer probes' p99 is 1.6384s over the last 10m (240 probes), 3 round trips each: a round trip of 546.133333ms"))
	// A probe of 400 ms is a round trip of 136 ms over TLS: not enough to raise 100 ms,
	// in the whole window or in its parts.
	tls = measured(tuning.Standard, 300*ms)
	tls.ProbeRoundTrips = tuning.ProbeRoundTripsTLS
	g.Expect(tuning.Plan(tls)).To(And(HaveField("Changed", false), HaveField("Reason", tuning.ReasonWithinBand)))
	tls.Observed.Measured = observe(many(240, 900*ms)...)
	d = tuning.Plan(tls)
	g.Expect(d.Reason).To(Equal(tuning.ReasonNotSustained), "the parts, divided too, do not ask for it: %s", d.Message)

	d = tuning.Plan(measured(tuning.Standard, 150*ms))
	g.Expect(d.Message).To(Equal("the peer round-trip p99 is 204.8ms over the last 10m (240 round trips), " +
		"at least 204.8ms in each of its 3 parts and 204.8ms in the latest: raising heartbeat from 100ms to 210ms and election timeout from 1000ms to 2100ms"))

	d = tuning.Plan(measured(tuning.Slower, time.Millisecond))
	g.Expect(d.Message).To(Equal("the peer round-trip p99 is 1.6ms over the last 10m (240 round trips), and 1.6ms in its latest part: " +
		"lowering heartbeat from 500ms to 100ms and election timeout from 2500ms to 1000ms"))

	d = tuning.Plan(with(measured(tuning.Standard, 150*ms), func(in *tuning.Input) { in.Observed.Parts[0] = observe(many(80, ms)...) }))
	g.Expect(d.Message).To(Equal("the peer round-trip p99 is 204.8ms over the last 10m (240 round trips), " +
		"asking for heartbeat 210ms, election timeout 2100ms, but not throughout the window: the p99 of one of its 3 parts is 1.6ms, " +
		"a passing rise; keeping heartbeat 100ms, election timeout 1000ms"))

	d = tuning.Plan(measured(tuning.Standard, time.Millisecond))
	g.Expect(d.Message).To(Equal("the peer round-trip p99 is 1.6ms over the last 10m (240 round trips), " +
		"asking for heartbeat 100ms, within the band of the current 100ms: keeping heartbeat 100ms, election timeout 1000ms"))

	d = tuning.Plan(with(measured(tuning.Slower, time.Millisecond), func(in *tuning.Input) { in.Observed.Covered = 4*time.Minute + 30*time.Second }))
	g.Expect(d.Message).To(Equal("the peer round-trip p99 is 1.6ms over the last 4m30s (240 round trips), " +
		"asking for heartbeat 100ms, election timeout 1000ms; lowering waits for 10m of measurements: " +
		"keeping heartbeat 500ms, election timeout 2500ms"))

	d = tuning.Plan(with(measured(tuning.Standard, 150*ms), func(in *tuning.Input) { in.SinceChange = 3 * time.Minute }))
	g.Expect(d.Message).To(ContainSubstring("the timing changed within the last 10m, and raising waits a whole window after a change"))

	d = tuning.Plan(with(measured(tuning.Standard, 150*ms), func(in *tuning.Input) { in.Observed = tuning.Observation{Covered: 10 * time.Minute} }))
	g.Expect(d.Message).To(Equal("0 peer round trips measured over the last 10m, 6 needed; keeping heartbeat 100ms, election timeout 1000ms"))

	d = tuning.Plan(with(measured(tuning.Standard, 150*ms), func(in *tuning.Input) {
		in.Observed = steady(30*time.Second, many(2, ms)...)
	}))
	g.Expect(d.Message).To(Equal("measuring peer round trips until a 10m window is covered; keeping heartbeat 100ms, election timeout 1000ms"))
}

// TestPlanProperties checks Plan on random inputs: the target is always within the
// limits, nothing changes inside the band or within a window of the last change, a change
// has the coverage it needs, and a change is final for the same measurement.
func TestPlanProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(45, 17))
	seen := map[tuning.Reason]int{}
	for i := range 20000 {
		in := generate(r)
		d := tuning.Plan(in)
		seen[d.Reason]++
		current := in.Current
		if current == (tuning.Timing{}) {
			current = tuning.Standard
		}
		window := in.Window
		if window <= 0 {
			window = tuning.DefaultWindow
		}
		g.Expect(d.Message).NotTo(BeEmpty())
		g.Expect(d.Changed).To(Equal(d.Target != current), "case %d: %+v", i, d)
		if !d.Changed {
			continue
		}
		expectWithinLimits(g, d.Target, d.Message)
		g.Expect(in.SinceChange).To(BeNumerically(">=", window), "case %d: changed within a window of the last change", i)
		// Inside the band nothing changes: a change is a raise to 150 % or more, or a
		// lowering to under half (or to etcd's default), and then needs its share of the
		// window measured.
		switch d.Reason {
		case tuning.ReasonRaised:
			g.Expect(2*d.Target.HeartbeatMillis).To(BeNumerically(">=", 3*current.HeartbeatMillis), "case %d", i)
			g.Expect(2*in.Observed.Covered).To(BeNumerically(">=", window), "case %d", i)
			// Every part asks for a raise too, and the target is the latest part's, up to
			// twice the least part's.
			g.Expect(in.Observed.Parts).To(HaveLen(tuning.Parts), "case %d", i)
			least, latest := time.Duration(math.MaxInt64), time.Duration(0)
			for _, part := range in.Observed.Parts {
				p99, ok := tuning.Quantile(part, 0.99)
				g.Expect(ok).To(BeTrue(), "case %d", i)
				asks := tuning.ForRoundTrip(p99)
				g.Expect(2*asks.HeartbeatMillis).To(BeNumerically(">=", 3*current.HeartbeatMillis), "case %d", i)
				least, latest = min(least, p99), p99
			}
			g.Expect(d.Target).To(Equal(tuning.ForRoundTrip(min(latest, tuning.RaiseReachFactor*least))), "case %d", i)
		case tuning.ReasonLowered:
			// Under half, or back to etcd's default from anything above it.
			if d.Target != tuning.Standard {
				g.Expect(2*d.Target.HeartbeatMillis).To(BeNumerically("<", current.HeartbeatMillis), "case %d", i)
			}
			g.Expect(d.Target.HeartbeatMillis).To(BeNumerically("<", current.HeartbeatMillis), "case %d", i)
			g.Expect(in.Observed.Covered).To(BeNumerically(">=", window), "case %d", i)
			// To the latest part's p99 when every part has round trips, else the window's.
			want := tuning.ForRoundTrip(d.MeasuredP99)
			if len(in.Observed.Parts) == tuning.Parts {
				var latest time.Duration
				all := true
				for _, part := range in.Observed.Parts {
					p99, ok := tuning.Quantile(part, 0.99)
					all, latest = all && ok, p99
				}
				if all {
					want = tuning.ForRoundTrip(min(latest, d.MeasuredP99))
				}
			}
			g.Expect(d.Target).To(Equal(want), "case %d", i)
		default:
			t.Fatalf("case %d: changed for %s", i, d.Reason)
		}
		least := in.MinObservations
		if least == 0 {
			least = tuning.DefaultMinObservations
		}
		g.Expect(in.Observed.Measured.Count()).To(BeNumerically(">=", least), "case %d", i)
		// Decided again on the new timing, the same round trips change nothing.
		again := in
		again.Current = d.Target
		g.Expect(tuning.Plan(again).Changed).To(BeFalse(), "case %d: %s", i, d.Message)
	}
	for _, reason := range []tuning.Reason{tuning.ReasonMeasuring, tuning.ReasonTooFewSamples, tuning.ReasonWithinBand,
		tuning.ReasonRecentlyChanged, tuning.ReasonNotSustained, tuning.ReasonRaised, tuning.ReasonLowered} {
		g.Expect(seen[reason]).To(BeNumerically(">", 0), "no generated case gave %s", reason)
	}
}

func generate(r *rand.Rand) tuning.Input {
	currents := []tuning.Timing{{}, tuning.Standard, tuning.Slower,
		tuning.ForRoundTrip(time.Duration(r.Int64N(int64(6 * time.Second)))),
		timing(10+r.Int32N(4991), 50+r.Int32N(49951))}
	window := []time.Duration{0, time.Minute, 10 * time.Minute, time.Hour}[r.IntN(4)]
	full := window
	if full == 0 {
		full = tuning.DefaultWindow
	}
	in := tuning.Input{
		Current:         currents[r.IntN(len(currents))],
		Window:          window,
		SinceChange:     time.Duration(r.Int64N(int64(full) * 2)),
		MinObservations: []uint64{0, 1, 6, 50}[r.IntN(4)],
	}
	in.Observed.Covered = time.Duration(r.Int64N(int64(full) * 3 / 2))
	switch r.IntN(4) {
	case 0: // no parts
		in.Observed.Measured = randomHistogram(r)
	case 1: // parts that are mostly alike
		part := randomHistogram(r)
		for range tuning.Parts {
			in.Observed.Parts = append(in.Observed.Parts, tuning.Merge(part, randomHistogram(r)))
		}
	default:
		for range tuning.Parts {
			in.Observed.Parts = append(in.Observed.Parts, randomHistogram(r))
		}
	}
	if in.Observed.Parts != nil {
		in.Observed.Measured = tuning.Merge(in.Observed.Parts...)
	}
	return in
}

// randomHistogram is a histogram on etcd's buckets with random counts, often few or none.
func randomHistogram(r *rand.Rand) tuning.Histogram {
	if r.IntN(10) == 0 {
		return tuning.Histogram{}
	}
	h := tuning.Histogram{Bounds: etcdBounds, Counts: make([]uint64, len(etcdBounds))}
	// Most round trips around one bucket, some anywhere.
	around := r.IntN(len(etcdBounds))
	var total uint64
	for i := range h.Counts {
		var n uint64
		switch {
		case i == around:
			n = r.Uint64N(500)
		case r.IntN(4) == 0:
			n = r.Uint64N(5)
		}
		total += n
		h.Counts[i] = total
	}
	return h
}

// change is a change of timing in a simulation: when, after how long since the previous
// one, and the decision.
type change struct {
	at, since time.Duration
	decision  tuning.Decision
}

// simulate runs Auto timing as the operator would: three members scraped every 30 s,
// whose round trips rtt gives by scrape and member (each scrape adds 4, as the two probers
// to each of two peers do), a Plan after every scrape, and the window reset after each
// change. It returns the changes.
func simulate(steps int, rtt func(step, member int) time.Duration) []change {
	w := tuning.NewWindow(10 * time.Minute)
	current := tuning.Standard
	var members [3]member
	var changes []change
	last := t0
	for step := range steps {
		now := t0.Add(time.Duration(step) * 30 * time.Second)
		for i := range members {
			w.Add(string(rune('a'+i)), now, members[i].scrape(4, rtt(step, i)))
		}
		d := tuning.Plan(tuning.Input{
			Current: current, Observed: w.Observed(now), Window: w.Length(), SinceChange: now.Sub(last),
		})
		if !d.Changed {
			continue
		}
		changes = append(changes, change{at: now.Sub(t0), since: now.Sub(last), decision: d})
		current, last = d.Target, now
		w.Reset()
	}
	return changes
}

// TestAuto follows one cluster through a day: a LAN with passing rises of the round trip
// on one member, then a lasting move to a distant network, and back.
func TestAuto(t *testing.T) {
	g := NewWithT(t)
	const perHour = 120 // scrapes
	changes := simulate(8*perHour, func(step, member int) time.Duration {
		switch {
		case step >= 2*perHour && step < 5*perHour: // hours 2 to 5: 150 ms away
			return 150 * ms
		case member == 0 && step%40 == 7: // every 20 minutes, half a minute of trouble
			return 400 * ms
		case member == 1 && step%40 >= 20 && step%40 < 24: // and two minutes of it
			return 400 * ms
		}
		return time.Millisecond
	})
	g.Expect(changes).To(HaveLen(2))
	// The move is followed once the rise shows in every third of the window, and within it.
	raise := changes[0]
	g.Expect(raise.decision.Reason).To(Equal(tuning.ReasonRaised))
	g.Expect(raise.decision.Target).To(Equal(timing(210, 2100)))
	g.Expect(raise.at).To(BeNumerically(">", 2*time.Hour+5*time.Minute))
	g.Expect(raise.at).To(BeNumerically("<=", 2*time.Hour+10*time.Minute))
	// And so is the way back, once a full window has seen it without trouble: the
	// trouble at 5h03m30s and from 5h10m to 5h11m30s holds it back until 5h21m30s.
	lower := changes[1]
	g.Expect(lower.decision.Reason).To(Equal(tuning.ReasonLowered))
	g.Expect(lower.decision.Target).To(Equal(tuning.Standard))
	g.Expect(lower.at).To(Equal(5*time.Hour + 21*time.Minute + 30*time.Second))
}

// TestAutoRandom runs Auto over hours of round trips that drift, jump, jitter and spike,
// and checks that no change follows another within a window, and that spikes add no
// change.
func TestAutoRandom(t *testing.T) {
	g := NewWithT(t)
	total, calm := 0, 0
	for run := range 40 {
		// The same network twice: with spikes, and without.
		var counts [2]int
		for spiky := range 2 {
			r := rand.New(rand.NewPCG(9, uint64(run)))
			spikes := rand.New(rand.NewPCG(10, uint64(run)))
			base := time.Duration(r.Int64N(int64(400 * ms)))
			last := -1
			changes := simulate(6*120, func(step, _ int) time.Duration {
				if step != last && r.IntN(200) == 0 { // now and then the network changes for good
					base = time.Duration(r.Int64N(int64(2 * time.Second)))
				}
				last = step
				rtt := base/2 + time.Duration(r.Int64N(int64(base)+1)) // jitter
				if spikes.IntN(500) == 0 && spiky == 1 {
					rtt *= 8 // a spike on one member, for one scrape
				}
				return rtt
			})
			for _, c := range changes[min(1, len(changes)):] {
				g.Expect(c.since).To(BeNumerically(">=", 10*time.Minute), "run %d: %s", run, c.decision.Message)
			}
			counts[spiky] = len(changes)
		}
		g.Expect(counts[1]).To(BeNumerically("<=", counts[0]), "run %d: the spikes changed the timing", run)
		total += counts[1]
		calm += counts[0]
	}
	g.Expect(total).To(BeNumerically(">", 40), "the runs hardly changed the timing: nothing was tested")
	t.Logf("%d changes in 40 runs of six hours with spikes, %d without", total, calm)
}

// TestDecideDoesNotFlap checks that a p99 wavering between two neighbouring buckets, one
// window to the next, changes the timing once at most from the timing of either bucket,
// and twice at most from Standard or Slower.
func TestDecideDoesNotFlap(t *testing.T) {
	g := NewWithT(t)
	for i := range len(etcdBounds) - 2 {
		low := time.Duration(etcdBounds[i] * float64(time.Second))
		high := time.Duration(etcdBounds[i+1] * float64(time.Second))
		starts := map[tuning.Timing]int{
			tuning.ForRoundTrip(low): 1, tuning.ForRoundTrip(high): 1, tuning.Standard: 2, tuning.Slower: 2,
		}
		for start, most := range starts {
			current, changes := start, 0
			for window := range 20 {
				rtt := low
				if window%2 == 1 {
					rtt = high
				}
				d := tuning.Plan(measured(current, rtt))
				if d.Changed {
					changes++
					current = d.Target
				}
			}
			g.Expect(changes).To(BeNumerically("<=", most), "between %s and %s from %s", low, high, start)
		}
	}
}
