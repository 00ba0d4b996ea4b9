package scale

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/tuning"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// fleet stands in for the etcd members of every cluster: one fake etcd per EtcdCluster, its
// members started and healthy, the first leading, each an idle member holding some data.
type fleet struct {
	mu        sync.RWMutex
	byCluster map[types.NamespacedName]*fake.Client

	// The members' peer round trips (roundTrips): each member's histogram, by pod, and the
	// peers each member has.
	rttMu sync.Mutex
	peers int
	rtts  map[types.NamespacedName]*tuning.Histogram
	rand  *rand.Rand
}

// What an idle member reports (held): a database of 24 MiB, 20 MiB of it in use (17 %
// free: below what defragmentation waits for), at revision 1000; the same on every member,
// so that their hashes agree.
const (
	idleDBSize      = 24 << 20
	idleDBSizeInUse = 20 << 20
	idleRevision    = 1000
)

// add makes the fake etcd of c, with members members.
func (f *fleet) add(c *etcdv1alpha1.EtcdCluster, members int) {
	names := cluster.For(c)
	list := make([]etcd.Member, 0, members)
	for i := range members {
		m := names.MemberName(i)
		list = append(list, etcd.Member{ID: uint64(i + 1), Name: m, PeerURLs: []string{names.PeerURL(m)}, ClientURLs: []string{names.ClientURL(m)}})
	}
	fc := fake.New(list...)
	fc.SetLeader(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.byCluster == nil {
		f.byCluster = map[types.NamespacedName]*fake.Client{}
	}
	f.byCluster[client.ObjectKeyFromObject(c)] = fc
	f.rttMu.Lock()
	defer f.rttMu.Unlock()
	f.peers = members - 1
}

// factory routes by the first member URL (https://<member>.<cluster>-peer.<ns>.svc:2379).
func (f *fleet) factory(cfg etcd.Config) (etcd.Client, error) {
	if len(cfg.Endpoints) == 0 {
		return nil, errors.New("no endpoints")
	}
	u, err := url.Parse(cfg.Endpoints[0])
	if err != nil {
		return nil, err
	}
	labels := strings.Split(u.Hostname(), ".")
	if len(labels) != 4 {
		return nil, fmt.Errorf("unexpected member host %q", u.Hostname())
	}
	key := types.NamespacedName{Namespace: labels[2], Name: strings.TrimSuffix(labels[1], "-peer")}
	f.mu.RLock()
	fc, ok := f.byCluster[key]
	f.mu.RUnlock()
	if !ok {
		return nil, fmt.Errorf("no fake etcd for %s", key)
	}
	c, err := fc.Factory()(cfg)
	if err != nil {
		return nil, err
	}
	return idle{c}, nil
}

// idle is a fake etcd whose members report idleDBSize, idleDBSizeInUse and idleRevision:
// with a revision, the consistency check has one to hash the members at, and storage
// autoscaling some data to measure. They run the default release (the clusters name none),
// unless the fake says otherwise: a member counts as updated once it answers with it.
type idle struct{ etcd.Client }

func (c idle) Status(ctx context.Context, endpoint string) (etcd.MemberStatus, error) {
	st, err := c.Client.Status(ctx, endpoint)
	if err == nil {
		st.DBSize, st.DBSizeInUse, st.Revision = idleDBSize, idleDBSizeInUse, idleRevision
		if st.Version == "" {
			st.Version = versions.Default()
		}
	}
	return st, err
}

// The members' peer round trips, as etcd's probers record them on a LAN between TLS
// members: probes of rttBase give or take a quarter (1.8 to 3 ms, etcd's bucket up to
// 3.2 ms), and one in rttSpikeOneIn of rttSpike (the next bucket, up to 6.4 ms), so that the
// p99 over a window wavers across a bucket's bound as a real one does.
const (
	rttBase       = 2400 * time.Microsecond
	rttSpike      = 5 * time.Millisecond
	rttSpikeOneIn = 150
)

// rttBounds are etcd's buckets of etcd_network_peer_round_trip_time_seconds:
// ExponentialBuckets(0.0001, 2, 16), then +Inf.
var rttBounds = func() []float64 {
	var out []float64
	for b := 0.0001; len(out) < 16; b *= 2 {
		out = append(out, b)
	}
	return append(out, math.Inf(1))
}()

// roundTrips stands in for a member's metrics port (controllers.PeerRoundTripReader): each
// read adds to the member's histogram a probe of each of etcd's two probers to each peer.
func (f *fleet) roundTrips(_ context.Context, pod *corev1.Pod) (tuning.Histogram, error) {
	f.rttMu.Lock()
	defer f.rttMu.Unlock()
	if f.rtts == nil {
		f.rtts = map[types.NamespacedName]*tuning.Histogram{}
		f.rand = rand.New(rand.NewPCG(1, 2))
	}
	key := client.ObjectKeyFromObject(pod)
	h := f.rtts[key]
	if h == nil {
		h = &tuning.Histogram{Bounds: rttBounds, Counts: make([]uint64, len(rttBounds))}
		f.rtts[key] = h
	}
	for range 2 * f.peers {
		rtt := rttBase*3/4 + time.Duration(f.rand.Int64N(int64(rttBase/2)))
		if f.rand.IntN(rttSpikeOneIn) == 0 {
			rtt = rttSpike
		}
		for i, b := range h.Bounds {
			if rtt.Seconds() <= b {
				h.Counts[i]++
			}
		}
		h.Sum += rtt.Seconds()
	}
	return tuning.Histogram{Bounds: h.Bounds, Counts: slices.Clone(h.Counts), Sum: h.Sum}, nil
}

// takeStatusCalls returns how many member status calls the fakes served since the last
// call, and forgets the calls (the fakes record each one).
func (f *fleet) takeStatusCalls() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	n := 0
	for _, fc := range f.byCluster {
		for _, call := range fc.Calls() {
			if strings.HasPrefix(call, "Status ") {
				n++
			}
		}
		fc.ResetCalls()
	}
	return n
}

