package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Recovery from a lost quorum on real members, with a client's acknowledged writes before
// each loss. Two specs, each on its own cluster, so that they run side by side:
//
//   - Manual: two of three members destroyed (claim and pod); the operator waits and says
//     what it would do; after approval the cluster is back at three members from the
//     survivor, every write kept and revisions raised.
//   - Automatic: two members held down with their data kept (the policy waits, and their
//     coming back heals the cluster, with no recovery); then two destroyed (recovered from
//     the survivor without approval); then all three (recovered from the newest backup).
var _ = Describe("quorum-loss recovery", func() {
	It("recovers from the surviving member after approval, keeping every acknowledged write", longestSpec(125), func(ctx SpecContext) {
		ns, c := quorumCluster(ctx, etcdv1alpha1.QuorumLossManual)
		acked, floor := writeAcknowledged(ctx, ns, "q", "round-1/", 200)

		survivor, victims := destroyTwo(ctx, c)
		survivorPod := get(ctx, ns, survivor, &corev1.Pod{})

		By("Manual: the loss is declared after 30 s, and nothing is done before approval")
		var rec *etcdv1alpha1.RecoveryStatus
		Eventually(func(g Gomega) {
			got := get(ctx, ns, "q", &etcdv1alpha1.EtcdCluster{})
			rec = got.Status.Recovery
			g.Expect(rec).NotTo(BeNil())
			g.Expect(rec.Phase).To(Equal(etcdv1alpha1.RecoveryAwaitingApproval), rec.Message)
			degraded := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonRecoveryAwaitingApproval))
			g.Expect(degraded.Message).To(ContainSubstring(etcdv1alpha1.AnnotationApproveRecovery + "=" + rec.ID))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(rec.Survivor).To(Equal(survivor))
		// Both victims: they stopped together (destroy), so neither could be replaced first.
		Expect(rec.LostMembers).To(ConsistOf(victims), "the lost members are the victims")
		Consistently(func(g Gomega) {
			g.Expect(get(ctx, ns, survivor, &corev1.Pod{}).UID).To(Equal(survivorPod.UID), "the survivor is not touched before approval")
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		// The operator's alert on the loss it confirmed, and etcd's own on the survivor that
		// has no leader: the cluster's rule group reaches Prometheus a minute or more after
		// the cluster is made, and the loss stays until approval, so it is waited for.
		Eventually(func(g Gomega) {
			g.Expect(promAlertStates(ctx, g, "EtcdClusterQuorumLost", fmt.Sprintf(`namespace=%q, name="q"`, ns))).NotTo(BeEmpty(),
				"the shipped alert on the loss the operator confirmed")
			g.Expect(promAlertStates(ctx, g, "etcdNoLeader", fmt.Sprintf(`namespace=%q, etcd_cluster="q", pod=%q`, ns, survivor))).NotTo(BeEmpty(),
				"etcd's alert on the survivor, which has no leader")
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("approving recovery " + rec.ID)
		got := get(ctx, ns, "q", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(got.DeepCopy())
		got.Annotations = map[string]string{etcdv1alpha1.AnnotationApproveRecovery: rec.ID}
		Expect(k8sClient.Patch(ctx, got, patch)).To(Succeed())
		rec = expectRecovered(ctx, c, acked, "", floor)
		Expect(rec.Survivor).To(Equal(survivor))
		Expect(rec.Snapshot).To(Equal("recovery-" + rec.ID + ".db"))
	})

	It("under Automatic, waits for members whose data is kept, and recovers without approval from the survivor or the newest backup when the data is gone", longestSpec(320), func(ctx SpecContext) {
		ns, c := quorumCluster(ctx, etcdv1alpha1.QuorumLossAutomatic)
		acked, floor := writeAcknowledged(ctx, ns, "q", "round-1/", 200)

		By("two members down with their data kept: the operator waits, and the members coming back heal the cluster")
		expectHealedWithoutRecovery(ctx, c, acked, floor)

		By("two members destroyed: recovered from the survivor without approval")
		c = waitReady(ctx, c)
		round2, floor := writeAcknowledged(ctx, ns, "q", "round-2/", 200)
		for k, v := range round2 {
			acked[k] = v
		}
		survivor, _ := destroyTwo(ctx, c)
		rec := expectRecovered(ctx, c, acked, "", floor)
		Expect(rec.Survivor).To(Equal(survivor))

		By("every member destroyed: recovered from the newest backup")
		waitReady(ctx, c)
		createClaim(ctx, ns, "backups")
		createBackup(ctx, ns, "before-loss", "q", etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups"}},
			etcdv1alpha1.BackupDeletionPolicyRetain)
		backup := waitBackupFinished(ctx, ns, "before-loss", 3*time.Minute)
		expectBackupSucceeded(backup)
		c = get(ctx, ns, "q", &etcdv1alpha1.EtcdCluster{})
		var all []string
		for _, m := range c.Status.Members {
			all = append(all, m.Name)
		}
		destroy(ctx, c, all)
		rec = expectRecovered(ctx, c, acked, rec.ID, backup.Status.Snapshot.Revision)
		Expect(rec.Backup).To(Equal("before-loss"))
	})
})

// quorumCluster creates a Ready 3-member cluster "q" in a new namespace, whose lost quorum
// is declared after 30 s and recovered by policy.
func quorumCluster(ctx context.Context, policy etcdv1alpha1.QuorumLossPolicy) (string, *etcdv1alpha1.EtcdCluster) {
	ns := newTestNamespace(ctx, "e2e-quorum-")
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "q", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
			QuorumLossRecovery: etcdv1alpha1.QuorumLossRecoverySpec{Policy: policy, After: &metav1.Duration{Duration: 30 * time.Second}}}}
	ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
	return ns, waitReady(ctx, c)
}

// expectHealedWithoutRecovery holds two of the three members of c down with their data kept
// (their pods deleted, and a ResourceQuota of one pod refusing new ones) and checks what
// the documented policy says of it under Automatic: the loss is declared but not acted on,
// since those members may come back, and nothing of the survivor is touched. Once the quota
// is gone, the operator starts the two again, they rejoin with their data, and the cluster
// is back with the same members, every acknowledged write, and revisions going on from
// floor (no recovery raised them).
func expectHealedWithoutRecovery(ctx context.Context, c *etcdv1alpha1.EtcdCluster, acked map[string]string, floor int64) {
	ns := c.Namespace
	before := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
	release := holdPodsDown(ctx, ns, 1)
	var survivor string
	for _, m := range before.Status.Members {
		if survivor == "" && !m.Leader {
			survivor = m.Name
			continue
		}
		ExpectWithOffset(1, k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: m.Name, Namespace: ns}})).To(Succeed())
	}
	survivorPod := get(ctx, ns, survivor, &corev1.Pod{})

	EventuallyWithOffset(1, func(g Gomega) {
		rec := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{}).Status.Recovery
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.Phase).To(Equal(etcdv1alpha1.RecoveryAwaitingApproval), rec.Message)
		g.Expect(rec.Message).To(ContainSubstring("the data of members that do not answer still exists and may come back"))
		g.Expect(rec.Survivor).To(Equal(survivor))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	cli := etcdV3Client(ctx, ns, c.Name)
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	_, err := cli.Put(pctx, "during-the-loss", "refused")
	cancel()
	ExpectWithOffset(1, err).To(HaveOccurred(), "a client sees the quorum lost: its write is refused")
	ConsistentlyWithOffset(1, func(g Gomega) {
		g.Expect(get(ctx, ns, survivor, &corev1.Pod{}).UID).To(Equal(survivorPod.UID), "nothing is done to the survivor")
		g.Expect(get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{}).Status.Recovery.Phase).To(Equal(etcdv1alpha1.RecoveryAwaitingApproval))
	}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())

	release()
	after := waitReady(ctx, c)
	ExpectWithOffset(1, memberIDs(after)).To(Equal(memberIDs(before)), "the same members, none replaced")
	ExpectWithOffset(1, after.Status.Recovery).To(BeNil(), "no recovery ran")
	ExpectWithOffset(1, get(ctx, ns, survivor, &corev1.Pod{}).UID).To(Equal(survivorPod.UID), "the survivor kept running")
	got := map[string]string{}
	for k, v := range keysUnder(ctx, cli, "round-1/") {
		got[k] = v
	}
	ExpectWithOffset(1, got).To(Equal(acked), "every acknowledged write is there")
	put, err := cli.Put(ctx, "after-the-loss", "v")
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, put.Header.Revision).To(SatisfyAll(BeNumerically(">", floor), BeNumerically("<", floor+1000)),
		"revisions go on from the data's: nothing was restored")
}

