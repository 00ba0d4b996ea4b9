package main

import (
	"encoding/json"
	"encoding/xml"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	scapi "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/yaml"
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
	g.Expect(string(out)).To(ContainSubstring("| [`level-2-seamless-upgrades`](scorecard/internal/levels/level2.go) | capability | 2 Seamless Upgrades | fail | a\\|b |\n" + tableEnd + "\nafter\n"))
	again, err := setTable(out, table(rec))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out))
	_, err = setTable([]byte("no markers"), "")
	g.Expect(err).To(HaveOccurred())
}

// fullRun is a passing run of every test of the bundle's configuration: two built-ins and one
// test per level.
func fullRun() scapi.TestList {
	pass := func(name string) scapi.TestResult { return scapi.TestResult{Name: name, State: scapi.PassState} }
	list := scapi.TestList{Items: []scapi.Test{
		item("basic-check-spec-test", "basic", "", pass("basic-check-spec")),
		item("olm-bundle-validation-test", "olm", "", pass("olm-bundle-validation")),
	}}
	for l, name := range []string{"level-1-basic-install", "level-2-seamless-upgrades", "level-3-full-lifecycle", "level-4-deep-insights", "level-5-auto-pilot"} {
		list.Items = append(list.Items, item(name, "capability", string(rune('1'+l)), pass(name)))
	}
	return list
}

// configOf is the scorecard configuration listing the tests of list.
func configOf(list scapi.TestList) scapi.Configuration {
	stage := scapi.StageConfiguration{Parallel: true}
	for _, it := range list.Items {
		stage.Tests = append(stage.Tests, it.Spec)
	}
	return scapi.Configuration{Stages: []scapi.StageConfiguration{stage}}
}

// without is list without the tests named.
func without(list scapi.TestList, names ...string) scapi.TestList {
	out := scapi.TestList{}
	for _, it := range list.Items {
		keep := true
		for _, n := range names {
			keep = keep && it.Spec.Labels["test"] != n
		}
		if keep {
			out.Items = append(out.Items, it)
		}
	}
	return out
}

// reportOn runs report on a run and configuration written to files, with the CSV claiming
// Auto Pilot (level 5), as the bundle does.
func reportOn(t *testing.T, run scapi.TestList, cfg scapi.Configuration, selector string) error {
	t.Helper()
	g := NewWithT(t)
	dir := t.TempDir()
	f := files{
		run:      filepath.Join(dir, "scorecard.json"),
		csv:      filepath.Join(dir, "csv.yaml"),
		config:   filepath.Join(dir, "config.yaml"),
		selector: selector,
	}
	raw, err := json.Marshal(run)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(f.run, raw, 0o644)).To(Succeed())
	raw, err = yaml.Marshal(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(f.config, raw, 0o644)).To(Succeed())
	g.Expect(os.WriteFile(f.csv, []byte("metadata:\n  annotations:\n    capabilities: Auto Pilot\n"), 0o644)).To(Succeed())
	return report(f)
}

func TestReportPassesTheFullPassingRun(t *testing.T) {
	g := NewWithT(t)
	g.Expect(reportOn(t, fullRun(), configOf(fullRun()), "")).To(Succeed())
}

func TestReportFailsWhenAClaimedLevelDidNotRun(t *testing.T) {
	g := NewWithT(t)
	// Level 4's test left the configuration: the run has every result it was asked for, all passing.
	short := without(fullRun(), "level-4-deep-insights")
	err := reportOn(t, short, configOf(short), "")
	g.Expect(err).To(MatchError(ContainSubstring("level 4 (Deep Insights) is claimed but no scorecard test labelled level=4 ran: check ")))
	// Level 4's test lost its level label: it runs, but as a built-in.
	unlabelled := fullRun()
	delete(unlabelled.Items[5].Spec.Labels, "level")
	err = reportOn(t, unlabelled, configOf(unlabelled), "")
	g.Expect(err).To(MatchError(ContainSubstring("no scorecard test labelled level=4 ran")))
}

