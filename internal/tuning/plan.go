package tuning

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// The thresholds of Plan.
//
// DecisionQuantile is the round trip the timing is sized for: the p99, the figure the
// etcd mixin's etcdMemberCommunicationSlow alert watches.
//
// RaisePercent and LowerPercent make the band around the current heartbeat inside which
// a measurement changes nothing. The tuning guide takes a heartbeat of 0.5-1.5× the round
// trip as right, so nothing is wrong until the round trip nears
// twice the heartbeat: raising at 150 % acts before that. Too high a heartbeat only slows
// the detection of a lost leader, so lowering waits for the target to fall below half the
// heartbeat, strictly. The histogram's buckets double from one to the next, so a p99 that
// moves one bucket up and back moves the target to at most twice and back; "strictly"
// keeps that from lowering again what it raised, so a p99 wavering across one bucket
// bound changes the timing once at most.
//
// Raising matters more than lowering: under a round trip close to the heartbeat, members
// call elections they need not. So it waits for RaiseCoveragePercent of the window only
// (5m of DefaultWindow, the span over which the mixin takes its p99), while lowering
// waits for the whole window. But the p99 of a few hundred round trips is set by a
// handful: one member's trouble for half a minute. So raising also needs the p99 of each
// of the window's Parts to ask for it, as the mixin's alert needs its p99 to stay high
// for 10m: a rise that passes within a part never raises. How far a lasting one raises is
// the latest part's p99, since etcd's smoothed round trip climbs towards a new latency
// and the earlier parts understate it, but at most RaiseReachFactor times the least
// part's, so that a spike in the latest part cannot carry the timing far past what the
// whole window held. Lowering needs no such care, as the band's width keeps it from
// undoing a raise. Both wait a window after the last change, so that the round trips
// measured under the new timing decide the next step.
//
// DefaultMinObservations is the least a p99 is taken from: three rounds of the two
// probers a member runs to each peer, every 30 s.
const (
	DecisionQuantile              = 0.99
	RaisePercent                  = 150
	RaiseReachFactor              = 2
	LowerPercent                  = 50
	RaiseCoveragePercent          = 50
	DefaultMinObservations uint64 = 6
)

// Reason is why Plan kept or changed the timing, fit for a condition's reason.
type Reason string

// The reasons of a Decision.
const (
	// ReasonMeasuring: too little of the window is measured yet to decide.
	ReasonMeasuring Reason = "Measuring"
	// ReasonTooFewSamples: the window is measured but holds too few round trips, as in a
	// cluster of one member, which has no peer.
	ReasonTooFewSamples Reason = "TooFewSamples"
	// ReasonWithinBand: the round trip asks for no change.
	ReasonWithinBand Reason = "WithinBand"
	// ReasonRecentlyChanged: the round trip asks for a change, but the last one was less
	// than a window ago.
	ReasonRecentlyChanged Reason = "RecentlyChanged"
	// ReasonNotSustained: the window's round trip asks for a raise, but not every part of
	// the window does: a passing rise.
	ReasonNotSustained Reason = "NotSustained"
	// ReasonRaised: the timing is raised.
	ReasonRaised Reason = "Raised"
	// ReasonLowered: the timing is lowered.
	ReasonLowered Reason = "Lowered"
)

// Input is what Plan needs, gathered by the caller.
type Input struct {
	// Current is the timing the operator set last. Zero means Standard, etcd's default.
	Current Timing
	// Observed is what the members observed over the window (Window.Observed); zero when
	// nothing was.
	Observed Observation
	// Window is the window's full length (Window.Length). Zero means DefaultWindow.
	Window time.Duration
	// SinceChange is the time since the operator last changed the timing; for a cluster
	// whose timing it never changed, the time since it first measured it.
	SinceChange time.Duration
	// MinObservations is the least number of round trips a decision rests on. Zero means
	// DefaultMinObservations.
	MinObservations uint64
	// ProbeRoundTrips is how many network round trips the slower of etcd's two probes
	// takes (ProbeRoundTripsTLS, ProbeRoundTripsPlain); the p99 is divided by it to give
	// the round trip the timing is sized for. Zero means 1.
	ProbeRoundTrips int
}

