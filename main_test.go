package main

import (
	"strings"
	"testing"

	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// The operator refuses to start with fewer than one cluster worker, saying which flag, before
// it touches the manager: with none, no EtcdCluster would ever be reconciled.
func TestSetupControllersRefusesFewerThanOneWorker(t *testing.T) {
	for _, n := range []int{0, -2} {
		err := setupControllers(nil, versions.Images{}, "cluster.local", nil, "agent:test", resources.Operator{}, 0, n)
		if err == nil {
			t.Fatalf("--cluster-workers=%d: setupControllers accepted it", n)
		}
		if !strings.Contains(err.Error(), "--cluster-workers") || !strings.Contains(err.Error(), "at least one worker") {
			t.Errorf("--cluster-workers=%d: the error does not say which flag and why: %v", n, err)
		}
	}
}
