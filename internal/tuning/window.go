package tuning

import (
	"slices"
	"sync"
	"time"
)

// DefaultWindow is the span of round trips a decision rests on. The etcd mixin's
// etcdMemberCommunicationSlow alert waits for its peer round-trip
// p99 to stay high for 10m before it fires; a timing change, which restarts every member,
// should rest on no less. It is 20 rounds of etcd's prober, which observes each peer
// every 30 s.
const DefaultWindow = 10 * time.Minute

// MaxScrapes is the most scrapes a Window keeps of one member, however often the caller
// scrapes: a scrape closer to the one before it than the window's length over
// MaxScrapes-2 is replaced by the next. A delta only needs its two ends; the scrapes
// between let the window slide.
const MaxScrapes = 32

// Window keeps the round-trip histograms the operator scraped from each member of one
// cluster over time, and yields what the members observed over the last window length. It
// lives in the operator's memory, one per cluster; after a rollout of new timing, Reset
// it so that the next decision rests on round trips measured under that timing alone.
//
// The zero Window is DefaultWindow long. A Window is safe for concurrent use.
type Window struct {
	length time.Duration

	mu      sync.Mutex
	members map[string][]scrape
}

type scrape struct {
	at time.Time
	h  Histogram
}

// NewWindow is a Window of the given length; zero or less means DefaultWindow.
func NewWindow(length time.Duration) *Window {
	return &Window{length: length}
}

// Length is the span the window covers once full.
func (w *Window) Length() time.Duration {
	if w.length <= 0 {
		return DefaultWindow
	}
	return w.length
}

// Add records a scrape of member taken at at. A scrape no later than the member's
// previous one is ignored. A scrape whose counters went backwards since the previous one
// (the member restarted, or lost a peer) starts the member afresh: the older scrapes are
// no base for it, and the member holds the window back until it has a length of its own.
// Add also forgets members not scraped for a window length, such as removed members.
func (w *Window) Add(member string, at time.Time, h Histogram) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.members == nil {
		w.members = map[string][]scrape{}
	}
	length := w.Length()
	for name, ss := range w.members {
		if ss[len(ss)-1].at.Before(at.Add(-length)) {
			delete(w.members, name)
		}
	}
	ss := w.members[member]
	if n := len(ss); n > 0 {
		if !at.After(ss[n-1].at) {
			return
		}
		if _, ok := Delta(ss[n-1].h, h); !ok {
			ss = nil
		}
	}
	s := scrape{at: at, h: clone(h)}
	if n := len(ss); n >= 2 && ss[n-1].at.Sub(ss[n-2].at) < length/(MaxScrapes-2) {
		ss[n-1] = s // too close to the scrape before it to be worth keeping between
	} else {
		ss = append(ss, s)
	}
	w.members[member] = slices.Delete(ss, 0, base(ss, length))
}

// Parts is how many consecutive spans an Observation cuts its window into. Plan raises
// the timing only when every part asks for it, so that a rise of the round trip that
// lasts less than a part never raises it.
const Parts = 3

// Observation is what the members of a cluster observed over a Window's last length.
type Observation struct {
	// Measured is the round trips the members observed, merged.
	Measured Histogram
	// Covered is the span Measured covers: the shortest over the members, so that a
	// member that joined or restarted lately holds the window back until it, too, has
	// been measured for a full length.
	Covered time.Duration
	// Parts are Measured cut into Parts consecutive spans of about Covered/Parts each,
	// oldest first; none when Covered is zero.
	Parts []Histogram
}

// Observed is what the members observed over the last window length. Each member's share
// runs from its latest scrape back to its newest scrape at least a length older, or to its
// oldest. Members not scraped within a length before now take no part.
func (w *Window) Observed(now time.Time) Observation {
	w.mu.Lock()
	defer w.mu.Unlock()
	length := w.Length()
	var shares [][]scrape
	covered := time.Duration(-1)
	for _, ss := range w.members {
		ss = upTo(ss, now)
		if len(ss) == 0 || ss[len(ss)-1].at.Before(now.Add(-length)) {
			continue
		}
		ss = ss[base(ss, length):]
		shares = append(shares, ss)
		if span := ss[len(ss)-1].at.Sub(ss[0].at); covered < 0 || span < covered {
			covered = span
		}
	}
	if len(shares) == 0 {
		return Observation{}
	}
	whole := make([]Histogram, 0, len(shares))
	parts := make([][]Histogram, Parts)
	for _, ss := range shares {
		whole = append(whole, between(ss[0], ss[len(ss)-1]))
		if covered == 0 {
			continue
		}
		cuts := cut(ss, covered)
		for k := range Parts {
			parts[k] = append(parts[k], between(ss[cuts[k]], ss[cuts[k+1]]))
		}
	}
	o := Observation{Measured: Merge(whole...), Covered: covered}
	if covered > 0 {
		o.Parts = make([]Histogram, Parts)
		for k := range Parts {
			o.Parts[k] = Merge(parts[k]...)
		}
	}
	return o
}

// cut is where a member's scrapes are cut into Parts: the indexes of the scrapes that
// start and end each part, the last scrape at or before each of the times that cut the
// last covered span into equal parts.
func cut(ss []scrape, covered time.Duration) [Parts + 1]int {
	var cuts [Parts + 1]int
	start := ss[len(ss)-1].at.Add(-covered)
	for k := 1; k < Parts; k++ {
		at := start.Add(covered * time.Duration(k) / Parts)
		cuts[k] = cuts[k-1]
		for cuts[k]+1 < len(ss) && !ss[cuts[k]+1].at.After(at) {
			cuts[k]++
		}
	}
	cuts[Parts] = len(ss) - 1
	return cuts
}

// between is what a member observed from one of its scrapes to a later one. Add keeps a
// member's scrapes such that Delta accepts any two of them in order.
func between(older, newer scrape) Histogram {
	d, _ := Delta(older.h, newer.h)
	return d
}

// Reset forgets every scrape.
func (w *Window) Reset() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.members = nil
}

// base is the index of the scrape a member's delta starts from: its newest scrape at
// least length before its latest, or its oldest. Scrapes before it are no longer needed.
func base(ss []scrape, length time.Duration) int {
	cut := ss[len(ss)-1].at.Add(-length)
	i := 0
	for j, s := range ss {
		if s.at.After(cut) {
			break
		}
		i = j
	}
	return i
}

// upTo is ss up to its last scrape at or before now: a caller may look at an earlier time.
func upTo(ss []scrape, now time.Time) []scrape {
	for i, s := range ss {
		if s.at.After(now) {
			return ss[:i]
		}
	}
	return ss
}
