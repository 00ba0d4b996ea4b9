package controllers_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
)

// The backup, schedule and restore controllers on envtest. There is no kubelet and no Job
// controller: the tests play the backup pod, writing the agent's result as its
// termination message, as the kubelet would.

const testAgentImage = "quay.io/etcdpilot/etcdpilot:test"

// settableClock is the schedule controller's clock: tests move it forward.
type settableClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *settableClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *settableClock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.offset = time.Until(t)
}

var scheduleClock = &settableClock{}

func backupCondition(b *etcdv1alpha1.EtcdBackup) metav1.Condition {
	if c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// clusterWithMembers creates an EtcdCluster whose (fake) etcd has three members, name-2
// unhealthy, and the S3 credentials Secret.
func clusterWithMembers(g Gomega, ns, name string) {
	ctx := context.Background()
	member := func(id uint64) etcd.Member {
		return etcd.Member{ID: id + 1, Name: fmt.Sprintf("%s-%d", name, id),
			PeerURLs: []string{memberURL(ns, name, id, 2380)}, ClientURLs: []string{memberURL(ns, name, id, 2379)}}
	}
	f := fake.New(member(0), member(1), member(2))
	// name-2 answers its status with an error, as a member that lost its leader does: the
	// operator's health check fails, and so does the agent's.
	f.SetStatus(memberURL(ns, name, 2, 2379), etcd.MemberStatus{MemberID: 3, Errors: []string{"down"}})
	f.SetHealthError(memberURL(ns, name, 2, 2379), errors.New("down"))
	fakeEtcd.register(ns, f)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		// No kubelet: the test makes the member pods Ready as they appear.
		var pods corev1.PodList
		g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for _, p := range pods.Items {
			markPodReady(g, ns, p.Name)
		}
		got := get(g, ns, name, &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Members).To(HaveLen(3))
		g.Expect(got.Status.Members[0].Healthy).To(BeTrue())
		g.Expect(got.Status.Members[2].Healthy).To(BeFalse())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(k8sClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns},
		Data: map[string][]byte{"accessKeyID": []byte("id"), "secretAccessKey": []byte("secret")}})).To(Succeed())
}

func memberURL(ns, cluster string, ordinal uint64, port int) string {
	return fmt.Sprintf("https://%s-%d.%s-peer.%s.svc:%d", cluster, ordinal, cluster, ns, port)
}

func newBackup(ns, name, cluster string) *etcdv1alpha1.EtcdBackup {
	return &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: cluster, Destination: etcdv1alpha1.BackupDestination{
			S3: &etcdv1alpha1.S3Destination{S3Bucket: etcdv1alpha1.S3Bucket{
				Endpoint: "http://s3.example:9000", Bucket: "backups", CredentialsSecretName: "s3", ForcePathStyle: true}, Prefix: "etcd"}}}}
}

// finishAgentPod plays the kubelet: it creates the pod of job (as the Job controller
// would) with the agent's container terminated with exitCode and the result as its
// termination message, then touches the Job so the operator looks again.
func finishAgentPod(g Gomega, job *batchv1.Job, exitCode int32, res result.Result) {
	endAgentPod(g, job, corev1.PodSucceeded, func(pod *corev1.Pod, ended corev1.ContainerStatus) {
		ended.Name, ended.State.Terminated.ExitCode = "agent", exitCode
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{ended}
	}, res)
}

// endAgentPod creates job's pod (with the labels of its template, which the operator's
// cache selects) and gives it phase and, through set, the status of the container that
// ended with res as its termination message; then it touches the Job.
func endAgentPod(g Gomega, job *batchv1.Job, phase corev1.PodPhase, set func(*corev1.Pod, corev1.ContainerStatus), res result.Result) {
	ctx := context.Background()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: job.Name + "-x", Namespace: job.Namespace,
		Labels: map[string]string{}}, Spec: *job.Spec.Template.Spec.DeepCopy()}
	for k, v := range job.Spec.Template.Labels {
		pod.Labels[k] = v
	}
	pod.Labels[batchv1.JobNameLabel] = job.Name
	g.Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	msg, err := json.Marshal(res)
	g.Expect(err).NotTo(HaveOccurred())
	set(pod, corev1.ContainerStatus{Image: testAgentImage, ImageID: testAgentImage,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: string(msg),
			StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}})
	pod.Status.Phase = phase
	g.Expect(k8sClient.Status().Update(ctx, pod)).To(Succeed())
	patch := client.MergeFrom(job.DeepCopy())
	job.Annotations = map[string]string{"test/touched": "true"}
	g.Expect(k8sClient.Patch(ctx, job, patch)).To(Succeed())
}

