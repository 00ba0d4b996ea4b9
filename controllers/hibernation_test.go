package controllers_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// spec.hibernation: the final backup to its destination first, no member stopped while it
// runs; then every member's pod goes, followers first and the leader (hb-0) last, the claims
// stay, and the status says Hibernated. Woken, every member comes back on its claim.
func TestHibernationBacksUpThenStopsEveryMemberLeaderLast(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	dest := s3WithCredentials(g, ns)
	readyCluster(g, ns, "hb", nil)
	before := podUIDs(g, ns)
	// A finalizer holds each stopped pod Terminating until the test lets it go, as a
	// kubelet would while etcd shuts down: the next member must wait for it.
	for name := range before {
		pod := get(g, ns, name, &corev1.Pod{})
		pod.Finalizers = append(pod.Finalizers, holdFinalizer)
		g.Expect(k8sClient.Update(ctx, pod)).To(Succeed())
	}

	var gen int64
	g.Eventually(func(g Gomega) {
		c := get(g, ns, "hb", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Hibernation = etcdv1alpha1.HibernationSpec{Enabled: true, BackupDestination: dest.DeepCopy()}
		g.Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
		gen = c.Generation
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	name := "hb-hibernation-" + strconv.FormatInt(gen, 10)
	b := &etcdv1alpha1.EtcdBackup{}
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) {
		get(g, ns, name, b)
		get(g, ns, name+"-backup", job)
		got := get(g, ns, "hb", &etcdv1alpha1.EtcdCluster{})
		h := condition(got, etcdv1alpha1.ConditionHibernated)
		g.Expect(h.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(h.Message).To(ContainSubstring("waiting for the final backup " + name))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(b.Spec.Destination).To(Equal(dest))
	g.Expect(b.OwnerReferences).To(BeEmpty(), "the final backup outlives the cluster")
	g.Expect(podUIDs(g, ns)).To(Equal(before), "no member stops before the final backup succeeded")

	finishAgentPod(g, job, 0, result.Result{SHA256: "0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a", Size: 1, SnapshotSize: 2,
		Revision: 42, EtcdVersion: "3.7.3", Member: "hb-0", Compression: "zstd"})
	var order []string
	for range 3 {
		var stopping string
		g.Eventually(func(g Gomega) {
			stopping = ""
			for name := range before {
				pod := &corev1.Pod{}
				if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err == nil && !pod.DeletionTimestamp.IsZero() {
					g.Expect(stopping).To(BeEmpty(), "one member stops at a time")
					stopping = name
				}
			}
			g.Expect(stopping).NotTo(BeEmpty())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		g.Consistently(func(g Gomega) []string { return terminating(g, ns) }).WithTimeout(time.Second).WithPolling(interval).Should(Equal([]string{stopping}),
			"no other member stops while %s has not stopped", stopping)
		order = append(order, stopping)
		pod := get(g, ns, stopping, &corev1.Pod{})
		pod.Finalizers = nil
		g.Expect(k8sClient.Update(ctx, pod)).To(Succeed())
		delete(before, stopping)
	}
	g.Expect(order).To(Equal([]string{"hb-2", "hb-1", "hb-0"}), "followers first, the leader (hb-0) last")
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hb", &etcdv1alpha1.EtcdCluster{})
		h := condition(got, etcdv1alpha1.ConditionHibernated)
		g.Expect(h.Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
		g.Expect(h.Message).To(ContainSubstring("the final backup is EtcdBackup " + name))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Reason).To(Equal(etcdv1alpha1.ReasonHibernated))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(memberPods(g, ns)).To(BeEmpty())
	var claims corev1.PersistentVolumeClaimList
	g.Expect(k8sClient.List(ctx, &claims, client.InNamespace(ns))).To(Succeed())
	g.Expect(claims.Items).To(HaveLen(3), "the claims keep the data")
	g.Eventually(func(g Gomega) error {
		return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "hb"}, &policyv1.PodDisruptionBudget{})
	}).WithTimeout(timeout).WithPolling(interval).Should(MatchError(ContainSubstring("not found")), "no budget for members stopped on purpose")

	g.Eventually(func(g Gomega) {
		c := get(g, ns, "hb", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Hibernation.Enabled = false
		g.Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		podsReady(g, ns)
		g.Expect(memberPods(g, ns)).To(ConsistOf("hb-0", "hb-1", "hb-2"))
		got := get(g, ns, "hb", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
		g.Expect(got.Status.Conditions).NotTo(ContainElement(HaveField("Type", etcdv1alpha1.ConditionHibernated)))
		get(g, ns, "hb", &policyv1.PodDisruptionBudget{})
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElements("FinalBackupCreated", "Hibernated", "Waking"))
}

// memberPods are the names of the namespace's member pods that are not being deleted, and
// terminating those that are.
func memberPods(g Gomega, ns string) []string  { return memberPodNames(g, ns, false) }
func terminating(g Gomega, ns string) []string { return memberPodNames(g, ns, true) }

func memberPodNames(g Gomega, ns string, deleting bool) []string {
	var pods corev1.PodList
	g.Expect(k8sClient.List(context.Background(), &pods, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, p := range pods.Items {
		if p.Labels[cluster.LabelMember] != "" && p.DeletionTimestamp.IsZero() != deleting {
			out = append(out, p.Name)
		}
	}
	return out
}

// holdFinalizer keeps a deleted pod Terminating until the test removes it.
const holdFinalizer = "test.etcdpilot.io/hold"

// A schedule of a hibernating cluster skips its runs, saying why, and records them as acted
// on, so that waking does not bring a burst of backups. Serial: it moves scheduleClock.
func TestAScheduleSkipsTheRunsOfAHibernatingCluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "sleepy", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Hibernation: etcdv1alpha1.HibernationSpec{Enabled: true}}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())
	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupScheduleSpec{Schedule: "0 * * * *",
			BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: "sleepy", Destination: newBackup(ns, "", "").Spec.Destination}}}
	scheduleClock.set(time.Now())
	g.Expect(k8sClient.Create(ctx, s)).To(Succeed())
	firstRun := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{}).CreationTimestamp.UTC().Truncate(time.Hour).Add(time.Hour)

	scheduleClock.set(firstRun.Add(time.Minute))
	touchSchedule(g, ns, "hourly")
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{})
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.LastScheduleTime.UTC()).To(Equal(firstRun), "the run is acted on: waking brings no burst")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement("RunSkipped"))
	var backups etcdv1alpha1.EtcdBackupList
	g.Expect(k8sClient.List(ctx, &backups, client.InNamespace(ns))).To(Succeed())
	g.Expect(backups.Items).To(BeEmpty(), "no backup of stopped members")
}
