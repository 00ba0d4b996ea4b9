package status_test

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

func autopilotCluster(mutate func(c *etcdv1alpha1.EtcdCluster)) *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", Generation: 1},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}}
	if mutate != nil {
		mutate(c)
	}
	return c
}

func TestRaftTimingStatus(t *testing.T) {
	g := NewWithT(t)
	compute := func(c *etcdv1alpha1.EtcdCluster, decided *etcdv1alpha1.RaftTimingStatus) *etcdv1alpha1.RaftTimingStatus {
		return status.Compute(status.Input{Cluster: c, RaftTiming: decided}).RaftTiming
	}
	g.Expect(compute(autopilotCluster(nil), nil)).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingCustom,
		HeartbeatIntervalMillis: 100, ElectionTimeoutMillis: 1000, Reason: "Custom",
		Message: "etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis"}), "a cluster stored before the profile existed is Custom")
	custom := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd = etcdv1alpha1.EtcdOptions{TimingProfile: etcdv1alpha1.TimingCustom, HeartbeatIntervalMillis: 250, ElectionTimeoutMillis: 2500}
	})
	g.Expect(compute(custom, nil)).To(HaveField("HeartbeatIntervalMillis", int32(250)))
	slower := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingSlower })
	g.Expect(compute(slower, nil)).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingSlower,
		HeartbeatIntervalMillis: 500, ElectionTimeoutMillis: 2500, Reason: "Profile", Message: "the Slower profile"}))

	// Auto: the decision of the pass, the last one when the step did not run, and etcd's
	// defaults before any.
	auto := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto })
	g.Expect(compute(auto, nil)).To(And(HaveField("Profile", etcdv1alpha1.TimingAuto), HaveField("HeartbeatIntervalMillis", int32(100)),
		HaveField("ElectionTimeoutMillis", int32(1000)), HaveField("Reason", "Measuring")))
	decided := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 410, ElectionTimeoutMillis: 4100,
		MeasuredRoundTripMillis: ptr.To(int32(410)), Reason: "Raised", Message: "raised"}
	g.Expect(compute(auto, decided)).To(Equal(decided))
	auto.Status.RaftTiming = decided
	g.Expect(compute(auto, nil)).To(Equal(decided), "kept when the step did not run")
	// Leaving Auto for a profile replaces what Auto decided.
	auto.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingStandard
	g.Expect(compute(auto, nil)).To(HaveField("HeartbeatIntervalMillis", int32(100)))
}

func TestStorageStatusAndCeiling(t *testing.T) {
	g := NewWithT(t)
	c := autopilotCluster(func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}
	})
	seen := status.Input{Cluster: c, Seen: true, Observed: membership.Observed{Size: 1, Now: time.Now()}}
	at := &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse("8Gi")), Reason: status.StorageReasonQuotaCeiling,
		Message: "at the ceiling"}
	seen.Storage = at
	out := status.Compute(seen)
	g.Expect(out.Storage).To(Equal(at))
	degraded := meta.FindStatusCondition(out.Conditions, etcdv1alpha1.ConditionDegraded)
	g.Expect(degraded).NotTo(BeNil())
	g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonStorageCeilingReached))
	g.Expect(degraded.Message).To(Equal("at the ceiling"))

	seen.Storage = &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse("2Gi")), Reason: "BelowThreshold"}
	out = status.Compute(seen)
	g.Expect(meta.FindStatusCondition(out.Conditions, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))

	// Autoscaling off: no status.storage, whatever was there.
	c.Status.Storage = at
	c.Spec.Storage.Autoscaling = nil
	seen.Storage = nil
	g.Expect(status.Compute(seen).Storage).To(BeNil())
}

