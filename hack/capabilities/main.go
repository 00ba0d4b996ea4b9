// Command capabilities turns scorecard runs into the CSV's capability claim, so that the
// claim is earned, never typed:
//
//	report   -run F     print a run's results (and -xunit F: write them as JUnit XML); exit 1
//	                    when a built-in test or a claimed level's test did not pass (levels
//	                    above the claim may fail), and, unless -selector runs a subset, when a
//	                    claimed level has no test in the run or a test of -config that the
//	                    claim depends on did not run
//	record   -run F     from a run of every test of -config: write the record (scorecard/capabilities.yaml),
//	                    set the CSV base's capabilities annotation to the highest level
//	                    whose tests (and all below) pass, and rewrite the README's table
//	check               fail when the CSV base's annotation or the README's table is not what
//	                    the record says (run by make verify)
//	selector            print the scorecard label selector for the claimed levels
//
// A run is scorecard's `-o json` output; each test's suite and level come from its labels.
// -selector defaults to $SCORECARD_SELECTOR, which hack/scorecard.sh runs scorecard with.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"text/tabwriter"

	scapi "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/yaml"
)

type files struct {
	run, xunit, csv, record, readme, config, selector string
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: capabilities report|record|check|selector [flags]")
		os.Exit(2)
	}
	var f files
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	fs.StringVar(&f.csv, "csv", "config/manifests/bases/etcdpilot.clusterserviceversion.yaml", "the CSV base holding the capabilities annotation")
	fs.StringVar(&f.record, "record", "scorecard/capabilities.yaml", "the committed record of the last full run")
	fs.StringVar(&f.readme, "readme", "README.md", "the README holding the scorecard table")
	fs.StringVar(&f.run, "run", "", "scorecard's JSON output (-o json) of a run")
	fs.StringVar(&f.xunit, "xunit", "", "where to write the run as JUnit XML (optional)")
	fs.StringVar(&f.config, "config", "bundle/tests/scorecard/config.yaml", "the scorecard configuration the run ran")
	fs.StringVar(&f.selector, "selector", os.Getenv("SCORECARD_SELECTOR"), "the label selector the run ran with (empty: every test)")
	_ = fs.Parse(os.Args[2:])

	var err error
	switch os.Args[1] {
	case "report":
		err = report(f)
	case "record":
		err = record(f)
	case "check":
		err = check(f)
	case "selector":
		err = printSelector(f)
	default:
		err = fmt.Errorf("unknown command %q", os.Args[1])
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "capabilities:", err)
		os.Exit(1)
	}
}

func claimedLevel(f files) (int, error) {
	csv, err := os.ReadFile(f.csv)
	if err != nil {
		return 0, err
	}
	name, err := csvCapabilities(csv)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", f.csv, err)
	}
	return levelOf(name)
}

func runResults(f files) ([]Test, error) {
	if f.run == "" {
		return nil, errors.New("-run is required")
	}
	raw, err := os.ReadFile(f.run)
	if err != nil {
		return nil, err
	}
	var list scapi.TestList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("%s is not scorecard's JSON output: %w", f.run, err)
	}
	if f.xunit != "" {
		x, err := xunit(list)
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(f.xunit, x, 0o644); err != nil {
			return nil, err
		}
	}
	return results(list)
}

// configTests reads the tests f.config lists.
func configTests(f files) ([]Test, error) {
	raw, err := os.ReadFile(f.config)
	if err != nil {
		return nil, err
	}
	var cfg scapi.Configuration
	if err := yaml.Unmarshal(raw, &cfg); err != nil {
		return nil, fmt.Errorf("%s: %w", f.config, err)
	}
	ts, err := listed(cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", f.config, err)
	}
	return ts, nil
}

func printTable(ts []Test, claimed int) {
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TEST\tSUITE\tLEVEL\tRESULT\tWHAT FAILS")
	for _, t := range ts {
		level, result := "-", string(t.Result)
		if t.Level > 0 {
			level = fmt.Sprint(t.Level)
			if t.Result != Pass && t.Level > claimed {
				result += " (not claimed)"
			}
		}
		fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\n", t.Name, t.Suite, level, result, t.Summary)
	}
	_ = w.Flush()
	for _, t := range ts {
		for _, s := range t.Suggestions {
			fmt.Printf("suggestion from %s: %s\n", t.Name, s)
		}
	}
}