// What one of etcd's probes costs in network round trips. A member probes each peer with
// two probers that record into the same histogram: the pipeline's, over a kept-alive
// connection (one round trip), and the stream's, whose transport has read and write
// timeouts and so never reuses a connection (etcd's client/pkg transport.NewTimeoutTransport
// sets MaxIdleConnsPerHost to -1 then): each of its probes dials anew, a TCP handshake and,
// with TLS 1.3, a TLS handshake before the request, three round trips in all, two without
// TLS. The p99 is the stream prober's, so it is divided by these. Measured on the local
// cluster with 150 ms added each way between three TLS members (a round trip of 300 ms):
// a p99 in the bucket up to 1.6384 s, about three round trips and the handshakes' work.
const (
	ProbeRoundTripsTLS   = 3
	ProbeRoundTripsPlain = 2
)

// Decision is the timing Plan chose and why.
type Decision struct {
	// Target is the timing the members should run with; Current unless Changed.
	Target Timing
	// Changed says Target differs from Current: the members are to be rolled out with it.
	Changed bool
	// Reason and Message say why, for a condition and for events. Message carries the
	// figures of this reading (the p99, how many round trips over how long), which change
	// with every read: status.raftTiming keeps a message while the decision and the
	// measured round trip hold (Moved).
	Reason  Reason
	Message string
	// MeasuredP99 is the p99 of the observed round trips (divided by ProbeRoundTrips);
	// zero when too few were measured.
	MeasuredP99 time.Duration
}

// Plan chooses the raft timing of an Auto cluster from the peer round trips its
// members measured. It keeps Current unless the p99 round trip asks for a heartbeat at
// least RaisePercent of the current one, or below LowerPercent of it (never below
// Standard), and the window and the time since the last change allow it. A raise needs
// every part of the window to ask for it, so that a passing rise does not restart the
// members, and goes to the p99 of the latest part, but at most RaiseReachFactor times the
// least part's: etcd records a smoothed round trip, which climbs towards a new latency
// over several of its probes, so the earlier parts understate it and a raise to them
// would be followed by another; the bound keeps a spike in the latest part from raising
// the timing far past what the whole window held. A lowering needs the whole window to
// ask for it, and goes to the latest part's p99, for the same reason: the smoothed round
// trip falls over several probes. Plan is a pure function of in.
func Plan(in Input) Decision {
	in = in.withDefaults()
	cur, obs := in.Current, in.Observed
	n := obs.Measured.Count()
	p99, ok := Quantile(obs.Measured, DecisionQuantile)
	if n < in.MinObservations || !ok {
		if obs.Covered < in.Window {
			// No count or span read so far: the message stays the same over the reads that
			// fill the window (status.raftTiming keeps a message while the decision holds).
			return keep(cur, 0, ReasonMeasuring, fmt.Sprintf(
				"measuring peer round trips until a %s window is covered; keeping %s", span(in.Window), cur))
		}
		return keep(cur, 0, ReasonTooFewSamples, fmt.Sprintf(
			"%d peer round trips measured over the last %s, %d needed; keeping %s",
			n, span(obs.Covered), in.MinObservations, cur))
	}
	probe := p99
	p99 /= time.Duration(in.ProbeRoundTrips)
	target := ForRoundTrip(p99)
	measured := fmt.Sprintf("the peer round-trip p99 is %s over the last %s (%d round trips)", p99, span(obs.Covered), n)
	if in.ProbeRoundTrips > 1 {
		measured = fmt.Sprintf("the peer probes' p99 is %s over the last %s (%d probes), %d round trips each: a round trip of %s",
			probe, span(obs.Covered), n, in.ProbeRoundTrips, p99)
	}
	raise, lower := raises(target, cur), lowers(target, cur)
	if !raise && !lower {
		return keep(cur, p99, ReasonWithinBand, fmt.Sprintf(
			"%s, asking for heartbeat %dms, within the band of the current %dms: keeping %s",
			measured, target.HeartbeatMillis, cur.HeartbeatMillis, cur))
	}
	verb, reason, needed := "lowering", ReasonLowered, in.Window
	if raise {
		verb, reason, needed = "raising", ReasonRaised, in.Window*RaiseCoveragePercent/100
	}
	switch {
	case obs.Covered < needed:
		return keep(cur, p99, ReasonMeasuring, fmt.Sprintf(
			"%s, asking for %s; %s waits for %s of measurements: keeping %s",
			measured, target, verb, span(needed), cur))
	case in.SinceChange < in.Window:
		// Not the time since the change, which grows with every read.
		return keep(cur, p99, ReasonRecentlyChanged, fmt.Sprintf(
			"%s, asking for %s; the timing changed within the last %s, and %s waits a whole window after a change: keeping %s",
			measured, target, span(in.Window), verb, cur))
	}
	if raise {
		least, latest, ok := sustained(obs.Parts)
		least, latest = least/time.Duration(in.ProbeRoundTrips), latest/time.Duration(in.ProbeRoundTrips)
		switch {
		case !ok:
			return keep(cur, p99, ReasonNotSustained, fmt.Sprintf(
				"%s, asking for %s, but a part of the window has no round trips: keeping %s",
				measured, target, cur))
		case !raises(ForRoundTrip(least), cur):
			return keep(cur, p99, ReasonNotSustained, fmt.Sprintf(
				"%s, asking for %s, but not throughout the window: the p99 of one of its %d parts is %s, "+
					"a passing rise; keeping %s",
				measured, target, Parts, least, cur))
		}
		target = ForRoundTrip(min(latest, RaiseReachFactor*least))
		measured = fmt.Sprintf("%s, at least %s in each of its %d parts and %s in the latest", measured, least, Parts, latest)
	} else if _, latest, ok := sustained(obs.Parts); ok {
		// The whole window asks for less; the smoothed round trip is still falling in it,
		// so the latest part says best how far (never higher than the window's p99, which
		// a part's can be).
		latest = min(latest/time.Duration(in.ProbeRoundTrips), p99)
		target = ForRoundTrip(latest)
		measured = fmt.Sprintf("%s, and %s in its latest part", measured, latest)
	}
	return Decision{Target: target, Changed: true, Reason: reason, MeasuredP99: p99, Message: fmt.Sprintf(
		"%s: %s heartbeat from %dms to %dms and election timeout from %dms to %dms",
		measured, verb, cur.HeartbeatMillis, target.HeartbeatMillis, cur.ElectionMillis, target.ElectionMillis)}
}

