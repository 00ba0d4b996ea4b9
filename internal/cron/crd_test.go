package cron_test

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpilot/etcdpilot/internal/cron"
)

// scheduleCRD is the generated CRD whose spec.schedule rule must agree with Parse.
const scheduleCRD = "../../config/crd/bases/etcd.etcdpilot.io_etcdbackupschedules.yaml"

// The CRD's rule on spec.schedule and Parse must accept the same expressions:
// otherwise the apiserver stores a schedule the operator then refuses (a schedule that
// never runs, with only a condition to say so), or refuses one the operator would run.
// The test reads the rule from the generated CRD, so it fails when either side changes
// alone.
func TestScheduleRuleOfTheCRDAgreesWithParse(t *testing.T) {
	crdAccepts := scheduleRule(t)

	agreed := []struct {
		expr  string
		valid bool
	}{
		// Five fields.
		{"0 */6 * * *", true},
		{"*/15 * * * *", true},
		{"0 0 1 1 *", true},
		{"5,35 8-17/2 * * 1-5", true},
		{"* * * * *", true},
		{"59 23 31 12 6", true},
		{"0 0 * * 0", true},
		{"0-59/5 0-23 1-31 1-12 0-6", true},
		{"1,2,3 4,5 6,7 8,9 0,6", true},
		{"30 2 * * 1-5/2", true},
		{"0 12 15 */3 *", true},
		{"5/15 * * * *", true},             // n/s: from n to the end, every s
		{"*/99 */99 */99 */99 */99", true}, // the largest step
		{"*/05 * * * *", true},
		{"0 0 * * */7", true},
		{"00 05 * * *", true}, // a leading zero, as crontabs often have
		{"0 0 01 01 *", true},
		{"0 0 * * 00", true},
		{"0 0 29 2 *", true}, // leap years only
		{"0 0 31 4 1", true}, // never the 31st of April, but every Monday of April
		{"0,*/10 * * * *", true},
		// Descriptors.
		{"@hourly", true},
		{"@daily", true},
		{"@midnight", true},
		{"@weekly", true},
		{"@monthly", true},
		{"@yearly", true},
		{"@annually", true},

		// Out of range.
		{"60 * * * *", false},
		{"* 24 * * *", false},
		{"* * 0 * *", false},
		{"* * 32 * *", false},
		{"* * * 13 *", false},
		{"* * * 0 *", false},
		{"* * * * 7", false},
		{"0 0 * * 1-7", false},
		{"005 * * * *", false},
		{"*/0 * * * *", false},
		{"*/100 * * * *", false},
		{"0 0 * * */00", false},
		// Shape.
		{"", false},
		{"* * * *", false},
		{"* * * * * *", false},
		{"a b c d e", false},
		{"0  0 * * *", false},
		{" 0 0 * * *", false},
		{"0 0 * * * ", false},
		{"0\t0 * * *", false},
		{"1,,2 * * * *", false},
		{",1 * * * *", false},
		{"1, * * * *", false},
		{"*-5 * * * *", false},
		{"1-2-3 * * * *", false},
		{"1/2/3 * * * *", false},
		{"-1 * * * *", false},
		{"+5 * * * *", false},
		// What robfig/cron accepts and the API does not.
		{"@every 1h", false},
		{"@reboot", false},
		{"@Daily", false},
		{"CRON_TZ=UTC 0 * * * *", false},
		{"TZ=UTC 0 * * * *", false},
		{"0 0 * * MON", false},
		{"0 0 * JAN *", false},
		{"0 0 * * mon-fri", false},
		{"? * * * *", false},
		{"0 0 ? * *", false},
	}
	var wrong []string
	for _, tc := range agreed {
		if _, err := cron.Parse(tc.expr); (err == nil) != tc.valid {
			wrong = append(wrong, fmt.Sprintf("Parse(%q): valid=%t, want %t (%v)", tc.expr, err == nil, tc.valid, err))
		}
		if crdAccepts(tc.expr) != tc.valid {
			wrong = append(wrong, fmt.Sprintf("the CRD's rule on %q: valid=%t, want %t", tc.expr, !tc.valid, tc.valid))
		}
	}

	// What a regular expression cannot check: the order of a range's ends, and whether
	// the calendar has the days asked for. The CRD's regular expressions accept these;
	// Parse refuses them, and the controller reports why in the schedule's status.
	for _, expr := range []string{
		"30-10 * * * *",
		"0 0 * * 6-1",
		"0 0 30 2 *",
		"0 0 31 4,6,9,11 *",
	} {
		if _, err := cron.Parse(expr); err == nil {
			wrong = append(wrong, fmt.Sprintf("Parse(%q) accepts it", expr))
		}
		if !crdAccepts(expr) {
			wrong = append(wrong, fmt.Sprintf("the CRD's rule refuses %q now: move it to the corpus above", expr))
		}
	}
	NewWithT(t).Expect(wrong).To(BeEmpty())
}

