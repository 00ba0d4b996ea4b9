package autoscale_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/autoscale"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// ramp is n samples every step from t0, the data at from then following f(hours).
func ramp(n int, step time.Duration, f func(hours float64) float64) []autoscale.Sample {
	out := make([]autoscale.Sample, n)
	for i := range out {
		at := t0.Add(time.Duration(i) * step)
		out[i] = autoscale.Sample{At: at, Bytes: int64(f(at.Sub(t0).Hours()))}
	}
	return out
}

// linear grows from 1 GiB by perHour bytes an hour.
func linear(perHour float64) func(float64) float64 {
	return func(h float64) float64 { return float64(gib) + perHour*h }
}

func TestTrend(t *testing.T) {
	noise := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name    string
		samples []autoscale.Sample
		want    float64 // MiB an hour; 0 for no trend
		within  float64 // MiB an hour either side
	}{
		{name: "linear growth", samples: ramp(37, 5*time.Minute, linear(float64(100*mib))),
			want: 100, within: 0.001},
		{name: "linear growth with noise of 30 MiB either side", samples: ramp(241, time.Minute, func(h float64) float64 {
			return float64(gib) + float64(100*mib)*h + (noise.Float64()*2-1)*float64(30*mib)
		}), want: 100, within: 5},
		{name: "shrinking is no trend", samples: ramp(37, 5*time.Minute, linear(-float64(50*mib)))},
		{name: "flat is no trend", samples: ramp(37, 5*time.Minute, linear(0))},
		{name: "no samples", samples: nil},
		{name: "9 samples are too few", samples: ramp(9, 20*time.Minute, linear(float64(100*mib)))},
		{name: "10 samples are enough", samples: ramp(10, 20*time.Minute, linear(float64(100*mib))),
			want: 100, within: 0.001},
		{name: "a span a second short of 2 hours is too short", samples: append(
			ramp(10, 10*time.Minute, linear(float64(100*mib))),
			autoscale.Sample{At: t0.Add(2*time.Hour - time.Second), Bytes: gib + 200*mib})},
		{name: "a span of 2 hours is enough", samples: append(
			ramp(10, 10*time.Minute, linear(float64(100*mib))),
			autoscale.Sample{At: t0.Add(2 * time.Hour), Bytes: gib + 200*mib}),
			want: 100, within: 0.001},
		{name: "all at one time", samples: append(ramp(20, 0, linear(0)), autoscale.Sample{At: t0, Bytes: 2 * gib})},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, ok := autoscale.Trend(tc.samples)
			if tc.want == 0 {
				g.Expect(ok).To(BeFalse())
				g.Expect(got).To(BeZero())
				return
			}
			g.Expect(ok).To(BeTrue())
			g.Expect(got / float64(mib)).To(BeNumerically("~", tc.want, tc.within))
		})
	}
}

func TestTrendOrder(t *testing.T) {
	g := NewWithT(t)
	samples := ramp(50, 5*time.Minute, func(h float64) float64 { return float64(gib) + float64(70*mib)*h + float64(mib)*math.Sin(h*7) })
	want, ok := autoscale.Trend(samples)
	g.Expect(ok).To(BeTrue())
	r := rand.New(rand.NewPCG(5, 6))
	r.Shuffle(len(samples), func(i, j int) { samples[i], samples[j] = samples[j], samples[i] })
	got, ok := autoscale.Trend(samples)
	g.Expect(ok).To(BeTrue())
	g.Expect(got).To(BeNumerically("~", want, want*1e-9))
}

// TestTrendCompactionSawtooth is why the trend rests on hours: a database whose history is
// compacted every hour climbs by an hour of writes and drops back, over and over, without
// growing. Over one tooth the slope would be the write rate (300 MiB an hour here, enough
// to "fill" 2 GiB in hours); over the MinTrendSpan of two it is a quarter of that at most,
// and over the TrendWindow of four, a sixteenth.
func TestTrendCompactionSawtooth(t *testing.T) {
	const writes = 300 // MiB an hour, compacted away every hour
	sawtooth := func(phase float64) func(float64) float64 {
		return func(h float64) float64 {
			_, frac := math.Modf(h + phase)
			return float64(gib) + frac*writes*float64(mib)
		}
	}
	for _, phase := range []float64{0, 0.25, 0.5, 0.75} {
		g := NewWithT(t)
		two, ok := autoscale.Trend(ramp(121, time.Minute, sawtooth(phase)))
		if ok {
			g.Expect(two/float64(mib)).To(BeNumerically("<=", writes/4), "phase %v over 2 hours", phase)
		}
		four, ok := autoscale.Trend(ramp(241, time.Minute, sawtooth(phase)))
		if ok {
			g.Expect(four/float64(mib)).To(BeNumerically("<=", writes/16+1), "phase %v over 4 hours", phase)
		}
		// Even the largest of these leaves 1 GiB of a 2 GiB quota days away, not hours.
		g.Expect(autoscale.Plan(autoscale.Policy{QuotaBytes: 2 * gib}, data(gib+writes*mib), two, two > 0).Kind).To(Equal(autoscale.None))
	}
}

