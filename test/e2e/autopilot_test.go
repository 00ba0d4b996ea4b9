package e2e

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// The self-tuning of level 5 on real members: storage autoscaling raises the quota before
// the data reaches it; Auto raft timing follows the round trip between the members, with
// latency added between them (hack/latency.sh: NFQUEUE and nfdelay, only between the pod
// addresses of that cluster) and taken away.
var _ = Describe("autopilot", longestSpec(80), func() {
	It("raises the quota of a growing cluster before it reaches NOSPACE, one member at a time, every write accepted", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-autoscale-")
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "grow", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				Etcd: etcdv1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(resource.MustParse("24Mi"))},
				Storage: etcdv1alpha1.StorageSpec{Autoscaling: &etcdv1alpha1.StorageAutoscalingSpec{
					Mode: etcdv1alpha1.StorageAutoscalingAuto, MaxQuotaBackendBytes: ptr.To(resource.MustParse("256Mi"))}}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		waitReady(ctx, c)
		// Writes go through the client Service, as an application's do: the quota's rollout
		// may restart every member while the spec still writes (the operator decides on its
		// own measure of the data), and each comes back at a new pod address. The members'
		// statuses are read on their own addresses, found again when the pods change.
		writer := serviceClient(ctx, ns, "grow")
		members := followMembers(ctx, ns, "grow")
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
		// Each 256 KiB is 16 values of 16 KiB, the size of a large Kubernetes object. With
		// values of 256 KiB, each needing 64 contiguous pages that bbolt's free pages seldom
		// offer, the file ran 16 to 25 % ahead of the data in use: at 75 % of the quota in
		// use it was at 94 to 100 % (CI met NOSPACE at the 73rd of them, before any pass).
		const perUnit = 16
		value := strings.Repeat("g", (256<<10)/perUnit)
		written := map[string]string{}
		put := func(from, to int) {
			for i := from; i < to; i++ {
				for j := range perUnit {
					k, v := fmt.Sprintf("/data/%04d/%02d", i, j), fmt.Sprintf("%04d%02d%s", i, j, value)
					// A write may meet a member restarting for a raised quota: tried again,
					// as a client would, but NOSPACE ends the spec.
					Eventually(func() error {
						pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
						defer cancel()
						_, err := writer.Put(pctx, k, v)
						if err != nil && strings.Contains(err.Error(), "database space exceeded") {
							return StopTrying("the cluster reached NOSPACE").Wrap(err)
						}
						return err
					}).WithContext(ctx).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "write %d/%d", i, j)
					written[k] = v
				}
			}
		}
		// Only just past the threshold: the operator raises the quota once the data in use
		// reaches it (a file that is there with less in use is defragmented first), etcd
		// refuses writes on the file's size, and the file holds free pages as well. Writing on to a
		// fixed count could reach the quota before any operator could have raised it (CI
		// once saw a follower raise NOSPACE after the last write of a fixed 19 MiB).
		threshold := int64(24<<20) * 75 / 100
		n := 0
		for ; n < 90 && largestInUse(ctx, members()) < threshold+(256<<10); n++ {
			put(n, n+1)
		}
		GinkgoWriter.Printf("%d times 256 KiB written; members' database in use and file: %s\n", n, dbSizes(ctx, members()))
		Expect(largestInUse(ctx, members())).To(BeNumerically(">=", threshold), "90 times 256 KiB fill 75 %% of the quota")
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
		put(n, 120) // 30 MiB of values in all, more than the first quota
		Expect(keysUnder(ctx, members(), "/data/")).To(Equal(written), "every key is intact")
		got = get(ctx, ns, "grow", &etcdv1alpha1.EtcdCluster{})
		for _, m := range got.Status.Members {
			Expect(m.Alarms).To(BeEmpty(), "member %s", m.Name)
		}
		Expect(eventCount(ctx, Default, ns, etcdv1alpha1.ReasonNoSpace)).To(BeZero(), "the cluster never reached NOSPACE")
	})

	// Serial: what etcd reports as a peer round trip is its probes' time, and a probe dials
	// a new TLS connection: on two cores shared with the other specs' members, the
	// handshakes alone kept it high enough that the raised timing never came down.
	It("raises the raft timing when latency is added between the members, and lowers it once the latency is gone", Serial, func(ctx SpecContext) {
		Expect(os.Getenv("NFDELAY")).NotTo(BeEmpty(), "NFDELAY names the nfdelay binary (make test-e2e builds it)")
		// An early cluster (early_test.go), with etcd's default timing, Auto from here on:
		// what the first window measures is measured now, with nothing running beside it.
		ns, c := earlyCluster(ctx, "timing")
		c = waitReady(ctx, c)
		auto := c.DeepCopy()
		auto.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
		auto.Spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: time.Minute}
		Expect(k8sClient.Patch(ctx, auto, client.MergeFrom(c))).To(Succeed())
		waitReady(ctx, auto)
		timing := func() etcdv1alpha1.RaftTimingStatus {
			st := get(ctx, ns, "rtt", &etcdv1alpha1.EtcdCluster{}).Status.RaftTiming
			if st == nil {
				return etcdv1alpha1.RaftTimingStatus{}
			}
			return *st
		}
		// The leader changes without latency, over the first 30 s after Ready, counted
		// while the first measurement runs.
		baselineDone := make(chan uint64, 1)
		go func() {
			defer GinkgoRecover()
			baselineDone <- leaderChanges(ctx, ns, "rtt", 30*time.Second)
		}()
		// Without latency the measured round trip is far below etcd's default heartbeat.
		Eventually(timing).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(And(
			HaveField("Reason", "WithinBand"), HaveField("HeartbeatIntervalMillis", int32(100)), HaveField("ElectionTimeoutMillis", int32(1000))))
		var baseline uint64
		select {
		case baseline = <-baselineDone:
		case <-time.After(time.Minute):
			Fail("the leader changes without latency were not counted within a minute")
		}

		// 150 ms each way between every two members, following them as they restart
		// with new addresses.
		lat := followLatency(ctx, ns, "rtt", strconv.Itoa(40+GinkgoParallelProcess()), "150ms")
		DeferCleanup(lat.stop)
		Eventually(timing).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(And(
			HaveField("Reason", "Raised"), HaveField("HeartbeatIntervalMillis", BeNumerically(">=", 200))))
		raised := timing()
		Expect(raised.ElectionTimeoutMillis).To(Equal(10 * raised.HeartbeatIntervalMillis))
		Expect(raised.MeasuredRoundTripMillis).To(HaveValue(BeNumerically(">=", 200)))

		// Rolled out under the latency; then the leader changes with the raised timing are
		// counted over 30 s while the next measurement runs, which finds it within the band.
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "rtt", &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
			g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
			g.Expect(lat.following(ctx)).To(BeTrue(), "the latency follows the restarted members")
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		raisedDone := make(chan uint64, 1)
		go func() {
			defer GinkgoRecover()
			raisedDone <- leaderChanges(ctx, ns, "rtt", 30*time.Second)
		}()
		var settled etcdv1alpha1.RaftTimingStatus
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "rtt", &etcdv1alpha1.EtcdCluster{})
			settled = *got.Status.RaftTiming
			g.Expect(settled.Reason).To(Equal("WithinBand"), "status.raftTiming: %s", settled.Message)
			g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(settled.HeartbeatIntervalMillis).To(BeNumerically(">=", 200))
		for _, p := range clusterPods(ctx, ns, "rtt") {
			Expect(p.Spec.Containers[0].Args).To(ContainElements(
				fmt.Sprintf("--heartbeat-interval=%d", settled.HeartbeatIntervalMillis),
				fmt.Sprintf("--election-timeout=%d", settled.ElectionTimeoutMillis)), "pod %s", p.Name)
		}
		// With the latency, the raised timing holds the leader as well as etcd's defaults
		// did without it, and the measurements inside the band change nothing.
		var underLatency uint64
		select {
		case underLatency = <-raisedDone:
		case <-time.After(time.Minute):
			Fail("the leader changes under latency were not counted within a minute")
		}
		Expect(underLatency).To(BeNumerically("<=", baseline), "leader changes under latency with the raised timing")
		Expect(timing()).To(HaveField("HeartbeatIntervalMillis", settled.HeartbeatIntervalMillis))
		raises := eventCount(ctx, Default, ns, "RaftTimingChanged")
		Expect(raises).To(BeNumerically(">=", 1))

		// Without the latency, the timing comes back down to etcd's defaults, and the members
		// restart with them one at a time, as the raise above was rolled out to every
		// member: the first member restarted runs the defaults. (Waiting for the other two
		// would prove the rollout a second time, and cost the Serial tail of the suite about
		// 40 s.)
		lat.stop()
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "rtt", &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.RaftTiming.HeartbeatIntervalMillis).To(Equal(int32(100)), "status.raftTiming: %s", got.Status.RaftTiming.Message)
			g.Expect(got.Status.RaftTiming.ElectionTimeoutMillis).To(Equal(int32(1000)))
			var lowered []string
			for _, p := range clusterPods(ctx, ns, "rtt") {
				args := p.Spec.Containers[0].Args
				if slices.Contains(args, "--heartbeat-interval=100") && slices.Contains(args, "--election-timeout=1000") && podReady(&p) {
					lowered = append(lowered, p.Name)
				}
			}
			g.Expect(lowered).NotTo(BeEmpty(), "a member restarted with etcd's defaults and Ready")
		}).WithContext(ctx).WithTimeout(6 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(eventCount(ctx, Default, ns, "RaftTimingChanged")).To(BeNumerically(">", raises), "each change is an event")
	})
})

