package scale

import (
	"math"
	"testing"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestParseWritesCountsWriteVerbsByResource(t *testing.T) {
	text := []byte(`# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 5
apiserver_request_total{code="409",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="pods",scope="namespace",subresource="",verb="LIST",version="v1"} 40
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 7
apiserver_request_total_other{verb="POST",resource="pods"} 9
`)
	g := NewWithT(t)
	w := ParseWrites(text)
	g.Expect(w).To(Equal(Writes{"PATCH pods/status": 7, "POST pods": 3, "PUT leases": 7}))
	g.Expect(w.Total()).To(Equal(17.0))
	g.Expect(w.Total("leases")).To(Equal(10.0))
	g.Expect(w.Since(Writes{"PATCH pods/status": 7, "POST pods": 1})).To(Equal(Writes{"POST pods": 2, "PUT leases": 7}))
	g.Expect(w.String()).To(Equal("PATCH pods/status: 7, PUT leases: 7, POST pods: 3"))
	g.Expect(Writes{}.String()).To(Equal("none"))
}

func TestQuantileInterpolatesWithinTheBucket(t *testing.T) {
	h := Histogram{Bounds: []float64{0.01, 0.1, 1}, Counts: []float64{50, 90, 100}, Count: 100}
	for _, tc := range []struct {
		name string
		h    Histogram
		q    float64
		want float64
	}{
		{"in the first bucket, from zero", h, 0.25, 0.005},
		{"in the second", h, 0.7, 0.01 + 0.09*0.5},
		{"at a bound", h, 0.9, 0.1},
		{"in the last", h, 0.99, 0.1 + 0.9*0.9},
		{"above every bound: the last bound", Histogram{Bounds: []float64{1}, Counts: []float64{0}, Count: 3}, 0.5, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(tc.h.Quantile(tc.q)).To(BeNumerically("~", tc.want, 1e-9))
		})
	}
	NewWithT(t).Expect(math.IsNaN(Histogram{}.Quantile(0.99))).To(BeTrue(), "no observations")
}

func TestReconcileTimeReadsOneControllerAndSubtracts(t *testing.T) {
	g := NewWithT(t)
	hist := func(controller string, counts ...uint64) *dto.Metric {
		m := &dto.Metric{Label: []*dto.LabelPair{{Name: ptr.To("controller"), Value: ptr.To(controller)}},
			Histogram: &dto.Histogram{SampleCount: ptr.To(counts[len(counts)-1]), SampleSum: ptr.To(float64(counts[0]))}}
		for i, c := range counts {
			m.Histogram.Bucket = append(m.Histogram.Bucket, &dto.Bucket{UpperBound: ptr.To(float64(i + 1)), CumulativeCount: ptr.To(c)})
		}
		return m
	}
	fams := func(counts ...uint64) []*dto.MetricFamily {
		return []*dto.MetricFamily{{Name: ptr.To("controller_runtime_reconcile_time_seconds"),
			Metric: []*dto.Metric{hist("other", 9, 9), hist("etcdcluster", counts...)}}}
	}
	before := ReconcileTime(fams(1, 2), "etcdcluster")
	g.Expect(before).To(Equal(Histogram{Bounds: []float64{1, 2}, Counts: []float64{1, 2}, Count: 2, Sum: 1}))
	after := ReconcileTime(fams(3, 6), "etcdcluster")
	g.Expect(after.Since(before)).To(Equal(Histogram{Bounds: []float64{1, 2}, Counts: []float64{2, 4}, Count: 4, Sum: 2}))
	g.Expect(ReconcileTime(fams(1, 2), "none").Count).To(BeZero())
}

func TestPer1000(t *testing.T) {
	g := NewWithT(t)
	g.Expect(Per1000(3, 100)).To(Equal(30.0))
	g.Expect(math.IsNaN(Per1000(3, 0))).To(BeTrue())
}

func TestChangedFieldsNamesWhatDiffersByItsJSONName(t *testing.T) {
	g := NewWithT(t)
	type inner struct{ A int }
	type status struct {
		Plain  string             `json:"plain,omitempty"`
		Quota  *resource.Quantity `json:"quota,omitempty"`
		Inner  *inner             `json:"inner"`
		NoTag  []string
		hidden int
	}
	old := status{Plain: "a", Quota: ptr.To(resource.MustParse("1Gi")), Inner: &inner{1}, hidden: 1}
	g.Expect(ChangedFields(old, old)).To(BeEmpty())
	same := status{Plain: "a", Quota: ptr.To(resource.MustParse("1024Mi")), Inner: &inner{1}, hidden: 2}
	g.Expect(ChangedFields(old, same)).To(BeEmpty(), "equal quantities written differently, and unexported fields, are no change")
	g.Expect(ChangedFields(old, status{Plain: "b", Quota: old.Quota, Inner: &inner{2}, NoTag: []string{"x"}})).To(Equal([]string{"plain", "inner", "NoTag"}))
	g.Expect(ChangedFields(old, 3)).To(BeNil())
	g.Expect(ChangedFields(1, 2)).To(BeNil())
}

func TestCountsSinceAndString(t *testing.T) {
	g := NewWithT(t)
	after := Counts{"raftTiming": 3, "storage": 1}
	g.Expect(after.Since(Counts{"raftTiming": 1, "storage": 1})).To(Equal(Counts{"raftTiming": 2}))
	g.Expect(after.String()).To(Equal("raftTiming: 3, storage: 1"))
	g.Expect(Counts{}.String()).To(Equal("none"))
}
