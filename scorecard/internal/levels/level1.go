package levels

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// basicInstall (level 1): the EtcdCluster of the CSV's example becomes a working etcd
// cluster. It is created under a new name, must become Available and Ready with every
// member healthy, and must take a write and read it back, over TLS with the client
// certificate status.clientSecret names, through the Service status.clientService names.
func basicInstall(ctx context.Context, in Input, r *report.Report) {
	c, ok := newCluster(in, r, "sc-l1-", nil)
	if !ok {
		return
	}
	runSteps(r,
		createStep(ctx, in, c),
		step{"wait for Available and Ready", func() error {
			return in.Env.WaitFor(ctx, c, "Available and Ready", framework.Settled(c.Spec.Size))
		}},
		step{"read the client Service", func() error { return checkClientService(ctx, in, c) }},
		step{"write a key and read it back", func() error { return roundTrip(ctx, in, r, c) }},
	)
}

// checkClientService checks that status.clientService names a Service with the client port.
func checkClientService(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster) error {
	svc := &corev1.Service{}
	if err := in.Env.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientService}, svc); err != nil {
		return fmt.Errorf("status.clientService %q: %w", c.Status.ClientService, err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Port == cluster.ClientPort {
			return nil
		}
	}
	return fmt.Errorf("the Service %s has no port %d", svc.Name, cluster.ClientPort)
}

// roundTrip writes a key with a value no other run uses and reads it back.
func roundTrip(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster) error {
	endpoint, err := framework.ClientEndpoint(c)
	if err != nil {
		return err
	}
	if c.Status.ClientSecret != "" {
		r.Logf("connecting to %s with the client certificate of Secret %s", endpoint, c.Status.ClientSecret)
	} else {
		r.Logf("connecting to %s without TLS (tls.mode Disabled)", endpoint)
	}
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // the result is known by then
	key := keyPrefix(c) + "/basic-install"
	value := fmt.Sprintf("%s written at %s", c.UID, time.Now().UTC().Format(time.RFC3339Nano))
	if err := cli.Put(ctx, key, value); err != nil {
		return err
	}
	got, found, err := cli.Get(ctx, key)
	switch {
	case err != nil:
		return err
	case !found:
		return fmt.Errorf("key %s is not there after writing it", key)
	case got != value:
		return fmt.Errorf("key %s reads %q, written %q", key, got, value)
	}
	r.Logf("wrote and read back %s", key)
	return nil
}
