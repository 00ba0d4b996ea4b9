package framework

import (
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

// The Prometheus side of a cluster's monitoring, as level 4 checks it: which targets
// Prometheus scrapes for it, which of its rules Prometheus evaluates, and which of its
// alerts are active. Each decision reads what Prometheus's API answered.

// AlertBackupFailing is the shipped alert (internal/monitoring/rules.yaml, group etcdpilot,
// which config/prometheus ships next to the operator) that fires for a cluster whose newest
// backup that ended in the last hour failed, and clears once a backup of it succeeds. It
// has no for: it fires on the first evaluation that sees the failure.
const AlertBackupFailing = "EtcdBackupFailing"

// Target and alert states, as Prometheus's API spells them.
const (
	healthUp     = "up"
	ruleHealthOK = "ok"
	alertPending = "pending"
	alertFiring  = "firing"
)

// clusterLabel is the label every member series carries: the EtcdCluster's name, which the
// PodMonitor relabels from the pod label etcd.etcdpilot.io/cluster. The rules and the
// dashboard tell clusters apart by it.
const clusterLabel = "etcd_cluster"

// memberPool is the prefix of the scrape pools of c's PodMonitor: the Prometheus Operator
// names them podMonitor/<namespace>/<name>/<endpoint index>.
func memberPool(c *etcdv1alpha1.EtcdCluster) string {
	return "podMonitor/" + c.Namespace + "/" + monitoring.PodMonitorName(c) + "/"
}

// CheckMemberTargets says what is wrong with how Prometheus scrapes c's member pods, named
// pods: each must be a target of c's PodMonitor (by its labels namespace and pod), up, and
// labelled etcd_cluster=<c's name>, or no rule and no dashboard panel sees its series. When
// all hold, it returns a line for the log.
func CheckMemberTargets(targets []Target, c *etcdv1alpha1.EtcdCluster, pods []string) (string, error) {
	if len(pods) == 0 {
		return "", fmt.Errorf("EtcdCluster %s has no member pods", c.Name)
	}
	var problems, found []string
	for _, pod := range pods {
		var mine []Target
		for _, t := range targets {
			if t.Labels["namespace"] == c.Namespace && t.Labels["pod"] == pod && strings.HasPrefix(t.ScrapePool, memberPool(c)) {
				mine = append(mine, t)
			}
		}
		if len(mine) == 0 {
			problems = append(problems, fmt.Sprintf("no target of PodMonitor %s/%s for member pod %s (Prometheus scrapes %d targets)",
				c.Namespace, monitoring.PodMonitorName(c), pod, len(targets)))
			continue
		}
		for _, t := range mine {
			switch {
			case t.Health != healthUp:
				problems = append(problems, fmt.Sprintf("member pod %s: target %s is %s%s", pod, t.ScrapeURL, t.Health, lastError(t.LastError)))
			case t.Labels[clusterLabel] != c.Name:
				problems = append(problems, fmt.Sprintf("member pod %s: target %s is labelled %s=%q, not %q: the rules and the dashboard do not see it",
					pod, t.ScrapeURL, clusterLabel, t.Labels[clusterLabel], c.Name))
			default:
				found = append(found, fmt.Sprintf("%s %s up", pod, t.ScrapeURL))
			}
		}
	}
	if len(problems) > 0 {
		return "", joinProblems(problems)
	}
	return fmt.Sprintf("targets of PodMonitor %s/%s: %s", c.Namespace, monitoring.PodMonitorName(c), strings.Join(found, ", ")), nil
}

// CheckOperatorTargets says what is wrong with how Prometheus scrapes the operator, whose
// metrics Service is namespace/service: the targets a ServiceMonitor makes of it carry the
// labels namespace and service, and one of them must be up. One is enough: a Deployment
// being rolled has two pods for a while, and only the leader's series matter. When it holds,
// it returns a line for the log.
func CheckOperatorTargets(targets []Target, namespace, service string) (string, error) {
	var mine, down []string
	for _, t := range targets {
		if t.Labels["namespace"] != namespace || t.Labels["service"] != service {
			continue
		}
		if t.Health == healthUp {
			mine = append(mine, t.ScrapeURL+" up")
		} else {
			down = append(down, fmt.Sprintf("%s %s%s", t.ScrapeURL, t.Health, lastError(t.LastError)))
		}
	}
	switch {
	case len(mine) == 0 && len(down) == 0:
		return "", fmt.Errorf("no target of the operator's metrics Service %s/%s among the %d targets Prometheus scrapes: nothing tells it to scrape the operator",
			namespace, service, len(targets))
	case len(mine) == 0:
		return "", fmt.Errorf("no target of the operator's metrics Service %s/%s is up: %s", namespace, service, strings.Join(down, "; "))
	}
	return fmt.Sprintf("targets of the operator's metrics Service %s/%s: %s", namespace, service, strings.Join(append(mine, down...), ", ")), nil
}

// ClusterRuleNames are the names of the alerts in c's PrometheusRule, in the order of the
// shipped rule file: its group etcd, scoped to c (monitoring.ScopedRules). An alert with
// two severities is listed twice.
func ClusterRuleNames(c *etcdv1alpha1.EtcdCluster) ([]string, error) {
	groups, err := monitoring.ScopedRules(monitoring.Rules, c.Namespace, c.Name)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			if name, ok := r.(map[string]any)["alert"].(string); ok {
				out = append(out, name)
			}
		}
	}
	return out, nil
}

