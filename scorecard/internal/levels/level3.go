package levels

import (
	"context"
	"errors"
	"fmt"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/harness"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
)

// lifecycleKeys is how many keys level 3 writes and checks after every change.
const lifecycleKeys = 50

// fullLifecycle (level 3): a 3-member cluster keeps its data while it is scaled to 5
// members, back to 3, and while a member whose volume and pod are destroyed is replaced.
// Then backup and restore: the test fails while the API has no EtcdBackup. A failure in
// the scaling part fails the test with its own message and skips the rest of that part;
// the backup check runs either way, so the result lists everything that is wrong.
func fullLifecycle(ctx context.Context, in Input, r *report.Report) {
	scaleAndReplace(ctx, in, r)

	served, err := in.Env.Serves(etcdv1alpha1.GroupVersion.Group, "EtcdBackup")
	if err != nil {
		r.Fail(fmt.Sprintf("finding out whether EtcdBackup is served: %v", err))
		return
	}
	r.Logf("EtcdBackup served in %s: %t", etcdv1alpha1.GroupVersion.Group, served)
	for _, m := range FullLifecycleMissing(served) {
		r.Fail("missing: " + m)
	}
	if !served {
		r.Suggest("Serve an EtcdBackup kind (snapshots to a volume or object storage) and a way to create a cluster from a backup.")
	}
}

// scaleAndReplace runs the scaling and member replacement part of level 3.
func scaleAndReplace(ctx context.Context, in Input, r *report.Report) {
	c, ok := newCluster(in, r, "sc-l3-", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 3 })
	if !ok {
		return
	}
	var keys map[string]string
	verify := step{fmt.Sprintf("read back the %d keys", lifecycleKeys), func() error { return checkKeys(ctx, in, c, keys) }}
	var victim etcdv1alpha1.MemberStatus
	runSteps(r,
		createStep(ctx, in, c),
		settleStep(ctx, in, c, 3),
		step{fmt.Sprintf("write %d keys", lifecycleKeys), func() error {
			var err error
			keys, err = writeKeys(ctx, in, c)
			return err
		}},
		step{"scale to 5 members", func() error { return in.Env.Resize(ctx, c, 5) }},
		settleStep(ctx, in, c, 5),
		verify,
		step{"scale to 3 members", func() error { return in.Env.Resize(ctx, c, 3) }},
		settleStep(ctx, in, c, 3),
		verify,
		step{"destroy a member: delete its volume claim and its pod", func() error {
			var ok bool
			if victim, ok = harness.Victim(c); !ok {
				return errors.New("no member other than the leader in status.members")
			}
			r.Logf("destroying member %s (etcd ID %s)", victim.Name, victim.ID)
			return in.Env.DestroyMember(ctx, c, victim.Name)
		}},
		step{"wait until the member is replaced and the cluster has 3 ready members", func() error {
			return in.Env.WaitFor(ctx, c, "a new member in place of "+victim.Name,
				harness.All(harness.MemberGone(victim.ID), harness.Settled(3)))
		}},
		verify,
	)
}

// writeKeys writes lifecycleKeys keys to c.
func writeKeys(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster) (map[string]string, error) {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return nil, err
	}
	defer func() { _ = cli.Close() }() // every write was acknowledged or failed by then
	return harness.WriteKeys(ctx, cli, keyPrefix(c)+"/lifecycle", lifecycleKeys)
}
