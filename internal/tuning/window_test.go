package tuning_test

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

var t0 = time.Date(2026, 8, 1, 12, 0, 0, 0, time.UTC)

// member is a member's counters as they grow: each scrape adds observations.
type member struct{ h tuning.Histogram }

// scrape is the member's histogram after n more round trips of rtt.
func (m *member) scrape(n int, rtt time.Duration) tuning.Histogram {
	m.h = tuning.Merge(m.h, observe(many(n, rtt)...))
	return m.h
}

// observed is what w observed at now, without its parts.
func observed(w *tuning.Window, now time.Time) (tuning.Histogram, time.Duration) {
	o := w.Observed(now)
	return o.Measured, o.Covered
}

func TestWindowEmpty(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(0)
	g.Expect(w.Length()).To(Equal(tuning.DefaultWindow))
	h, covered := observed(w, t0)
	g.Expect(h.Count()).To(BeZero())
	g.Expect(covered).To(BeZero())

	var zero tuning.Window
	g.Expect(zero.Length()).To(Equal(tuning.DefaultWindow))
	zero.Add("e-0", t0, observe(time.Millisecond))
	_, covered = observed(&zero, t0)
	g.Expect(covered).To(BeZero())
}

func TestWindowSlides(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var m member
	// Every 30 s for 15 minutes: 4 round trips of 1 ms, then, from minute 10, of 50 ms.
	for i := 0; i <= 30; i++ {
		rtt := time.Millisecond
		if i > 20 {
			rtt = 50 * time.Millisecond
		}
		w.Add("e-0", t0.Add(time.Duration(i)*30*time.Second), m.scrape(4, rtt))

		h, covered := observed(w, t0.Add(time.Duration(i)*30*time.Second))
		g.Expect(covered).To(Equal(min(time.Duration(i)*30*time.Second, 10*time.Minute)), "scrape %d", i)
		g.Expect(h.Count()).To(BeEquivalentTo(4*min(i, 20)), "scrape %d", i)
	}
	// The last ten minutes: 10 scrapes of 1 ms, then 10 of 50 ms.
	h, _ := observed(w, t0.Add(15*time.Minute))
	expectHistogram(g, h, observe(append(many(40, time.Millisecond), many(40, 50*time.Millisecond)...)...))
}

func TestWindowMembers(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var a, b, c member
	for i := 0; i <= 24; i++ {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		w.Add("e-0", at, a.scrape(2, time.Millisecond))
		if i >= 14 { // e-1 joined 5 minutes later than e-0
			w.Add("e-1", at, b.scrape(2, 2*time.Millisecond))
		}
		if i <= 2 { // e-2 stopped answering after a minute
			w.Add("e-2", at, c.scrape(2, 100*time.Millisecond))
		}
	}
	h, covered := observed(w, t0.Add(12*time.Minute))
	// e-1 holds the window back: it was measured for 5 minutes only. e-2 takes no part:
	// its last scrape is older than a window.
	g.Expect(covered).To(Equal(5 * time.Minute))
	expectHistogram(g, h, observe(append(many(40, time.Millisecond), many(20, 2*time.Millisecond)...)...))
}

func TestWindowRestart(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var before, after member
	for i := 0; i <= 10; i++ {
		w.Add("e-0", t0.Add(time.Duration(i)*30*time.Second), before.scrape(4, 100*time.Millisecond))
	}
	// e-0 restarts: its counters start again from zero. What it measured before is gone.
	for i := 11; i <= 14; i++ {
		w.Add("e-0", t0.Add(time.Duration(i)*30*time.Second), after.scrape(4, time.Millisecond))
	}
	h, covered := observed(w, t0.Add(7*time.Minute))
	g.Expect(covered).To(Equal(90 * time.Second))
	expectHistogram(g, h, observe(many(12, time.Millisecond)...))
}

func TestWindowIgnoresScrapesOutOfOrder(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	w.Add("e-0", t0, observe(many(2, time.Millisecond)...))
	w.Add("e-0", t0.Add(time.Minute), observe(many(6, time.Millisecond)...))
	w.Add("e-0", t0.Add(time.Minute), observe(many(9, time.Millisecond)...))
	w.Add("e-0", t0.Add(30*time.Second), observe(many(1, time.Millisecond)...))
	h, covered := observed(w, t0.Add(time.Minute))
	g.Expect(covered).To(Equal(time.Minute))
	g.Expect(h.Count()).To(BeEquivalentTo(4))

	// Looking at an earlier time leaves out the scrapes after it.
	h, covered = observed(w, t0.Add(59*time.Second))
	g.Expect(covered).To(BeZero())
	g.Expect(h.Count()).To(BeZero())
}

