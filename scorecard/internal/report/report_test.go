package report_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"

	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
)

// clock returns a clock that starts at a fixed instant and advances by step on every read.
func clock(step time.Duration) func() time.Time {
	t := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(step)
		return t
	}
}

func TestStates(t *testing.T) {
	g := NewWithT(t)

	pass := report.New("t", clock(time.Second))
	pass.Logf("hello %d", 1)
	g.Expect(pass.Result().State).To(Equal(scapiv1alpha3.PassState))
	g.Expect(pass.Failed()).To(BeFalse())

	fail := report.New("t", clock(time.Second))
	fail.Fail("no backups")
	fail.Suggest("add backups")
	res := fail.Result()
	g.Expect(res.State).To(Equal(scapiv1alpha3.FailState))
	g.Expect(res.Errors).To(Equal([]string{"no backups"}))
	g.Expect(res.Suggestions).To(Equal([]string{"add backups"}))
	g.Expect(res.Log).To(ContainSubstring("FAIL: no backups"))

	// Broken wins over Fail: the test could not say whether the operator works.
	broken := report.New("t", clock(time.Second))
	broken.Fail("something")
	broken.Broken(errors.New("no API server"))
	g.Expect(broken.Result().State).To(Equal(scapiv1alpha3.ErrorState))
	g.Expect(broken.Result().Errors).To(HaveLen(2))
}

func TestLogLinesAreTimestamped(t *testing.T) {
	g := NewWithT(t)
	r := report.New("t", clock(1500*time.Millisecond))
	err := r.Step("create", func() error { return nil })
	g.Expect(err).NotTo(HaveOccurred())
	err = r.Step("wait", func() error { return errors.New("timed out") })
	g.Expect(err).To(MatchError("timed out"))

	lines := strings.Split(strings.TrimSuffix(r.Result().Log, "\n"), "\n")
	g.Expect(lines).To(HaveLen(4))
	for _, l := range lines {
		g.Expect(l).To(MatchRegexp(`^2026-03-01T12:00:\d\d\.\d{3}Z `))
	}
	g.Expect(lines[1]).To(HaveSuffix("create: done in 1.5s"))
	g.Expect(lines[3]).To(HaveSuffix("wait: failed after 1.5s: timed out"))
	// A step's error is for the caller to judge; logging it does not fail the test.
	g.Expect(r.Failed()).To(BeFalse())
}

// Write must produce exactly one JSON value, a TestStatus, and nothing after it.
func TestWriteIsOneJSONObject(t *testing.T) {
	g := NewWithT(t)
	r := report.New("level-1-basic-install", clock(time.Second))
	r.Logf("line with \"quotes\"\nand a newline")
	r.Fail("boom")

	var buf bytes.Buffer
	g.Expect(report.Write(&buf, r.Result())).To(Succeed())
	g.Expect(strings.Count(buf.String(), "\n")).To(Equal(1))

	dec := json.NewDecoder(&buf)
	var status scapiv1alpha3.TestStatus
	g.Expect(dec.Decode(&status)).To(Succeed())
	g.Expect(dec.Decode(&json.RawMessage{})).To(MatchError(io.EOF))
	g.Expect(status.Results).To(HaveLen(1))
	g.Expect(status.Results[0].Name).To(Equal("level-1-basic-install"))
	g.Expect(status.Results[0].State).To(Equal(scapiv1alpha3.FailState))
	g.Expect(status.Results[0].CreationTimestamp.IsZero()).To(BeFalse())
}
