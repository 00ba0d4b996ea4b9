package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"

	scapi "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
)

// levelNames are the values OLM accepts for the CSV's capabilities annotation, by level.
var levelNames = []string{"", "Basic Install", "Seamless Upgrades", "Full Lifecycle", "Deep Insights", "Auto Pilot"}

// maxLevel is the highest capability level.
const maxLevel = 5

// Result is the outcome of one scorecard test.
type Result string

// The outcomes a test can have in a scorecard run.
const (
	Pass  Result = "pass"
	Fail  Result = "fail"
	Error Result = "error"
)

// Test is one test of the bundle's scorecard configuration and, after a run, its result.
type Test struct {
	Name  string `json:"test"`
	Suite string `json:"suite"`
	// Level is the capability level the test proves (0 for the built-in suites).
	Level  int    `json:"level,omitempty"`
	Result Result `json:"result"`
	// Summary is the first line of the test's errors: what is missing when it fails.
	Summary string `json:"summary,omitempty"`
	// Suggestions are what the test suggests, pass or fail (printed, not recorded).
	Suggestions []string `json:"-"`
}

// Record is what `make capabilities` commits: the result of every test and the level they earn.
type Record struct {
	Capability string `json:"capability"`
	Tests      []Test `json:"tests"`
}

// testOf reads the identity of a scorecard test from its labels: the test label names it,
// suite says which suite, level (1..5) which capability level it proves.
func testOf(labels map[string]string) (Test, error) {
	t := Test{Name: labels["test"], Suite: labels["suite"]}
	if t.Name == "" {
		return Test{}, fmt.Errorf("a scorecard test has no test label (labels %v)", labels)
	}
	if l, ok := labels["level"]; ok {
		n, err := strconv.Atoi(l)
		if err != nil || n < 1 || n > maxLevel {
			return Test{}, fmt.Errorf("scorecard test %s: level label %q is not 1..%d", t.Name, l, maxLevel)
		}
		t.Level = n
	}
	return t, nil
}

// results reads a scorecard run (`-o json`): one Test per test that ran, sorted by level
// then name. A test is an error when one of its results is, else a failure when one
// fails; a test that reported no result at all counts as an error.
func results(list scapi.TestList) ([]Test, error) {
	var out []Test
	for _, item := range list.Items {
		t, err := testOf(item.Spec.Labels)
		if err != nil {
			return nil, err
		}
		t.Result = Pass
		if len(item.Status.Results) == 0 {
			t.Result, t.Summary = Error, "the test reported no result"
		}
		for _, r := range item.Status.Results {
			t.Suggestions = append(t.Suggestions, r.Suggestions...)
			summary := summarize(r.Errors)
			switch {
			case r.State == scapi.ErrorState:
				t.Result, t.Summary = Error, summary
			case r.State != scapi.PassState && t.Result != Error:
				t.Result, t.Summary = Fail, summary
			}
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Level != out[j].Level {
			return out[i].Level < out[j].Level
		}
		return out[i].Name < out[j].Name
	})
	return out, nil
}

// listed reads the tests a scorecard configuration (bundle/tests/scorecard/config.yaml)
// names, in its order: the tests a run of it reports on.
func listed(cfg scapi.Configuration) ([]Test, error) {
	var out []Test
	for _, stage := range cfg.Stages {
		for _, tc := range stage.Tests {
			t, err := testOf(tc.Labels)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
		}
	}
	return out, nil
}

// The JUnit XML that CI systems read: one testsuite per scorecard test, one testcase per result.
type junitSuites struct {
	XMLName xml.Name     `xml:"testsuites"`
	Name    string       `xml:"name,attr"`
	Suites  []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	Classname string        `xml:"classname,attr"`
	SystemOut string        `xml:"system-out,omitempty"`
	Failure   *junitMessage `xml:"failure,omitempty"`
	Error     *junitMessage `xml:"error,omitempty"`
}

type junitMessage struct {
	Message string `xml:"message,attr"`
	Text    string `xml:",chardata"`
}

