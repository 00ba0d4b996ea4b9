// Command promcheck checks the PromQL of etcdpilot's alerting rules and Grafana dashboard
// (internal/monitoring) against Prometheus's own parser and against real scrapes:
//
//   - every rule expression, every panel target and every label_values() variable query
//     of the dashboard parses (Grafana variables are first replaced with plausible values);
//   - in the rule group "etcd", every selector carries the matcher etcd_cluster!="" written
//     exactly so: the operator scopes that group to one EtcdCluster by replacing that text
//     with namespace="<ns>", etcd_cluster="<name>" (the replaced expressions must parse too);
//   - every metric name used is one that is exported: etcd's (etcd_*, grpc_*, process_*,
//     go_*) by each etcd release whose scrapes are given with -etcd, the operator's
//     (etcdpilot_*, controller_runtime_*, workqueue_*) by the -operator scrapes when given;
//     up is Prometheus's own; any other name fails.
//
// Usage:
//
//	promcheck -rules rules.yaml -dashboard dashboard.json \
//	  -etcd 'scrapes/etcd-v3.5.35-member*.prom' -etcd 'scrapes/etcd-v3.6.16-member*.prom' \
//	  [-operator operator.prom] [-names metric-names.txt]
//
// Each -etcd is a glob (or comma-separated list) of the scrapes of the members of one
// cluster of one etcd release: a name must appear in at least one member's scrape, for
// every -etcd given (some families, like the leader's send failures, exist on one member
// only). -names writes the sorted metric names used, one a line.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

// scopeMatcher is the text every selector of the rule group "etcd" carries; the operator
// replaces it to scope the group to one cluster (scopedMatcher shows how, for the check).
const (
	scopeMatcher  = `etcd_cluster!=""`
	scopedMatcher = `namespace="promcheck-ns", etcd_cluster="promcheck-cluster"`
	scopedGroup   = "etcd"
)

// grafanaVars are the values Grafana variables are replaced with before parsing.
var grafanaVars = map[string]string{
	"namespace":       "default",
	"cluster":         "example",
	"datasource":      "prometheus",
	"__rate_interval": "1m",
	"__interval":      "30s",
	"__interval_ms":   "30000",
	"__range":         "1h",
	"__range_s":       "3600",
	"__range_ms":      "3600000",
}

var grafanaVarRE = regexp.MustCompile(`\$\{([A-Za-z0-9_]+)(?::[^}]*)?\}|\$([A-Za-z_][A-Za-z0-9_]*)|\[\[([A-Za-z0-9_]+)(?::[^\]]*)?\]\]`)

// expr is one PromQL expression and where it comes from.
type expr struct {
	file, where, query string
	group              string // the rule group, for rules
}

func (e expr) String() string { return e.file + ": " + e.where }

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, " ") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	var etcdFlags, operatorFlags listFlag
	rulesPath := flag.String("rules", "", "Prometheus rule file (YAML)")
	dashboardPath := flag.String("dashboard", "", "Grafana dashboard (JSON)")
	namesPath := flag.String("names", "", "write the sorted metric names used to this file")
	flag.Var(&etcdFlags, "etcd", "scrapes of one etcd release's members (glob or comma-separated list); repeat per release")
	flag.Var(&operatorFlags, "operator", "scrapes of the operator (glob or comma-separated list); repeatable")
	flag.Parse()
	if flag.NArg() != 0 || (*rulesPath == "" && *dashboardPath == "") {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(*rulesPath, *dashboardPath, *namesPath, etcdFlags, operatorFlags); err != nil {
		fmt.Fprintln(os.Stderr, "promcheck: FAIL:", err)
		os.Exit(1)
	}
	fmt.Println("promcheck: ok")
}

func run(rulesPath, dashboardPath, namesPath string, etcdFlags, operatorFlags []string) error {
	var exprs []expr
	if rulesPath != "" {
		e, err := ruleExprs(rulesPath)
		if err != nil {
			return err
		}
		exprs = append(exprs, e...)
	}
	if dashboardPath != "" {
		e, err := dashboardExprs(dashboardPath)
		if err != nil {
			return err
		}
		exprs = append(exprs, e...)
	}
	// uses maps a metric name to where it is used.
	uses := map[string][]string{}
	var problems []string
	for _, e := range exprs {
		names, errs := checkExpr(e)
		problems = append(problems, errs...)
		for _, n := range names {
			if u := uses[n]; len(u) == 0 || u[len(u)-1] != e.String() {
				uses[n] = append(u, e.String())
			}
		}
	}
	fmt.Printf("promcheck: parsed %d expressions (%s), %d metric names\n", len(exprs),
		strings.Join(slices.DeleteFunc([]string{countFrom(exprs, rulesPath), countFrom(exprs, dashboardPath)},
			func(s string) bool { return s == "" }), ", "), len(uses))
	if len(problems) > 0 {
		return fmt.Errorf("%d expression problem(s):\n  %s", len(problems), strings.Join(problems, "\n  "))
	}

	missing, err := checkNames(uses, etcdFlags, operatorFlags)
	if err != nil {
		return err
	}
	if namesPath != "" {
		names := make([]string, 0, len(uses))
		for n := range uses {
			names = append(names, n)
		}
		sort.Strings(names)
		if err := os.WriteFile(namesPath, []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
			return err
		}
		fmt.Printf("promcheck: wrote %d names to %s\n", len(names), namesPath)
	}
	if len(missing) > 0 {
		return fmt.Errorf("%d metric name(s) not exported:\n  %s", len(missing), strings.Join(missing, "\n  "))
	}
	return nil
}

