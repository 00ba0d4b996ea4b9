package controllers

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/autoscale"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
)

// scrapeEvery is how often, at most, the operator reads the peer round trips of a cluster
// in Auto timing: a sixth of the window, so that each of the window's parts
// (tuning.Parts) spans two reads or more, and at most every 25 s, since etcd records a
// round trip per prober every 30 s and reading more often finds little new.
func scrapeEvery(window time.Duration) time.Duration {
	return min(max(window/6, 5*time.Second), 25*time.Second)
}

// autopilotState is what passes remember of the clusters in Auto timing or with storage
// autoscaling: the round trips and the database sizes read over the window. It lives in
// memory only; after an operator restart a window is measured afresh, which delays a
// change but never makes a wrong one.
type autopilotState struct {
	mu       sync.Mutex
	clusters map[types.NamespacedName]*clusterAutopilot
}

type clusterAutopilot struct {
	// window holds the round trips read; since is when it started (or the timing last
	// changed), lastScrape when it was last read.
	window     *tuning.Window
	since      time.Time
	lastScrape time.Time
	// decided is the timing change this operator decided last, until a pass reads it back
	// from the status: a pass that reads an older status (the cache has not caught up with
	// the patch) repeats it instead of deciding afresh on a window reset by the change.
	decided *etcdv1alpha1.RaftTimingStatus
	sizes   *autoscale.History
}

func (s *autopilotState) get(key types.NamespacedName) *clusterAutopilot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.clusters == nil {
		s.clusters = map[types.NamespacedName]*clusterAutopilot{}
	}
	ca := s.clusters[key]
	if ca == nil {
		ca = &clusterAutopilot{sizes: autoscale.NewHistory()}
		s.clusters[key] = ca
	}
	return ca
}

// forgetTiming drops the round trips and the decision remembered for a cluster that left
// Auto timing, so that coming back to it starts afresh.
func (s *autopilotState) forgetTiming(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if ca := s.clusters[key]; ca != nil {
		ca.window, ca.decided = nil, nil
	}
}

// Forget drops what is remembered about a deleted cluster.
func (s *autopilotState) Forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clusters, key)
}

// PeerRoundTripReader reads the peer round-trip histogram of the member running in pod,
// from its metrics port.
type PeerRoundTripReader func(ctx context.Context, pod *corev1.Pod) (tuning.Histogram, error)

// metricsHTTP reads the member metrics; the port is plain HTTP and carries no keys or
// values (resources.EtcdArgs).
var metricsHTTP = &http.Client{Timeout: 5 * time.Second}

