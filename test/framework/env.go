package framework

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// PartOfLabel marks everything a scorecard test creates, so that leftovers of an
// interrupted run can be found: app.kubernetes.io/part-of=etcdpilot-scorecard.
const (
	PartOfLabel = "app.kubernetes.io/part-of"
	PartOfValue = "etcdpilot-scorecard"
)

// Logger receives a test's progress, one line per call: the scorecard's report, or the
// Ginkgo writer in the e2e suite.
type Logger interface {
	Logf(format string, args ...any)
}

// LoggerFunc is a Logger of a Printf-like function.
type LoggerFunc func(format string, args ...any)

// Logf calls f.
func (f LoggerFunc) Logf(format string, args ...any) { f(format, args...) }

// defaultPoll is how often waits look at the cluster.
const defaultPoll = 2 * time.Second

// Env is one test's view of the Kubernetes cluster: the namespace it works in, its
// clients, the way it reaches metrics endpoints, and the objects it created (EtcdClusters,
// EtcdBackups and their claims).
type Env struct {
	// Client reads and writes objects, uncached.
	Client client.Client
	// Discovery tells which kinds the API server serves.
	Discovery discovery.DiscoveryInterface
	// Namespace is where a scorecard test creates everything (SCORECARD_NAMESPACE); the e2e
	// suite names a namespace of its own in each spec and leaves it empty.
	Namespace string
	// Report receives the progress of every wait and of the cleanup.
	Report Logger
	// NewEtcdClient connects to etcd; etcd.New when nil.
	NewEtcdClient etcd.Factory
	// ReadLocal reads key from the one member at cfg.Endpoints[0], serializable: from that
	// member's own data (ReadFromMember). clientv3 when nil; tests hand in fakes.
	ReadLocal func(ctx context.Context, cfg etcd.Config, key string) (MemberRead, error)
	// OpenProbe opens a VersionProbe of the one member at cfg.Endpoints[0] (ProbeMembers).
	// clientv3 when nil; tests hand in fakes.
	OpenProbe func(ctx context.Context, cfg etcd.Config) (VersionProbe, error)
	// Poll is how often waits look again; 2s when zero.
	Poll time.Duration
	// HTTP carries the GETs of metrics endpoints (GetMetrics); when nil, a transport that
	// does not verify the operator's self-signed certificate. Tests hand in fakes.
	HTTP http.RoundTripper
	// Token returns the bearer token GetMetrics sends to the operator's metrics endpoint:
	// the test pod's ServiceAccount token.
	Token func() (string, error)
	// PodNetwork is the local cluster's pod network when the test runs on the cluster's
	// machine rather than in a pod: see reach.go. Zero in a pod.
	PodNetwork netip.Prefix
	// Image is the test's own image, which CorruptMember runs on a member's claim; when
	// empty, it is read from the test's own pod (named as the host).
	Image string

	// mu guards created: level 5 creates from several goroutines.
	mu sync.Mutex
	// created are the objects to delete, oldest first: *EtcdCluster, *EtcdBackup,
	// *EtcdTenant, *PersistentVolumeClaim or *Pod.
	created []client.Object
}

// Scheme holds the kinds the tests read and write: Kubernetes' own, EtcdCluster and
// EtcdBackup.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := etcdv1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// NewEnv connects to the API server of cfg.
func NewEnv(cfg *rest.Config, namespace string, r Logger) (*Env, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server: %w", err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("connecting to the API server's discovery: %w", err)
	}
	return &Env{Client: c, Discovery: dc, Namespace: namespace, Report: r, HTTP: newTransport(), Token: tokenOf(cfg)}, nil
}

func (e *Env) poll() time.Duration {
	if e.Poll > 0 {
		return e.Poll
	}
	return defaultPoll
}

func (e *Env) newEtcdClient(cfg etcd.Config) (etcd.Client, error) {
	if e.NewEtcdClient != nil {
		return e.NewEtcdClient(cfg)
	}
	return etcd.New(cfg)
}

// EventsFor returns the core Events whose involved object is c (by UID). The operator
// records them through events.k8s.io; the core API serves the same objects.
func (e *Env) EventsFor(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]corev1.Event, error) {
	var list corev1.EventList
	if err := e.Client.List(ctx, &list, client.InNamespace(c.Namespace),
		client.MatchingFields{"involvedObject.uid": string(c.UID)}); err != nil {
		return nil, fmt.Errorf("listing the events of EtcdCluster %s: %w", c.Name, err)
	}
	return list.Items, nil
}

// Serves reports whether the API server serves kind in group, in any version.
func (e *Env) Serves(group, kind string) (bool, error) {
	groups, err := e.Discovery.ServerGroups()
	if err != nil {
		return false, fmt.Errorf("discovering API groups: %w", err)
	}
	for _, g := range groups.Groups {
		if g.Name != group {
			continue
		}
		for _, v := range g.Versions {
			list, err := e.Discovery.ServerResourcesForGroupVersion(v.GroupVersion)
			if err != nil {
				return false, fmt.Errorf("discovering the resources of %s: %w", v.GroupVersion, err)
			}
			if ServesKind(list.APIResources, kind) {
				return true, nil
			}
		}
	}
	return false, nil
}

// track records obj (a copy) as created, for Cleanup.
func (e *Env) track(obj client.Object) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.created = append(e.created, obj.DeepCopyObject().(client.Object))
}