func TestReportFailsWhenATestOfTheConfigurationDidNotRun(t *testing.T) {
	g := NewWithT(t)
	// A second level-2 test is configured but missing from the results; level 2 still has a
	// passing test, so only the configuration shows the gap.
	cfg := configOf(fullRun())
	cfg.Stages[0].Tests = append(cfg.Stages[0].Tests, item("level-2-rollback", "capability", "2").Spec)
	err := reportOn(t, fullRun(), cfg, "")
	g.Expect(err).To(MatchError(ContainSubstring("level-2-rollback (level 2, Seamless Upgrades) is in ")))
	g.Expect(err).To(MatchError(ContainSubstring("but did not run")))
	// So must the built-ins.
	err = reportOn(t, without(fullRun(), "olm-bundle-validation-test"), configOf(fullRun()), "")
	g.Expect(err).To(MatchError(ContainSubstring("olm-bundle-validation-test (built-in, suite olm) is in ")))
}

func TestReportOnASubsetJudgesWhatRan(t *testing.T) {
	g := NewWithT(t)
	olm := without(fullRun(), "basic-check-spec-test", "level-1-basic-install", "level-2-seamless-upgrades",
		"level-3-full-lifecycle", "level-4-deep-insights", "level-5-auto-pilot")
	g.Expect(reportOn(t, olm, configOf(fullRun()), "suite=olm")).To(Succeed())
	olm.Items[0].Status.Results[0].State = scapi.FailState
	g.Expect(reportOn(t, olm, configOf(fullRun()), "suite=olm")).To(MatchError(ContainSubstring("did not pass")))
	// The claim's own selector runs everything the claim depends on, so it is checked.
	g.Expect(reportOn(t, without(fullRun(), "level-5-auto-pilot"), configOf(fullRun()), selector(5))).
		To(MatchError(ContainSubstring("level 5 (Auto Pilot) is claimed")))
}

func TestUnprovenOnlyAsksForClaimedLevels(t *testing.T) {
	g := NewWithT(t)
	ts, err := results(without(fullRun(), "level-4-deep-insights", "level-5-auto-pilot"))
	g.Expect(err).NotTo(HaveOccurred())
	want, err := listed(configOf(fullRun()))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(unproven(ts, want, 3, "config.yaml")).To(BeEmpty())
	g.Expect(unproven(ts, want, 4, "config.yaml")).To(HaveLen(2)) // the level, and its configured test
	g.Expect(coversClaim(selector(3), 3)).To(BeTrue())
	g.Expect(coversClaim("", 3)).To(BeTrue())
	g.Expect(coversClaim(selector(2), 3)).To(BeFalse())
}

// The bundle's own configuration parses and has a test for every level, so a full run can
// prove any claim.
func TestTheBundleConfigurationCoversEveryLevel(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile("../../bundle/tests/scorecard/config.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var cfg scapi.Configuration
	g.Expect(yaml.Unmarshal(raw, &cfg)).To(Succeed())
	ts, err := listed(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	for i := range ts {
		ts[i].Result = Pass
	}
	g.Expect(earned(ts)).To(Equal(maxLevel))
}

func TestRecordFailsWhenATestOfTheConfigurationDidNotRun(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	f := files{run: filepath.Join(dir, "scorecard.json"), config: filepath.Join(dir, "config.yaml")}
	cfg := configOf(fullRun())
	cfg.Stages[0].Tests = append(cfg.Stages[0].Tests, item("level-5-self-heal", "capability", "5").Spec)
	raw, err := json.Marshal(fullRun())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(f.run, raw, 0o644)).To(Succeed())
	raw, err = yaml.Marshal(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(f.config, raw, 0o644)).To(Succeed())
	// Level 5 would be earned from its one result; its second test did not run.
	g.Expect(record(f)).To(MatchError(ContainSubstring("level-5-self-heal (level 5, Auto Pilot) is in ")))
}
