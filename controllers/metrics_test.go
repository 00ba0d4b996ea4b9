package controllers_test

import (
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/etcdpilot/etcdpilot/internal/metrics"
)

// metricsRegistry holds the metrics of the reconcilers under test.
var (
	metricsRegistry = prometheus.NewRegistry()
	testMetrics     = metrics.New(metricsRegistry)
)

// clusterSeries are the labels of the series of cluster ns/name, with the extra label pairs.
func clusterSeries(ns, name string, extra ...string) map[string]string {
	want := map[string]string{"namespace": ns, "name": name}
	for i := 0; i+1 < len(extra); i += 2 {
		want[extra[i]] = extra[i+1]
	}
	return want
}

// metricValue is the value of the one series of metric name with labels want; it fails when
// there is no such series.
func metricValue(g Gomega, name string, want map[string]string) float64 {
	values := seriesOf(g, name, want)
	g.ExpectWithOffset(1, values).To(HaveLen(1), "%s%v", name, want)
	return values[0]
}

// seriesOf returns the values of the series of metric name whose labels include want.
func seriesOf(g Gomega, name string, want map[string]string) []float64 {
	return seriesIn(g, metricsRegistry, name, want)
}

// seriesIn returns the values of the series of metric name in reg whose labels include want.
func seriesIn(g Gomega, reg prometheus.Gatherer, name string, want map[string]string) []float64 {
	families, err := reg.Gather()
	g.ExpectWithOffset(3, err).NotTo(HaveOccurred())
	var out []float64
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue series
				}
			}
			switch {
			case m.GetGauge() != nil:
				out = append(out, m.GetGauge().GetValue())
			case m.GetCounter() != nil:
				out = append(out, m.GetCounter().GetValue())
			}
		}
	}
	return out
}
