package monitoring

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// runbooks is where the runbooks live, relative to this package.
const runbooks = "../../docs/runbooks"

const runbookURLPrefix = "https://github.com/etcdpilot/etcdpilot/blob/main/docs/runbooks/"

type ruleFile struct {
	Groups []struct {
		Name  string `json:"name"`
		Rules []rule `json:"rules"`
	} `json:"groups"`
}

type rule struct {
	Alert       string            `json:"alert"`
	Record      string            `json:"record"`
	Expr        string            `json:"expr"`
	For         string            `json:"for"`
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
}

type testFile struct {
	RuleFiles []string `json:"rule_files"`
	Tests     []struct {
		Name          string `json:"name"`
		AlertRuleTest []struct {
			Alertname string `json:"alertname"`
			ExpAlerts []any  `json:"exp_alerts"`
		} `json:"alert_rule_test"`
	} `json:"tests"`
}

// alerts parses Rules and returns its alerting rules.
func alerts(t *testing.T) []rule {
	t.Helper()
	var f ruleFile
	if err := yaml.UnmarshalStrict(Rules, &f); err != nil {
		t.Fatalf("rules.yaml: %v", err)
	}
	var out []rule
	for _, g := range f.Groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %q has no rules", g.Name)
		}
		for _, r := range g.Rules {
			if r.Alert == "" {
				t.Errorf("group %q: a rule that is not an alert (record %q)", g.Name, r.Record)
				continue
			}
			out = append(out, r)
		}
	}
	if len(out) == 0 {
		t.Fatal("rules.yaml has no alerts")
	}
	return out
}

func TestEveryAlertIsLabelledAndAnnotated(t *testing.T) {
	for _, r := range alerts(t) {
		switch r.Labels["severity"] {
		case "info", "warning", "critical":
		default:
			t.Errorf("%s: severity %q, want info, warning or critical", r.Alert, r.Labels["severity"])
		}
		if strings.TrimSpace(r.Expr) == "" {
			t.Errorf("%s: no expr", r.Alert)
		}
		for _, a := range []string{"summary", "description"} {
			if strings.TrimSpace(r.Annotations[a]) == "" {
				t.Errorf("%s: no %s annotation", r.Alert, a)
			}
		}
		if want := runbookURLPrefix + r.Alert + ".md"; r.Annotations["runbook_url"] != want {
			t.Errorf("%s: runbook_url %q, want %q", r.Alert, r.Annotations["runbook_url"], want)
		}
		if _, err := os.Stat(filepath.Join(runbooks, r.Alert+".md")); err != nil {
			t.Errorf("%s: no runbook: %v", r.Alert, err)
		}
	}
}

func TestEveryRunbookHasAnAlert(t *testing.T) {
	names := map[string]bool{}
	for _, r := range alerts(t) {
		names[r.Alert] = true
	}
	files, err := filepath.Glob(filepath.Join(runbooks, "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".md")
		if name != "README" && !names[name] {
			t.Errorf("runbook %s has no alert in rules.yaml", filepath.Base(f))
		}
	}
	readme, err := os.ReadFile(filepath.Join(runbooks, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for name := range names {
		if !strings.Contains(string(readme), "("+name+".md)") {
			t.Errorf("docs/runbooks/README.md does not link %s.md", name)
		}
	}
}

// TestEveryAlertIsUnitTested checks that rules_test.yaml has, for every alert, a case where
// it fires and a case where it stays quiet (exp_alerts: []).
func TestEveryAlertIsUnitTested(t *testing.T) {
	data, err := os.ReadFile("rules_test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var f testFile
	if err := yaml.Unmarshal(data, &f); err != nil {
		t.Fatalf("rules_test.yaml: %v", err)
	}
	if len(f.RuleFiles) != 1 || f.RuleFiles[0] != "rules.yaml" {
		t.Errorf("rule_files = %v, want [rules.yaml]", f.RuleFiles)
	}
	fires, quiet := map[string]int{}, map[string]int{}
	for _, tg := range f.Tests {
		for _, c := range tg.AlertRuleTest {
			if len(c.ExpAlerts) == 0 {
				quiet[c.Alertname]++
			} else {
				fires[c.Alertname]++
			}
		}
	}
	known := map[string]bool{}
	for _, r := range alerts(t) {
		known[r.Alert] = true
		if fires[r.Alert] == 0 {
			t.Errorf("%s: rules_test.yaml has no case where it fires", r.Alert)
		}
		if quiet[r.Alert] == 0 {
			t.Errorf("%s: rules_test.yaml has no case where it stays quiet", r.Alert)
		}
	}
	for name := range fires {
		if !known[name] {
			t.Errorf("rules_test.yaml tests %s, which rules.yaml does not define", name)
		}
	}
	for name := range quiet {
		if !known[name] {
			t.Errorf("rules_test.yaml tests %s, which rules.yaml does not define", name)
		}
	}
}

type dashboardPanel struct {
	ID      int              `json:"id"`
	Type    string           `json:"type"`
	Title   string           `json:"title"`
	Panels  []dashboardPanel `json:"panels"`
	Targets []struct {
		Expr string `json:"expr"`
	} `json:"targets"`
}

// TestDashboard checks the dashboard's identity, its variables and that every panel queries
// something. Rows only group the panels after them and hold no query. That each query
// parses and names metrics etcd exports is promcheck's part (make test-monitoring).
func TestDashboard(t *testing.T) {
	var d struct {
		UID           string           `json:"uid"`
		SchemaVersion int              `json:"schemaVersion"`
		Panels        []dashboardPanel `json:"panels"`
		Templating    struct {
			List []struct {
				Name  string `json:"name"`
				Type  string `json:"type"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(Dashboard, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	if d.UID != "etcdpilot-etcdcluster" {
		t.Errorf("uid %q, want etcdpilot-etcdcluster", d.UID)
	}
	if d.SchemaVersion < 39 {
		t.Errorf("schemaVersion %d, want a recent one (39 or later)", d.SchemaVersion)
	}
	vars := map[string]string{}
	for _, v := range d.Templating.List {
		q, _ := v.Query.(string)
		vars[v.Name] = v.Type + " " + q
	}
	for name, want := range map[string]string{
		"datasource": "datasource prometheus",
		"namespace":  "query label_values(",
		"cluster":    "query label_values(",
	} {
		if !strings.HasPrefix(vars[name], want) {
			t.Errorf("variable %s: %q, want it to start with %q", name, vars[name], want)
		}
	}
	if !strings.HasSuffix(vars["cluster"], ", etcd_cluster)") {
		t.Errorf("variable cluster: %q, want the values of label etcd_cluster", vars["cluster"])
	}
	ids := map[int]bool{}
	queried := 0
	var check func([]dashboardPanel)
	check = func(panels []dashboardPanel) {
		for _, p := range panels {
			if ids[p.ID] {
				t.Errorf("panel %q: id %d is not unique", p.Title, p.ID)
			}
			ids[p.ID] = true
			check(p.Panels)
			if p.Type == "row" {
				continue
			}
			ok := false
			for _, tg := range p.Targets {
				ok = ok || strings.TrimSpace(tg.Expr) != ""
			}
			if !ok {
				t.Errorf("panel %d %q has no target with an expr", p.ID, p.Title)
			}
			queried++
		}
	}
	check(d.Panels)
	if queried < 10 {
		t.Errorf("%d panels with queries, want the whole dashboard", queried)
	}
}