// xunit renders a scorecard run as JUnit XML (scorecard's own `-o xunit` writes error
// messages unescaped, which breaks on a message holding '<' or '&').
func xunit(list scapi.TestList) ([]byte, error) {
	out := junitSuites{Name: "scorecard"}
	for _, item := range list.Items {
		suite := junitSuite{Name: item.Spec.Labels["test"]}
		for _, r := range item.Status.Results {
			c := junitCase{Name: r.Name, Classname: item.Spec.Labels["suite"], SystemOut: r.Log}
			msg := strings.Join(r.Errors, "\n")
			switch r.State {
			case scapi.PassState:
			case scapi.ErrorState:
				suite.Errors++
				c.Error = &junitMessage{Message: firstLine(msg), Text: msg}
			default:
				suite.Failures++
				c.Failure = &junitMessage{Message: firstLine(msg), Text: msg}
			}
			suite.Tests++
			suite.Cases = append(suite.Cases, c)
		}
		out.Suites = append(out.Suites, suite)
	}
	b, err := xml.MarshalIndent(out, "", "  ")
	if err != nil {
		return nil, err
	}
	return append([]byte(xml.Header), append(b, '\n')...), nil
}

// summarize joins the first line of each error.
func summarize(errs []string) string {
	var lines []string
	for _, e := range errs {
		lines = append(lines, firstLine(e))
	}
	return strings.Join(lines, "; ")
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

// earned is the highest level whose capability tests, and those of every level below it,
// all pass. Every level must have at least one test in ts.
func earned(ts []Test) (int, error) {
	passed := map[int]bool{}
	seen := map[int]bool{}
	for _, t := range ts {
		if t.Level == 0 {
			continue
		}
		if !seen[t.Level] {
			passed[t.Level] = true
		}
		seen[t.Level] = true
		passed[t.Level] = passed[t.Level] && t.Result == Pass
	}
	for l := 1; l <= maxLevel; l++ {
		if !seen[l] {
			return 0, fmt.Errorf("no result for a level-%d test: run every capability test", l)
		}
	}
	level := 0
	for l := 1; l <= maxLevel && passed[l]; l++ {
		level = l
	}
	return level, nil
}

// levelOf returns the level of a capabilities annotation value.
func levelOf(name string) (int, error) {
	for l := 1; l <= maxLevel; l++ {
		if levelNames[l] == name {
			return l, nil
		}
	}
	return 0, fmt.Errorf("capabilities %q is not one of %s", name, strings.Join(levelNames[1:], ", "))
}

// regressions are the tests of a run that a claim of level `claimed` does not allow to fail:
// every built-in test and every capability test up to the claimed level. Tests above it may
// fail: they are not claimed.
func regressions(ts []Test, claimed int) []Test {
	var bad []Test
	for _, t := range ts {
		if t.Result != Pass && t.Level <= claimed {
			bad = append(bad, t)
		}
	}
	return bad
}

// unproven says why a run does not prove a claim of level `claimed` even when none of its
// tests failed: a test that did not run proves nothing, and a guard that only reads the
// results it is given stays green when a claimed level's test leaves the configuration or
// loses its level label. Every claimed level needs a test labelled with it in the run, and
// every test the configuration (file config, named in the messages) lists for the built-in
// suites or a claimed level must be in it.
func unproven(ts, listed []Test, claimed int, config string) []error {
	ranLevel := map[int]bool{}
	for _, t := range ts {
		ranLevel[t.Level] = true
	}
	var errs []error
	for l := 1; l <= claimed; l++ {
		if !ranLevel[l] {
			errs = append(errs, fmt.Errorf("level %d (%s) is claimed but no scorecard test labelled level=%d ran: check %s", l, levelNames[l], l, config))
		}
	}
	return append(errs, notRun(ts, listed, claimed, config)...)
}

// notRun names each test of listed up to level `upTo` (built-ins included) that is not in the
// run ts: one level can have several tests, and each must run for the level to count.
func notRun(ts, listed []Test, upTo int, config string) []error {
	ran := map[string]bool{}
	for _, t := range ts {
		ran[t.Name] = true
	}
	var errs []error
	for _, t := range listed {
		if t.Level <= upTo && !ran[t.Name] {
			errs = append(errs, fmt.Errorf("%s (%s) is in %s but did not run", t.Name, role(t), config))
		}
	}
	return errs
}

// role says what a test proves: a built-in suite's check, or a capability level.
func role(t Test) string {
	if t.Level == 0 {
		return "built-in, suite " + t.Suite
	}
	return fmt.Sprintf("level %d, %s", t.Level, levelNames[t.Level])
}

// coversClaim says whether a run with label selector sel runs every test a claim of level
// `claimed` depends on: the whole configuration (no selector) or exactly the claim's tests
// (selector(claimed), what make test-e2e-scorecard passes). Any other selector runs a subset
// (make scorecard SCORECARD_SELECTOR=suite=olm), which can show a test failing but cannot
// show that every claimed level ran.
func coversClaim(sel string, claimed int) bool {
	sel = strings.TrimSpace(sel)
	return sel == "" || sel == selector(claimed)
}

// selector is the scorecard label selector that runs the built-in suites and the capability
// tests of the claimed levels (`notin` also selects tests without a level label).
func selector(claimed int) string {
	var above []string
	for l := claimed + 1; l <= maxLevel; l++ {
		above = append(above, strconv.Itoa(l))
	}
	if len(above) == 0 {
		return ""
	}
	return "level notin (" + strings.Join(above, ",") + ")"
}

var capabilitiesLine = regexp.MustCompile(`(?m)^(\s+capabilities:\s*)(.*)$`)

// csvCapabilities returns the capabilities annotation of a CSV (base) file.
func csvCapabilities(csv []byte) (string, error) {
	m := capabilitiesLine.FindAllSubmatch(csv, -1)
	if len(m) != 1 {
		return "", fmt.Errorf("expected one capabilities annotation in the CSV, found %d", len(m))
	}
	return strings.Trim(string(m[0][2]), `"' `), nil
}

// setCSVCapabilities rewrites the capabilities annotation of a CSV file, keeping every other byte.
func setCSVCapabilities(csv []byte, name string) ([]byte, error) {
	if _, err := csvCapabilities(csv); err != nil {
		return nil, err
	}
	return capabilitiesLine.ReplaceAll(csv, []byte("${1}"+name)), nil
}

const (
	tableBegin = "<!-- scorecard-table:begin (make capabilities writes this table) -->"
	tableEnd   = "<!-- scorecard-table:end -->"
)

// table renders a record as the README's markdown table; each capability test's name
// links to the test.
func table(r Record) string {
	var b strings.Builder
	fmt.Fprintf(&b, "CSV capabilities: **%s** (derived by `make capabilities`).\n\n", r.Capability)
	b.WriteString("| Test | Suite | Level | Result | What fails |\n|---|---|---|---|---|\n")
	for _, t := range r.Tests {
		level := "-"
		if t.Level > 0 {
			level = fmt.Sprintf("%d %s", t.Level, levelNames[t.Level])
		}
		name := "`" + t.Name + "`"
		if t.Level > 0 {
			name = fmt.Sprintf("[%s](scorecard/internal/levels/level%d.go)", name, t.Level)
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", name, t.Suite, level, t.Result,
			strings.ReplaceAll(t.Summary, "|", `\|`))
	}
	return b.String()
}

// setTable replaces the text between the table markers of a README.
func setTable(readme []byte, tbl string) ([]byte, error) {
	s := string(readme)
	i, j := strings.Index(s, tableBegin), strings.Index(s, tableEnd)
	if i < 0 || j < i {
		return nil, errors.New("README.md has no scorecard table markers " + tableBegin + " ... " + tableEnd)
	}
	return []byte(s[:i+len(tableBegin)] + "\n" + tbl + s[j:]), nil
}