func TestAutoscaledStorage(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 500_000_000, time.UTC)
	earlier := &metav1.Time{Time: now.Add(-time.Hour).Truncate(time.Second)}
	last := &etcdv1alpha1.StorageStatus{LastChangeTime: earlier}
	p := autoscale.Policy{QuotaBytes: 2 << 30}
	size := resource.MustParse("4Gi")

	none := status.AutoscaledStorage(autoscale.Decision{Kind: autoscale.None, Reason: autoscale.ReasonBelowThreshold, Message: "fine"}, p, &size, last, now)
	g.Expect(none).To(Equal(&etcdv1alpha1.StorageStatus{QuotaBackendBytes: resource.NewQuantity(2<<30, resource.BinarySI),
		Size: &size, Reason: "BelowThreshold", Message: "fine", LastChangeTime: earlier}))

	raise := status.AutoscaledStorage(autoscale.Decision{Kind: autoscale.RaiseQuota, To: 3 << 30, Reason: autoscale.ReasonNearQuota}, p, &size, last, now)
	g.Expect(raise.QuotaBackendBytes.Value()).To(Equal(int64(3 << 30)))
	g.Expect(raise.Size.String()).To(Equal("4Gi"))
	g.Expect(raise.LastChangeTime.Time).To(Equal(now.Truncate(time.Second)))

	grow := status.AutoscaledStorage(autoscale.Decision{Kind: autoscale.GrowVolume, To: 8 << 30, Reason: autoscale.ReasonNearQuota}, p, &size, nil, now)
	g.Expect(grow.QuotaBackendBytes.Value()).To(Equal(int64(2 << 30)))
	g.Expect(grow.Size.String()).To(Equal("8Gi"))
	g.Expect(grow.LastChangeTime.Time).To(Equal(now.Truncate(time.Second)))
	g.Expect(size.String()).To(Equal("4Gi"), "the spec's size is not changed")

	ceiling := status.AutoscaledStorage(autoscale.Decision{Kind: autoscale.AtCeiling, Reason: autoscale.ReasonQuotaCeiling, Message: "at 8 GiB"}, p, nil, nil, now)
	g.Expect(ceiling.Size).To(BeNil(), "ephemeral storage has no size")
	g.Expect(ceiling.LastChangeTime).To(BeNil())
	g.Expect(ceiling.Reason).To(Equal(status.StorageReasonQuotaCeiling))
}

func TestAutopilotTransitions(t *testing.T) {
	g := NewWithT(t)
	timing := func(hb int32) *etcdv1alpha1.RaftTimingStatus {
		return &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: hb, ElectionTimeoutMillis: 10 * hb, Message: "why"}
	}
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)}, etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(410)})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "RaftTimingChanged", Action: "Tune",
			Message: "Raft timing set to heartbeat 410 ms, election timeout 4100 ms (was 100 ms and 1000 ms): why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)}, etcdv1alpha1.EtcdClusterStatus{RaftTiming: timing(100)})).To(BeEmpty())

	storage := func(quota, size string) *etcdv1alpha1.StorageStatus {
		return &etcdv1alpha1.StorageStatus{QuotaBackendBytes: ptr.To(resource.MustParse(quota)), Size: ptr.To(resource.MustParse(size)), Message: "why"}
	}
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{Storage: storage("24Mi", "4Gi")}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("64Mi", "4Gi")})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "QuotaRaised", Action: "Autoscale", Message: "Quota raised from 24Mi to 64Mi: why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "4Gi")}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "6Gi")})).To(ConsistOf(
		status.Event{Type: "Normal", Reason: "VolumesGrowing", Action: "Autoscale", Message: "Member volumes growing from 4Gi to 6Gi: why"}))
	g.Expect(status.Transitions(etcdv1alpha1.EtcdClusterStatus{}, etcdv1alpha1.EtcdClusterStatus{Storage: storage("2Gi", "4Gi")})).To(BeEmpty(), "turning it on is no news")
}

func TestAutoRaftTiming(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 30, 12, 0, 0, 700_000_000, time.UTC)
	changedAt := &metav1.Time{Time: now.Add(-time.Hour).Truncate(time.Second)}
	last := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 550, ElectionTimeoutMillis: 5500,
		MeasuredRoundTripMillis: ptr.To(int32(547)), LastChangeTime: changedAt, Reason: "WithinBand", Message: "over the last 10m (288 probes)"}
	within := func(p99 time.Duration, message string) tuning.Decision {
		return tuning.Decision{Target: tuning.Timing{HeartbeatMillis: 550, ElectionMillis: 5500}, Reason: tuning.ReasonWithinBand,
			MeasuredP99: p99, Message: message}
	}
	p99 := 1638400 * time.Microsecond / 3 // 546.13 ms: 547
	fresh := func(measured *int32, reason, message string) *etcdv1alpha1.RaftTimingStatus {
		return &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 550, ElectionTimeoutMillis: 5500,
			MeasuredRoundTripMillis: measured, LastChangeTime: changedAt, Reason: reason, Message: message}
	}

	// The same decision from another read: the status stays as it is.
	g.Expect(status.AutoRaftTiming(within(p99, "over the last 10m10s (291 probes)"), last, now)).To(BeIdenticalTo(last))
	// The p99 one bucket lower or higher (noise across a bound): still the same.
	g.Expect(status.AutoRaftTiming(within(p99/2, "lower"), last, now)).To(BeIdenticalTo(last))
	g.Expect(status.AutoRaftTiming(within(2*p99, "higher"), last, now)).To(BeIdenticalTo(last))
	// Two buckets away: reported afresh, the last change's time kept.
	g.Expect(status.AutoRaftTiming(within(p99/4, "much lower"), last, now)).To(Equal(fresh(ptr.To(int32(137)), "WithinBand", "much lower")))
	g.Expect(status.AutoRaftTiming(within(4*p99, "much higher"), last, now)).To(Equal(fresh(ptr.To(int32(2185)), "WithinBand", "much higher")))
	// No measurement where there was one, or another reason: reported afresh.
	g.Expect(status.AutoRaftTiming(within(0, "none"), last, now)).To(Equal(fresh(nil, "WithinBand", "none")))
	notSustained := within(p99, "a passing rise")
	notSustained.Reason = tuning.ReasonNotSustained
	g.Expect(status.AutoRaftTiming(notSustained, last, now)).To(Equal(fresh(ptr.To(int32(547)), "NotSustained", "a passing rise")))
	// A change: the new timing, stamped with now in whole seconds.
	raised := tuning.Decision{Target: tuning.Timing{HeartbeatMillis: 1100, ElectionMillis: 11000}, Changed: true,
		Reason: tuning.ReasonRaised, MeasuredP99: 2 * p99, Message: "raising"}
	g.Expect(status.AutoRaftTiming(raised, last, now)).To(Equal(&etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto,
		HeartbeatIntervalMillis: 1100, ElectionTimeoutMillis: 11000, MeasuredRoundTripMillis: ptr.To(int32(1093)),
		LastChangeTime: &metav1.Time{Time: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}, Reason: "Raised", Message: "raising"}))
	// The first decision under Auto, after another profile or none: no last change.
	for _, before := range []*etcdv1alpha1.RaftTimingStatus{nil, {Profile: etcdv1alpha1.TimingSlower, HeartbeatIntervalMillis: 550,
		ElectionTimeoutMillis: 5500, LastChangeTime: changedAt, Reason: "WithinBand"}} {
		want := fresh(ptr.To(int32(547)), "WithinBand", "first")
		want.LastChangeTime = nil
		g.Expect(status.AutoRaftTiming(within(p99, "first"), before, now)).To(Equal(want))
	}
}