func TestBackupRunsTheAgentAndRecordsItsResult(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	b := newBackup(ns, "manual", "src")
	g.Expect(k8sClient.Create(ctx, b)).To(Succeed())

	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) {
		get(g, ns, "manual-backup", job)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	args := job.Spec.Template.Spec.Containers[0].Args
	g.Expect(job.Spec.Template.Spec.Containers[0].Image).To(Equal(testAgentImage))
	var endpoints string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--endpoints="); ok {
			endpoints = v
		}
	}
	g.Expect(strings.Split(endpoints, ",")).To(ContainElement("src-0=" + memberURL(ns, "src", 0, 2379)))
	g.Expect(endpoints).NotTo(ContainSubstring("src-2"), "an unhealthy member is not asked for a snapshot")
	var key string
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--key="); ok {
			key = v
		}
	}
	g.Expect(key).To(MatchRegexp(`^etcd/` + ns + `/src/\d{8}T\d{6}Z-manual\.db\.zst$`))
	g.Expect(args).To(ContainElement("--compression=zstd"), "the default")
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "manual", &etcdv1alpha1.EtcdBackup{})
		g.Expect(backupCondition(got).Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(backupCondition(got).Reason).To(Equal(etcdv1alpha1.ReasonBackupPending))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	sum := strings.Repeat("0a", 32)
	finishAgentPod(g, job, 0, result.Result{SHA256: sum, Size: 1234, SnapshotSize: 9999, Revision: 42,
		EtcdVersion: "3.7.3", MemberID: "1f", ClusterID: "2e", Member: "src-1", Compression: "zstd", StreamSeconds: 2})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "manual", &etcdv1alpha1.EtcdBackup{})
		cond := backupCondition(got)
		g.Expect(cond.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(cond.Reason).To(Equal(etcdv1alpha1.ReasonBackupCompleted))
		g.Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue())
		g.Expect(got.Status.CompletedAt).NotTo(BeNil())
		g.Expect(got.Status.Artifact).To(Equal(&etcdv1alpha1.BackupArtifact{
			Location: "s3://backups/" + key, Key: key, Compression: "zstd", SHA256: sum, Size: 1234, SnapshotSize: 9999}))
		g.Expect(got.Status.Snapshot).To(Equal(&etcdv1alpha1.BackupSnapshot{
			Member: "src-1", MemberID: "1f", Revision: 42, EtcdVersion: "3.7.3", ClusterID: "2e"}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// TestBackupOfAnOlderAgentRecordsGzip: a Job started by an operator before the compression
// could be chosen runs an agent that writes gzip to a .db.gz key and does not say so. The
// status records what it wrote, not what the (defaulted) spec says.
func TestBackupOfAnOlderAgentRecordsGzip(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "legacy")
	g.Expect(k8sClient.Create(context.Background(), newBackup(ns, "old", "legacy"))).To(Succeed())
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "old-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	sum := strings.Repeat("0b", 32)
	finishAgentPod(g, job, 0, result.Result{SHA256: sum, Size: 1, SnapshotSize: 2, Revision: 3, Member: "legacy-0"})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "old", &etcdv1alpha1.EtcdBackup{})
		g.Expect(backupCondition(got).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.Artifact.Compression).To(Equal(etcdv1alpha1.BackupCompressionGzip))
		g.Expect(got.Status.Artifact.Key).To(MatchRegexp(`^etcd/` + ns + `/legacy/\d{8}T\d{6}Z-old\.db\.gz$`))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func TestBackupFailuresEndTheBackupWithTheReason(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(NewWithT(t), ns, "src")

	expectFailed := func(g Gomega, name, reason, message string) {
		g.Eventually(func(g Gomega) {
			got := get(g, ns, name, &etcdv1alpha1.EtcdBackup{})
			cond := backupCondition(got)
			g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(cond.Reason).To(Equal(reason))
			g.Expect(cond.Message).To(ContainSubstring(message))
			g.Expect(got.Status.Artifact).To(BeNil())
			g.Expect(got.Status.CompletedAt).NotTo(BeNil())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	}

	t.Run("no such cluster", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Create(ctx, newBackup(ns, "orphan", "nowhere"))).To(Succeed())
		expectFailed(g, "orphan", etcdv1alpha1.ReasonClusterNotFound, "EtcdCluster nowhere does not exist")
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "orphan-backup"}, &batchv1.Job{}))).To(BeTrue())
	})
	t.Run("no credentials Secret", func(t *testing.T) {
		g := NewWithT(t)
		b := newBackup(ns, "nocreds", "src")
		b.Spec.Destination.S3.CredentialsSecretName = "missing"
		g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
		expectFailed(g, "nocreds", etcdv1alpha1.ReasonCredentialsNotFound, "Secret missing does not exist")
	})
	t.Run("no claim", func(t *testing.T) {
		g := NewWithT(t)
		b := newBackup(ns, "noclaim", "src")
		b.Spec.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups"}}
		g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
		expectFailed(g, "noclaim", etcdv1alpha1.ReasonDestinationNotFound, "PersistentVolumeClaim backups does not exist")
	})
	t.Run("the agent reports the store unreachable", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Create(ctx, newBackup(ns, "down", "src"))).To(Succeed())
		job := &batchv1.Job{}
		g.Eventually(func(g Gomega) { get(g, ns, "down-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		finishAgentPod(g, job, 1, result.Result{Reason: etcdv1alpha1.ReasonDestinationUnreachable, Error: "dial tcp: connection refused"})
		expectFailed(g, "down", etcdv1alpha1.ReasonDestinationUnreachable, "connection refused")

		// Finished is final: a later look at the Job changes nothing.
		before := get(g, ns, "down", &etcdv1alpha1.EtcdBackup{}).Status
		g.Consistently(func(g Gomega) {
			g.Expect(get(g, ns, "down", &etcdv1alpha1.EtcdBackup{}).Status).To(Equal(before))
		}).WithTimeout(time.Second).WithPolling(interval).Should(Succeed())
	})
	t.Run("the agent dies without a result", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(k8sClient.Create(ctx, newBackup(ns, "killed", "src"))).To(Succeed())
		job := &batchv1.Job{}
		g.Eventually(func(g Gomega) { get(g, ns, "killed-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		finishAgentPod(g, job, 137, result.Result{})
		expectFailed(g, "killed", etcdv1alpha1.ReasonBackupPodFailed, "exit code 137")
	})
}

// An operator that restarts has lost its counters, and the increments no scrape saw before
// it died; the backup alerts read the timestamps, which its first pass over each finished
// backup sets again. A second reconciler with metrics of its own plays the restarted one.
func TestARestartedOperatorSetsTheBackupTimestampsAgainFromTheFinishedBackups(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	g.Expect(k8sClient.Create(ctx, newBackup(ns, "saved", "src"))).To(Succeed())
	succeedBackup(g, ns, "saved")
	failing := newBackup(ns, "failing", "src")
	failing.Spec.Destination.S3.CredentialsSecretName = "missing"
	g.Expect(k8sClient.Create(ctx, failing)).To(Succeed())
	g.Expect(k8sClient.Create(ctx, newBackup(ns, "orphan", "nowhere"))).To(Succeed())
	completed := map[string]float64{}
	for _, name := range []string{"saved", "failing", "orphan"} {
		g.Eventually(func(g Gomega) {
			got := get(g, ns, name, &etcdv1alpha1.EtcdBackup{})
			g.Expect(backupCondition(got).Status).NotTo(Equal(metav1.ConditionUnknown))
			g.Expect(got.Status.CompletedAt).NotTo(BeNil())
			completed[name] = float64(got.Status.CompletedAt.Unix())
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	}

	reg := prometheus.NewRegistry()
	restarted := &controllers.EtcdBackupReconciler{Client: k8sClient, APIReader: k8sClient, Metrics: metrics.New(reg)}
	for _, name := range []string{"failing", "saved", "orphan"} {
		_, err := restarted.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}})
		g.Expect(err).NotTo(HaveOccurred())
	}
	src := clusterSeries(ns, "src")
	g.Expect(seriesIn(g, reg, "etcdpilot_backup_last_success_timestamp_seconds", src)).To(Equal([]float64{completed["saved"]}))
	g.Expect(seriesIn(g, reg, "etcdpilot_backup_last_size_bytes", src)).To(Equal([]float64{1234}))
	g.Expect(seriesIn(g, reg, "etcdpilot_backup_last_failure_timestamp_seconds", src)).To(Equal([]float64{completed["failing"]}))
	g.Expect(seriesIn(g, reg, "etcdpilot_backup_last_failure_timestamp_seconds", clusterSeries(ns, "nowhere"))).To(BeEmpty(),
		"a backup whose cluster does not exist sets no series")
	n, err := testutil.GatherAndCount(reg, "etcdpilot_backups_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero(), "the restarted operator counts only what ends after its start")
}

func TestDeletingABackupWithDeletionPolicyDeleteDeletesItsArtifactFirst(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	b := newBackup(ns, "doomed", "src")
	b.Spec.DeletionPolicy = etcdv1alpha1.BackupDeletionPolicyDelete
	g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "doomed-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	finishAgentPod(g, job, 0, result.Result{SHA256: strings.Repeat("ab", 32), Size: 1, SnapshotSize: 2, Revision: 3, EtcdVersion: "3.7.3"})
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "doomed", &etcdv1alpha1.EtcdBackup{})
		g.Expect(got.Finalizers).To(ContainElement("etcd.etcdpilot.io/delete-artifact"))
		g.Expect(got.Status.Artifact).NotTo(BeNil())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	g.Expect(k8sClient.Delete(ctx, get(g, ns, "doomed", &etcdv1alpha1.EtcdBackup{}))).To(Succeed())
	del := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "doomed-delete", del) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(del.Spec.Template.Spec.Containers[0].Args[:2]).To(Equal([]string{"agent", "delete"}))
	key := get(g, ns, "doomed", &etcdv1alpha1.EtcdBackup{}).Status.Artifact.Key
	g.Expect(del.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--key=" + key))
	g.Consistently(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "doomed"}, &etcdv1alpha1.EtcdBackup{})).To(Succeed())
	}).WithTimeout(2*time.Second).WithPolling(interval).Should(Succeed(), "the backup stays until its artifact is deleted")

	// The deletion Job succeeds (as the Job controller would record it).
	now := metav1.Now()
	del.Status.StartTime = &now
	del.Status.CompletionTime = &now
	del.Status.Succeeded = 1
	del.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now},
	}
	g.Expect(k8sClient.Status().Update(ctx, del)).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "doomed"}, &etcdv1alpha1.EtcdBackup{}))
	}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue())
}

