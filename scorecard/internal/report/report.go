package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// timeFormat stamps every log line: UTC, to the millisecond.
const timeFormat = "2006-01-02T15:04:05.000Z07:00"

// Report is the result of one test as it is being run. It is safe for concurrent use: a
// test's background writer may log while the test waits.
type Report struct {
	name    string
	now     func() time.Time
	started time.Time

	mu          sync.Mutex
	log         strings.Builder
	errors      []string
	suggestions []string
	broken      bool
}

// New starts the report of test name. now is the clock; time.Now when nil.
func New(name string, now func() time.Time) *Report {
	if now == nil {
		now = time.Now
	}
	return &Report{name: name, now: now, started: now()}
}

// Logf adds a timestamped line to the log.
func (r *Report) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logLocked(fmt.Sprintf(format, args...))
}

func (r *Report) logLocked(msg string) {
	r.log.WriteString(r.now().UTC().Format(timeFormat))
	r.log.WriteString(" ")
	r.log.WriteString(msg)
	r.log.WriteString("\n")
}

// Fail records that the operator does not do what the test checks: the test fails with
// msg, which also goes into the log.
func (r *Report) Fail(msg string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, msg)
	r.logLocked("FAIL: " + msg)
}

// Broken records that the test itself could not run (bad configuration, unreadable
// bundle, no API server): the result's state is error rather than fail.
func (r *Report) Broken(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.broken = true
	r.errors = append(r.errors, err.Error())
	r.logLocked("ERROR: " + err.Error())
}

// Suggest adds a hint for the reader of a failed result.
func (r *Report) Suggest(s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.suggestions = append(r.suggestions, s)
}

// Failed reports whether Fail or Broken was called.
func (r *Report) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.errors) > 0
}

// Step runs fn as a named step and logs its start and how long it took; fn's error is
// logged and returned, for the caller to decide whether it fails the test.
func (r *Report) Step(name string, fn func() error) error {
	r.Logf("%s ...", name)
	start := r.now()
	err := fn()
	took := r.now().Sub(start).Round(time.Millisecond)
	if err != nil {
		r.Logf("%s: failed after %s: %v", name, took, err)
		return err
	}
	r.Logf("%s: done in %s", name, took)
	return nil
}

// Result is the TestResult so far: error when the test could not run, fail when it found
// a problem, pass otherwise.
func (r *Report) Result() scapiv1alpha3.TestResult {
	r.mu.Lock()
	defer r.mu.Unlock()
	state := scapiv1alpha3.PassState
	switch {
	case r.broken:
		state = scapiv1alpha3.ErrorState
	case len(r.errors) > 0:
		state = scapiv1alpha3.FailState
	}
	return scapiv1alpha3.TestResult{
		Name:              r.name,
		Log:               r.log.String(),
		State:             state,
		Errors:            append([]string(nil), r.errors...),
		Suggestions:       append([]string(nil), r.suggestions...),
		CreationTimestamp: metav1.NewTime(r.started.UTC().Truncate(time.Second)),
	}
}

// Write writes results as one TestStatus: a single JSON object on one line, which is the
// whole of what scorecard reads from a test pod.
func Write(w io.Writer, results ...scapiv1alpha3.TestResult) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // the log is read by people, not embedded in HTML
	if err := enc.Encode(scapiv1alpha3.TestStatus{Results: results}); err != nil {
		return fmt.Errorf("encoding the test status: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}