// readPeerRoundTrip is the PeerRoundTripReader of a real cluster.
func readPeerRoundTrip(ctx context.Context, pod *corev1.Pod) (tuning.Histogram, error) {
	if pod.Status.PodIP == "" {
		return tuning.Histogram{}, fmt.Errorf("pod %s has no address yet", pod.Name)
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(cluster.MetricsPort)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return tuning.Histogram{}, err
	}
	resp, err := metricsHTTP.Do(req)
	if err != nil {
		return tuning.Histogram{}, err
	}
	defer func() { _ = resp.Body.Close() }()
	if resp.StatusCode != http.StatusOK {
		return tuning.Histogram{}, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return tuning.ParsePeerRoundTrip(resp.Body)
}

// tune is the raft timing step of a pass with no membership change to make, for a cluster
// in etcd.timingProfile Auto: it reads every healthy member's peer round trips (at most
// every scrapeEvery), and decides the timing from the window (internal/tuning). The
// decision goes to status.raftTiming (status.AutoRaftTiming, which changes it only with the
// decision, so that a steady cluster costs no write), from which the member pods are built
// (clusterspec.Effective): a change is rolled out by the next passes, one member at a time.
//
// It asks for the next pass when the next read is due: Auto clusters are passed more often
// than steady ones.
func (r *EtcdClusterReconciler) tune(ctx context.Context, p *clusterPass) *etcdv1alpha1.RaftTimingStatus {
	c, obs := p.cluster, p.obs
	if c.Spec.Etcd.TimingProfile != etcdv1alpha1.TimingAuto {
		r.autopilot.forgetTiming(client.ObjectKeyFromObject(c))
		return nil
	}
	now := r.now()
	window := tuning.DefaultWindow
	if w := c.Spec.Etcd.AutoTimingWindow; w != nil {
		window = w.Duration
	}
	st := r.autopilot.get(client.ObjectKeyFromObject(c))
	if st.window == nil || st.window.Length() != window {
		st.window, st.since = tuning.NewWindow(window), now
	}
	if now.Sub(st.lastScrape) >= scrapeEvery(window) {
		st.lastScrape = now
		r.readRoundTrips(ctx, obs, st.window, now)
	}
	p.after(scrapeEvery(window))
	last := c.Status.RaftTiming
	if status.RaftTimingUnseen(st.decided, last) {
		return st.decided
	}
	st.decided = nil
	current, _ := clusterspec.Timing(c)
	sinceChange := status.SinceRaftTimingChange(last, st.since, now)
	probe := tuning.ProbeRoundTripsPlain
	if cluster.For(c).TLS {
		probe = tuning.ProbeRoundTripsTLS
	}
	d := tuning.Plan(tuning.Input{Current: current, Observed: st.window.Observed(now), Window: window,
		SinceChange: sinceChange, ProbeRoundTrips: probe})
	out := status.AutoRaftTiming(d, last, now)
	if d.Changed {
		st.decided = out
		// The members restart with the new timing: their counters start again, and the
		// round trips measured under the old timing say nothing of the new.
		st.window.Reset()
		st.since = now
		log.FromContext(ctx).Info("Raft timing changed", "heartbeat", d.Target.HeartbeatMillis, "election", d.Target.ElectionMillis, "reason", d.Reason)
	}
	return out
}

// readRoundTrips adds to window what every healthy member reports of its peer round
// trips. A member that cannot be read is left out (its round trips are missing from the
// window).
func (r *EtcdClusterReconciler) readRoundTrips(ctx context.Context, obs *observation, window *tuning.Window, now time.Time) {
	read := r.PeerRoundTrip
	if read == nil {
		read = readPeerRoundTrip
	}
	for _, m := range obs.membership.Members {
		pod := obs.pods[m.Name]
		if !m.Healthy || pod == nil {
			continue
		}
		h, err := read(ctx, pod)
		if err != nil {
			log.FromContext(ctx).Info("Could not read the peer round trips", "member", m.Name, "error", err.Error())
			continue
		}
		window.Add(m.Name, now, h)
	}
}

// autoscaleStorage is the storage autoscaling step of a pass with no membership change to
// make (storage.autoscaling Auto): it adds the largest member's database size to the
// cluster's history (autoscale.Used: the file, or the size in use of a member maintenance
// is defragmenting, storageMembers) and plans (internal/autoscale) whether to raise the
// quota or grow the volumes. The decision goes to status.storage, from which the member
// pods and claims are built (clusterspec.Effective): the next passes roll the quota out one
// member at a time, or expand the claims one at a time. The StorageClass is read only when
// the volumes would have to grow.
func (r *EtcdClusterReconciler) autoscaleStorage(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obs *observation) *etcdv1alpha1.StorageStatus {
	if !clusterspec.AutoscalingEnabled(c) {
		return nil
	}
	now := r.now()
	spec := clusterspec.Effective(c)
	members := storageMembers(c, obs, now)
	used := autoscale.Used(members...)
	st := r.autopilot.get(client.ObjectKeyFromObject(c))
	if len(obs.details) > 0 {
		st.sizes.Add(autoscale.Sample{At: now, Bytes: used})
	}
	p := autoscale.Policy{
		QuotaBytes:    spec.Etcd.QuotaBackendBytes.Value(),
		MaxQuotaBytes: clusterspec.MaxQuotaBytes(c),
	}
	if !spec.Storage.Ephemeral {
		p.VolumeBytes = claimCapacity(obs, spec.Storage.Size.Value())
		p.MaxVolumeBytes = max(p.VolumeBytes, spec.Storage.Size.Value())
		if m := c.Spec.Storage.Autoscaling.MaxSize; m != nil {
			p.MaxVolumeBytes = max(p.MaxVolumeBytes, m.Value())
		}
	}
	trend, trendOK := autoscale.Trend(st.sizes.Samples())
	d := autoscale.PlanAsking(p, members, trend, trendOK, func() bool { return r.storageClassExpands(ctx, obs) })
	var size *resource.Quantity
	if !spec.Storage.Ephemeral {
		size = spec.Storage.Size
	}
	out := status.AutoscaledStorage(d, p, size, c.Status.Storage, now)
	if d.Kind == autoscale.RaiseQuota || d.Kind == autoscale.GrowVolume {
		log.FromContext(ctx).Info("Storage autoscaling", "decision", d.Kind, "to", d.To, "reason", d.Reason)
	}
	return out
}

// claimCapacity is the smallest capacity the members' claims report, or fallback when none
// reports one (not bound yet).
func claimCapacity(obs *observation, fallback int64) int64 {
	var smallest int64
	for _, pvc := range obs.membership.PVCs {
		if v := pvc.Volume.Capacity.Value(); v > 0 && (smallest == 0 || v < smallest) {
			smallest = v
		}
	}
	if smallest == 0 {
		return fallback
	}
	return smallest
}

// storageClassExpands says whether the StorageClass of the members' claims allows volume
// expansion (read from the API server, as observeStorage does); false when it cannot tell.
func (r *EtcdClusterReconciler) storageClassExpands(ctx context.Context, obs *observation) bool {
	members := sortedKeys(obs.pvcs)
	if len(members) == 0 {
		return false
	}
	name := ptr.Deref(obs.pvcs[members[0]].Spec.StorageClassName, "")
	if name == "" {
		return false
	}
	sc := &storagev1.StorageClass{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Name: name}, sc); err != nil {
		log.FromContext(ctx).Info("Could not read the StorageClass", "class", name, "error", err.Error())
		return false
	}
	return ptr.Deref(sc.AllowVolumeExpansion, false)
}
