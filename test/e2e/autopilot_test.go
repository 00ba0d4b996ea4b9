package e2e

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// The self-tuning of level 5 on real members: storage autoscaling raises the quota before
// the data reaches it; Auto raft timing follows the round trip between the members, with
// latency added between them (hack/latency.sh: NFQUEUE and nfdelay, only between the pod
// addresses of that cluster) and taken away.
var _ = Describe("autopilot", func() {
	It("raises the quota of a growing cluster before it reaches NOSPACE, one member at a time, every write accepted", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-autoscale-")
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				Etcd: etcdv1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(resource.MustParse("24Mi"))},
				Storage: etcdv1alpha1.StorageSpec{Autoscaling: &etcdv1alpha1.StorageAutoscalingSpec{
					Mode: etcdv1alpha1.StorageAutoscalingAuto, MaxQuotaBackendBytes: ptr.To(resource.MustParse("256Mi"))}}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		waitReady(ctx, c)
		cli := etcdV3Client(ctx, ns, "grow")
		quota := func() int64 {
			st := get(ctx, ns, "grow", &etcdv1alpha1.EtcdCluster{}).Status.Storage
			if st == nil || st.QuotaBackendBytes == nil {
				return 0
			}
			return st.QuotaBackendBytes.Value()
		}
		Eventually(quota).WithContext(ctx).WithTimeout(time.Minute).Should(Equal(int64(24<<20)), "status.storage shows the quota in force")

		// New keys, so that the data itself grows (no compaction can make room): 256 KiB at
		// a time, past the 75 % threshold of 24Mi, then nothing until the quota is raised.
		value := strings.Repeat("g", 256<<10)
		written := map[string]string{}
		put := func(from, to int) {
			for i := from; i < to; i++ {
				k, v := fmt.Sprintf("/data/%04d", i), fmt.Sprintf("%04d%s", i, value)
				// A write may meet a member restarting for a raised quota: tried again, as
				// a client would, but NOSPACE ends the spec.
				Eventually(func() error {
					_, err := cli.Put(ctx, k, v)
					if err != nil && strings.Contains(err.Error(), "database space exceeded") {
						return StopTrying("the cluster reached NOSPACE").Wrap(err)
					}
					return err
				}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "write %d", i)
				written[k] = v
			}
		}
		put(0, 76) // 19 MiB of values
		Eventually(quota).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(BeNumerically(">", 24<<20),
			"the quota is raised past 75 %% of it")
		raised := quota()
		got := waitReady(ctx, c)
		Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		for _, p := range clusterPods(ctx, ns, "grow") {
			Expect(p.Spec.Containers[0].Args).To(ContainElement(fmt.Sprintf("--quota-backend-bytes=%d", raised)), "pod %s runs the raised quota", p.Name)
		}
		Expect(eventCount(ctx, Default, ns, "QuotaRaised")).To(BeNumerically(">=", 1))

		// The data now grows past the old quota, and every write is accepted.
		put(76, 120) // 30 MiB of values in all, more than the first quota
		Expect(keysUnder(ctx, cli, "/data/")).To(Equal(written), "every key is intact")
		got = get(ctx, ns, "grow", &etcdv1alpha1.EtcdCluster{})
		for _, m := range got.Status.Members {
			Expect(m.Alarms).To(BeEmpty(), "member %s", m.Name)
		}
		Expect(eventCount(ctx, Default, ns, etcdv1alpha1.ReasonNoSpace)).To(BeZero(), "the cluster never reached NOSPACE")
	})

	It("raises the raft timing when latency is added between the members, and lowers it once the latency is gone", func(ctx SpecContext) {
		Expect(os.Getenv("NFDELAY")).NotTo(BeEmpty(), "NFDELAY names the nfdelay binary (make test-e2e builds it)")
		ns := newTestNamespace(ctx, "e2e-timing-")
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "rtt", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				Etcd: etcdv1alpha1.EtcdOptions{TimingProfile: etcdv1alpha1.TimingAuto,
					AutoTimingWindow: &metav1.Duration{Duration: time.Minute}}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		waitReady(ctx, c)
		timing := func() etcdv1alpha1.RaftTimingStatus {
			st := get(ctx, ns, "rtt", &etcdv1alpha1.EtcdCluster{}).Status.RaftTiming
			if st == nil {
				return etcdv1alpha1.RaftTimingStatus{}
			}
			return *st
		}
		// Without latency the measured round trip is far below etcd's default heartbeat.
		Eventually(timing).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(5 * time.Second).Should(And(
			HaveField("Reason", "WithinBand"), HaveField("HeartbeatIntervalMillis", int32(100)), HaveField("ElectionTimeoutMillis", int32(1000))))
		baseline := leaderChanges(ctx, ns, "rtt", 45*time.Second)

		// 150 ms each way between every two members: a round trip of about 300 ms.
		queue := strconv.Itoa(40 + GinkgoParallelProcess())
		addLatency := func() {
			var ips []string
			for _, p := range clusterPods(ctx, ns, "rtt") {
				Expect(p.Status.PodIP).NotTo(BeEmpty(), "pod %s has an address", p.Name)
				ips = append(ips, p.Status.PodIP)
			}
			run("hack/latency.sh", "remove", queue)
			run("hack/latency.sh", append([]string{"add", queue, "150ms", "15m"}, ips...)...)
		}
		DeferCleanup(func() { run("hack/latency.sh", "remove", queue) })
		addLatency()
		Eventually(timing).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(5 * time.Second).Should(And(
			HaveField("Reason", "Raised"), HaveField("HeartbeatIntervalMillis", BeNumerically(">=", 300))))
		raised := timing()
		Expect(raised.ElectionTimeoutMillis).To(Equal(10 * raised.HeartbeatIntervalMillis))
		Expect(raised.MeasuredRoundTripMillis).To(HaveValue(BeNumerically(">=", 300)))
		got := waitReady(ctx, c)
		Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		for _, p := range clusterPods(ctx, ns, "rtt") {
			Expect(p.Spec.Containers[0].Args).To(ContainElements(
				fmt.Sprintf("--heartbeat-interval=%d", raised.HeartbeatIntervalMillis),
				fmt.Sprintf("--election-timeout=%d", raised.ElectionTimeoutMillis)), "pod %s", p.Name)
		}
		Expect(eventCount(ctx, Default, ns, "RaftTimingChanged")).To(Equal(1))

		// The restarted members have new addresses: the latency follows them. With it, the
		// new timing holds the leader as well as etcd's defaults did without it, and noise
		// inside the band changes nothing.
		addLatency()
		Expect(leaderChanges(ctx, ns, "rtt", 45*time.Second)).To(BeNumerically("<=", baseline), "leader changes under latency with the raised timing")
		Expect(timing()).To(HaveField("HeartbeatIntervalMillis", raised.HeartbeatIntervalMillis))

		// Without the latency, the timing comes back down after a window.
		run("hack/latency.sh", "remove", queue)
		Eventually(timing).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(5 * time.Second).Should(And(
			HaveField("Reason", "Lowered"), HaveField("HeartbeatIntervalMillis", int32(100)), HaveField("ElectionTimeoutMillis", int32(1000))))
		waitReady(ctx, c)
		for _, p := range clusterPods(ctx, ns, "rtt") {
			Expect(p.Spec.Containers[0].Args).To(ContainElements("--heartbeat-interval=100", "--election-timeout=1000"), "pod %s", p.Name)
		}
		Expect(eventCount(ctx, Default, ns, "RaftTimingChanged")).To(Equal(2))
	})
})

// leaderChanges is how many elections cluster name held during d: the growth of the raft
// term its members report.
func leaderChanges(ctx context.Context, ns, name string, d time.Duration) uint64 {
	term := func() uint64 {
		cli := etcdClient(ctx, ns, name)
		defer func() { _ = cli.Close() }()
		endpoints, _ := memberEndpoints(ctx, ns, name)
		var highest uint64
		for _, e := range endpoints {
			st, err := cli.Status(ctx, "https://"+e)
			if err == nil {
				highest = max(highest, st.RaftTerm)
			}
		}
		Expect(highest).NotTo(BeZero(), "a member reports its raft term")
		return highest
	}
	before := term()
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
	return term() - before
}