func TestHistory(t *testing.T) {
	t.Run("the zero History is empty and ready", func(t *testing.T) {
		g := NewWithT(t)
		var h autoscale.History
		g.Expect(h.Samples()).To(BeEmpty())
		h.Add(autoscale.Sample{At: t0, Bytes: gib})
		g.Expect(h.Samples()).To(HaveLen(1))
	})
	t.Run("samples with no data, too soon or out of order are not kept", func(t *testing.T) {
		g := NewWithT(t)
		h := autoscale.NewHistory()
		h.Add(autoscale.Sample{At: t0, Bytes: 0})
		h.Add(autoscale.Sample{At: t0, Bytes: -1})
		g.Expect(h.Samples()).To(BeEmpty())
		h.Add(autoscale.Sample{At: t0, Bytes: gib})
		h.Add(autoscale.Sample{At: t0.Add(autoscale.SampleInterval - time.Nanosecond), Bytes: 2 * gib})
		h.Add(autoscale.Sample{At: t0.Add(-time.Hour), Bytes: 2 * gib})
		h.Add(autoscale.Sample{At: t0.Add(autoscale.SampleInterval), Bytes: gib + mib})
		g.Expect(h.Samples()).To(Equal([]autoscale.Sample{
			{At: t0, Bytes: gib},
			{At: t0.Add(autoscale.SampleInterval), Bytes: gib + mib},
		}))
	})
	t.Run("the window slides, and at most MaxSamples are kept", func(t *testing.T) {
		g := NewWithT(t)
		h := autoscale.NewHistory()
		for s := range 6 * 3600 / 20 { // every 20 seconds for 6 hours
			h.Add(autoscale.Sample{At: t0.Add(time.Duration(s) * 20 * time.Second), Bytes: gib})
		}
		got := h.Samples()
		g.Expect(got).To(HaveLen(autoscale.MaxSamples))
		last := got[len(got)-1].At
		g.Expect(last.Sub(got[0].At)).To(Equal(autoscale.TrendWindow))
		for i := 1; i < len(got); i++ {
			g.Expect(got[i].At.Sub(got[i-1].At)).To(BeNumerically(">=", autoscale.SampleInterval))
		}
	})
	t.Run("after a gap longer than the window, only the new sample is left", func(t *testing.T) {
		g := NewWithT(t)
		h := autoscale.NewHistory()
		for m := range 60 {
			h.Add(autoscale.Sample{At: t0.Add(time.Duration(m) * time.Minute), Bytes: gib})
		}
		later := t0.Add(time.Hour + autoscale.TrendWindow + time.Minute)
		h.Add(autoscale.Sample{At: later, Bytes: 2 * gib})
		g.Expect(h.Samples()).To(Equal([]autoscale.Sample{{At: later, Bytes: 2 * gib}}))
	})
	t.Run("Samples is a copy", func(t *testing.T) {
		g := NewWithT(t)
		h := autoscale.NewHistory()
		h.Add(autoscale.Sample{At: t0, Bytes: gib})
		h.Samples()[0].Bytes = 1
		g.Expect(h.Samples()[0].Bytes).To(Equal(gib))
	})
	t.Run("a History yields the trend", func(t *testing.T) {
		g := NewWithT(t)
		h := autoscale.NewHistory()
		for _, s := range ramp(3*60, time.Minute, linear(float64(100*mib))) {
			h.Add(s)
		}
		got, ok := autoscale.Trend(h.Samples())
		g.Expect(ok).To(BeTrue())
		g.Expect(got / float64(mib)).To(BeNumerically("~", 100, 0.001))
	})
}
