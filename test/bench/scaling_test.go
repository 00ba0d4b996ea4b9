package bench

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// BenchmarkScaleAndReplace reports, on one 3-member TLS cluster:
//
//   - s-floor: one member pod deleted until its new pod is Ready (pod start plus etcd
//     rejoining with its data): the least any membership change can cost on this node;
//   - s-3-to-5: spec.size 3 -> 5 until Ready with 5 members (two learners added, caught
//     up and promoted, one at a time), and per-member/floor;
//   - s-replace: a member's claim and pod deleted until the cluster is Ready again with a
//     fresh member (removal, a new learner, its promotion), and replace/floor;
//   - s-learner-join-floor: on three members started by hand, a fourth added as a learner,
//     started and promoted as soon as etcd allows, until Ready (handLearnerJoinFloor), and
//     replace/learner-join-floor (target: at most 2).
func BenchmarkScaleAndReplace(b *testing.B) {
	ctx := context.Background()
	c := newClient(b)
	var floor, grow, replace, join time.Duration
	for i := 0; i < b.N; i++ {
		join += handLearnerJoinFloor(ctx, b, c, namespace(ctx, b, c, "bench-join-floor-"))

		ec, restart := threeMembersAndFloor(ctx, b, c, "bench-scale-", "")
		floor += restart
		ns := ec.Namespace

		start := time.Now()
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err != nil {
			b.Fatal(err)
		}
		patch := client.MergeFrom(got.DeepCopy())
		got.Spec.Size = 5
		if err := c.Patch(ctx, got, patch); err != nil {
			b.Fatal(err)
		}
		waitReadyMembers(ctx, b, c, ec, 5, "")
		grow += time.Since(start)

		victim := got.Status.Members[1]
		start = time.Now()
		for _, o := range []client.Object{
			&corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name + "-data", Namespace: ns}},
			&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}},
		} {
			if err := c.Delete(ctx, o); err != nil {
				b.Fatal(err)
			}
		}
		waitReadyMembers(ctx, b, c, ec, 5, victim.ID)
		replace += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(floor.Seconds()/n, "s-floor")
	b.ReportMetric(grow.Seconds()/n, "s-3-to-5")
	b.ReportMetric(grow.Seconds()/2/floor.Seconds(), "per-member/floor")
	b.ReportMetric(replace.Seconds()/n, "s-replace")
	b.ReportMetric(replace.Seconds()/floor.Seconds(), "replace/floor")
	b.ReportMetric(join.Seconds()/n, "s-learner-join-floor")
	b.ReportMetric(replace.Seconds()/join.Seconds(), "replace/learner-join-floor")
	b.ReportMetric(0, "ns/op")
}

// threeMembersAndFloor creates a 3-member TLS cluster (at version, or the default), waits
// until it is Ready, and measures the floor: one member pod deleted until its new pod is
// Ready; then waits until the cluster is Ready again.
func threeMembersAndFloor(ctx context.Context, b *testing.B, c client.Client, prefix, version string) (*etcdv1alpha1.EtcdCluster, time.Duration) {
	b.Helper()
	ns := namespace(ctx, b, c, prefix)
	ec := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, Version: version, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete}}
	if err := c.Create(ctx, ec); err != nil {
		b.Fatal(err)
	}
	waitReadyMembers(ctx, b, c, ec, 3, "")
	start := time.Now()
	oldPod := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: ns, Name: "bench-2"}, oldPod); err != nil {
		b.Fatal(err)
	}
	if err := c.Delete(ctx, oldPod); err != nil {
		b.Fatal(err)
	}
	floor := waitPodReplacedReady(ctx, b, c, oldPod, start)
	waitReadyMembers(ctx, b, c, ec, 3, "")
	return ec, floor
}

// waitReadyMembers waits until the cluster is Ready for its generation with size members,
// none of them with member ID gone (when set).
func waitReadyMembers(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, size int, gone string) {
	b.Helper()
	waitReadyMembersWithin(ctx, b, c, ec, size, gone, 5*time.Minute)
}