// writeAcknowledged writes n keys under prefix through the client Service's members and
// returns those etcd acknowledged, with their values, and the revision of the last one.
func writeAcknowledged(ctx context.Context, ns, name, prefix string, n int) (map[string]string, int64) {
	cli := etcdV3Client(ctx, ns, name)
	acked := map[string]string{}
	var revision int64
	for i := range n {
		k, v := fmt.Sprintf("%skey-%04d", prefix, i), fmt.Sprintf("value-%d-%d", i, time.Now().UnixNano())
		if put, err := cli.Put(ctx, k, v); err == nil {
			acked[k], revision = v, put.Header.Revision
		}
	}
	ExpectWithOffset(1, acked).To(HaveLen(n), "a healthy cluster acknowledges every write")
	return acked, revision
}

// destroyTwo destroys two of the three members (the leader among them) and returns the
// third, and the two.
func destroyTwo(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (survivor string, victims []string) {
	c = get(ctx, c.Namespace, c.Name, &etcdv1alpha1.EtcdCluster{})
	ExpectWithOffset(1, c.Status.Members).To(HaveLen(3))
	for _, m := range c.Status.Members {
		if survivor == "" && !m.Leader {
			survivor = m.Name
		} else {
			victims = append(victims, m.Name)
		}
	}
	ExpectWithOffset(1, victims).To(HaveLen(2))
	By(fmt.Sprintf("destroying members %v; %s survives", victims, survivor))
	destroy(ctx, c, victims)
	return survivor, victims
}

// destroy destroys victims together (framework.DestroyMembers): each stops while its data
// still exists, then their data goes.
func destroy(ctx context.Context, c *etcdv1alpha1.EtcdCluster, victims []string) {
	ExpectWithOffset(2, fw.DestroyMembers(ctx, c, victims)).To(Succeed())
}

// holdPodsDown creates a ResourceQuota that lets namespace run at most pods pods, and
// returns what deletes it (also done at the spec's end). A pod the operator makes beyond it
// is refused.
func holdPodsDown(ctx context.Context, namespace string, pods int) (release func()) {
	quota := &corev1.ResourceQuota{ObjectMeta: metav1.ObjectMeta{Name: "hold-members-down", Namespace: namespace},
		Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(int64(pods), resource.DecimalSI)}}}
	ExpectWithOffset(2, k8sClient.Create(ctx, quota)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = client.IgnoreNotFound(k8sClient.Delete(ctx, quota)) })
	return func() { ExpectWithOffset(2, k8sClient.Delete(ctx, quota)).To(Succeed()) }
}

