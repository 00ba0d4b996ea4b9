package main

import (
	"encoding/xml"
	"testing"

	. "github.com/onsi/gomega"
	scapi "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

func item(name, suite, level string, results ...scapi.TestResult) scapi.Test {
	labels := map[string]string{"test": name, "suite": suite}
	if level != "" {
		labels["level"] = level
	}
	return scapi.Test{
		Spec:   scapi.TestConfiguration{Entrypoint: []string{"x", name}, Labels: labels},
		Status: scapi.TestStatus{Results: results},
	}
}

func run() scapi.TestList {
	return scapi.TestList{Items: []scapi.Test{
		item("level-2-seamless-upgrades", "capability", "2", scapi.TestResult{
			Name: "level-2-seamless-upgrades", State: scapi.FailState, Errors: []string{"spec.version is immutable\nsecond line", "more"},
		}),
		item("basic-check-spec-test", "basic", "", scapi.TestResult{Name: "basic-check-spec", State: scapi.PassState, Suggestions: []string{"add a status"}}),
		item("level-1-basic-install", "capability", "1", scapi.TestResult{Name: "level-1-basic-install", State: scapi.PassState, Log: "ok"}),
		item("level-3-full-lifecycle", "capability", "3"),
		item("level-4-deep-insights", "capability", "4",
			scapi.TestResult{Name: "a", State: scapi.FailState, Errors: []string{"fails"}},
			scapi.TestResult{Name: "b", State: scapi.ErrorState, Errors: []string{"boom"}},
			scapi.TestResult{Name: "c", State: scapi.FailState, Errors: []string{"fails too"}}),
		item("level-5-auto-pilot", "capability", "5", scapi.TestResult{Name: "level-5-auto-pilot", State: scapi.FailState, Errors: []string{"missing: <everything> & more"}}),
	}}
}

func TestResultsReadTheRun(t *testing.T) {
	g := NewWithT(t)
	ts, err := results(run())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ts).To(Equal([]Test{
		{Name: "basic-check-spec-test", Suite: "basic", Result: Pass, Suggestions: []string{"add a status"}},
		{Name: "level-1-basic-install", Suite: "capability", Level: 1, Result: Pass},
		{Name: "level-2-seamless-upgrades", Suite: "capability", Level: 2, Result: Fail, Summary: "spec.version is immutable; more"},
		{Name: "level-3-full-lifecycle", Suite: "capability", Level: 3, Result: Error, Summary: "the test reported no result"},
		{Name: "level-4-deep-insights", Suite: "capability", Level: 4, Result: Error, Summary: "boom"},
		{Name: "level-5-auto-pilot", Suite: "capability", Level: 5, Result: Fail, Summary: "missing: <everything> & more"},
	}))
}

func TestResultsRefuseBadLabels(t *testing.T) {
	g := NewWithT(t)
	_, err := results(scapi.TestList{Items: []scapi.Test{item("x", "capability", "6")}})
	g.Expect(err).To(MatchError(ContainSubstring("not 1..5")))
	_, err = results(scapi.TestList{Items: []scapi.Test{item("", "capability", "1")}})
	g.Expect(err).To(MatchError(ContainSubstring("no test label")))
}

func TestXunitIsWellFormedAndCounts(t *testing.T) {
	g := NewWithT(t)
	out, err := xunit(run())
	g.Expect(err).NotTo(HaveOccurred())
	var back junitSuites
	g.Expect(xml.Unmarshal(out, &back)).To(Succeed())
	g.Expect(back.Suites).To(HaveLen(6))
	l4 := back.Suites[4]
	g.Expect(l4.Name).To(Equal("level-4-deep-insights"))
	g.Expect([]int{l4.Tests, l4.Failures, l4.Errors}).To(Equal([]int{3, 2, 1}))
	g.Expect(back.Suites[5].Cases[0].Failure.Text).To(Equal("missing: <everything> & more"))
	g.Expect(back.Suites[1].Cases[0].Failure).To(BeNil())
}

