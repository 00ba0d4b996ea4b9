package tuning_test

import (
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

var inf = math.Inf(1)

// etcdBounds are the buckets of etcd 3.5 and later: ExponentialBuckets(0.0001, 2, 16), +Inf.
var etcdBounds = []float64{0.0001, 0.0002, 0.0004, 0.0008, 0.0016, 0.0032, 0.0064, 0.0128,
	0.0256, 0.0512, 0.1024, 0.2048, 0.4096, 0.8192, 1.6384, 3.2768, inf}

// observe is the histogram, on etcdBounds, of the round trips rtts.
func observe(rtts ...time.Duration) tuning.Histogram {
	return observeOn(etcdBounds, rtts...)
}

func observeOn(bounds []float64, rtts ...time.Duration) tuning.Histogram {
	h := tuning.Histogram{Bounds: slices.Clone(bounds), Counts: make([]uint64, len(bounds))}
	for _, d := range rtts {
		s := d.Seconds()
		for i, b := range bounds {
			if s <= b {
				h.Counts[i]++
			}
		}
		h.Sum += s
	}
	return h
}

// expectHistogram expects got to be want, its sum to a rounding error.
func expectHistogram(g Gomega, got, want tuning.Histogram) {
	g.Expect(got.Bounds).To(Equal(want.Bounds))
	g.Expect(got.Counts).To(Equal(want.Counts))
	g.Expect(got.Sum).To(BeNumerically("~", want.Sum, 1e-9))
}

// many is n round trips of d.
func many(n int, d time.Duration) []time.Duration {
	return slices.Repeat([]time.Duration{d}, n)
}

// cumulative is a histogram on etcdBounds from its cumulative counts, +Inf last.
func cumulative(sum float64, counts ...uint64) tuning.Histogram {
	return tuning.Histogram{Bounds: slices.Clone(etcdBounds), Counts: counts, Sum: sum}
}

func TestParsePeerRoundTripEtcd36(t *testing.T) {
	g := NewWithT(t)
	f, err := os.Open("testdata/etcd-3.6-member.metrics")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()

	h, err := tuning.ParsePeerRoundTrip(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Bounds).To(Equal(etcdBounds))
	// The two peers' series, added bucket by bucket.
	g.Expect(h.Counts).To(Equal([]uint64{0, 0, 0, 15, 419, 474, 479, 480, 480, 480, 480, 480, 480, 480, 480, 480, 480}))
	g.Expect(h.Count()).To(BeEquivalentTo(480))
	g.Expect(h.Sum).To(BeNumerically("~", 0.2674931870000001+0.31208741599999993, 1e-12))

	p99, ok := tuning.Quantile(h, 0.99)
	g.Expect(ok).To(BeTrue())
	g.Expect(p99).To(Equal(6400 * time.Microsecond))
}

func TestParsePeerRoundTrip(t *testing.T) {
	const help = "# HELP etcd_network_peer_round_trip_time_seconds Round-Trip-Time histogram between peers\n" +
		"# TYPE etcd_network_peer_round_trip_time_seconds histogram\n"
	// series writes one peer's series on three buckets.
	series := func(to string, c1, c2, inf, count string) string {
		return `etcd_network_peer_round_trip_time_seconds_bucket{To="` + to + `",le="0.001"} ` + c1 + "\n" +
			`etcd_network_peer_round_trip_time_seconds_bucket{To="` + to + `",le="0.002"} ` + c2 + "\n" +
			`etcd_network_peer_round_trip_time_seconds_bucket{To="` + to + `",le="+Inf"} ` + inf + "\n" +
			`etcd_network_peer_round_trip_time_seconds_sum{To="` + to + `"} 0.5` + "\n" +
			`etcd_network_peer_round_trip_time_seconds_count{To="` + to + `"} ` + count + "\n"
	}
	other := "# TYPE etcd_server_has_leader gauge\netcd_server_has_leader 1\n"
	cases := []struct {
		name    string
		body    string
		want    tuning.Histogram
		wantErr string
	}{
		{
			name: "a member alone: no metric, no observations",
			body: other,
			want: tuning.Histogram{},
		},
		{
			name: "an empty body",
			body: "",
			want: tuning.Histogram{},
		},
		{
			name: "the metric declared without series",
			body: help + other,
			want: tuning.Histogram{},
		},
		{
			name: "one peer",
			body: help + series("a", "1", "3", "4", "4"),
			want: tuning.Histogram{Bounds: []float64{0.001, 0.002, inf}, Counts: []uint64{1, 3, 4}, Sum: 0.5},
		},
		{
			name: "two peers are added",
			body: help + series("a", "1", "3", "4", "4") + series("b", "0", "2", "6", "6") + other,
			want: tuning.Histogram{Bounds: []float64{0.001, 0.002, inf}, Counts: []uint64{1, 5, 10}, Sum: 1},
		},
		{
			name: "a series without its +Inf bucket takes _count",
			body: help +
				`etcd_network_peer_round_trip_time_seconds_bucket{To="a",le="0.001"} 2` + "\n" +
				`etcd_network_peer_round_trip_time_seconds_count{To="a"} 3` + "\n",
			want: tuning.Histogram{Bounds: []float64{0.001, inf}, Counts: []uint64{2, 3}},
		},
		{
			name:    "text that is not the format",
			body:    help + "etcd_network_peer_round_trip_time_seconds_bucket{To=a} 1\n",
			wantErr: "parsing metrics",
		},
		{
			name:    "the metric as a gauge",
			body:    "# TYPE etcd_network_peer_round_trip_time_seconds gauge\netcd_network_peer_round_trip_time_seconds 1\n",
			wantErr: "is a GAUGE, not a histogram",
		},
		{
			name:    "a bucket counting fewer than the one before",
			body:    help + series("a", "3", "1", "4", "4"),
			wantErr: `{To="a"}: bucket le=0.002 counts fewer than the bucket before it`,
		},
		{
			name:    "+Inf and _count disagree",
			body:    help + series("a", "1", "3", "4", "5"),
			wantErr: "bucket le=+Inf counts 4 and _count 5",
		},
		{
			name:    "counts that are not whole",
			body:    help + series("a", "1", "3.5", "4", "4"),
			wantErr: "counts are not whole numbers",
		},
		{
			name: "peers with different buckets",
			body: help + series("a", "1", "3", "4", "4") +
				`etcd_network_peer_round_trip_time_seconds_bucket{To="b",le="+Inf"} 1` + "\n",
			wantErr: `{To="b"}: buckets differ from the other peers' series`,
		},
		{
			name: "buckets out of order",
			body: help +
				`etcd_network_peer_round_trip_time_seconds_bucket{To="a",le="0.002"} 1` + "\n" +
				`etcd_network_peer_round_trip_time_seconds_bucket{To="a",le="0.001"} 1` + "\n",
			wantErr: "bucket le=0.001 does not follow le=0.002",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := tuning.ParsePeerRoundTrip(strings.NewReader(tc.body))
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

func TestDelta(t *testing.T) {
	three := []float64{0.001, 0.002, inf}
	hist := func(sum float64, counts ...uint64) tuning.Histogram {
		return tuning.Histogram{Bounds: three, Counts: counts, Sum: sum}
	}
	cases := []struct {
		name         string
		older, newer tuning.Histogram
		want         tuning.Histogram
		ok           bool
	}{
		{
			name:  "what was observed in between",
			older: hist(1, 1, 3, 4),
			newer: hist(3, 2, 6, 9),
			want:  hist(2, 1, 3, 5),
			ok:    true,
		},
		{
			name:  "nothing observed in between",
			older: hist(1, 1, 3, 4),
			newer: hist(1, 1, 3, 4),
			want:  hist(0, 0, 0, 0),
			ok:    true,
		},
		{
			name:  "the member restarted: a counter went backwards",
			older: hist(1, 1, 3, 4),
			newer: hist(2, 2, 2, 5),
		},
		{
			name:  "the member restarted with other buckets",
			older: hist(1, 1, 3, 4),
			newer: tuning.Histogram{Bounds: []float64{0.001, inf}, Counts: []uint64{5, 9}},
		},
		{
			name:  "the member lost its peers",
			older: hist(1, 1, 3, 4),
			newer: tuning.Histogram{},
		},
		{
			name:  "from no observations, everything is new",
			older: tuning.Histogram{},
			newer: hist(1, 1, 3, 4),
			want:  hist(1, 1, 3, 4),
			ok:    true,
		},
		{
			name:  "a sum that went backwards with counts that did not counts as nothing",
			older: hist(2, 1, 3, 4),
			newer: hist(1, 1, 3, 5),
			want:  hist(0, 0, 0, 1),
			ok:    true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := tuning.Delta(tc.older, tc.newer)
			g.Expect(ok).To(Equal(tc.ok))
			if tc.ok {
				g.Expect(got).To(Equal(tc.want))
			}
		})
	}
}

func TestDeltaDoesNotShareMemory(t *testing.T) {
	g := NewWithT(t)
	newer := observe(time.Millisecond)
	d, ok := tuning.Delta(tuning.Histogram{}, newer)
	g.Expect(ok).To(BeTrue())
	d.Counts[0] = 99
	g.Expect(newer.Counts[0]).To(BeEquivalentTo(0))
}

func TestMerge(t *testing.T) {
	// The buckets of an etcd with 14 of them, up to 0.8192 s.
	fourteen := append(slices.Clone(etcdBounds[:14]), inf)
	cases := []struct {
		name string
		in   []tuning.Histogram
		want tuning.Histogram
	}{
		{
			name: "nothing",
			want: tuning.Histogram{},
		},
		{
			name: "histograms without observations keep their buckets",
			in:   []tuning.Histogram{{}, observe()},
			want: observe(),
		},
		{
			name: "the same buckets are added",
			in:   []tuning.Histogram{observe(many(3, time.Millisecond)...), {}, observe(many(2, 3*time.Millisecond)...)},
			want: observe(append(many(3, time.Millisecond), many(2, 3*time.Millisecond)...)...),
		},
		{
			name: "a histogram without a bound counts there what it counts below it",
			in: []tuning.Histogram{
				observeOn(fourteen, time.Millisecond, time.Second),
				observe(time.Millisecond, time.Second),
			},
			// Past 0.8192 s the 14-bucket histogram only knows of its second round trip at
			// +Inf, so the merged one counts it there.
			want: cumulative(2.002, 0, 0, 0, 0, 2, 2, 2, 2, 2, 2, 2, 2, 2, 2, 3, 3, 4),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			expectHistogram(g, tuning.Merge(tc.in...), tc.want)
		})
	}
}

func TestQuantile(t *testing.T) {
	cases := []struct {
		name string
		h    tuning.Histogram
		q    float64
		want time.Duration
		ok   bool
	}{
		{name: "no observations", h: tuning.Histogram{}, q: 0.99},
		{name: "buckets without observations", h: observe(), q: 0.99},
		{
			name: "only +Inf: no finite bound",
			h:    tuning.Histogram{Bounds: []float64{inf}, Counts: []uint64{3}},
			q:    0.5,
		},
		{
			name: "the upper bound of the bucket",
			h:    observe(1500 * time.Microsecond),
			q:    0.99,
			want: 1600 * time.Microsecond,
			ok:   true,
		},
		{
			name: "a round trip on a bound is in that bucket",
			h:    observe(1600 * time.Microsecond),
			q:    0.99,
			want: 1600 * time.Microsecond,
			ok:   true,
		},
		{
			name: "p99 of 100: the 99th round trip",
			h:    observe(append(many(99, time.Millisecond), 100*time.Millisecond)...),
			q:    0.99,
			want: 1600 * time.Microsecond,
			ok:   true,
		},
		{
			name: "p99 of 101: the 100th round trip",
			h:    observe(append(many(99, time.Millisecond), 100*time.Millisecond, 100*time.Millisecond)...),
			q:    0.99,
			want: 102400 * time.Microsecond,
			ok:   true,
		},
		{
			name: "the median",
			h:    observe(time.Millisecond, 5*time.Millisecond, 50*time.Millisecond),
			q:    0.5,
			want: 6400 * time.Microsecond,
			ok:   true,
		},
		{
			name: "past the largest finite bound: that bound",
			h:    observe(10 * time.Second),
			q:    0.99,
			want: 3276800 * time.Microsecond,
			ok:   true,
		},
		{
			name: "q of 0 is the first round trip",
			h:    observe(time.Millisecond, time.Second),
			q:    0,
			want: 1600 * time.Microsecond,
			ok:   true,
		},
		{
			name: "q over 1 is the last",
			h:    observe(time.Millisecond, time.Second),
			q:    2,
			want: 1638400 * time.Microsecond,
			ok:   true,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := tuning.Quantile(tc.h, tc.q)
			g.Expect(ok).To(Equal(tc.ok))
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// TestQuantileProperties checks, on random round trips, that Quantile is never below the
// true quantile (short of the largest finite bound), is the bound of the bucket the true
// one falls in, grows with q, and stays so for histograms merged across bucket layouts.
func TestQuantileProperties(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(7, 99))
	fourteen := append(slices.Clone(etcdBounds[:14]), inf)
	largest := time.Duration(3.2768 * float64(time.Second))
	for i := range 2000 {
		a, b := rtts(r), rtts(r)
		all := slices.Sorted(slices.Values(append(slices.Clone(a), b...)))
		h := observe(all...)
		merged := tuning.Merge(observe(a...), observeOn(fourteen, b...))
		if i%2 == 0 {
			merged = tuning.Merge(observeOn(fourteen, a...), observe(b...))
		}
		previous := time.Duration(0)
		for _, q := range []float64{0.01, 0.5, 0.9, 0.99, 1} {
			got, ok := tuning.Quantile(h, q)
			g.Expect(ok).To(Equal(len(all) > 0))
			if !ok {
				continue
			}
			rank := int(math.Ceil(q * float64(len(all))))
			exact := all[max(rank, 1)-1]
			g.Expect(got).To(BeNumerically(">=", min(exact, largest)), "case %d q %v: below the true quantile", i, q)
			g.Expect(got).To(BeNumerically(">=", previous), "case %d q %v: not growing with q", i, q)
			if exact <= largest {
				g.Expect(got).To(BeNumerically("<", 2*exact+200*time.Microsecond), "case %d q %v: past the bucket", i, q)
			}
			previous = got

			m, ok := tuning.Quantile(merged, q)
			g.Expect(ok).To(BeTrue())
			g.Expect(m).To(BeNumerically(">=", got), "case %d q %v: merging lowered the quantile", i, q)
		}
	}
}

// rtts is up to 300 random round trips, mostly around a base, a few far slower, now and
// then past the largest bucket.
func rtts(r *rand.Rand) []time.Duration {
	base := time.Duration(r.Int64N(int64(2 * time.Second)))
	out := make([]time.Duration, r.IntN(300))
	for i := range out {
		switch r.IntN(20) {
		case 0:
			out[i] = time.Duration(r.Int64N(int64(10 * time.Second)))
		default:
			out[i] = base/2 + time.Duration(r.Int64N(int64(base)+1))
		}
	}
	return out
}