func countFrom(exprs []expr, file string) string {
	if file == "" {
		return ""
	}
	n := 0
	for _, e := range exprs {
		if e.file == file {
			n++
		}
	}
	return fmt.Sprintf("%s: %d", file, n)
}

// ruleExprs reads the expressions of a Prometheus rule file.
func ruleExprs(path string) ([]expr, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert  string `yaml:"alert"`
				Record string `yaml:"record"`
				Expr   string `yaml:"expr"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []expr
	for _, g := range f.Groups {
		for i, r := range g.Rules {
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			out = append(out, expr{file: path, group: g.Name, query: r.Expr,
				where: fmt.Sprintf("group %s, rule %d (%s)", g.Name, i+1, name)})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rules", path)
	}
	return out, nil
}

type panel struct {
	ID      int     `json:"id"`
	Title   string  `json:"title"`
	Type    string  `json:"type"`
	Panels  []panel `json:"panels"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
}

var labelValuesRE = regexp.MustCompile(`^\s*label_values\((.*),\s*([A-Za-z_][A-Za-z0-9_]*)\s*\)\s*$`)

// dashboardExprs reads the target expressions of a Grafana dashboard's panels (rows'
// nested panels included) and the selectors of its label_values() variables.
func dashboardExprs(path string) ([]expr, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var d struct {
		Panels     []panel `json:"panels"`
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	var out []expr
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		q, _ := v.Query.(string)
		if m, ok := v.Query.(map[string]any); ok {
			q, _ = m["query"].(string)
		}
		where := fmt.Sprintf("variable %s", v.Name)
		sm := labelValuesRE.FindStringSubmatch(q)
		if sm == nil {
			return nil, fmt.Errorf("%s: %s: query %q is not label_values(selector, label)", path, where, q)
		}
		out = append(out, expr{file: path, where: where, query: sm[1]})
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, t := range p.Targets {
				if strings.TrimSpace(t.Expr) == "" {
					continue
				}
				out = append(out, expr{file: path, query: t.Expr,
					where: fmt.Sprintf("panel %d %q, target %s", p.ID, p.Title, t.RefID)})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return out, nil
}

// substitute replaces Grafana variables with plausible values.
func substitute(q string) (string, error) {
	var unknown []string
	out := grafanaVarRE.ReplaceAllStringFunc(q, func(m string) string {
		sm := grafanaVarRE.FindStringSubmatch(m)
		name := sm[1] + sm[2] + sm[3]
		v, ok := grafanaVars[name]
		if !ok {
			unknown = append(unknown, m)
		}
		return v
	})
	if len(unknown) > 0 {
		return "", fmt.Errorf("unknown Grafana variable(s) %s", strings.Join(unknown, ", "))
	}
	return out, nil
}

var promql = parser.NewParser(parser.Options{})

// checkExpr parses one expression and returns the metric names it selects, and its
// problems.
func checkExpr(e expr) (names []string, problems []string) {
	fail := func(format string, args ...any) {
		problems = append(problems, e.String()+": "+fmt.Sprintf(format, args...))
	}
	q, err := substitute(e.query)
	if err != nil {
		fail("%v", err)
		return nil, problems
	}
	ast, err := promql.ParseExpr(q)
	if err != nil {
		fail("does not parse: %v\n    %s", err, strings.ReplaceAll(strings.TrimSpace(q), "\n", "\n    "))
		return nil, problems
	}
	selectors := 0
	parser.Inspect(ast, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		selectors++
		name, err := metricName(vs)
		if err != nil {
			fail("selector %s: %v", vs, err)
		} else {
			names = append(names, name)
		}
		if e.group == scopedGroup {
			pr := vs.PositionRange()
			text := q[pr.Start:pr.End]
			if c := strings.Count(text, scopeMatcher); c != 1 {
				fail("selector %s has %d matchers written %s, want exactly one: the operator scopes group %q to a cluster by replacing that text", text, c, scopeMatcher, scopedGroup)
			}
		}
		return nil
	})
	if e.group == scopedGroup {
		if c := strings.Count(q, scopeMatcher); c != selectors {
			fail("%s appears %d times, but there are %d selectors: it may appear only as a selector's matcher", scopeMatcher, c, selectors)
		}
		scoped := strings.ReplaceAll(q, scopeMatcher, scopedMatcher)
		if _, err := promql.ParseExpr(scoped); err != nil {
			fail("does not parse once scoped to a cluster (%s replaced with %s): %v", scopeMatcher, scopedMatcher, err)
		}
	}
	return names, problems
}

// metricName is the name a selector selects, from its name or its __name__ matcher.
func metricName(vs *parser.VectorSelector) (string, error) {
	if vs.Name != "" {
		return vs.Name, nil
	}
	for _, m := range vs.LabelMatchers {
		if m.Name == model.MetricNameLabel {
			if m.Type != labels.MatchEqual {
				return "", errors.New("a __name__ matcher other than = cannot be checked against scrapes")
			}
			return m.Value, nil
		}
	}
	return "", errors.New("no metric name")
}

// scrape is the metric families of one scrape file.
type scrape struct {
	path     string
	families map[string]string // name -> type
}

func (s scrape) has(name string) bool {
	if _, ok := s.families[name]; ok {
		return true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		t := s.families[base]
		if t == "HISTOGRAM" || t == "GAUGE_HISTOGRAM" || (suffix != "_bucket" && t == "SUMMARY") {
			return true
		}
	}
	return false
}

// readScrapes reads the scrape files of one -etcd or -operator argument.
func readScrapes(arg string) ([]scrape, error) {
	var paths []string
	for _, p := range strings.Split(arg, ",") {
		m, err := filepath.Glob(p)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("%s: no such file", p)
		}
		paths = append(paths, m...)
	}
	var out []scrape
	for _, p := range paths {
		f, err := os.Open(p)
		if err != nil {
			return nil, err
		}
		tp := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := tp.TextToMetricFamilies(f)
		_ = f.Close()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		s := scrape{path: p, families: map[string]string{}}
		for name, mf := range fams {
			s.families[name] = mf.GetType().String()
		}
		fmt.Printf("promcheck: %s: %d metric families\n", p, len(s.families))
		out = append(out, s)
	}
	return out, nil
}

