package framework

import (
	"context"
	"fmt"
	"time"

	pb "go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// VersionProbe asks one member for the etcd release it runs, on a connection of its own
// that stays open between calls. A sample of the members' versions is then one call per
// member on a connection already made, with no name lookup and no TLS handshake: it tells
// whether the member serves, not how long a new connection takes on a loaded machine. A
// member whose process stops breaks its connection, and the next call fails at once; the
// connection is made again as soon as the member is back.
type VersionProbe interface {
	Version(ctx context.Context) (string, error)
	Close() error
}

// probeBackoff is how soon a probe's connection is made again after its member went away:
// at most every 250 ms, so that a member back after a restart is seen answering within a
// fraction of a second, as health gating is judged (CheckRollingUpgrade). gRPC's default
// waits up to two minutes between attempts.
var probeBackoff = backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.5, Jitter: 0.2, MaxDelay: 250 * time.Millisecond}

// ProbeMembers opens a VersionProbe on each of members of c, on the member's own endpoint
// (MemberAddresses). On an error the probes already open are closed.
func (e *Env) ProbeMembers(ctx context.Context, c *etcdv1alpha1.EtcdCluster, members []string) (map[string]VersionProbe, error) {
	open := e.OpenProbe
	if open == nil {
		open = openProbe
	}
	probes := make(map[string]VersionProbe, len(members))
	for _, m := range members {
		address, err := e.memberAddress(ctx, c, m)
		var cfg etcd.Config
		if err == nil {
			cfg, err = e.clientConfig(ctx, c, address)
		}
		var p VersionProbe
		if err == nil {
			p, err = open(ctx, cfg)
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
type clientv3Probe struct {
	endpoint string
	cli      *clientv3.Client
	status   pb.MaintenanceClient
}

func openProbe(ctx context.Context, cfg etcd.Config) (VersionProbe, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: cfg.TLS, Context: ctx,
		DialTimeout: etcd.DefaultDialTimeout, Logger: zap.NewNop(),
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{Backoff: probeBackoff, MinConnectTimeout: 2 * time.Second})}})
	if err != nil {
		return nil, err
	}
	return &clientv3Probe{endpoint: cfg.Endpoints[0], cli: cli, status: pb.NewMaintenanceClient(cli.ActiveConnection())}, nil
}

func (p *clientv3Probe) Version(ctx context.Context) (string, error) {
	resp, err := p.status.Status(ctx, &pb.StatusRequest{})
	if err != nil {
		return "", fmt.Errorf("etcd status of %s: %w", p.endpoint, err)
	}
	return resp.Version, nil
}

func (p *clientv3Probe) Close() error { return p.cli.Close() }
