//go:build tools

// Package tools pins the Prometheus release whose promtool checks and unit-tests the alerting
// rules in internal/monitoring (promtool check rules, promtool test rules). Prometheus 3.x
// releases are tagged v0.3MM.P on the module path without /v3: v0.316.0 is Prometheus 3.16.0.
// It is a module of its own because Prometheus requires newer Kubernetes libraries than the
// operator uses. cmd/prometheus is the Prometheus server that make monitoring-up runs on the
// local cluster (hack/monitoring).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
