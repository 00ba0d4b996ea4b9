//go:build tools

// Package tools pins the Prometheus Operator release that make monitoring-up runs on the local
// cluster: the operator (cmd/operator) and the prometheus-config-reloader sidecar it adds to each
// Prometheus pod. Its CRDs (example/prometheus-operator-crd in the module) are also what the
// envtest suites install to test the operator's PodMonitor, ServiceMonitor and PrometheusRule
// objects. It is a module of its own because the Prometheus Operator requires other Kubernetes
// libraries than the operator uses.
package tools

import (
	_ "github.com/prometheus-operator/prometheus-operator/cmd/operator"
	_ "github.com/prometheus-operator/prometheus-operator/cmd/prometheus-config-reloader"
)