// kubelet stands in for the kubelets and the volume provisioner, which envtest lacks: it
// reports every member pod Running and Ready with an IP, and every member claim Bound. It
// watches through the operator's own cache, so in steady state it makes no request at all.
type kubelet struct {
	c      client.Client
	reader client.Reader
	pods   workqueue.TypedRateLimitingInterface[types.NamespacedName]
	claims workqueue.TypedRateLimitingInterface[types.NamespacedName]
	writes atomic.Int64
	nextIP atomic.Uint32
}

func newKubelet(c client.Client, reader client.Reader) *kubelet {
	return &kubelet{c: c, reader: reader,
		pods:   workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
		claims: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[types.NamespacedName]()),
	}
}

// start hooks the stand-in onto the cache's pod and claim informers and runs its workers
// until ctx ends.
func (k *kubelet) start(ctx context.Context, informers cache.Informers) error {
	enqueue := func(q workqueue.TypedRateLimitingInterface[types.NamespacedName], pending func(any) bool) toolscache.ResourceEventHandler {
		add := func(obj any) {
			if o, ok := obj.(client.Object); ok && pending(obj) {
				q.Add(client.ObjectKeyFromObject(o))
			}
		}
		return toolscache.ResourceEventHandlerFuncs{AddFunc: add, UpdateFunc: func(_, obj any) { add(obj) }}
	}
	for _, in := range []struct {
		obj     client.Object
		q       workqueue.TypedRateLimitingInterface[types.NamespacedName]
		pending func(any) bool
	}{
		{&corev1.Pod{}, k.pods, func(o any) bool { p, ok := o.(*corev1.Pod); return ok && podPending(p) }},
		{&corev1.PersistentVolumeClaim{}, k.claims, func(o any) bool { c, ok := o.(*corev1.PersistentVolumeClaim); return ok && claimPending(c) }},
	} {
		inf, err := informers.GetInformer(ctx, in.obj)
		if err != nil {
			return err
		}
		if _, err := inf.AddEventHandler(enqueue(in.q, in.pending)); err != nil {
			return err
		}
	}
	go func() { <-ctx.Done(); k.pods.ShutDown(); k.claims.ShutDown() }()
	for range 2 {
		go k.work(ctx, k.pods, k.runPod)
		go k.work(ctx, k.claims, k.bindClaim)
	}
	return nil
}

func (k *kubelet) work(ctx context.Context, q workqueue.TypedRateLimitingInterface[types.NamespacedName], do func(context.Context, types.NamespacedName) error) {
	for {
		key, quit := q.Get()
		if quit {
			return
		}
		if err := do(ctx, key); err != nil && ctx.Err() == nil {
			q.AddRateLimited(key)
		} else {
			q.Forget(key)
		}
		q.Done(key)
	}
}

func podPending(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" {
		return p.DeletionTimestamp == nil
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status != corev1.ConditionTrue
		}
	}
	return true
}

func claimPending(c *corev1.PersistentVolumeClaim) bool {
	return c.DeletionTimestamp == nil && c.Status.Phase != corev1.ClaimBound
}

func (k *kubelet) runPod(ctx context.Context, key types.NamespacedName) error {
	p := &corev1.Pod{}
	if err := k.reader.Get(ctx, key, p); err != nil || !podPending(p) {
		return client.IgnoreNotFound(err)
	}
	ip := k.nextIP.Add(1)
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = fmt.Sprintf("10.%d.%d.%d", 1+ip>>16&0xff, ip>>8&0xff, ip&0xff)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue},
		{Type: corev1.ContainersReady, Status: corev1.ConditionTrue}}
	return k.update(ctx, p)
}

func (k *kubelet) bindClaim(ctx context.Context, key types.NamespacedName) error {
	c := &corev1.PersistentVolumeClaim{}
	if err := k.reader.Get(ctx, key, c); err != nil || !claimPending(c) {
		return client.IgnoreNotFound(err)
	}
	c.Status.Phase = corev1.ClaimBound
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: c.Spec.Resources.Requests[corev1.ResourceStorage]}
	return k.update(ctx, c)
}

// update writes obj's status; a conflict means the cache is behind, and the object comes
// back with its next event or the retry.
func (k *kubelet) update(ctx context.Context, obj client.Object) error {
	k.writes.Add(1)
	err := k.c.Status().Update(ctx, obj)
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