// A deletion Job that never got a pod, because its namespace began terminating right after
// the API server admitted it, must not hold the backup, and with it the namespace.
func TestABackupLetsItsTerminatingNamespaceGoWhileItsDeletionJobWaitsForAPod(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src")
	b := newBackup(ns, "held", "src")
	b.Spec.DeletionPolicy = etcdv1alpha1.BackupDeletionPolicyDelete
	g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
	succeedBackup(g, ns, "held")

	g.Expect(k8sClient.Delete(ctx, get(g, ns, "held", &etcdv1alpha1.EtcdBackup{}))).To(Succeed())
	g.Eventually(func(g Gomega) { get(g, ns, "held-delete", &batchv1.Job{}) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// envtest runs no Job controller: the deletion Job has no pod, as in a namespace that
	// began terminating right after the Job was admitted; and no namespace controller: the
	// namespace stays Terminating, with the Job in it.
	g.Expect(k8sClient.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())
	g.Eventually(func() bool {
		return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held"}, &etcdv1alpha1.EtcdBackup{}))
	}).WithTimeout(timeout).WithPolling(interval).Should(BeTrue(), "the backup lets its namespace go")
	g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "held-delete"}, &batchv1.Job{})).To(Succeed(),
		"the namespace's deletion, not the operator, removes the Job")
}