// waitReadyMembersWithin is waitReadyMembers with its own bound.
func waitReadyMembersWithin(ctx context.Context, b *testing.B, c client.Client, ec *etcdv1alpha1.EtcdCluster, size int, gone string, within time.Duration) {
	b.Helper()
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdCluster{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(ec), got); err == nil && readyWith(got, size, gone) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("%s/%s: not Ready with %d members after %s", ec.Namespace, ec.Name, size, within)
}

func readyWith(c *etcdv1alpha1.EtcdCluster, size int, gone string) bool {
	ready := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionTrue || ready.ObservedGeneration != c.Generation || len(c.Status.Members) != size {
		return false
	}
	for _, m := range c.Status.Members {
		if m.ID == gone {
			return false
		}
	}
	return true
}

// waitPodReplacedReady waits until the pod named like old exists anew (another UID) and is
// Ready, and returns the time since start.
func waitPodReplacedReady(ctx context.Context, b *testing.B, c client.Client, old *corev1.Pod, start time.Time) time.Duration {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(old), p); err == nil && p.UID != old.UID && readyPods([]corev1.Pod{*p}) == 1 {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("pod %s/%s was not back and Ready after 5 minutes", old.Namespace, old.Name)
	return 0
}

// handLearnerJoinFloor is the floor of replacing a member whose data is lost: on three
// members started by hand in ns, a fourth added as a learner (`member add --learner`), its
// claim and pod created at once, and promoted as soon as etcd accepts the promotion (the
// learner has caught up), until its pod is Ready. That is the work of a replacement by a
// controller that reacts at once, less the removal of the old member.
func handLearnerJoinFloor(ctx context.Context, b *testing.B, c client.Client, ns string) time.Duration {
	b.Helper()
	hc, _ := startHandMembers(ctx, b, c, ns)
	pair, err := hc.ca.IssueClient("floor client", time.Hour, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	cli, err := podsClient(ctx, c, ns, hc.ec.Name, hc.ca.CertPEM(), pair.CertPEM, pair.KeyPEM, hc.names.ClientService())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cli.Close() }()

	name := hc.names.MemberName(3)
	initial := []string{fmt.Sprintf("%s=%s", name, hc.names.PeerURL(name))}
	for i := range 3 {
		initial = append(initial, fmt.Sprintf("%s=%s", hc.names.MemberName(i), hc.names.PeerURL(hc.names.MemberName(i))))
	}
	learner, start := addLearner(ctx, b, cli, hc.names.PeerURL(name))
	pod := resources.MemberPod(hc.ec, resources.MemberConfig{Name: name, InitialCluster: initial, InitialClusterState: "existing"},
		versions.Images{Repository: etcdImageRepository})
	for _, o := range []client.Object{resources.MemberPVC(hc.ec, name), pod} {
		o.SetOwnerReferences(nil)
		if err := c.Create(ctx, o); err != nil {
			b.Fatal(err)
		}
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		err := cli.MemberPromote(ctx, learner.ID)
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the hand-added learner %s was not promoted after 5 minutes: %v", name, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		p := &corev1.Pod{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(pod), p); err == nil && readyPods([]corev1.Pod{*p}) == 1 {
			return time.Since(start)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.Fatalf("the hand-added member %s was not Ready after 5 minutes", name)
	return 0
}

// addLearner adds a learner with peerURL and returns it with the time the accepted call
// started. Members that have just started refuse membership changes for a few seconds
// (etcd calls the cluster unhealthy until they have been connected for a while): that wait
// belongs to the bootstrap, not to the join, so the refused calls are not counted.
func addLearner(ctx context.Context, b *testing.B, cli etcd.Client, peerURL string) (etcd.Member, time.Time) {
	b.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		start := time.Now()
		learner, _, err := cli.MemberAddAsLearner(ctx, []string{peerURL})
		if err == nil {
			return learner, start
		}
		if !etcd.IsUnhealthyCluster(err) || time.Now().After(deadline) {
			b.Fatalf("adding the learner by hand: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