// scrapeSet is the scrapes of one -etcd or -operator argument.
type scrapeSet struct {
	arg     string
	scrapes []scrape
}

func loadScrapeSets(args []string) ([]scrapeSet, error) {
	var out []scrapeSet
	for _, a := range args {
		s, err := readScrapes(a)
		if err != nil {
			return nil, err
		}
		out = append(out, scrapeSet{arg: a, scrapes: s})
	}
	return out, nil
}

// missingFrom returns a line for each set where no scrape exports name.
func missingFrom(name string, sets []scrapeSet, uses []string) []string {
	var out []string
	for _, g := range sets {
		if !slices.ContainsFunc(g.scrapes, func(s scrape) bool { return s.has(name) }) {
			out = append(out, fmt.Sprintf("%s: in no scrape of %s (used in %s)", name, g.arg, strings.Join(uses, "; ")))
		}
	}
	return out
}

// checkNames checks every name used against the scrapes; it returns a line per name that
// is missing somewhere.
func checkNames(uses map[string][]string, etcdFlags, operatorFlags []string) ([]string, error) {
	etcdGroups, err := loadScrapeSets(etcdFlags)
	if err != nil {
		return nil, err
	}
	operatorGroups, err := loadScrapeSets(operatorFlags)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(uses))
	for n := range uses {
		names = append(names, n)
	}
	sort.Strings(names)
	var missing []string
	checked := map[string]int{}
	for _, n := range names {
		var sets []scrapeSet
		kind := ""
		switch {
		case n == "up":
			checked["up (Prometheus's own)"]++
			continue
		case hasAnyPrefix(n, "etcd_", "grpc_", "process_", "go_"):
			kind, sets = "etcd", etcdGroups
		case hasAnyPrefix(n, "etcdpilot_", "controller_runtime_", "workqueue_"):
			kind, sets = "operator", operatorGroups
		default:
			missing = append(missing, fmt.Sprintf("%s: neither etcd's nor the operator's metric (used in %s)", n, strings.Join(uses[n], "; ")))
			continue
		}
		if len(sets) == 0 {
			checked[kind+" (no scrapes given: not checked)"]++
			continue
		}
		checked[kind]++
		missing = append(missing, missingFrom(n, sets, uses[n])...)
	}
	kinds := make([]string, 0, len(checked))
	for k, c := range checked {
		kinds = append(kinds, fmt.Sprintf("%s %d", k, c))
	}
	sort.Strings(kinds)
	fmt.Printf("promcheck: names by kind: %s; etcd scrape sets %d, operator scrape sets %d\n",
		strings.Join(kinds, ", "), len(etcdGroups), len(operatorGroups))
	return missing, nil
}

func hasAnyPrefix(s string, prefixes ...string) bool {
	for _, p := range prefixes {
		if strings.HasPrefix(s, p) {
			return true
		}
	}
	return false
}
