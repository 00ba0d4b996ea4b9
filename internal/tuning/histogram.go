package tuning

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// PeerRoundTripMetric is the histogram an etcd member exports of the smoothed round trip
// to each of its peers, one series per peer (label To, the peer's member ID in hex).
const PeerRoundTripMetric = "etcd_network_peer_round_trip_time_seconds"

// Histogram is a cumulative histogram of round trips, as Prometheus exposes one.
//
// The zero Histogram holds no observations; it stands for a member that exports no round
// trips at all, as the only member of a cluster does.
type Histogram struct {
	// Bounds are the buckets' upper bounds in seconds, ascending, +Inf last.
	Bounds []float64
	// Counts are the cumulative counts: Counts[i] observations were at most Bounds[i].
	// The last is the total.
	Counts []uint64
	// Sum is the sum of the observations, in seconds.
	Sum float64
}

// Count is the number of observations in h.
func (h Histogram) Count() uint64 {
	if len(h.Counts) == 0 {
		return 0
	}
	return h.Counts[len(h.Counts)-1]
}

// ParsePeerRoundTrip reads a member's /metrics body in the Prometheus text format and
// returns its PeerRoundTripMetric summed over all its peers. A body without the metric
// gives the zero Histogram: a member alone in its cluster has no peer to measure. It fails
// on text that is not the format, on the metric with another type, and on series that do
// not make a histogram or do not share their buckets. The caller bounds the size of r.
func ParsePeerRoundTrip(r io.Reader) (Histogram, error) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Histogram{}, fmt.Errorf("parsing metrics: %w", err)
	}
	family, ok := families[PeerRoundTripMetric]
	if !ok {
		return Histogram{}, nil
	}
	if family.GetType() != dto.MetricType_HISTOGRAM {
		return Histogram{}, fmt.Errorf("%s is a %s, not a histogram", PeerRoundTripMetric, family.GetType())
	}
	var sum Histogram
	for _, m := range family.GetMetric() {
		h, err := fromSeries(m.GetHistogram())
		if err != nil {
			return Histogram{}, fmt.Errorf("%s%s: %w", PeerRoundTripMetric, labels(m), err)
		}
		if sum, err = addSameBounds(sum, h); err != nil {
			return Histogram{}, fmt.Errorf("%s%s: %w", PeerRoundTripMetric, labels(m), err)
		}
	}
	return sum, nil
}

// fromSeries checks one parsed series and turns it into a Histogram. The text format ends
// the buckets with +Inf, which equals _count; a series without that bucket gets one.
func fromSeries(s *dto.Histogram) (Histogram, error) {
	if s == nil {
		return Histogram{}, errors.New("no histogram samples")
	}
	if s.GetSampleCountFloat() != 0 {
		return Histogram{}, errors.New("counts are not whole numbers")
	}
	h := Histogram{Sum: s.GetSampleSum()}
	for _, b := range s.GetBucket() {
		bound := b.GetUpperBound()
		if b.GetCumulativeCountFloat() != 0 {
			return Histogram{}, errors.New("counts are not whole numbers")
		}
		if n := len(h.Bounds); n > 0 && !(bound > h.Bounds[n-1]) {
			return Histogram{}, fmt.Errorf("bucket le=%g does not follow le=%g", bound, h.Bounds[n-1])
		}
		if n := len(h.Counts); n > 0 && b.GetCumulativeCount() < h.Counts[n-1] {
			return Histogram{}, fmt.Errorf("bucket le=%g counts fewer than the bucket before it", bound)
		}
		h.Bounds = append(h.Bounds, bound)
		h.Counts = append(h.Counts, b.GetCumulativeCount())
	}
	if len(h.Bounds) == 0 || !math.IsInf(h.Bounds[len(h.Bounds)-1], 1) {
		if h.Count() > s.GetSampleCount() {
			return Histogram{}, errors.New("_count is below the buckets' counts")
		}
		h.Bounds = append(h.Bounds, math.Inf(1))
		h.Counts = append(h.Counts, s.GetSampleCount())
	}
	if s.SampleCount != nil && h.Count() != s.GetSampleCount() {
		return Histogram{}, fmt.Errorf("bucket le=+Inf counts %d and _count %d", h.Count(), s.GetSampleCount())
	}
	return h, nil
}

