package autoscale

import (
	"sync"
	"time"
)

// The figures of the trend; the package comment says why.
const (
	// TrendWindow is the span of samples a History keeps and a trend rests on: the 4 hours
	// of the etcd mixin's etcdExcessiveDatabaseGrowth alert, four compactions or more.
	TrendWindow = 4 * time.Hour
	// MinTrendSpan is the least span of samples Trend draws a trend from: two compactions
	// or more, so that the sawtooth they cut leaves at most a quarter of the write rate in
	// the slope.
	MinTrendSpan = 2 * time.Hour
	// MinTrendPoints is the fewest samples Trend draws a trend from.
	MinTrendPoints = 10
	// SampleInterval is the least time between two samples a History keeps; the caller may
	// add one on every pass, however often.
	SampleInterval = time.Minute
	// MaxSamples is the most samples a History keeps: one every SampleInterval over the
	// TrendWindow.
	MaxSamples = int(TrendWindow/SampleInterval) + 1
)

// Sample is the data of a cluster at one time.
type Sample struct {
	At time.Time
	// Bytes is the largest Used of the members, in bytes.
	Bytes int64
}

// Trend is how fast the data grows, in bytes an hour: the least-squares slope through the
// samples, in any order. ok is false when there is no growth to speak of: fewer than
// MinTrendPoints samples, a span shorter than MinTrendSpan, or a slope that is flat or
// falling.
func Trend(samples []Sample) (bytesPerHour float64, ok bool) {
	if len(samples) < MinTrendPoints {
		return 0, false
	}
	first, last := samples[0].At, samples[0].At
	for _, s := range samples[1:] {
		if s.At.Before(first) {
			first = s.At
		}
		if s.At.After(last) {
			last = s.At
		}
	}
	if last.Sub(first) < MinTrendSpan {
		return 0, false
	}
	n := float64(len(samples))
	var meanX, meanY float64
	for _, s := range samples {
		meanX += s.At.Sub(first).Hours() / n
		meanY += float64(s.Bytes) / n
	}
	var sxx, sxy float64
	for _, s := range samples {
		dx := s.At.Sub(first).Hours() - meanX
		sxx += dx * dx
		sxy += dx * (float64(s.Bytes) - meanY)
	}
	slope := sxy / sxx
	if !(slope > 0) {
		return 0, false
	}
	return slope, true
}

// History keeps the samples of one cluster over the last TrendWindow, at most one every
// SampleInterval. It lives in the operator's memory, one per cluster: after an operator
// restart the trend waits MinTrendSpan for samples again, while the threshold still acts.
//
// The zero History is empty and ready. A History is safe for concurrent use.
type History struct {
	mu      sync.Mutex
	samples []Sample
}

// NewHistory is an empty History.
func NewHistory() *History { return &History{} }

// Add records s, unless it holds no data (Bytes zero or less, as when no member answered)
// or comes less than SampleInterval after the newest sample kept (or before it), and drops
// the samples older than TrendWindow before s.
func (h *History) Add(s Sample) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if s.Bytes <= 0 {
		return
	}
	if n := len(h.samples); n > 0 && s.At.Sub(h.samples[n-1].At) < SampleInterval {
		return
	}
	drop := 0
	for drop < len(h.samples) && s.At.Sub(h.samples[drop].At) > TrendWindow {
		drop++
	}
	drop = max(drop, len(h.samples)+1-MaxSamples)
	h.samples = append(h.samples[:0], h.samples[drop:]...)
	h.samples = append(h.samples, s)
}

// Samples returns a copy of the samples kept, oldest first.
func (h *History) Samples() []Sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]Sample(nil), h.samples...)
}
