package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/onsi/ginkgo/v2/types"
)

func spec(text string, state types.SpecState, message string) types.SpecReport {
	return types.SpecReport{
		ContainerHierarchyTexts: []string{"chaos"}, LeafNodeText: text, State: state,
		Failure: types.Failure{Message: message, Location: types.CodeLocation{FileName: "/repo/test/e2e/chaos_test.go", LineNumber: 149}},
	}
}

func TestTheDigestNamesEveryFailedSpecWhereItFailedAndWhy(t *testing.T) {
	reports := []types.Report{{SpecReports: types.SpecReports{
		spec("passes", types.SpecStatePassed, ""),
		spec("keeps quorum", types.SpecStateFailed, "no member taken down: 00:07:12: chaos-1 went down\nExpected\n    <[]string | len:1>\nto be empty"),
		spec("is skipped", types.SpecStateSkipped, ""),
		spec("times out", types.SpecStateTimedout, "A suite timeout occurred"),
	}}}
	var out bytes.Buffer
	digest(&out, reports)
	got := out.String()
	for _, want := range []string{
		"FAILED: chaos keeps quorum\n  at /repo/test/e2e/chaos_test.go:149\n  | no member taken down: 00:07:12: chaos-1 went down\n",
		"  | to be empty\n",
		"TIMEDOUT: chaos times out\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("digest lacks %q:\n%s", want, got)
		}
	}
	for _, unwanted := range []string{"passes", "is skipped"} {
		if strings.Contains(got, unwanted) {
			t.Errorf("digest names the spec that %s:\n%s", unwanted, got)
		}
	}
}

func TestTheDigestStaysShort(t *testing.T) {
	long := strings.Repeat("line\n", 100)
	var specs types.SpecReports
	for i := range 5 {
		specs = append(specs, spec(fmt.Sprintf("fails %d", i), types.SpecStateFailed, long))
	}
	var out bytes.Buffer
	digest(&out, []types.Report{{SpecReports: specs}})
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != totalLines {
		t.Errorf("digest has %d lines, want %d", len(lines), totalLines)
	}
	if !strings.Contains(out.String(), "more lines in the spec's output above") || !strings.HasSuffix(lines[len(lines)-1], "5 specs failed in all)") {
		t.Errorf("digest does not say what it left out:\n%s", out.String())
	}
}

func TestNoFailureSaysSo(t *testing.T) {
	var out bytes.Buffer
	digest(&out, []types.Report{{SpecReports: types.SpecReports{spec("passes", types.SpecStatePassed, "")}}})
	if out.String() != "no spec failed in the e2e reports\n" {
		t.Errorf("got %q", out.String())
	}
}
