package controllers_test

import (
	"context"
	"fmt"
	"math"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

// The self-tuning of autopilot.go against the fake etcd: raft timing profiles and Auto
// timing from the round trips the members report, and storage autoscaling.

// roundTrips stands in for the members' metrics ports: each read of a member of a
// namespace adds observations of that namespace's round trip to the member's histogram,
// as etcd's prober does every 30 s.
var roundTrips = &fakeRoundTrips{rtt: map[string]float64{}, hist: map[string]tuning.Histogram{}}

type fakeRoundTrips struct {
	mu   sync.Mutex
	rtt  map[string]float64 // seconds, by namespace
	hist map[string]tuning.Histogram
	// reads counts the reads by namespace.
	reads map[string]int
}

func (f *fakeRoundTrips) set(ns string, seconds float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rtt[ns] = seconds
}

// readsOf is how many reads of members of ns were made.
func (f *fakeRoundTrips) readsOf(ns string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads[ns]
}

// bounds are etcd's buckets of etcd_network_peer_round_trip_time_seconds.
var bounds = func() []float64 {
	var out []float64
	for b := 0.0001; len(out) < 16; b *= 2 {
		out = append(out, b)
	}
	return out
}()

func (f *fakeRoundTrips) read(_ context.Context, pod *corev1.Pod) (tuning.Histogram, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rtt, ok := f.rtt[pod.Namespace]
	if !ok {
		return tuning.Histogram{}, fmt.Errorf("no metrics for %s", pod.Namespace)
	}
	key := pod.Namespace + "/" + pod.Name
	h := f.hist[key]
	if h.Counts == nil {
		h = tuning.Histogram{Bounds: append(append([]float64{}, bounds...), math.Inf(1)), Counts: make([]uint64, len(bounds)+1)}
	}
	if f.reads == nil {
		f.reads = map[string]int{}
	}
	f.reads[pod.Namespace]++
	// Two peers, two observations each.
	for i, b := range h.Bounds {
		if rtt <= b {
			h.Counts[i] += 4
		}
	}
	h.Sum += 4 * rtt
	f.hist[key] = tuning.Histogram{Bounds: h.Bounds, Counts: append([]uint64{}, h.Counts...), Sum: h.Sum}
	return h, nil
}

// keepSizes makes every member of cluster name report its database at size bytes, all in
// use, with the leader the fake has now: called in a loop while a rollout moves the
// leadership (setSizes pins member 1 as the leader).
func keepSizes(f *fake.Client, ns, name string, size int64, errs ...string) {
	for i := range uint64(3) {
		f.SetStatus(memberURL(ns, name, i, 2379), etcd.MemberStatus{MemberID: i + 1, LeaderID: f.Leader(), Version: "3.7.3",
			DBSize: size, DBSizeInUse: size, Revision: 1000, Errors: errs})
	}
}

// NOSPACE with data that does not fit the quota, and storage autoscaling on: the quota is
// raised and rolled out, and the alarm disarmed under the new quota, with no human.
func TestStorageAutoscalingRaisesTheQuotaOfDataThatDoesNotFit(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "nospace", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("64Mi"))
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}
	})
	f.ResetCalls()
	// 62 MiB of data: above 90 % of 64Mi even once compacted and defragmented.
	setSizes(g, f, ns, "nospace", 62*mi, 62*mi, "memberID:2 alarm:NOSPACE")
	g.Eventually(func(g Gomega) {
		keepSizes(f, ns, "nospace", 62*mi, "memberID:2 alarm:NOSPACE")
		podsReady(g, ns)
		got := get(g, ns, "nospace", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Storage).NotTo(BeNil())
		g.Expect(got.Status.Storage.QuotaBackendBytes.Value()).To(BeNumerically(">=", 96*mi))
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		g.Expect(calls(f, fake.AlarmDisarm)).To(ContainElement("AlarmDisarm 2 NOSPACE"), "disarmed under the raised quota")
	}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElements("QuotaRaised", "NoSpaceDisarmed"))
}

func TestATimingProfileSetsTheMembersFlags(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	readyCluster(g, ns, "slow", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingSlower })
	got := get(g, ns, "slow", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.RaftTiming).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingSlower,
		HeartbeatIntervalMillis: 500, ElectionTimeoutMillis: 2500, Reason: "Profile", Message: "the Slower profile"}))
	for _, m := range []string{"slow-0", "slow-1", "slow-2"} {
		args := get(g, ns, m, &corev1.Pod{}).Spec.Containers[0].Args
		g.Expect(args).To(ContainElements("--heartbeat-interval=500", "--election-timeout=2500"), "pod %s", m)
	}
}

