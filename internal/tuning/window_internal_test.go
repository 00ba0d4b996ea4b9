package tuning

import (
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// TestWindowMemoryBound checks that a Window keeps at most MaxScrapes scrapes of a member
// however often, and however irregularly, it is scraped.
func TestWindowMemoryBound(t *testing.T) {
	g := NewWithT(t)
	r := rand.New(rand.NewPCG(3, 5))
	for _, length := range []time.Duration{time.Minute, DefaultWindow, time.Hour} {
		w := NewWindow(length)
		at := time.Date(2026, 8, 1, 0, 0, 0, 0, time.UTC)
		var count uint64
		for range 20000 {
			at = at.Add(time.Duration(r.Int64N(int64(length / 20))))
			count++
			w.Add("e-0", at, Histogram{Bounds: []float64{0.001, 0.002}, Counts: []uint64{count, count}})
			g.Expect(len(w.members["e-0"])).To(BeNumerically("<=", MaxScrapes), "window of %s", length)
		}
	}
}
