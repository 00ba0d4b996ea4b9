// Package scale benchmarks one operator against many EtcdClusters (issue 15, target 3): it
// runs the EtcdCluster controller in-process against envtest, with fake etcd members, and
// measures what the steady state costs: writes to the API server, reconcile time, memory,
// CPU and member polls. This file holds the arithmetic of those figures, without I/O.
package scale

import (
	"bufio"
	"bytes"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/equality"
)

// writeVerbs are the values of apiserver_request_total's verb label that change state.
var writeVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "DELETECOLLECTION": true, "APPLY": true}

// Writes counts write requests by "VERB resource[/subresource]".
type Writes map[string]float64

// ParseWrites reads the write requests counted by apiserver_request_total from the API
// server's /metrics text, summed over response codes, groups and versions.
func ParseWrites(text []byte) Writes {
	out := Writes{}
	sc := bufio.NewScanner(bytes.NewReader(text))
	sc.Buffer(make([]byte, 0, 64*1024), 1024*1024)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labelText, valueText, ok := strings.Cut(rest, "} ")
		if !ok {
			continue
		}
		labels := parseLabels(labelText)
		if !writeVerbs[labels["verb"]] {
			continue
		}
		v, err := strconv.ParseFloat(strings.Fields(valueText)[0], 64)
		if err != nil {
			continue
		}
		key := labels["verb"] + " " + labels["resource"]
		if labels["subresource"] != "" {
			key += "/" + labels["subresource"]
		}
		out[key] += v
	}
	return out
}

// parseLabels reads name="value" pairs separated by commas; values in the API server's
// request metrics hold no quotes or commas.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for pair := range strings.SplitSeq(s, ",") {
		name, value, ok := strings.Cut(pair, "=")
		if ok {
			out[name] = strings.Trim(value, `"`)
		}
	}
	return out
}

// Since returns the writes made after before was read: w minus before, keeping only the
// requests that grew.
func (w Writes) Since(before Writes) Writes {
	out := Writes{}
	for k, v := range w {
		if d := v - before[k]; d > 0 {
			out[k] = d
		}
	}
	return out
}

// Total sums the writes, leaving out those to the resources named in except.
func (w Writes) Total(except ...string) float64 {
	var sum float64
	for k, v := range w {
		_, resource, _ := strings.Cut(k, " ")
		resource, _, _ = strings.Cut(resource, "/")
		if !contains(except, resource) {
			sum += v
		}
	}
	return sum
}

// String lists the writes, most first, as "VERB resource: count".
func (w Writes) String() string {
	keys := make([]string, 0, len(w))
	for k := range w {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if w[keys[i]] != w[keys[j]] {
			return w[keys[i]] > w[keys[j]]
		}
		return keys[i] < keys[j]
	})
	var b strings.Builder
	for i, k := range keys {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(k + ": " + strconv.FormatFloat(w[k], 'f', -1, 64))
	}
	if b.Len() == 0 {
		return "none"
	}
	return b.String()
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Histogram is a cumulative histogram: the count of observations at most each upper bound,
// in increasing order, and their sum.
type Histogram struct {
	Bounds []float64
	Counts []float64
	Count  float64
	Sum    float64
}

// ReconcileTime reads controller-runtime's controller_runtime_reconcile_time_seconds of one
// controller from gathered metric families; the zero Histogram when there is none.
func ReconcileTime(families []*dto.MetricFamily, controller string) Histogram {
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_time_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelValue(m, "controller") != controller || m.GetHistogram() == nil {
				continue
			}
			h := m.GetHistogram()
			out := Histogram{Count: float64(h.GetSampleCount()), Sum: h.GetSampleSum()}
			for _, b := range h.GetBucket() {
				out.Bounds = append(out.Bounds, b.GetUpperBound())
				out.Counts = append(out.Counts, float64(b.GetCumulativeCount()))
			}
			return out
		}
	}
	return Histogram{}
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// Since returns the observations made after before was read (same buckets).
func (h Histogram) Since(before Histogram) Histogram {
	out := Histogram{Bounds: h.Bounds, Count: h.Count - before.Count, Sum: h.Sum - before.Sum}
	for i, c := range h.Counts {
		if i < len(before.Counts) {
			c -= before.Counts[i]
		}
		out.Counts = append(out.Counts, c)
	}
	return out
}

// Quantile estimates the q-quantile as Prometheus' histogram_quantile does: linearly within
// the bucket that holds it, from 0 for the first bucket; an observation above the last
// bound counts as the last bound. NaN without observations.
func (h Histogram) Quantile(q float64) float64 {
	if h.Count == 0 || len(h.Bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.Count
	lower, below := 0.0, 0.0
	for i, bound := range h.Bounds {
		if h.Counts[i] >= rank {
			in := h.Counts[i] - below
			if in == 0 {
				return bound
			}
			return lower + (bound-lower)*(rank-below)/in
		}
		lower, below = bound, h.Counts[i]
	}
	return h.Bounds[len(h.Bounds)-1]
}

// Per1000 scales a figure measured with n clusters to 1000 clusters.
func Per1000(v float64, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	return v * 1000 / float64(n)
}

// ChangedFields names the fields of two values of one struct type that differ
// (equality.Semantic), by their JSON names: which parts of an object's status an update
// changed. It is empty when they are the same or are not structs of one type.
func ChangedFields(old, updated any) []string {
	a, b := reflect.ValueOf(old), reflect.ValueOf(updated)
	if a.Kind() != reflect.Struct || a.Type() != b.Type() {
		return nil
	}
	var out []string
	for i := range a.NumField() {
		f := a.Type().Field(i)
		if !f.IsExported() || equality.Semantic.DeepEqual(a.Field(i).Interface(), b.Field(i).Interface()) {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" {
			name = f.Name
		}
		out = append(out, name)
	}
	return out
}

// Counts counts things by name.
type Counts map[string]float64

// Since returns the counts made after before was taken, keeping those that grew.
func (c Counts) Since(before Counts) Counts {
	return Counts(Writes(c).Since(Writes(before)))
}

// String lists the counts, most first, as "name: count"; "none" when there are none.
func (c Counts) String() string { return Writes(c).String() }