// autoCluster makes a Ready cluster name in ns with Auto timing over a 1m window, whose
// members' probes take probe seconds.
func autoCluster(g Gomega, ns, name string, probe float64) {
	roundTrips.set(ns, probe)
	readyCluster(g, ns, name, func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
		c.Spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: time.Minute}
	})
}

// Auto timing: a round trip of 0.4 s raises the heartbeat to cover it and the election
// timeout to ten times that, rolled out to every member; the status shows the measurement.
// The raise is 550 ms: etcd's buckets double, and the decision takes their upper bounds.
func TestAutoTimingRaisesTheTimingToTheMeasuredRoundTrip(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	// The probes take 1.2 s from the start, three round trips of 0.4 s over TLS (each in
	// the bucket up to 1.6384 s: 0.546 s a round trip): a raise needs a whole window (1m).
	autoCluster(g, ns, "auto", 1.2)
	got := get(g, ns, "auto", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.RaftTiming.HeartbeatIntervalMillis).To(Equal(int32(100)), "etcd's defaults until measured")
	g.Expect(got.Status.RaftTiming.ElectionTimeoutMillis).To(Equal(int32(1000)))
	g.Expect(got.Status.RaftTiming.Reason).To(Equal(string(tuning.ReasonMeasuring)))
	before := podUIDs(g, ns)
	// Raised: the reason stays while the rollout waits for the first restarted pod, which
	// only this test makes Ready.
	var st *etcdv1alpha1.RaftTimingStatus
	g.Eventually(func(g Gomega) {
		st = get(g, ns, "auto", &etcdv1alpha1.EtcdCluster{}).Status.RaftTiming
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Reason).To(Equal(string(tuning.ReasonRaised)))
	}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
	g.Expect(st.HeartbeatIntervalMillis).To(BeNumerically(">=", 400))
	g.Expect(st.ElectionTimeoutMillis).To(Equal(10 * st.HeartbeatIntervalMillis))
	g.Expect(st.MeasuredRoundTripMillis).To(HaveValue(BeNumerically(">=", 400)))
	g.Expect(st.LastChangeTime).NotTo(BeNil())
	g.Expect(st.Message).To(ContainSubstring("raising heartbeat from 100ms to %dms", st.HeartbeatIntervalMillis))
	g.Eventually(func(g Gomega) {
		podsReady(g, ns)
		got := get(g, ns, "auto", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.RaftTiming.HeartbeatIntervalMillis).To(Equal(st.HeartbeatIntervalMillis), "no second change")
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		for _, m := range []string{"auto-0", "auto-1", "auto-2"} {
			pod := get(g, ns, m, &corev1.Pod{})
			g.Expect(pod.UID).NotTo(Equal(before[m]), "pod %s restarted", m)
			g.Expect(pod.Spec.Containers[0].Args).To(ContainElements(
				fmt.Sprintf("--heartbeat-interval=%d", st.HeartbeatIntervalMillis),
				fmt.Sprintf("--election-timeout=%d", st.ElectionTimeoutMillis)), "pod %s", m)
		}
	}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement("RaftTimingChanged"))
}

// Auto timing at steady state costs no write: once a window is measured, the passes keep
// reading the round trips every 10 s, and when the p99 moves up a bucket (noise: the same
// timing, the same reason) the EtcdCluster stays as it is.
func TestAutoTimingWritesNothingAtSteadyState(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	// Probes of 20 ms: etcd's bucket up to 25.6 ms, a round trip of 9 ms over TLS.
	autoCluster(g, ns, "steady", 0.02)
	// More than a window read (eight reads of each member, one every 10 s) and decided on.
	g.Eventually(func(g Gomega) {
		g.Expect(roundTrips.readsOf(ns)).To(BeNumerically(">=", 3*8))
		st := get(g, ns, "steady", &etcdv1alpha1.EtcdCluster{}).Status.RaftTiming
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Reason).To(Equal(string(tuning.ReasonWithinBand)), st.Message)
		g.Expect(st.MeasuredRoundTripMillis).To(HaveValue(Equal(int32(9))))
	}).WithTimeout(4 * timeout).WithPolling(time.Second).Should(Succeed())
	got := get(g, ns, "steady", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.RaftTiming.HeartbeatIntervalMillis).To(Equal(int32(100)))
	// Probes of 40 ms from now on: the p99 moves to the next bucket (51.2 ms, 18 ms a round
	// trip) at the next read, and still asks for etcd's defaults.
	roundTrips.set(ns, 0.04)
	reads := roundTrips.readsOf(ns)
	g.Consistently(func(g Gomega) {
		now := get(g, ns, "steady", &etcdv1alpha1.EtcdCluster{})
		g.Expect(now.ResourceVersion).To(Equal(got.ResourceVersion), "written at steady state: status.raftTiming %+v, was %+v",
			now.Status.RaftTiming, got.Status.RaftTiming)
	}).WithTimeout(20 * time.Second).WithPolling(time.Second).Should(Succeed())
	// A read of each member at least (a pass reads all three, one every 10 s): the passes
	// read the higher bucket meanwhile, and wrote nothing.
	g.Expect(roundTrips.readsOf(ns) - reads).To(BeNumerically(">=", 3))
}