// RuleFile is the name of the file into which the Prometheus Operator writes the rules of
// c's PrometheusRule, whose UID is uid: <namespace>-<name>-<uid>.yaml. Prometheus reports
// each group with its file.
func RuleFile(c *etcdv1alpha1.EtcdCluster, uid string) string {
	return fmt.Sprintf("%s-%s-%s.yaml", c.Namespace, monitoring.PrometheusRuleName(c), uid)
}

// CheckClusterRules says what is wrong with c's rules as Prometheus evaluates them: the
// group etcd from the file of c's PrometheusRule (RuleFile, uid its UID) must be loaded with
// exactly the alerts of want, each evaluated without error (health ok). A rule not
// evaluated yet (health unknown) counts as a problem: it may still fail. When all hold, it
// returns a line for the log.
func CheckClusterRules(groups []RuleGroup, c *etcdv1alpha1.EtcdCluster, uid string, want []string) (string, error) {
	i := slices.IndexFunc(groups, func(g RuleGroup) bool {
		return g.Name == "etcd" && filepath.Base(g.File) == RuleFile(c, uid)
	})
	if i < 0 {
		return "", fmt.Errorf("the rule group etcd of PrometheusRule %s/%s (file %s) is not loaded (Prometheus evaluates %d groups)",
			c.Namespace, monitoring.PrometheusRuleName(c), RuleFile(c, uid), len(groups))
	}
	g := groups[i]
	var problems, got []string
	for _, r := range g.Rules {
		got = append(got, r.Name)
		if !r.Healthy() {
			problems = append(problems, fmt.Sprintf("rule %s is %s%s", r.Name, r.Health, lastError(r.LastError)))
		}
	}
	if missing, extra := difference(want, got), difference(got, want); len(missing)+len(extra) > 0 {
		problems = append([]string{fmt.Sprintf("the group holds other rules than the PrometheusRule's (missing: %s; not in it: %s)",
			orNone(missing), orNone(extra))}, problems...)
	}
	if len(problems) > 0 {
		return "", fmt.Errorf("rule group etcd of %s: %w", g.File, joinProblems(problems))
	}
	return fmt.Sprintf("rule group etcd of %s: %d rules, each evaluated without error", g.File, len(g.Rules)), nil
}

