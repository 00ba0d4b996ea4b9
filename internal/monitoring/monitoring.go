// Package monitoring holds the Prometheus alerting rules for the etcd clusters etcdpilot runs
// and for the operator itself (rules.yaml), so that the operator can serve them as
// PrometheusRule objects.
//
// The rules read etcd's own metrics, scraped from every member pod with the labels
// namespace, pod and etcd_cluster, and the operator's etcdpilot_* metrics, labelled with the
// EtcdCluster's namespace and name. Every alert links a runbook in docs/runbooks. The rules
// are unit-tested with promtool (rules_test.yaml; promtool is pinned by the module in
// hack/tools/prometheus):
//
//	cd internal/monitoring && promtool test rules rules_test.yaml
package monitoring

import _ "embed"

// Rules is the Prometheus rule file (groups "etcd" and "etcdpilot"), as YAML.
//
//go:embed rules.yaml
var Rules []byte

// Dashboard is the Grafana dashboard of one EtcdCluster (JSON), with the variables namespace
// and cluster; the operator gives each cluster a copy of its own (ClusterDashboard).
//
//go:embed dashboard.json
var Dashboard []byte
