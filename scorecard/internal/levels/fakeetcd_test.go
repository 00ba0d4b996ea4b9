package levels_test

import (
	"context"
	"fmt"
	"maps"
	"sync"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// fakeEtcds are the etcd clusters behind the fake operator's EtcdClusters: one key-value
// store per client endpoint, so that a restored cluster holds what its backup held and
// nothing written since.
type fakeEtcds struct {
	mu     sync.Mutex
	stores map[string]map[string]string // client endpoint -> key -> value
}

func newFakeEtcds() *fakeEtcds { return &fakeEtcds{stores: map[string]map[string]string{}} }

// endpoint is the client endpoint of c, as the scorecard dials it (TLS disabled).
func endpoint(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", cluster.For(c).ClientService(), c.Namespace, cluster.ClientPort)
}

// factory connects to the store of the first endpoint.
func (f *fakeEtcds) factory() etcd.Factory {
	return func(cfg etcd.Config) (etcd.Client, error) {
		return &fakeKV{etcds: f, endpoint: cfg.Endpoints[0]}, nil
	}
}

// snapshot returns a copy of the keys of endpoint.
func (f *fakeEtcds) snapshot(endpoint string) map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return maps.Clone(f.stores[endpoint])
}

// restore makes keys the data of endpoint.
func (f *fakeEtcds) restore(endpoint string, keys map[string]string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stores[endpoint] = maps.Clone(keys)
}

// fakeKV is a client of one fake etcd cluster. It serves what the scorecard uses, Put,
// Get and Close; the other methods of etcd.Client are not implemented (nil).
type fakeKV struct {
	etcd.Client
	etcds    *fakeEtcds
	endpoint string
}

func (c *fakeKV) Put(_ context.Context, key, value string) error {
	c.etcds.mu.Lock()
	defer c.etcds.mu.Unlock()
	if c.etcds.stores[c.endpoint] == nil {
		c.etcds.stores[c.endpoint] = map[string]string{}
	}
	c.etcds.stores[c.endpoint][key] = value
	return nil
}

func (c *fakeKV) Get(_ context.Context, key string) (string, bool, error) {
	c.etcds.mu.Lock()
	defer c.etcds.mu.Unlock()
	v, ok := c.etcds.stores[c.endpoint][key]
	return v, ok, nil
}

func (c *fakeKV) Close() error { return nil }