// expectRecovered waits for a recovery other than last to end with the cluster Ready at three members,
// then checks every acknowledged write and that revisions were raised: the recovered data
// held at least revision floor (the last acknowledged write, or the backup's revision), so
// a write after the recovery lands beyond floor plus a bump that is not zero. It returns
// the recovery.
func expectRecovered(ctx context.Context, c *etcdv1alpha1.EtcdCluster, acked map[string]string, last string, floor int64) *etcdv1alpha1.RecoveryStatus {
	var rec *etcdv1alpha1.RecoveryStatus
	EventuallyWithOffset(1, func(g Gomega) {
		got := get(ctx, c.Namespace, c.Name, &etcdv1alpha1.EtcdCluster{})
		rec = got.Status.Recovery
		g.Expect(rec).NotTo(BeNil())
		g.Expect(rec.ID).NotTo(Equal(last), "a new recovery")
		g.Expect(rec.Phase).To(Equal(etcdv1alpha1.RecoverySucceeded), rec.Message)
		ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
	}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	after := waitReady(ctx, c)
	ExpectWithOffset(1, after.Status.Members).To(HaveLen(3))

	cli := etcdV3Client(ctx, c.Namespace, c.Name)
	got := map[string]string{}
	for _, prefix := range []string{"round-1/", "round-2/"} {
		for k, v := range keysUnder(ctx, cli, prefix) {
			got[k] = v
		}
	}
	ExpectWithOffset(1, got).To(Equal(acked), "every acknowledged write survives")
	put, err := cli.Put(ctx, "after-recovery", rec.ID)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, floor).To(BeNumerically(">", 1), "the data held writes before the loss")
	ExpectWithOffset(1, rec.RevisionBump).To(BeNumerically(">", 0), "the recovery raises revisions")
	ExpectWithOffset(1, put.Header.Revision).To(BeNumerically(">", floor+rec.RevisionBump),
		"revisions are raised past those the data held, so watchers re-list")
	return rec
}