func levels(results ...Result) []Test {
	ts := []Test{{Name: "builtin", Result: Fail}} // built-ins do not count towards a level
	for i, r := range results {
		ts = append(ts, Test{Name: "t", Level: i + 1, Result: r})
	}
	return ts
}

func TestEarnedIsTheHighestUnbrokenLevel(t *testing.T) {
	g := NewWithT(t)
	for _, tc := range []struct {
		results []Result
		want    int
	}{
		{[]Result{Pass, Fail, Fail, Fail, Fail}, 1},
		{[]Result{Pass, Pass, Pass, Pass, Pass}, 5},
		{[]Result{Fail, Pass, Pass, Pass, Pass}, 0},
		{[]Result{Pass, Pass, Error, Pass, Pass}, 2},
	} {
		got, err := earned(levels(tc.results...))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got).To(Equal(tc.want), "%v", tc.results)
	}
	// Two tests of one level: both must pass.
	ts := append(levels(Pass, Pass, Fail, Fail, Fail), Test{Level: 2, Result: Fail})
	g.Expect(earned(ts)).To(Equal(1))
	// A level that did not run cannot be judged.
	_, err := earned(levels(Pass, Pass, Pass, Pass))
	g.Expect(err).To(MatchError(ContainSubstring("level-5")))
}

func TestRegressionsAreBuiltinsAndClaimedLevels(t *testing.T) {
	g := NewWithT(t)
	ts := []Test{
		{Name: "builtin", Result: Pass},
		{Name: "l1", Level: 1, Result: Pass},
		{Name: "l2", Level: 2, Result: Fail},
		{Name: "l3", Level: 3, Result: Fail},
	}
	g.Expect(regressions(ts, 1)).To(BeEmpty())
	g.Expect(regressions(ts, 2)).To(ConsistOf(ts[2]))
	ts[0].Result = Error
	g.Expect(regressions(ts, 1)).To(ConsistOf(ts[0]))
}

func TestSelectorRunsBuiltinsAndClaimedLevels(t *testing.T) {
	g := NewWithT(t)
	g.Expect(selector(1)).To(Equal("level notin (2,3,4,5)"))
	g.Expect(selector(4)).To(Equal("level notin (5)"))
	g.Expect(selector(5)).To(BeEmpty())
}

func TestCSVCapabilitiesRoundTrip(t *testing.T) {
	g := NewWithT(t)
	csv := []byte("metadata:\n  annotations:\n    alm-examples: '[]'\n    capabilities: Basic Install\n    categories: Database\n")
	g.Expect(csvCapabilities(csv)).To(Equal("Basic Install"))
	out, err := setCSVCapabilities(csv, "Full Lifecycle")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("metadata:\n  annotations:\n    alm-examples: '[]'\n    capabilities: Full Lifecycle\n    categories: Database\n"))
	_, err = setCSVCapabilities([]byte("metadata: {}\n"), "Auto Pilot")
	g.Expect(err).To(HaveOccurred())
	g.Expect(levelOf("Deep Insights")).To(Equal(4))
	_, err = levelOf("Basic")
	g.Expect(err).To(HaveOccurred())
}

func TestTableReplacesOnlyTheMarkedSection(t *testing.T) {
	g := NewWithT(t)
	readme := []byte("# x\n" + tableBegin + "\nold\n" + tableEnd + "\nafter\n")
	rec := Record{Capability: "Basic Install", Tests: []Test{
		{Name: "level-1-basic-install", Suite: "capability", Level: 1, Result: Pass},
		{Name: "level-2-seamless-upgrades", Suite: "capability", Level: 2, Result: Fail, Summary: "a|b"},
	}}
	out, err := setTable(readme, table(rec))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix("# x\n" + tableBegin + "\nCSV capabilities: **Basic Install**"))
	g.Expect(string(out)).To(ContainSubstring("| `level-2-seamless-upgrades` | capability | 2 Seamless Upgrades | fail | a\\|b |\n" + tableEnd + "\nafter\n"))
	again, err := setTable(out, table(rec))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out))
	_, err = setTable([]byte("no markers"), "")
	g.Expect(err).To(HaveOccurred())
}