// etcdBounds are the buckets of etcd's etcd_network_peer_round_trip_time_seconds:
// ExponentialBuckets(0.0001, 2, 16), then +Inf.
var etcdBounds = func() []float64 {
	var out []float64
	for b := 0.0001; len(out) < 16; b *= 2 {
		out = append(out, b)
	}
	return append(out, math.Inf(1))
}()

// rttMember is one member's peer round-trip histogram, which grows with what its probers
// record.
type rttMember struct{ h tuning.Histogram }

func (m *rttMember) record(rtts ...time.Duration) tuning.Histogram {
	if m.h.Counts == nil {
		m.h = tuning.Histogram{Bounds: etcdBounds, Counts: make([]uint64, len(etcdBounds))}
	}
	for _, d := range rtts {
		for i, b := range etcdBounds {
			if d.Seconds() <= b {
				m.h.Counts[i]++
			}
		}
		m.h.Sum += d.Seconds()
	}
	return tuning.Histogram{Bounds: etcdBounds, Counts: append([]uint64(nil), m.h.Counts...), Sum: m.h.Sum}
}

// autoPasses runs the raft timing step of passes Auto clusters get, as the controller does
// (controllers/autopilot.go tune): three TLS members read every every, each having
// recorded four probes since the last read (two probers to each of two peers) of the
// durations probe gives; a decision on the window after each read, its status from the
// last status, and the window reset after a change. It returns the decisions and the
// statuses, one of each per pass.
func autoPasses(passes int, window, every time.Duration, last *etcdv1alpha1.RaftTimingStatus, probe func() time.Duration) ([]tuning.Decision, []*etcdv1alpha1.RaftTimingStatus) {
	t0 := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	w, since := tuning.NewWindow(window), t0
	var members [3]rttMember
	var decisions []tuning.Decision
	var statuses []*etcdv1alpha1.RaftTimingStatus
	for pass := range passes {
		now := t0.Add(time.Duration(pass) * every)
		for i := range members {
			w.Add(string(rune('a'+i)), now, members[i].record(probe(), probe(), probe(), probe()))
		}
		current := tuning.Standard
		if last != nil {
			current = tuning.Timing{HeartbeatMillis: last.HeartbeatIntervalMillis, ElectionMillis: last.ElectionTimeoutMillis}
		}
		d := tuning.Plan(tuning.Input{Current: current, Observed: w.Observed(now), Window: window, SinceChange: now.Sub(since),
			ProbeRoundTrips: tuning.ProbeRoundTripsTLS})
		last = status.AutoRaftTiming(d, last, now)
		if d.Changed {
			w.Reset()
			since = now
		}
		decisions = append(decisions, d)
		statuses = append(statuses, last)
	}
	return decisions, statuses
}

