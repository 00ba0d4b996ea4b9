package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// unrelatedObjects is how many Secrets, ConfigMaps and Pods (a third each) the memory
// benchmark puts next to the operator.
const unrelatedObjects = 10000

// BenchmarkMemoryUnrelatedObjects reports the operator pod's resident memory (its cgroup's
// RSS, the highest of samples every 250 ms over 20 s) in a cluster without unrelated objects
// (rss-without-MiB, the floor) and after 10,000 Secrets, ConfigMaps and Pods that the
// operator did not make were created in a namespace of their own (rss-with-MiB), and the
// ratio with/without (target: about 1; a cache that held every Secret, ConfigMap or Pod of
// the cluster would grow with them). Each object carries 1 KiB of data; the Pods have a
// scheduling gate, so none is scheduled or started.
func BenchmarkMemoryUnrelatedObjects(b *testing.B) {
	ctx := context.Background()
	c := newClient(b)
	rss := operatorRSS(ctx, b, c)
	var without, with float64
	for i := 0; i < b.N; i++ {
		without += float64(peakOver(rss, 20*time.Second))
		ns := namespace(ctx, b, c, "bench-unrelated-")
		start := time.Now()
		createUnrelated(ctx, b, c, ns, unrelatedObjects)
		b.Logf("created %d unrelated objects in %s", unrelatedObjects, time.Since(start).Round(time.Second))
		with += float64(peakOver(rss, 20*time.Second))
	}
	n := float64(b.N)
	b.ReportMetric(unrelatedObjects, "unrelated-objects")
	b.ReportMetric(without/n/(1<<20), "rss-without-MiB")
	b.ReportMetric(with/n/(1<<20), "rss-with-MiB")
	b.ReportMetric(with/without, "with/without")
	b.ReportMetric(0, "ns/op")
}

// peakOver samples rss every 250 ms for d and returns the highest sample.
func peakOver(rss func() uint64, d time.Duration) uint64 {
	var peak uint64
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(250 * time.Millisecond) {
		peak = max(peak, rss())
	}
	return peak
}

// createUnrelated creates n objects in ns, a third each Secrets, ConfigMaps and gated Pods,
// none with a label of the operator, from eight goroutines.
func createUnrelated(ctx context.Context, b *testing.B, c client.Client, ns string, n int) {
	b.Helper()
	data := strings.Repeat("x", 1024)
	object := func(i int) client.Object {
		meta := metav1.ObjectMeta{Name: fmt.Sprintf("unrelated-%d", i), Namespace: ns, Labels: map[string]string{"app": "unrelated"}}
		switch i % 3 {
		case 0:
			return &corev1.Secret{ObjectMeta: meta, StringData: map[string]string{"data": data}}
		case 1:
			return &corev1.ConfigMap{ObjectMeta: meta, Data: map[string]string{"data": data}}
		default:
			return &corev1.Pod{ObjectMeta: meta, Spec: corev1.PodSpec{
				SchedulingGates: []corev1.PodSchedulingGate{{Name: "etcdpilot.io/never"}},
				Containers: []corev1.Container{{Name: "c", Image: "localhost:5000/none:none",
					Env: []corev1.EnvVar{{Name: "DATA", Value: data}}}},
			}}
		}
	}
	work := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	for range 8 {
		wg.Go(func() {
			for i := range work {
				if err := c.Create(ctx, object(i)); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		work <- i
	}
	close(work)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("creating the unrelated objects: %v", firstErr)
	}
}
