package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
)

// verifiedCondition is the backup's Verified condition, empty when absent.
func verifiedCondition(b *etcdv1alpha1.EtcdBackup) metav1.Condition {
	if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// succeedBackup plays the backup Job of backup name: the agent stored the artifact of a
// snapshot at revision 42 holding 7 keys with hash 1f2e.
func succeedBackup(g Gomega, ns, name string) {
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, name+"-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	finishAgentPod(g, job, 0, result.Result{SHA256: strings.Repeat("0a", 32), Size: 1234, SnapshotSize: 9999, Revision: 42,
		EtcdVersion: "3.7.3", MemberID: "1f", ClusterID: "2e", Member: "src-1", Compression: "zstd",
		Keys: ptr.To[int64](7), KVHash: "1f2e", HashCompactRevision: 30})
	g.Eventually(func(g Gomega) {
		g.Expect(backupCondition(get(g, ns, name, &etcdv1alpha1.EtcdBackup{})).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// failRestore plays the kubelet for a verification Job whose restore init container failed
// with res: the pod fails there, its member and check never start.
func failRestore(g Gomega, job *batchv1.Job, res result.Result) {
	endAgentPod(g, job, corev1.PodFailed, func(pod *corev1.Pod, ended corev1.ContainerStatus) {
		ended.Name, ended.State.Terminated.ExitCode = "restore", 1
		pod.Status.InitContainerStatuses = []corev1.ContainerStatus{ended}
	}, res)
}

func TestAVerifiedBackupIsRestoredIntoAThrowawayMemberAndChecked(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	b := newBackup(ns, "checked", "src")
	b.Spec.Verify = true
	g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
	succeedBackup(g, ns, "checked")

	// What the backup recorded goes to the verification Job.
	got := get(g, ns, "checked", &etcdv1alpha1.EtcdBackup{})
	g.Expect(got.Status.Snapshot.Keys).To(HaveValue(Equal(int64(7))))
	g.Expect(got.Status.Snapshot.KVHash).To(Equal("1f2e"))
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "checked-verify", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(job.Spec.Template.Spec.Containers[0].Args).To(ContainElements("agent", "check", "--sha256="+strings.Repeat("0a", 32),
		"--revision=42", "--keys=7", "--kv-hash=1f2e", "--hash-compact-revision=30"))
	g.Expect(job.Spec.Template.Spec.InitContainers[0].Args).To(ContainElements("agent", "restore", "--key="+got.Status.Artifact.Key))
	g.Expect(job.Spec.Template.Spec.InitContainers[1].Image).To(Equal(testImageRepository+":v3.7.3"), "a member of the backup's release")
	g.Eventually(func(g Gomega) {
		v := verifiedCondition(get(g, ns, "checked", &etcdv1alpha1.EtcdBackup{}))
		g.Expect(v.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(v.Reason).To(Equal(etcdv1alpha1.ReasonVerifying))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	finishAgentPod(g, job, 0, result.Result{SHA256: strings.Repeat("0a", 32), Size: 1234, SnapshotSize: 9999, Compression: "zstd",
		Revision: 42, RestoredRevision: 43, Keys: ptr.To[int64](7), KVHash: "1f2e", HashCompactRevision: 30, KeysChecked: true, HashChecked: true})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "checked", &etcdv1alpha1.EtcdBackup{})
		v := verifiedCondition(got)
		g.Expect(v.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(v.Reason).To(Equal(etcdv1alpha1.ReasonVerificationPassed))
		g.Expect(v.Message).To(ContainSubstring("restored into a throwaway member at revision 43 (the backup recorded 42); at revision 42 its key count and hash are the ones the backup recorded"))
		g.Expect(got.Status.Verification).NotTo(BeNil())
		g.Expect(got.Status.Verification.RestoredRevision).To(Equal(int64(43)))
		g.Expect(got.Status.Verification.Keys).To(HaveValue(Equal(int64(7))))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElements("VerificationStarted", "BackupVerified"))
	g.Eventually(func(g Gomega) float64 {
		return metricValue(g, "etcdpilot_backup_verifications_total", clusterSeries(ns, "src", "outcome", "passed"))
	}).WithTimeout(timeout).Should(Equal(1.0))
}

func TestABackupThatDoesNotVerifyIsNotReadyAndSaysWhy(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	// Taken without verification; verified on demand afterwards.
	g.Expect(k8sClient.Create(ctx, newBackup(ns, "tampered", "src"))).To(Succeed())
	succeedBackup(g, ns, "tampered")
	g.Consistently(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "tampered-verify"}, &batchv1.Job{})).NotTo(Succeed())
	}).WithTimeout(2*time.Second).Should(Succeed(), "no verification unless asked")
	b := get(g, ns, "tampered", &etcdv1alpha1.EtcdBackup{})
	patch := client.MergeFrom(b.DeepCopy())
	b.Spec.Verify = true
	g.Expect(k8sClient.Patch(ctx, b, patch)).To(Succeed())

	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "tampered-verify", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	failRestore(g, job, result.Result{Reason: result.ReasonChecksumMismatch,
		Error: "artifact s3://backups/x has sha256 ffff, expected 0a0a: refusing to restore a corrupt or different backup"})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "tampered", &etcdv1alpha1.EtcdBackup{})
		v := verifiedCondition(got)
		g.Expect(v.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(v.Reason).To(Equal(result.ReasonChecksumMismatch))
		ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Message).To(ContainSubstring("the backup did not verify: artifact s3://backups/x has sha256 ffff"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement("BackupVerificationFailed"))
	g.Eventually(func(g Gomega) float64 {
		return metricValue(g, "etcdpilot_backup_verifications_total", clusterSeries(ns, "src", "outcome", "failed"))
	}).WithTimeout(timeout).Should(Equal(1.0))
}