// A steady network whose probes jitter, and now and then spike into the next bucket, so
// that the p99 wavers across a bucket's bound from one read to the next: once the window
// is measured, status.raftTiming is the same after every pass, and so the operator writes
// nothing.
func TestAutoRaftTimingIsTheSameOverASteadyNoisyNetwork(t *testing.T) {
	withinBand := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, HeartbeatIntervalMillis: 550, ElectionTimeoutMillis: 5500,
		LastChangeTime: &metav1.Time{Time: time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC)}, Reason: "WithinBand", Message: "raised yesterday"}
	for _, tc := range []struct {
		name          string
		window, every time.Duration
		last          *etcdv1alpha1.RaftTimingStatus
		// probes are mostly base, give or take a quarter, and one in spikeOneIn is spike.
		base, spike time.Duration
		spikeOneIn  int
	}{
		// 1m window, read every 10 s: the p99 is the largest of about 80 probes, 12.8 ms
		// or, with a spike in the window, 25.6 ms (round trips of 5 and 9 ms).
		{name: "LAN, Standard", window: time.Minute, every: 10 * time.Second, base: 7 * time.Millisecond, spike: 20 * time.Millisecond, spikeOneIn: 150},
		// 10m window, read every 25 s, a timing raised for a distant network: the p99
		// wavers between 819.2 ms and 1.6384 s (round trips of 274 and 547 ms).
		{name: "WAN, raised", window: 10 * time.Minute, every: 25 * time.Second, last: withinBand,
			base: 600 * time.Millisecond, spike: time.Second, spikeOneIn: 100},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := rand.New(rand.NewPCG(1, 2))
			probe := func() time.Duration {
				if r.IntN(tc.spikeOneIn) == 0 {
					return tc.spike
				}
				return tc.base*3/4 + time.Duration(r.Int64N(int64(tc.base/2)))
			}
			passes := int(4 * time.Hour / tc.every)
			decisions, statuses := autoPasses(passes, tc.window, tc.every, tc.last, probe)
			measured := int(tc.window/tc.every) + 2 // the window measured, and a pass to decide on it
			steady := statuses[measured]
			g.Expect(steady.Reason).To(Equal(string(tuning.ReasonWithinBand)), steady.Message)
			p99s := map[time.Duration]int{}
			for i := measured; i < passes; i++ {
				g.Expect(decisions[i].Changed).To(BeFalse(), "pass %d: %s", i, decisions[i].Message)
				g.Expect(statuses[i]).To(Equal(steady), "pass %d: status.raftTiming changed with the decision %q", i, decisions[i].Message)
				p99s[decisions[i].MeasuredP99]++
			}
			g.Expect(p99s).To(HaveLen(2), "the p99 wavers across one bucket's bound: %v", p99s)
		})
	}
}

// A timing change this operator made is repeated until the status a pass reads shows it,
// then forgotten: a pass that reads the status from before the change does not decide
// afresh from a window the change reset.
func TestRaftTimingUnseen(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	at := func(t time.Time) *etcdv1alpha1.RaftTimingStatus {
		return &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, LastChangeTime: &metav1.Time{Time: t}}
	}
	decided := at(t0)
	g.Expect(status.RaftTimingUnseen(nil, at(t0))).To(BeFalse(), "nothing decided: nothing to repeat")
	g.Expect(status.RaftTimingUnseen(decided, nil)).To(BeTrue(), "no status yet")
	g.Expect(status.RaftTimingUnseen(decided, &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto})).To(BeTrue(), "a status that never changed")
	g.Expect(status.RaftTimingUnseen(decided, at(t0.Add(-time.Hour)))).To(BeTrue(), "the status from before the change")
	g.Expect(status.RaftTimingUnseen(decided, at(t0))).To(BeFalse(), "the status shows it")
	g.Expect(status.RaftTimingUnseen(decided, at(t0.Add(time.Hour)))).To(BeFalse(), "a later change shows it too")
}

func TestSinceRaftTimingChange(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	started := now.Add(-10 * time.Minute)
	g.Expect(status.SinceRaftTimingChange(nil, started, now)).To(Equal(10*time.Minute), "since the window started")
	changed := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, LastChangeTime: &metav1.Time{Time: now.Add(-3 * time.Minute)}}
	g.Expect(status.SinceRaftTimingChange(changed, started, now)).To(Equal(3*time.Minute), "a later change counts")
	changed.Profile = etcdv1alpha1.TimingStandard
	g.Expect(status.SinceRaftTimingChange(changed, started, now)).To(Equal(10*time.Minute), "another profile's change is not Auto's")
	old := &etcdv1alpha1.RaftTimingStatus{Profile: etcdv1alpha1.TimingAuto, LastChangeTime: &metav1.Time{Time: now.Add(-time.Hour)}}
	g.Expect(status.SinceRaftTimingChange(old, started, now)).To(Equal(10*time.Minute), "the window is the later")
}
