package levels

import "fmt"

// The capabilities the levels check for that etcdpilot does not have yet. Each test fails
// with one "missing: ..." error per item.

// backupMissing is the level-3 item when the API server does not serve EtcdBackup: an
// operator older than backups.
const backupMissing = "backup and restore (EtcdBackup is not served; issue 8)"

// upgradesMissing explains why a refused spec.version change fails level 2.
const upgradesMissing = "operand upgrades are not built yet (issue 6: rolling, health-gated upgrades)"

// tenantMissing is the level-3 item when the API server does not serve EtcdTenant: an
// operator older than tenants.
const tenantMissing = "tenants with their own certificates and prefixes (EtcdTenant is not served; issue 38)"

// FullLifecycleMissing lists what level 3 lacks beyond the scaling and replacement it
// exercises: backupServed and tenantServed say whether the API server serves EtcdBackup and
// EtcdTenant. What is served is not missing: the test exercises it, and fails with the step
// that does not work.
func FullLifecycleMissing(backupServed, tenantServed bool) []string {
	var out []string
	if !backupServed {
		out = append(out, backupMissing)
	}
	if !tenantServed {
		out = append(out, tenantMissing)
	}
	return out
}

// prometheusMissing is level 4's failure when the API server does not serve the
// Prometheus Operator's kinds: the test proves monitoring against a real Prometheus, which
// it cannot have then.
const prometheusMissing = "a Prometheus to prove monitoring against (the API server serves no PodMonitor and PrometheusRule " +
	"of monitoring.coreos.com: the Prometheus Operator is not installed)"

// prometheusSuggestion tells how to give level 4 its Prometheus.
const prometheusSuggestion = "Install the Prometheus Operator and a Prometheus that selects the PodMonitors, ServiceMonitors and PrometheusRules " +
	"of every namespace (`make monitoring-up` on the local cluster), apply the operator's ServiceMonitor and PrometheusRule " +
	"(config/prometheus, `make deploy-monitoring`), and give the test Prometheus's URL as " + EnvPrometheusURL + " (default " + DefaultPrometheusURL + ")."

// Insight is one thing level 4 checks on its cluster, and what was found wrong with it.
type Insight struct {
	// What names it in the failure: "etcd's metrics from the member pods".
	What string
	// Step is the name of the step that checks it, in the log.
	Step string
	// Suggestion is what to build when it is missing.
	Suggestion string
	// Problem is what was found wrong; nil when it is in place.
	Problem error

	check func() error
}

// DeepInsightsMissing lists what level 4 lacks: "<what> (<problem>)" for every insight
// with a problem, in order.
func DeepInsightsMissing(insights []Insight) []string {
	var out []string
	for _, in := range insights {
		if in.Problem != nil {
			out = append(out, fmt.Sprintf("%s (%v)", in.What, in.Problem))
		}
	}
	return out
}

// AutoPilotMissing lists what level 5 lacks: nothing. Level 5 exercises defragmentation,
// NOSPACE recovery, verified backups, quorum-loss recovery and the replacement of a member
// whose data diverged; self-tuning raft timing and storage autoscaling exist too, but need
// more time or load than a test pod has (docs/tuning.md; the e2e suite covers them).
func AutoPilotMissing() []string { return nil }
