package agent

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/etcdpilot/etcdpilot/internal/agent/result"
)

// Result is what a command reports (result.Result): the agent writes it, the operator reads
// it back from the container's termination message.
type Result = result.Result

// ReasonChecksumMismatch is the failure reason of a restore whose artifact's SHA-256 is not
// the expected one (result.ReasonChecksumMismatch).
const ReasonChecksumMismatch = result.ReasonChecksumMismatch

// maxErrorLen is the most bytes of an error message a Result carries, so that the result
// fits in a termination message (4096 bytes) with room to spare.
const maxErrorLen = 1024

// failure is an error with the reason it is reported under.
type failure struct {
	reason string
	err    error
}

func (f *failure) Error() string { return f.err.Error() }
func (f *failure) Unwrap() error { return f.err }

// fail gives err the reason it is reported under; a reason given earlier, deeper in the
// call chain, wins.
func fail(reason string, err error) error {
	var f *failure
	if errors.As(err, &f) {
		return err
	}
	return &failure{reason: reason, err: err}
}

// failf is fail with a formatted error.
func failf(reason, format string, args ...any) error {
	return fail(reason, fmt.Errorf(format, args...))
}

// failureResult turns err into a failed Result; fallback is the reason of an error that
// was not given one.
func failureResult(err error, fallback string) Result {
	reason := fallback
	var f *failure
	if errors.As(err, &f) {
		reason = f.reason
	}
	return Result{Reason: reason, Error: truncate(err.Error(), maxErrorLen)}
}

// truncate cuts s to at most n bytes, on a UTF-8 boundary, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// writeResult writes res as JSON to path, replacing its content.
func writeResult(path string, res Result) error {
	data, err := json.Marshal(res)
	if err != nil {
		return err
	}
	// Written in place, not renamed over: /dev/termination-log is a file Kubernetes mounts.
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("writing the result to %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return fmt.Errorf("writing the result to %s: %w", path, err)
	}
	return f.Close()
}

// summary describes a successful result in one line.
func summary(r Result) string {
	var parts []string
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if r.AlreadyRestored {
		add("already restored, nothing done")
	}
	if r.SHA256 != "" {
		add("artifact of %s (snapshot of %s, compression %s), sha256 %s", humanSize(r.Size), humanSize(r.SnapshotSize), r.Compression, r.SHA256)
	}
	if r.StreamSeconds > 0 {
		add("streamed in %.1f s (%.1f MiB/s of snapshot)", r.StreamSeconds, float64(r.SnapshotSize)/(1<<20)/r.StreamSeconds)
	}
	if r.Revision != 0 {
		add("revision %d", r.Revision)
	}
	if r.MemberID != "" {
		add("member %s (%s) of cluster %s running etcd %s", r.Member, r.MemberID, r.ClusterID, r.EtcdVersion)
	}
	add("peak memory %s", humanSize(r.MaxRSSBytes))
	return strings.Join(parts, ", ")
}

// humanSize formats a size in bytes for people: KiB below a MiB, MiB above.
func humanSize(n int64) string {
	if n < 1<<20 {
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}
