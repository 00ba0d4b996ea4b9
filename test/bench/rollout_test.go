package bench

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// BenchmarkRollout3Members reports, for a 3-member TLS cluster whose etcd option
// (snapshotCount) changes while a client writes 10 keys a second:
//
//   - s-rollout: the spec patched until status.observedGeneration reaches its generation
//     with Ready True (every member restarted with the new flags, one at a time,
//     health-gated, the leader last after handing over);
//   - failed-writes: writes the client saw fail meanwhile;
//   - s-floor: one member pod deleted until its new pod is Ready, and rollout/(3*floor):
//     what the gates cost over three bare restarts.
func BenchmarkRollout3Members(b *testing.B) {
	changeUnderWrites(b, "rollout", "3.7.3", func(ec *etcdv1alpha1.EtcdCluster) { ec.Spec.Etcd.SnapshotCount = 5000 },
		func(ctx context.Context, c client.Client, ec *etcdv1alpha1.EtcdCluster) {
			waitRolledOut(ctx, b, c, ec, ec.Generation)
		})
}

// waitRolledOut waits until generation is in force: observedGeneration reached it, Ready.
func waitRolledOut(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, generation int64) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err == nil && got.Status.ObservedGeneration == generation &&
			meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady) && got.Status.UpdatedMembers == 3 {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s/%s: generation %d not rolled out after 10 minutes", ec.Namespace, ec.Name, generation)
}