// addSameBounds adds two histograms of one member, whose series share their buckets.
func addSameBounds(a, b Histogram) (Histogram, error) {
	switch {
	case a.Bounds == nil:
		return clone(b), nil
	case !slices.Equal(a.Bounds, b.Bounds):
		return Histogram{}, errors.New("buckets differ from the other peers' series")
	}
	for i := range a.Counts {
		a.Counts[i] += b.Counts[i]
	}
	a.Sum += b.Sum
	return a, nil
}

// labels writes a series' labels as the text format does, for an error message.
func labels(m *dto.Metric) string {
	if len(m.GetLabel()) == 0 {
		return ""
	}
	pairs := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		pairs = append(pairs, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
	}
	return "{" + strings.Join(pairs, ",") + "}"
}

// Delta is what newer observed since older, two scrapes of the same member. It is false
// when a counter went backwards, or the buckets changed, since older: the member restarted
// (or lost a peer) in between, and older is no base for newer. An older with no
// observations is a base for anything: a member's first peer starts its series at zero.
func Delta(older, newer Histogram) (Histogram, bool) {
	switch {
	case older.Count() == 0:
		return clone(newer), true
	case !slices.Equal(older.Bounds, newer.Bounds):
		return Histogram{}, false
	}
	d := Histogram{Bounds: slices.Clone(newer.Bounds), Counts: make([]uint64, len(newer.Counts))}
	for i, n := range newer.Counts {
		if n < older.Counts[i] {
			return Histogram{}, false
		}
		d.Counts[i] = n - older.Counts[i]
	}
	d.Sum = max(newer.Sum-older.Sum, 0)
	return d, true
}

// Merge adds histograms from several members. Members of different etcd releases may use
// different buckets (etcd 3.5 and later has 16, from 0.1 ms to 3.2768 s); the result
// then has every bound of any of them, and a histogram without a bound counts there what
// it counts at its next bound below. That undercounts, so that a quantile of the result
// is never below the true one: conservative, as Quantile is.
func Merge(hs ...Histogram) Histogram {
	var bounds []float64
	for _, h := range hs {
		bounds = append(bounds, h.Bounds...)
	}
	slices.Sort(bounds)
	bounds = slices.Compact(bounds)
	if len(bounds) == 0 {
		return Histogram{}
	}
	out := Histogram{Bounds: bounds, Counts: make([]uint64, len(bounds))}
	for _, h := range hs {
		if h.Count() == 0 {
			continue
		}
		j := -1 // h's last bound at or below bounds[i]
		for i, b := range bounds {
			for j+1 < len(h.Bounds) && h.Bounds[j+1] <= b {
				j++
			}
			if j >= 0 {
				out.Counts[i] += h.Counts[j]
			}
		}
		out.Sum += h.Sum
	}
	return out
}

// Quantile is the upper bound of the bucket in which the cumulative count reaches q of the
// observations: a round trip that at least q of them did not exceed. An observation past
// the largest finite bound counts as that bound, the most the histogram can tell. It is
// false when h holds no observations, or no finite bound.
func Quantile(h Histogram, q float64) (time.Duration, bool) {
	total := h.Count()
	if total == 0 || len(h.Bounds) < 2 {
		return 0, false
	}
	rank := uint64(math.Ceil(min(max(q, 0), 1) * float64(total)))
	rank = min(max(rank, 1), total)
	i, _ := slices.BinarySearch(h.Counts, rank) // the first cumulative count at or past rank
	i = min(i, len(h.Bounds)-2)                 // +Inf: the largest finite bound
	return time.Duration(math.Round(h.Bounds[i] * float64(time.Second))), true
}

func clone(h Histogram) Histogram {
	return Histogram{Bounds: slices.Clone(h.Bounds), Counts: slices.Clone(h.Counts), Sum: h.Sum}
}