func TestWindowForgetsStaleMembers(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var old, fresh member
	w.Add("e-2", t0, old.scrape(1, time.Second))
	w.Add("e-2", t0.Add(time.Minute), old.scrape(5, time.Second))
	// e-2 is removed; e-0 goes on.
	w.Add("e-0", t0.Add(20*time.Minute), fresh.scrape(1, time.Millisecond))
	w.Add("e-0", t0.Add(21*time.Minute), fresh.scrape(3, time.Millisecond))
	// Looking back at the time e-2 was scraped finds nothing of it any more.
	h, _ := observed(w, t0.Add(time.Minute))
	g.Expect(h.Count()).To(BeZero())
	h, covered := observed(w, t0.Add(21*time.Minute))
	g.Expect(covered).To(Equal(time.Minute))
	g.Expect(h.Count()).To(BeEquivalentTo(3))
}

func TestWindowReset(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	w.Add("e-0", t0, observe(time.Millisecond))
	w.Add("e-0", t0.Add(time.Minute), observe(time.Millisecond, time.Millisecond))
	w.Reset()
	h, covered := observed(w, t0.Add(time.Minute))
	g.Expect(h.Count()).To(BeZero())
	g.Expect(covered).To(BeZero())
	// After a reset the member's next scrape is a new base, not a delta.
	w.Add("e-0", t0.Add(2*time.Minute), observe(many(3, time.Millisecond)...))
	h, covered = observed(w, t0.Add(2*time.Minute))
	g.Expect(h.Count()).To(BeZero())
	g.Expect(covered).To(BeZero())
}

func TestWindowKeepsItsOwnCopy(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	first := observe(time.Millisecond)
	w.Add("e-0", t0, first)
	first.Counts[len(first.Counts)-1] = 1000
	w.Add("e-0", t0.Add(time.Minute), observe(time.Millisecond, time.Millisecond))
	h, _ := observed(w, t0.Add(time.Minute))
	g.Expect(h.Count()).To(BeEquivalentTo(1))
}

// TestWindowScrapedOften checks that scrapes far more frequent than the window needs are
// thinned without losing what was observed.
func TestWindowScrapedOften(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var m member
	for i := 0; i <= 3600; i++ { // every second for an hour
		w.Add("e-0", t0.Add(time.Duration(i)*time.Second), m.scrape(1, time.Millisecond))
	}
	h, covered := observed(w, t0.Add(time.Hour))
	g.Expect(covered).To(BeNumerically(">=", 10*time.Minute))
	g.Expect(covered).To(BeNumerically("<", 10*time.Minute+time.Minute))
	g.Expect(h.Count()).To(BeEquivalentTo(covered / time.Second))
}

func TestWindowConcurrentUse(t *testing.T) {
	w := tuning.NewWindow(time.Minute)
	var wg sync.WaitGroup
	for _, name := range []string{"e-0", "e-1", "e-2"} {
		wg.Go(func() {
			var m member
			for i := range 200 {
				w.Add(name, t0.Add(time.Duration(i)*time.Second), m.scrape(1, time.Millisecond))
				observed(w, t0.Add(time.Duration(i)*time.Second))
			}
		})
	}
	wg.Wait()
}

func TestWindowParts(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	var a, b member
	// Every 30 s for ten minutes; e-0's round trips rise for one scrape, at 4m30s.
	for i := 0; i <= 20; i++ {
		rtt := time.Millisecond
		if i == 9 {
			rtt = 300 * time.Millisecond
		}
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		w.Add("e-0", at, a.scrape(4, rtt))
		w.Add("e-1", at, b.scrape(2, 2*time.Millisecond))
	}
	o := w.Observed(t0.Add(10 * time.Minute))
	g.Expect(o.Covered).To(Equal(10 * time.Minute))
	g.Expect(o.Parts).To(HaveLen(tuning.Parts))
	// The parts are cut at the last scrapes at or before 3m20s and 6m40s: 3m and 6m30s.
	expectHistogram(g, o.Parts[0], observe(append(many(24, time.Millisecond), many(12, 2*time.Millisecond)...)...))
	expectHistogram(g, o.Parts[1], observe(append(append(many(24, time.Millisecond), many(4, 300*time.Millisecond)...),
		many(14, 2*time.Millisecond)...)...))
	expectHistogram(g, o.Parts[2], observe(append(many(28, time.Millisecond), many(14, 2*time.Millisecond)...)...))
	expectHistogram(g, tuning.Merge(o.Parts...), o.Measured)
}

func TestWindowPartsOfAShortSpan(t *testing.T) {
	g := NewWithT(t)
	w := tuning.NewWindow(10 * time.Minute)
	w.Add("e-0", t0, observe(time.Millisecond))
	g.Expect(w.Observed(t0).Parts).To(BeNil())

	// Two scrapes: the first parts are empty, the last holds everything.
	w.Add("e-0", t0.Add(30*time.Second), observe(many(5, time.Millisecond)...))
	o := w.Observed(t0.Add(30 * time.Second))
	g.Expect(o.Parts).To(HaveLen(tuning.Parts))
	g.Expect(o.Parts[0].Count()).To(BeZero())
	g.Expect(o.Parts[1].Count()).To(BeZero())
	g.Expect(o.Parts[2].Count()).To(BeEquivalentTo(4))
}
