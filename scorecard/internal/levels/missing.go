package levels

import "fmt"

// The capabilities the levels check for that etcdpilot does not have yet. Each test fails
// with one "missing: ..." error per item.

// backupMissing is the level-3 item when the API server does not serve EtcdBackup: an
// operator older than backups.
const backupMissing = "backup and restore (EtcdBackup is not served; issue 8)"

// upgradesMissing explains why a refused spec.version change fails level 2.
const upgradesMissing = "operand upgrades are not built yet (issue 6: rolling, health-gated upgrades)"

// FullLifecycleMissing lists what level 3 lacks beyond the scaling and replacement it
// exercises: backupServed says whether the API server serves EtcdBackup. When it does,
// nothing is missing: the test exercises backup and restore, and fails with the step that
// does not work.
func FullLifecycleMissing(backupServed bool) []string {
	if backupServed {
		return nil
	}
	return []string{backupMissing}
}

// DeepInsightsMissing lists what level 4 lacks, from the bundle's alert rules and
// operand monitors and from the events found about a test cluster. eventsChecked is
// false when the cluster never got far enough to look; its own failure is reported then,
// and events are not listed as missing.
func DeepInsightsMissing(alertRules, monitors []string, events int, eventsChecked bool) []string {
	var out []string
	if len(alertRules) == 0 {
		out = append(out, "alert rules (no PrometheusRule in the bundle)")
	}
	if len(monitors) == 0 {
		out = append(out, "operand metrics scraping (no ServiceMonitor or PodMonitor for etcd members in the bundle)")
	}
	if eventsChecked && events == 0 {
		out = append(out, fmt.Sprintf("Kubernetes events about the EtcdCluster (none within %s of it becoming Available)", eventsWait))
	}
	return out
}

// AutoPilotMissing lists what level 5 lacks. None of it has an API yet, so there is
// nothing to exercise on a cluster.
func AutoPilotMissing() []string {
	return []string{
		"automatic recovery from quorum loss (no API for it yet)",
		"scheduled defragmentation (no API for it yet)",
		"tuning from observed load (no API for it yet)",
	}
}