// scheduleRule returns the CRD's validation rule on spec.schedule that is made of
// self.matches calls, as a Go function. CEL's matches is RE2, as Go's regexp is, so
// evaluating the same patterns with regexp gives the apiserver's answer. Other rules on
// the field, if any, are not evaluated.
func scheduleRule(t *testing.T) func(string) bool {
	t.Helper()
	g := NewWithT(t)

	data, err := os.ReadFile(scheduleCRD)
	g.Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(data, &crd)).To(Succeed())
	g.Expect(crd.Spec.Versions).To(HaveLen(1))
	schema := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
	var rule string
	for _, r := range schema.Properties["spec"].Properties["schedule"].XValidations {
		if strings.HasPrefix(r.Rule, "self.matches(") {
			g.Expect(rule).To(BeEmpty(), "one rule of spec.schedule is made of self.matches")
			rule = r.Rule
		}
	}
	g.Expect(rule).NotTo(BeEmpty(), "spec.schedule has a rule made of self.matches")

	patterns, shape := celMatches(t, rule)
	g.Expect(shape).To(Equal("self.matches(_) || self.matches(_)"),
		"the rule is no longer two alternatives of self.matches; teach this test its new shape")
	var res []*regexp.Regexp
	for _, p := range patterns {
		re, err := regexp.Compile(p)
		g.Expect(err).NotTo(HaveOccurred())
		res = append(res, re)
	}
	return func(s string) bool {
		for _, re := range res {
			if re.MatchString(s) {
				return true
			}
		}
		return false
	}
}

// celMatches returns the string arguments of every self.matches('...') in a CEL rule,
// unescaped, and the rule with each call's argument replaced by "_" and its whitespace
// collapsed, to check how the calls are combined.
func celMatches(t *testing.T, rule string) (patterns []string, shape string) {
	t.Helper()
	const call = "self.matches('"
	var out strings.Builder
	for {
		i := strings.Index(rule, call)
		if i < 0 {
			out.WriteString(rule)
			break
		}
		out.WriteString(rule[:i] + "self.matches(_")
		lit, rest := celString(t, rule[i+len(call):])
		patterns = append(patterns, lit)
		rule = rest
	}
	return patterns, strings.Join(strings.Fields(out.String()), " ")
}

// celString reads a single-quoted CEL string literal up to its closing quote (s starts
// right after the opening one) and returns its value and what follows the quote.
func celString(t *testing.T, s string) (value, rest string) {
	t.Helper()
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '\'':
			return b.String(), s[i+1:]
		case '\\':
			i++
			if i == len(s) || !strings.ContainsRune(`\'"`+"`?", rune(s[i])) {
				t.Fatalf("CEL escape this test does not know, in %q", s)
			}
			b.WriteByte(s[i])
		default:
			b.WriteByte(c)
		}
	}
	t.Fatalf("unterminated CEL string %q", s)
	return "", ""
}