// Storage autoscaling: a database past 75 % of the quota gets a larger quota, rolled out
// to every member; at the ceiling, the cluster says so and nothing restarts.
func TestStorageAutoscalingRaisesTheQuotaBeforeItIsReached(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "grow", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("100Mi"))
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
			MaxQuotaBackendBytes: ptr.To(resource.MustParse("1Gi"))}
	})
	setSizes(g, f, ns, "grow", 40*mi, 40*mi)
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{}).Status.Storage
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.QuotaBackendBytes.String()).To(Equal("100Mi"))
		g.Expect(st.Size.String()).To(Equal("4Gi"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	before := podUIDs(g, ns)

	setSizes(g, f, ns, "grow", 80*mi, 80*mi)
	var quota int64
	g.Eventually(func(g Gomega) {
		keepSizes(f, ns, "grow", 80*mi)
		podsReady(g, ns)
		got := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Storage).NotTo(BeNil())
		quota = got.Status.Storage.QuotaBackendBytes.Value()
		g.Expect(quota).To(BeNumerically(">=", 150*mi))
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		for _, m := range []string{"grow-0", "grow-1", "grow-2"} {
			pod := get(g, ns, m, &corev1.Pod{})
			g.Expect(pod.UID).NotTo(Equal(before[m]), "pod %s restarted", m)
			g.Expect(pod.Spec.Containers[0].Args).To(ContainElement(fmt.Sprintf("--quota-backend-bytes=%d", quota)))
		}
	}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement("QuotaRaised"))
	g.Expect(f.MembershipChanges()).To(BeEmpty(), "a quota rollout keeps every member's identity")
}

func TestStorageAutoscalingAtItsCeilingSaysSoAndChangesNothing(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "full", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("100Mi"))
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
			MaxQuotaBackendBytes: ptr.To(resource.MustParse("100Mi"))}
	})
	before := podUIDs(g, ns)
	setSizes(g, f, ns, "full", 90*mi, 90*mi)
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "full", &etcdv1alpha1.EtcdCluster{})
		degraded := condition(got, etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonStorageCeilingReached))
		g.Expect(degraded.Message).To(ContainSubstring("maxQuotaBackendBytes"))
		g.Expect(got.Status.Storage.QuotaBackendBytes.String()).To(Equal("100Mi"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(podUIDs(g, ns)).To(Equal(before), "nothing restarted")
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement(etcdv1alpha1.ReasonStorageCeilingReached))
}

// When the next quota does not fit the volumes and their class expands, the claims grow
// first, one at a time, and the quota is raised once they have.
func TestStorageAutoscalingGrowsTheClaimsBeforeAQuotaThatWouldNotFit(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	storageClass(g, "expandable-"+ns, true)
	f := readyCluster(g, ns, "vol", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Storage.StorageClassName = ptr.To("expandable-" + ns)
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("1536Mi"))
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
			MaxSize: ptr.To(resource.MustParse("8Gi"))}
	})
	bindClaims(g, ns)
	// 1200Mi of 1536Mi: due; half as much again (2304Mi) needs twice that plus 512Mi
	// within 90 % of the volume: 6Gi, not 4Gi.
	setSizes(g, f, ns, "vol", 1200*mi, 1200*mi)
	g.Eventually(func(g Gomega) {
		st := get(g, ns, "vol", &etcdv1alpha1.EtcdCluster{}).Status.Storage
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Size.String()).To(Equal("6Gi"))
		g.Expect(st.QuotaBackendBytes.String()).To(Equal("1536Mi"), "the quota waits for the volumes")
		g.Expect(requested(g, ns)).To(HaveKeyWithValue("vol-0-data", "6Gi"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// The storage provider grows each volume in turn; then the quota is raised.
	g.Eventually(func(g Gomega) {
		provideRequested(g, ns)
		keepSizes(f, ns, "vol", 1200*mi)
		podsReady(g, ns)
		g.Expect(requested(g, ns)).To(Equal(map[string]string{"vol-0-data": "6Gi", "vol-1-data": "6Gi", "vol-2-data": "6Gi"}))
		got := get(g, ns, "vol", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Storage.QuotaBackendBytes.Value()).To(BeNumerically(">=", 2304*mi))
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(3 * timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElements("VolumesGrowing", "QuotaRaised"))
}