func report(f files) error {
	ts, err := runResults(f)
	if err != nil {
		return err
	}
	claimed, err := claimedLevel(f)
	if err != nil {
		return err
	}
	printTable(ts, claimed)
	fmt.Printf("\nThe CSV claims %q (level %d).\n", levelNames[claimed], claimed)
	for _, t := range ts {
		if t.Level > claimed && t.Result == Pass {
			fmt.Printf("Note: %s passes, above the claim: `make capabilities` would raise it.\n", t.Name)
		}
	}
	var errs []error
	if coversClaim(f.selector, claimed) {
		want, err := configTests(f)
		if err != nil {
			return err
		}
		errs = unproven(ts, want, claimed, f.config)
	} else {
		fmt.Printf("Note: selector %q runs a subset: whether every claimed level ran is not checked.\n", f.selector)
	}
	if bad := regressions(ts, claimed); len(bad) > 0 {
		errs = append(errs, fmt.Errorf("%d test(s) the claim depends on did not pass, first: %s: %s", len(bad), bad[0].Name, bad[0].Summary))
	}
	return errors.Join(errs...)
}

func record(f files) error {
	ts, err := runResults(f)
	if err != nil {
		return err
	}
	want, err := configTests(f)
	if err != nil {
		return err
	}
	if missing := notRun(ts, want, maxLevel, f.config); len(missing) > 0 {
		return errors.Join(missing...)
	}
	level, err := earned(ts)
	if err != nil {
		return err
	}
	printTable(ts, level)
	if level == 0 {
		return errors.New("no capability level passes, not even level 1: the CSV cannot claim anything; fix the operator")
	}
	if bad := regressions(ts, level); len(bad) > 0 {
		return fmt.Errorf("%s did not pass: %s", bad[0].Name, bad[0].Summary)
	}
	rec := Record{Capability: levelNames[level], Tests: ts}
	out, err := yaml.Marshal(rec)
	if err != nil {
		return err
	}
	header := "# Written by `make capabilities` from a scorecard run of every test; do not edit.\n" +
		"# The CSV's capabilities annotation and README's scorecard table follow it (make verify checks).\n"
	if err := os.WriteFile(f.record, append([]byte(header), out...), 0o644); err != nil {
		return err
	}
	if err := apply(f, rec, true); err != nil {
		return err
	}
	fmt.Printf("\nEarned: level %d, %q. Written: %s, %s, %s.\n", level, rec.Capability, f.record, f.csv, f.readme)
	return nil
}

func check(f files) error {
	raw, err := os.ReadFile(f.record)
	if err != nil {
		return err
	}
	var rec Record
	if err := yaml.UnmarshalStrict(raw, &rec); err != nil {
		return fmt.Errorf("%s: %w", f.record, err)
	}
	level, err := earned(rec.Tests)
	if err != nil {
		return fmt.Errorf("%s: %w", f.record, err)
	}
	if rec.Capability != levelNames[level] {
		return fmt.Errorf("%s says %q but its results earn %q", f.record, rec.Capability, levelNames[level])
	}
	return apply(f, rec, false)
}

// apply makes the CSV base and the README say what rec says (write) or reports where they
// do not (!write).
func apply(f files, rec Record, write bool) error {
	csv, err := os.ReadFile(f.csv)
	if err != nil {
		return err
	}
	newCSV, err := setCSVCapabilities(csv, rec.Capability)
	if err != nil {
		return fmt.Errorf("%s: %w", f.csv, err)
	}
	readme, err := os.ReadFile(f.readme)
	if err != nil {
		return err
	}
	newReadme, err := setTable(readme, table(rec))
	if err != nil {
		return err
	}
	if write {
		if err := os.WriteFile(f.csv, newCSV, 0o644); err != nil {
			return err
		}
		return os.WriteFile(f.readme, newReadme, 0o644)
	}
	if !bytes.Equal(csv, newCSV) {
		have, _ := csvCapabilities(csv)
		return fmt.Errorf("%s claims %q but the scorecard record %s earns %q: run make capabilities (or fix the annotation)", f.csv, have, f.record, rec.Capability)
	}
	if !bytes.Equal(readme, newReadme) {
		return fmt.Errorf("the scorecard table in %s is not what %s says: run make capabilities", f.readme, f.record)
	}
	return nil
}

func printSelector(f files) error {
	claimed, err := claimedLevel(f)
	if err != nil {
		return err
	}
	fmt.Println(selector(claimed))
	return nil
}