// followMembers returns a function that gives a client of the member pods of cluster name
// as they are at the call: a client of the same addresses while the pods keep them, a new
// one (the old closed) once a member came back at a new address. The last is closed when
// the spec ends.
func followMembers(ctx context.Context, ns, name string) func() *clientv3.Client {
	var cli *clientv3.Client
	var at string
	DeferCleanup(func() {
		if cli != nil {
			_ = cli.Close()
		}
	})
	return func() *clientv3.Client {
		addresses := podEndpoints(ctx, ns, name)
		if key := strings.Join(addresses, ","); cli == nil || key != at {
			next, err := fw.ClientV3(ctx, get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{}), addresses...)
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
			if cli != nil {
				_ = cli.Close()
			}
			cli, at = next, key
		}
		return cli
	}
}

// largestInUse is the largest database size in use among the members cli reaches that
// answer, as etcd reports it; what the operator's storage autoscaling measures.
func largestInUse(ctx context.Context, cli *clientv3.Client) int64 {
	return largestStatus(ctx, cli, func(st *clientv3.StatusResponse) int64 { return st.DbSizeInUse })
}

// largestDB is the largest database size (the file, free pages included) among the members
// cli reaches that answer: what etcd's quota and etcd_mvcc_db_total_size_in_bytes measure.
func largestDB(ctx context.Context, cli *clientv3.Client) int64 {
	return largestStatus(ctx, cli, func(st *clientv3.StatusResponse) int64 { return st.DbSize })
}