// FindRule returns the alerting rule named name and the group that holds it, the first
// among groups.
func FindRule(groups []RuleGroup, name string) (RuleGroup, Rule, bool) {
	for _, g := range groups {
		for _, r := range g.Rules {
			if r.Name == name && r.Type == "alerting" {
				return g, r, true
			}
		}
	}
	return RuleGroup{}, Rule{}, false
}

// AlertStates returns the states ("pending", "firing") of the alerts named name whose
// labels include every label of want, sorted.
func AlertStates(alerts []Alert, name string, want map[string]string) []string {
	var out []string
	for _, a := range alerts {
		if a.Labels["alertname"] == name && hasLabels(a.Labels, want) {
			out = append(out, a.State)
		}
	}
	sort.Strings(out)
	return out
}

// Active says whether states, of one alert, include pending or firing.
func Active(states []string) bool {
	return slices.Contains(states, alertPending) || slices.Contains(states, alertFiring)
}

// ClusterSeriesLabels are the labels by which the operator's series and alerts name c:
// its namespace and name.
func ClusterSeriesLabels(c *etcdv1alpha1.EtcdCluster) map[string]string {
	return map[string]string{"namespace": c.Namespace, "name": c.Name}
}

// LeaderQuery selects etcd_server_has_leader of c's members as Prometheus stores it, by the
// labels with which the rules select one cluster.
func LeaderQuery(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf(`etcd_server_has_leader{namespace=%q, %s=%q}`, c.Namespace, clusterLabel, c.Name)
}

// CheckLeaderSeries says what is wrong with the answer to LeaderQuery: one series per member
// pod (label pod), each 1.
func CheckLeaderSeries(samples []Sample, pods []string) error {
	var problems []string
	for _, pod := range pods {
		var values []string
		for _, s := range samples {
			if s.Labels["pod"] == pod {
				values = append(values, fmt.Sprint(s.Value))
			}
		}
		if len(values) != 1 || values[0] != "1" {
			problems = append(problems, fmt.Sprintf("member pod %s: %s", pod, orNone(values)))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("etcd_server_has_leader is not one series at 1 per member: %w", joinProblems(problems))
	}
	return nil
}

// AvailableQuery selects the operator's etcdpilot_cluster_condition{condition="Available"}
// of c as Prometheus stores it: with c's own namespace, which the operator's ServiceMonitor
// keeps (honorLabels) and the operator's alerts read.
func AvailableQuery(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf(`etcdpilot_cluster_condition{namespace=%q, name=%q, condition=%q}`, c.Namespace, c.Name, etcdv1alpha1.ConditionAvailable)
}

// CheckAvailableSeries says what is wrong with the answer to AvailableQuery: a series at 1.
// A pod of the operator's previous Deployment may leave a series for Prometheus's five
// minutes of lookback; one at 1 is enough.
func CheckAvailableSeries(samples []Sample) error {
	for _, s := range samples {
		if s.Value == 1 {
			return nil
		}
	}
	return fmt.Errorf("no series at 1 (%d series): the operator's series of the cluster do not reach Prometheus with the cluster's namespace", len(samples))
}

// BackupTimestampsQuery selects the operator's timestamps of c's newest failed and newest
// successful backup, which AlertBackupFailing compares.
func BackupTimestampsQuery(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf(`{__name__=~"etcdpilot_backup_last_(failure|success)_timestamp_seconds", namespace=%q, name=%q}`, c.Namespace, c.Name)
}

// difference returns the items of a that b lacks, counting repeats: each item of b cancels
// one equal item of a.
func difference(a, b []string) []string {
	left := map[string]int{}
	for _, s := range b {
		left[s]++
	}
	var out []string
	for _, s := range a {
		if left[s] > 0 {
			left[s]--
			continue
		}
		out = append(out, s)
	}
	return out
}

func lastError(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// joinProblems joins problems with "; " into one error.
func joinProblems(problems []string) error {
	return errors.New(strings.Join(problems, "; "))
}