func TestScheduleCreatesOneBackupPerRunAndPrunesPerRetention(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "hourly", Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupScheduleSpec{Schedule: "0 * * * *",
			Retention: &etcdv1alpha1.BackupRetention{MaxCount: ptr.To[int32](2)},
			BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: "nowhere", Destination: newBackup(ns, "", "").Spec.Destination,
				Compression: etcdv1alpha1.BackupCompressionGzip, Verify: true}}}
	scheduleClock.set(time.Now())
	g.Expect(k8sClient.Create(ctx, s)).To(Succeed())
	created := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{}).CreationTimestamp.UTC()
	firstRun := created.Truncate(time.Hour).Add(time.Hour)

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{})
		g.Expect(got.Status.NextScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.NextScheduleTime.UTC()).To(Equal(firstRun))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	var list etcdv1alpha1.EtcdBackupList
	g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
	g.Expect(list.Items).To(BeEmpty(), "nothing before the first run")

	names := func(g Gomega) []string {
		var list etcdv1alpha1.EtcdBackupList
		g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/backup-schedule": "hourly"})).To(Succeed())
		var out []string
		for _, b := range list.Items {
			if b.DeletionTimestamp.IsZero() {
				out = append(out, b.Name)
			}
		}
		return out
	}
	touch := func() { touchSchedule(g, ns, "hourly") }
	run := func(n int) string { return fmt.Sprintf("hourly-%d", firstRun.Add(time.Duration(n)*time.Hour).Unix()) }

	// Three hours and a bit later, with the operator seeing only the end: one backup (the
	// latest missed run), not three.
	scheduleClock.set(firstRun.Add(2*time.Hour + 5*time.Minute))
	touch()
	g.Eventually(names).WithTimeout(timeout).WithPolling(interval).Should(ConsistOf(run(2)))
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{})
		g.Expect(got.Status.LastScheduleTime).NotTo(BeNil())
		g.Expect(got.Status.LastScheduleTime.UTC()).To(Equal(firstRun.Add(2 * time.Hour)))
		ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Reason).To(Equal(etcdv1alpha1.ReasonLastBackupFailed), "its cluster does not exist")
		g.Expect(ready.Message).To(ContainSubstring(run(2)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	b := get(g, ns, run(2), &etcdv1alpha1.EtcdBackup{})
	g.Expect(b.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.BackupDeletionPolicyDelete))
	g.Expect(b.Spec.Compression).To(Equal(etcdv1alpha1.BackupCompressionGzip), "from the template")
	g.Expect(b.Spec.Verify).To(BeTrue(), "from the template")
	g.Expect(meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)).To(BeNil(), "a failed backup has nothing to verify")
	g.Expect(b.Annotations).To(HaveKeyWithValue("etcd.etcdpilot.io/scheduled-at", firstRun.Add(2*time.Hour).Format(time.RFC3339)))
	g.Expect(b.OwnerReferences).To(BeEmpty(), "deleting a schedule keeps its backups")

	finished := func(g Gomega) {
		for _, name := range names(g) {
			g.Expect(backupCondition(get(g, ns, name, &etcdv1alpha1.EtcdBackup{})).Status).NotTo(Equal(metav1.ConditionUnknown))
		}
	}
	for n := 3; n <= 4; n++ {
		// A run while the last backup is unfinished is skipped: wait as an hour would, until
		// the schedule itself has seen the last backup end (its status names it), not only
		// the API server: its cache may lag behind.
		g.Eventually(finished).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		g.Eventually(func(g Gomega) {
			ready := meta.FindStatusCondition(get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{}).Status.Conditions, etcdv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Message).To(ContainSubstring(run(n - 1)))
		}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
		scheduleClock.set(firstRun.Add(time.Duration(n)*time.Hour + time.Minute))
		touch()
		g.Eventually(names).WithTimeout(timeout).WithPolling(interval).Should(ContainElement(run(n)))
	}
	g.Eventually(names).WithTimeout(timeout).WithPolling(interval).Should(ConsistOf(run(3), run(4)), "maxCount 2 keeps the newest two")
	// A pass that sees a run's own backup running (its creation seen, the status patch not
	// yet) skips nothing: no event may say a run was skipped for its own backup.
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	for _, e := range evs.Items {
		for n := 2; n <= 4; n++ {
			own := fmt.Sprintf("Skipped the run of %s: backup %s is still running", firstRun.Add(time.Duration(n)*time.Hour).Format(time.RFC3339), run(n))
			g.Expect(e.Note).NotTo(Equal(own), "run %d skipped for its own backup", n)
		}
	}
	g.Eventually(func(g Gomega) {
		g.Expect(get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{}).Status.Backups).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// Suspended: the next run creates nothing.
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{})
		got.Spec.Suspend = true
		g.Expect(k8sClient.Update(ctx, got)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// Once the schedule says it is suspended (a pass that read it before the change may still
	// act on a run that was due, as a CronJob would), the clock passes the next run.
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "hourly", &etcdv1alpha1.EtcdBackupSchedule{})
		g.Expect(meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady).Reason).To(Equal(etcdv1alpha1.ReasonSuspended))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	scheduleClock.set(firstRun.Add(5*time.Hour + time.Minute))
	touch()
	g.Consistently(names).WithTimeout(2 * time.Second).WithPolling(interval).Should(ConsistOf(run(3), run(4)))
}

