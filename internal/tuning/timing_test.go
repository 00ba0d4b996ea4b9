package tuning_test

import (
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

func TestRoundTripMillis(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tuning.RoundTripMillis(0)).To(BeZero())
	g.Expect(tuning.RoundTripMillis(-time.Second)).To(BeZero())
	g.Expect(tuning.RoundTripMillis(time.Nanosecond)).To(Equal(int32(1)))
	g.Expect(tuning.RoundTripMillis(1638400 * time.Microsecond / 3)).To(Equal(int32(547)))
	g.Expect(tuning.RoundTripMillis(time.Duration(1<<63 - 1))).To(Equal(int32(1<<31 - 1)))
}

func TestMoved(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		reported, measured int32
		want               bool
	}{
		{0, 0, false},
		{0, 5, true},
		{5, 0, true},
		{9, 9, false},
		{9, 18, false},
		{9, 19, true},
		{18, 9, false},
		{19, 9, true},
		{1, 2, false},
		{1, 3, true},
	} {
		g.Expect(tuning.Moved(tc.reported, tc.measured)).To(Equal(tc.want), "%d to %d", tc.reported, tc.measured)
	}
	// A p99 that crosses one of etcd's bounds, divided by a probe's round trips and
	// rounded to whole milliseconds as the status reports it, never moves; two bounds
	// away, from a millisecond up, it always does.
	r := rand.New(rand.NewPCG(3, 4))
	for i := range len(etcdBounds) - 2 {
		for _, probe := range []int{1, tuning.ProbeRoundTripsPlain, tuning.ProbeRoundTripsTLS} {
			at := func(k int) int32 {
				return tuning.RoundTripMillis(time.Duration(etcdBounds[k]*float64(time.Second)) / time.Duration(probe))
			}
			g.Expect(tuning.Moved(at(i), at(i+1))).To(BeFalse(), "bucket %d up, probe of %d", i, probe)
			g.Expect(tuning.Moved(at(i+1), at(i))).To(BeFalse(), "bucket %d down, probe of %d", i+1, probe)
			if i+2 < len(etcdBounds)-1 && at(i) >= 2 {
				g.Expect(tuning.Moved(at(i), at(i+2))).To(BeTrue(), "bucket %d two up, probe of %d", i, probe)
			}
		}
	}
	for range 10000 {
		rtt := time.Duration(r.Int64N(int64(10 * time.Second)))
		g.Expect(tuning.Moved(tuning.RoundTripMillis(rtt), tuning.RoundTripMillis(2*rtt))).To(BeFalse(), "%s", rtt)
	}
}
