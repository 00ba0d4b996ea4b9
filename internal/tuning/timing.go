package tuning

import (
	"fmt"
	"math"
	"time"
)

// Timing is an etcd member's raft timing: --heartbeat-interval and --election-timeout,
// in milliseconds. Every member of a cluster should have the same (etcd's tuning guide).
type Timing struct {
	HeartbeatMillis int32
	ElectionMillis  int32
}

// The fixed profiles, OpenShift's controlPlaneHardwareSpeed values. Standard is etcd's
// own default; Slower is for slow disks or networks.
var (
	Standard = Timing{HeartbeatMillis: 100, ElectionMillis: 1000}
	Slower   = Timing{HeartbeatMillis: 500, ElectionMillis: 2500}
)

// The limits ForRoundTrip keeps to (etcd's tuning guide and embed/config.go, and the
// EtcdCluster API).
//
// MaxHeartbeatMillis is the API's largest heartbeat. MaxElectionMillis is etcd's largest
// election timeout ("Upper limit 50000ms"), which the API shares. ElectionFactor is the
// tuning guide's election timeout, "at least 10 times the round-trip time"; etcd itself
// only refuses less than MinElectionFactor times the heartbeat (embed/config.go).
//
// Step is what ForRoundTrip rounds a heartbeat up to, so that the flags read as round
// figures. One step for every size (rather than a coarser one past a second) keeps
// ForRoundTrip(2×rtt) at most twice ForRoundTrip(rtt), which Plan's band relies on.
const (
	MaxHeartbeatMillis int32 = 5000
	MaxElectionMillis  int32 = 50000
	ElectionFactor     int32 = 10
	MinElectionFactor  int32 = 5
	Step                     = 10 * time.Millisecond
)

// ForRoundTrip is the timing for a peer round trip of rtt: a heartbeat of rtt rounded up
// to a Step, at least Standard's and at most MaxHeartbeatMillis, and an election timeout
// ElectionFactor times that, at most MaxElectionMillis. The tuning guide puts the
// heartbeat near the round trip (0.5-1.5×) and the election timeout at ten times it.
func ForRoundTrip(rtt time.Duration) Timing {
	rtt = min(max(rtt, 0), time.Duration(MaxHeartbeatMillis)*time.Millisecond)
	steps := (rtt + Step - 1) / Step
	heartbeat := int32(steps * Step / time.Millisecond)
	heartbeat = min(max(heartbeat, Standard.HeartbeatMillis), MaxHeartbeatMillis)
	return Timing{
		HeartbeatMillis: heartbeat,
		ElectionMillis:  min(ElectionFactor*heartbeat, MaxElectionMillis),
	}
}

// String writes t for a person.
func (t Timing) String() string {
	return fmt.Sprintf("heartbeat %dms, election timeout %dms", t.HeartbeatMillis, t.ElectionMillis)
}

// RoundTripMillis is a measured round trip as status.raftTiming reports it: in whole
// milliseconds, rounded up; zero for none (a round trip of zero or less).
func RoundTripMillis(rtt time.Duration) int32 {
	if rtt <= 0 {
		return 0
	}
	ms := rtt / time.Millisecond
	if rtt%time.Millisecond != 0 {
		ms++
	}
	return int32(min(ms, math.MaxInt32))
}

// Moved says whether a round trip measured now (RoundTripMillis; zero for none) has moved
// far enough from the one reported to be reported afresh: by more than a factor of two
// either way, or from none to some or back. The p99 is the upper bound of one of etcd's
// buckets, which double, so noise that carries it across one bound and back moves it by a
// factor of two exactly: reporting that would change the status with every read of a
// cluster whose decision stays the same. A shift of two buckets or more is reported. The
// rounding to whole milliseconds makes a move of one bucket at most a factor of two as
// well: ⌈x⌉ ≤ 2⌈x/2⌉ and ⌈2x⌉ ≤ 2⌈x⌉.
func Moved(reported, measured int32) bool {
	if reported <= 0 || measured <= 0 {
		return (reported > 0) != (measured > 0)
	}
	return int64(measured) > 2*int64(reported) || int64(reported) > 2*int64(measured)
}