// largestStatus is the largest of one size (of) among the members cli reaches that answer; it
// fails when none answers.
func largestStatus(ctx context.Context, cli *clientv3.Client, of func(*clientv3.StatusResponse) int64) int64 {
	var largest int64
	var errs []error
	for _, ep := range cli.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			// A member restarting for a raised quota (one at a time) does not answer for a
			// while: the others say how much data there is.
			errs = append(errs, fmt.Errorf("status of %s: %w", ep, err))
			continue
		}
		largest = max(largest, of(st))
	}
	ExpectWithOffset(2, len(errs)).To(BeNumerically("<", len(cli.Endpoints())), "no member answered: %v", errs)
	return largest
}

// dbSizes lists each member's database size in use and file size, for the log.
func dbSizes(ctx context.Context, cli *clientv3.Client) string {
	var out []string
	for _, ep := range cli.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		if err != nil {
			out = append(out, fmt.Sprintf("%s: %v", ep, err))
			continue
		}
		out = append(out, fmt.Sprintf("%s: %d/%d", ep, st.DbSizeInUse, st.DbSize))
	}
	return strings.Join(out, ", ")
}

// latencyFollower keeps latency between the member pods of a cluster (hack/latency.sh)
// while they restart with new addresses.
type latencyFollower struct {
	ns, name, queue string
	cancel          context.CancelFunc
	done            chan struct{}
	mu              sync.Mutex
	applied         string
}

// followLatency adds delay each way between the member pods of cluster name, and again
// whenever their addresses change, until stop. Only those pods' addresses are touched.
func followLatency(ctx context.Context, ns, name, queue, delay string) *latencyFollower {
	fctx, cancel := context.WithCancel(ctx)
	l := &latencyFollower{ns: ns, name: name, queue: queue, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer GinkgoRecover()
		defer close(l.done)
		for {
			if ips := l.addresses(fctx); len(ips) >= 2 && strings.Join(ips, ",") != l.current() {
				l.latency("remove", l.queue)
				if l.latency(append([]string{"add", l.queue, delay, "15m"}, ips...)...) {
					l.mu.Lock()
					l.applied = strings.Join(ips, ",")
					l.mu.Unlock()
				}
			}
			select {
			case <-fctx.Done():
				return
			case <-time.After(2 * time.Second):
			}
		}
	}()
	return l
}

// following says whether the latency is on the member pods' current addresses.
func (l *latencyFollower) following(ctx context.Context) bool {
	return strings.Join(l.addresses(ctx), ",") == l.current()
}

func (l *latencyFollower) current() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.applied
}

// addresses are the running member pods' addresses, sorted.
func (l *latencyFollower) addresses(ctx context.Context) []string {
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(l.ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": l.name}); err != nil {
		return nil
	}
	var ips []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" {
			ips = append(ips, p.Status.PodIP)
		}
	}
	sort.Strings(ips)
	return ips
}

// latency runs hack/latency.sh; a failure is logged and reported as false.
func (l *latencyFollower) latency(args ...string) bool {
	cmd := exec.Command("hack/latency.sh", args...)
	cmd.Dir = repoRoot()
	out, err := cmd.CombinedOutput()
	if err != nil {
		_, _ = fmt.Fprintf(GinkgoWriter, "hack/latency.sh %v: %v\n%s", args, err, out)
	}
	return err == nil
}

// stop ends the latency and waits until it is removed; it may be called more than once.
func (l *latencyFollower) stop() {
	l.cancel()
	<-l.done
	l.latency("remove", l.queue)
	l.mu.Lock()
	l.applied = ""
	l.mu.Unlock()
}

// leaderChanges is how many elections cluster name held during d: the growth of the raft
// term its members report.
func leaderChanges(ctx context.Context, ns, name string, d time.Duration) uint64 {
	term := func() uint64 {
		cli := etcdClient(ctx, ns, name)
		defer func() { _ = cli.Close() }()
		var highest uint64
		for _, e := range podEndpoints(ctx, ns, name) {
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