func TestRestoredClusterWaitsForItsBackupThenRestoresTheFirstMember(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "restored", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{Bootstrap: &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
			BackupName: "nightly", BumpRevision: ptr.To[int64](1000000), MarkCompacted: true}}}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "restored", &etcdv1alpha1.EtcdCluster{})
		p := condition(got, etcdv1alpha1.ConditionProgressing)
		g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonRestoreSourceNotReady))
		g.Expect(p.Message).To(ContainSubstring("EtcdBackup nightly does not exist"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	var pods corev1.PodList
	g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
	g.Expect(pods.Items).To(BeEmpty(), "no member starts before the backup is ready")

	// The backup exists and succeeded (its cluster is elsewhere; the status is what counts).
	b := newBackup(ns, "nightly", "gone")
	g.Expect(k8sClient.Create(ctx, b)).To(Succeed())
	sum := strings.Repeat("cd", 32)
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "nightly", &etcdv1alpha1.EtcdBackup{})
		g.Expect(backupCondition(got).Status).To(Equal(metav1.ConditionFalse)) // ClusterNotFound: no Job runs
		patch := client.MergeFrom(got.DeepCopy())
		got.Status.Artifact = &etcdv1alpha1.BackupArtifact{Location: "s3://backups/k", Key: "etcd/k.db.gz", Compression: "gzip", SHA256: sum, Size: 1, SnapshotSize: 2}
		meta.SetStatusCondition(&got.Status.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue, Reason: "Completed", Message: "test"})
		g.Expect(k8sClient.Status().Patch(ctx, got, patch)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	seed := &corev1.Pod{}
	g.Eventually(func(g Gomega) { get(g, ns, "restored-0", seed) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(seed.Spec.InitContainers).To(HaveLen(1))
	ic := seed.Spec.InitContainers[0]
	g.Expect(ic.Image).To(Equal(testAgentImage))
	g.Expect(ic.Args).To(ContainElements("agent", "restore", "--store=s3", "--key=etcd/k.db.gz", "--sha256="+sum, "--compression=gzip",
		"--s3-bucket=backups", "--bump-revision=1000000", "--mark-compacted", "--name=restored-0"))
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "restored", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonRestoring))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// The restore fails (as the kubelet would report the init container): Degraded, with the agent's words.
	res, _ := json.Marshal(result.Result{Reason: result.ReasonChecksumMismatch, Error: "artifact etcd/k.db.gz has sha256 ff, expected " + sum})
	seed.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "restore", Image: testAgentImage, ImageID: testAgentImage,
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: string(res), StartedAt: metav1.Now(), FinishedAt: metav1.Now()}}}}
	g.Expect(k8sClient.Status().Update(ctx, seed)).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "restored", &etcdv1alpha1.EtcdCluster{})
		d := condition(got, etcdv1alpha1.ConditionDegraded)
		g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(d.Reason).To(Equal(etcdv1alpha1.ReasonRestoreFailed))
		g.Expect(d.Message).To(ContainSubstring("has sha256 ff, expected " + sum))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// touchSchedule changes an annotation of the schedule so that the operator looks at it
// again, at the time scheduleClock says.
func touchSchedule(g Gomega, ns, name string) {
	g.Eventually(func(g Gomega) {
		got := get(g, ns, name, &etcdv1alpha1.EtcdBackupSchedule{})
		patch := client.MergeFrom(got.DeepCopy())
		got.Annotations = map[string]string{"test/now": scheduleClock.now().String()}
		g.Expect(k8sClient.Patch(context.Background(), got, patch)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
