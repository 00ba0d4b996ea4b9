package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// With spec.upgradeBackupDestination, the snapshot before an upgrade is an EtcdBackup to
// that destination: created, waited for (no member restarts meanwhile), recorded in
// status.upgrade.snapshot; only then does the upgrade go on.
func TestAnUpgradeBacksUpToTheDestinationBeforeTheFirstRestart(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	dest := s3WithCredentials(g, ns)
	f := readyCluster(g, ns, "up", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Version = "3.6.16"
		c.Spec.UpgradeBackupDestination = dest.DeepCopy()
	})
	for i := range uint64(3) { // the members report the release they run
		f.SetStatus(memberURL(ns, "up", i, 2379), etcd.MemberStatus{MemberID: i + 1, LeaderID: f.Leader(), Version: "3.6.16"})
	}
	before := podUIDs(g, ns)
	f.ResetCalls()

	g.Eventually(func(g Gomega) {
		c := get(g, ns, "up", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Version = "3.7.3"
		g.Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// The backup, to the destination, and its Job; no member restarted while it runs.
	b := &etcdv1alpha1.EtcdBackup{}
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) {
		get(g, ns, "up-pre-upgrade-3-7-3", b)
		get(g, ns, "up-pre-upgrade-3-7-3-backup", job)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(b.Spec.ClusterName).To(Equal("up"))
	g.Expect(b.Spec.Destination).To(Equal(dest))
	g.Expect(b.OwnerReferences).To(BeEmpty(), "the backup outlives the upgrade and the cluster")
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "up", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Message).To(ContainSubstring("waiting for EtcdBackup up-pre-upgrade-3-7-3"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(podUIDs(g, ns)).To(Equal(before), "no member restarted before the backup succeeded")
	g.Expect(calls(f, fake.AppendNoOps)).To(BeEmpty())

	// Once it succeeded: recorded as the upgrade's snapshot, and the upgrade goes on.
	finishAgentPod(g, job, 0, result.Result{SHA256: "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", Size: 1, SnapshotSize: 2,
		Revision: 42, EtcdVersion: "3.6.16", Member: "up-1", Compression: "zstd"})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "up", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Upgrade).NotTo(BeNil())
		g.Expect(got.Status.Upgrade.Snapshot).NotTo(BeNil())
		g.Expect(got.Status.Upgrade.Snapshot.Backup).To(Equal("up-pre-upgrade-3-7-3"))
		g.Expect(got.Status.Upgrade.Snapshot.Member).To(BeEmpty())
		g.Expect(got.Status.Upgrade.FromVersion).To(Equal("3.6.16"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return calls(f, fake.AppendNoOps) }).WithTimeout(timeout).ShouldNot(BeEmpty(),
		"going to 3.7, the raft snapshots come next")
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElements("UpgradeBackupCreated", "SnapshotTaken"))
}

// s3WithCredentials is an S3 destination of the namespace with its credentials Secret, which a
// backup needs before its Job is made.
func s3WithCredentials(g Gomega, ns string) etcdv1alpha1.BackupDestination {
	g.Expect(k8sClient.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns},
		Data: map[string][]byte{"accessKeyID": []byte("id"), "secretAccessKey": []byte("secret")}})).To(Succeed())
	return newBackup(ns, "unused", "any").Spec.Destination
}
