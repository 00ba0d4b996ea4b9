package chaos

import (
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/anishathalye/porcupine"
)

// Kind is the kind of a client operation.
type Kind string

// The operations the clients run.
const (
	// Put writes Value to Key.
	Put Kind = "put"
	// Get reads Key.
	Get Kind = "get"
	// CAS writes Value to Key in a transaction, if Key holds Expect ("" for a key that
	// does not exist).
	CAS Kind = "cas"
)

// Outcome is how an operation ended, as the client saw it.
type Outcome string

// The outcomes.
const (
	// OK: etcd answered.
	OK Outcome = "ok"
	// Failed: a read got no answer. It changed nothing; the check leaves it out.
	Failed Outcome = "failed"
	// Unknown: a write got no answer. It may have been applied, or be applied later.
	Unknown Outcome = "unknown"
)

// Input is what a client asked.
type Input struct {
	Kind   Kind   `json:"kind"`
	Key    string `json:"key"`
	Value  string `json:"value,omitempty"`
	Expect string `json:"expect,omitempty"`
}

// Output is what the client got: for a get the value read ("" when the key does not
// exist), for a CAS whether it wrote.
type Output struct {
	Outcome   Outcome `json:"outcome"`
	Value     string  `json:"value,omitempty"`
	Succeeded bool    `json:"succeeded,omitempty"`
	Error     string  `json:"error,omitempty"`
}

// Op is one recorded operation. Call and Return are nanoseconds since the recorder's start.
type Op struct {
	Client int    `json:"client"`
	Input  Input  `json:"input"`
	Output Output `json:"output"`
	Call   int64  `json:"call"`
	Return int64  `json:"return"`
}

// Recorder records the operations of concurrent clients.
type Recorder struct {
	start time.Time
	now   func() time.Time

	mu  sync.Mutex
	ops []Op
}

// NewRecorder returns a recorder whose times count from now.
func NewRecorder() *Recorder { return newRecorder(time.Now) }

func newRecorder(now func() time.Time) *Recorder { return &Recorder{start: now(), now: now} }

// Call records that client invokes in, and returns the handle End takes.
func (r *Recorder) Call(client int, in Input) int {
	t := r.now().Sub(r.start).Nanoseconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops = append(r.ops, Op{Client: client, Input: in, Call: t, Return: -1})
	return len(r.ops) - 1
}

// End records the outcome of the operation Call returned h for.
func (r *Recorder) End(h int, out Output) {
	t := r.now().Sub(r.start).Nanoseconds()
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ops[h].Output = out
	r.ops[h].Return = t
}

// Ops returns a copy of the operations recorded so far, in the order they were invoked.
// An operation not ended yet has Return -1.
func (r *Recorder) Ops() []Op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Op(nil), r.ops...)
}

// Counts are the operations of a history by kind and outcome.
type Counts map[Kind]map[Outcome]int

// Count counts ops by kind and outcome.
func Count(ops []Op) Counts {
	c := Counts{}
	for _, op := range ops {
		if c[op.Input.Kind] == nil {
			c[op.Input.Kind] = map[Outcome]int{}
		}
		c[op.Input.Kind][op.Output.Outcome]++
	}
	return c
}

// String lists the counts, kinds and outcomes in a fixed order.
func (c Counts) String() string {
	s := ""
	for _, k := range []Kind{Put, Get, CAS} {
		if s != "" {
			s += "; "
		}
		s += fmt.Sprintf("%s: %d ok, %d failed, %d unknown", k, c[k][OK], c[k][Failed], c[k][Unknown])
	}
	return s
}

// Operations turns ops into porcupine's operations. Failed reads are left out. An unknown
// write (or one not ended) may have been applied at any time after its call, and the model
// lets it be applied or not:
//   - If a read or a successful compare-and-swap saw its value (every value written is
//     unique), it returns when the first operation that saw it returned: it was applied by
//     then, or never.
//   - If nobody saw its value, only a failed compare-and-swap can tell whether it was
//     applied (the value was no longer what the CAS expected). It returns when the last
//     failed compare-and-swap of its key returned, after which applying it or not changes
//     nothing anybody saw. With no such CAS after its call it is left out, which is the same
//     as not applied.
//
// Bounding the unknown writes this way is what keeps the check tractable (etcd's robustness
// tests do the same), and it loses nothing: an order exists with the write in it if and only
// if one exists with it so placed.
func Operations(ops []Op) []porcupine.Operation {
	seen := observed(ops)
	lastFailedCAS := map[string]int64{}
	for _, op := range ops {
		if op.Input.Kind == CAS && op.Output.Outcome == OK && !op.Output.Succeeded && op.Return > lastFailedCAS[op.Input.Key] {
			lastFailedCAS[op.Input.Key] = op.Return
		}
	}
	var out []porcupine.Operation
	for _, op := range ops {
		if op.Output.Outcome == Failed || (op.Return < 0 && op.Input.Kind == Get) {
			continue
		}
		ret := op.Return
		o := op.Output
		if o.Outcome == Unknown || ret < 0 {
			t, ok := seen[seenKey{op.Input.Key, op.Input.Value}]
			if !ok {
				t = lastFailedCAS[op.Input.Key]
				if t <= op.Call {
					continue
				}
			}
			ret = max(t, op.Call)
			o.Outcome = Unknown
		}
		out = append(out, porcupine.Operation{ClientId: op.Client, Input: op.Input, Output: o, Call: op.Call, Return: ret})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Call < out[j].Call })
	return out
}

type seenKey struct{ key, value string }

// observed returns, for every value of a key that an operation saw (a read, or a
// successful compare-and-swap expecting it), the earliest return of such an operation.
func observed(ops []Op) map[seenKey]int64 {
	seen := map[seenKey]int64{}
	for _, op := range ops {
		if op.Output.Outcome != OK || op.Return < 0 {
			continue
		}
		var k seenKey
		switch {
		case op.Input.Kind == Get && op.Output.Value != "":
			k = seenKey{op.Input.Key, op.Output.Value}
		case op.Input.Kind == CAS && op.Output.Succeeded && op.Input.Expect != "":
			k = seenKey{op.Input.Key, op.Input.Expect}
		default:
			continue
		}
		if t, ok := seen[k]; !ok || op.Return < t {
			seen[k] = op.Return
		}
	}
	return seen
}
