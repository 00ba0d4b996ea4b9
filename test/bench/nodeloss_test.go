package bench

import (
	"context"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// BenchmarkNodeLoss reports, for a 3-member TLS cluster with every default (the lost-node
// bound among them) whose member's node stops (hack/local-cluster.sh node-stop: kubelet,
// container runtime and pod processes killed at once):
//
//   - s-node-notready: the node stopped until the API server has it NotReady: Kubernetes'
//     own detection, the floor nothing that watches nodes can beat;
//   - s-healthy-again: the node stopped until the cluster is Ready again with three members,
//     the lost one replaced on another node, and healthy-again/node-notready;
//   - s-past-bound: healthy-again less node-notready and spec.replaceMemberOnLostNodeAfter
//     (3m): what the replacement itself took (removal, a learner, its catch-up, promotion).
//
// The node is started again at the end. It needs NODE_CTL (make bench-cluster sets it).
func BenchmarkNodeLoss(b *testing.B) {
	ctl := os.Getenv("NODE_CTL")
	if ctl == "" {
		b.Skip("NODE_CTL is not set: make bench-cluster sets it to the local cluster's node-stop and node-start")
	}
	ctx := context.Background()
	c := newClient(b)
	var notReady, healthy time.Duration
	for i := 0; i < b.N; i++ {
		ec := &etcdv1alpha1.EtcdCluster{}
		ec.Name, ec.Namespace = "bench", namespace(ctx, b, c, "bench-nodeloss-")
		ec.Spec = etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete}
		if err := c.Create(ctx, ec); err != nil {
			b.Fatal(err)
		}
		waitReadyMembers(ctx, b, c, ec, 3, "")
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), ec); err != nil {
			b.Fatal(err)
		}
		keep, err := framework.NodesRunning(ctx, c, framework.RecoveryNeeds("etcdpilot-system")...)
		if err != nil {
			b.Fatal(err)
		}
		victim, ok := framework.MemberToLose(ec.Status.Members, keep)
		if !ok {
			b.Fatalf("every member shares a node with the operator or the volume provisioner (%v): %+v", keep, ec.Status.Members)
		}
		start := time.Now()
		if err := framework.NodeCtl(ctx, ctl, "node-stop", victim.Node); err != nil {
			b.Fatal(err)
		}
		notReady += waitNodeNotReady(ctx, b, c, victim.Node, start)
		waitReadyMembersWithin(ctx, b, c, ec, 3, victim.ID, 10*time.Minute)
		healthy += time.Since(start)
		if err := framework.NodeCtl(ctx, ctl, "node-start", victim.Node); err != nil {
			b.Fatal(err)
		}
	}
	n := float64(b.N)
	b.ReportMetric(notReady.Seconds()/n, "s-node-notready")
	b.ReportMetric(healthy.Seconds()/n, "s-healthy-again")
	b.ReportMetric(healthy.Seconds()/notReady.Seconds(), "healthy-again/node-notready")
	b.ReportMetric((healthy-notReady).Seconds()/n-clusterspec.DefaultReplaceMemberOnLostNodeAfter.Seconds(), "s-past-bound")
	b.ReportMetric(0, "ns/op")
}

// waitNodeNotReady waits until the API server has node NotReady, and returns the time from
// start to when the node lifecycle controller marked it so.
func waitNodeNotReady(ctx context.Context, b *testing.B, c client.Client, node string, start time.Time) time.Duration {
	b.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		n := &corev1.Node{}
		if err := c.Get(ctx, client.ObjectKey{Name: node}, n); err == nil {
			if since, ok := framework.NodeNotReadySince(n); ok {
				return since.Sub(start)
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("node %s not NotReady 3 minutes after it stopped", node)
	return 0
}