func (in Input) withDefaults() Input {
	if in.Current == (Timing{}) {
		in.Current = Standard
	}
	if in.Window <= 0 {
		in.Window = DefaultWindow
	}
	if in.MinObservations == 0 {
		in.MinObservations = DefaultMinObservations
	}
	if in.ProbeRoundTrips < 1 {
		in.ProbeRoundTrips = 1
	}
	return in
}

// raises says whether a target heartbeat is far enough above the current one to raise it.
func raises(target, cur Timing) bool {
	return 100*int64(target.HeartbeatMillis) >= RaisePercent*int64(cur.HeartbeatMillis)
}

// lowers says whether a target heartbeat is far enough below the current one to lower it:
// below LowerPercent of it, or at etcd's default while the current one is above it (the
// target never goes below the default, so a raise smaller than twice the default could
// otherwise never come back down).
func lowers(target, cur Timing) bool {
	if target.HeartbeatMillis <= Standard.HeartbeatMillis && cur.HeartbeatMillis > Standard.HeartbeatMillis {
		return true
	}
	return 100*int64(target.HeartbeatMillis) < LowerPercent*int64(cur.HeartbeatMillis)
}

// sustained is the least p99 of the window's parts, the round trip the window held
// throughout, and the p99 of its latest part, the round trip it holds now. It is false
// unless there are Parts parts, each with round trips.
func sustained(parts []Histogram) (least, latest time.Duration, ok bool) {
	if len(parts) < Parts {
		return 0, 0, false
	}
	least = time.Duration(math.MaxInt64)
	for _, h := range parts {
		p99, ok := Quantile(h, DecisionQuantile)
		if !ok {
			return 0, 0, false
		}
		least, latest = min(least, p99), p99
	}
	return least, latest, true
}

func keep(cur Timing, p99 time.Duration, reason Reason, message string) Decision {
	return Decision{Target: cur, Reason: reason, Message: message, MeasuredP99: p99}
}

// span writes a duration for a person, to the second, without trailing zero units:
// "10m", "4m30s", "1h".
func span(d time.Duration) string {
	s := d.Round(time.Second).String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
