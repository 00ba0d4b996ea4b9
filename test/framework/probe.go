package framework

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"sync/atomic"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// VersionProbe asks one member for the etcd release it runs, on a connection of its own
// that stays open between calls. A sample of the members' versions is then one call per
// member on a connection already made, with no name lookup and no TLS handshake: it tells
// whether the member serves, not how long a new connection takes on a loaded machine. A
// member whose process stops breaks its connection, and the next call fails at once; the
// connection is made again as soon as the member is back, at the address its pod has then.
type VersionProbe interface {
	Version(ctx context.Context) (string, error)
	// Connection numbers the connection the probe's calls go over now (each new connection
	// has a new number) and says whether a call has been answered on it: a member answering
	// on a connection it answered on earlier served in between (SampleVersions).
	Connection() (number uint64, answered bool)
	Close() error
}

// probeBackoff is how soon a probe's connection is made again after its member went away:
// at most every 250 ms, so that a member back after a restart is seen answering within a
// fraction of a second, as health gating is judged (CheckRollingUpgrade). gRPC's default
// waits up to two minutes between attempts.
var probeBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.5, Jitter: 0.2, MaxDelay: 250 * time.Millisecond}

// ProbeMembers opens a VersionProbe on each of members of c, on the member's own endpoint
// (MemberAddresses). On an error the probes already open are closed.
//
// Each connection is made to the IP the member's pod has when it is made (podDialer), not to
// what the member's name resolved to: a member restarted in a new pod has a new IP, and its
// name keeps resolving to the old one for as long as DNS caches it (seconds), each attempt
// on the old address hanging until its connect timeout. The probe would then see the member
// silent for seconds after it serves again, and the next member's restart as overlapping it.
// The member's certificate is still verified against its name.
func (e *Env) ProbeMembers(ctx context.Context, c *etcdv1alpha1.EtcdCluster, members []string) (map[string]VersionProbe, error) {
	probes := make(map[string]VersionProbe, len(members))
	for _, m := range members {
		address, err := e.memberAddress(ctx, c, m)
		var cfg etcd.Config
		if err == nil {
			cfg, err = e.clientConfig(ctx, c, address)
		}
		var p VersionProbe
		if err == nil && e.OpenProbe != nil {
			p, err = e.OpenProbe(ctx, cfg)
		} else if err == nil {
			p, err = openProbe(ctx, cfg, e.podDialer(c.Namespace, m))
		}
		if err != nil {
			CloseProbes(probes)
			return nil, fmt.Errorf("connecting to member %s: %w", m, err)
		}
		probes[m] = p
	}
	return probes, nil
}

// CloseProbes closes every probe; their results are known by then.
func CloseProbes(probes map[string]VersionProbe) {
	for _, p := range probes {
		_ = p.Close()
	}
}

// clientv3Probe is the VersionProbe of a real member: etcd's Maintenance.Status, called on
// the client's own connection (clientv3's Status would dial the member anew on each call).
// Every dial of that connection passes through the probe and is counted: the count numbers
// the connection, since gRPC dials again only when the connection it had is gone.
type clientv3Probe struct {
	endpoint string
	cli      *clientv3.Client
	status   pb.MaintenanceClient
	// dials counts the connection's dials; answeredOn is dials as it was when a call was last
	// answered with no dial in between.
	dials, answeredOn atomic.Uint64
}

func openProbe(ctx context.Context, cfg etcd.Config, dial func(context.Context, string) (net.Conn, error)) (VersionProbe, error) {
	p := &clientv3Probe{endpoint: cfg.Endpoints[0]}
	counted := func(ctx context.Context, address string) (net.Conn, error) {
		p.dials.Add(1)
		return dial(ctx, address)
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: cfg.TLS, Context: ctx,
		DialTimeout: etcd.DefaultDialTimeout, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{
			grpc.WithConnectParams(grpc.ConnectParams{Backoff: probeBackoff, MinConnectTimeout: 2 * time.Second}),
			grpc.WithContextDialer(counted),
		}})
	if err != nil {
		return nil, err
	}
	p.cli, p.status = cli, pb.NewMaintenanceClient(cli.ActiveConnection())
	return p, nil
}

func (p *clientv3Probe) Version(ctx context.Context) (string, error) {
	before := p.dials.Load()
	resp, err := p.status.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return "", fmt.Errorf("etcd status of %s: %w", p.endpoint, err)
	}
	if before != 0 && p.dials.Load() == before {
		p.answeredOn.Store(before)
	}
	return resp.Version, nil
}

func (p *clientv3Probe) Connection() (uint64, bool) {
	n := p.dials.Load()
	return n, n != 0 && p.answeredOn.Load() == n
}

func (p *clientv3Probe) Close() error { return p.cli.Close() }

// podDialer dials the client port of address (host:port) at the IP that the pod named member
// has now, read from the API server on each dial. A pod without an IP yet (or, from the
// machine, with one outside PodNetwork) fails the dial at once, and gRPC tries again within
// probeBackoff.
func (e *Env) podDialer(namespace, member string) func(context.Context, string) (net.Conn, error) {
	return func(ctx context.Context, address string) (net.Conn, error) {
		_, port, err := net.SplitHostPort(address)
		if err != nil {
			return nil, err
		}
		pod := &corev1.Pod{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: member}, pod); err != nil {
			return nil, fmt.Errorf("reading member pod %s: %w", member, err)
		}
		ip, err := netip.ParseAddr(pod.Status.PodIP)
		if err != nil || (e.fromHost() && !e.PodNetwork.Contains(ip)) {
			return nil, fmt.Errorf("member pod %s has no IP to dial (%q)", member, pod.Status.PodIP)
		}
		var d net.Dialer
		return d.DialContext(ctx, "tcp", net.JoinHostPort(ip.String(), port))
	}
}
