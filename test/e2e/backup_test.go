package e2e

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// The backup specs write to the S3 server `make s3-up` runs in the cluster; `make
// test-e2e-deploy` names it in E2E_S3_*. The operator's pods reach it by its in-cluster
// name; this process reaches it through its Service's ClusterIP, which the node routes.
const (
	// s3CredentialsSecret is the name the specs give their copy of the server's
	// credentials Secret in their own namespace.
	s3CredentialsSecret = "s3-credentials"
	// s3Deployment runs the S3 server (hack/s3/s3.yaml).
	s3Deployment = "s3"
	// labelBackupSchedule names the schedule that created a backup.
	labelBackupSchedule = "etcd.etcdpilot.io/backup-schedule"
)

var _ = Describe("backups", Label("backup"), func() {
	// One source cluster serves every spec below: each backs it up, or restores what was
	// backed up, and none changes it except by writing keys after the backups. Two
	// schedules back it up every minute from the start; as their runs are a minute apart,
	// they are checked last, so that the waiting overlaps the other specs.
	Describe("backup and restore", Ordered, longestSpec(230), func() {
		const (
			nKeys         = 200
			bumpRevision  = 1_000_000
			keyAfter      = "/e2e/written-after-the-backups"
			retentionKept = 2
		)
		var (
			store              s3Store
			ns                 string
			source             *etcdv1alpha1.EtcdCluster
			keys               = map[string]string{}
			lastPutRevision    int64
			sourceClusterID    string
			toS3, toPVC        *etcdv1alpha1.EtcdBackup
			fromS3, fromPVC    *etcdv1alpha1.EtcdCluster
			other              *etcdv1alpha1.EtcdCluster // another cluster, whose snapshot a backup of source is made to record
			every, late        *etcdv1alpha1.EtcdBackupSchedule
			scheduledArtifacts *artifactRecorder
			counting           string // the operator that ran the backups (operatorIncarnation)
		)

		BeforeAll(func(ctx SpecContext) {
			counting = operatorIncarnation(ctx)
			store = newS3Store(ctx)
			ns = newBackupNamespace(ctx, "e2e-backup-", store)
			createClaim(ctx, ns, "backups")
			source = createCluster(ctx, ns, "src", 3)
			other = createCluster(ctx, ns, "other", 1) // starts beside source; the verification spec uses it
			waitReady(ctx, source)

			cli := etcdV3Client(ctx, ns, source.Name)
			for i := range nKeys {
				k, v := fmt.Sprintf("/e2e/key-%03d", i), fmt.Sprintf("value-%d-%s", i, strings.Repeat("x", i%50))
				resp, err := cli.Put(ctx, k, v)
				Expect(err).NotTo(HaveOccurred())
				keys[k], lastPutRevision = v, resp.Header.Revision
			}
			sourceClusterID = clusterID(ctx, cli)

			every = createSchedule(ctx, ns, "every-minute", source.Name, store.destination("e2e-scheduled", s3CredentialsSecret), retentionKept, true)
			scheduledArtifacts = recordArtifacts(ctx, ns, every.Name)
			// Its credentials Secret is created only after its first backup failed.
			late = createSchedule(ctx, ns, "late-credentials", source.Name, store.destination("e2e-late", "late-credentials"), 7, false)
		})

		It("waits to start a restored cluster until its backup has succeeded", func(ctx SpecContext) {
			fromS3 = createRestoredCluster(ctx, ns, "from-s3", 3, &etcdv1alpha1.RestoreSpec{
				BackupName: "to-s3", BumpRevision: ptr.To[int64](bumpRevision), MarkCompacted: true,
			})
			fromPVC = createRestoredCluster(ctx, ns, "from-pvc", 1, &etcdv1alpha1.RestoreSpec{BackupName: "to-pvc"})

			for _, c := range []*etcdv1alpha1.EtcdCluster{fromS3, fromPVC} {
				Eventually(func(g Gomega) {
					got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
					p := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionProgressing)
					g.Expect(p).NotTo(BeNil())
					g.Expect(p.Status).To(Equal(metav1.ConditionTrue))
					g.Expect(p.Reason).To(Equal(etcdv1alpha1.ReasonRestoreSourceNotReady))
					g.Expect(p.Message).To(ContainSubstring("EtcdBackup %s does not exist", c.Spec.Bootstrap.Restore.BackupName))
				}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
				Expect(clusterPods(ctx, ns, c.Name)).To(BeEmpty(), "no member of %s starts before its backup exists", c.Name)
			}
		})

		It("backs up to S3 and to a claim at once, from a current follower, at or after the last write", func(ctx SpecContext) {
			leaderBefore := leaderOf(get(ctx, ns, source.Name, &etcdv1alpha1.EtcdCluster{}))
			createBackup(ctx, ns, "to-s3", source.Name, etcdv1alpha1.BackupDestination{S3: store.destination("e2e", s3CredentialsSecret)}, etcdv1alpha1.BackupDeletionPolicyRetain)
			createBackup(ctx, ns, "to-pvc", source.Name, etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "etcd"}}, etcdv1alpha1.BackupDeletionPolicyRetain)
			toS3 = waitBackupFinished(ctx, ns, "to-s3", 2*time.Minute)
			toPVC = waitBackupFinished(ctx, ns, "to-pvc", 2*time.Minute)
			after := get(ctx, ns, source.Name, &etcdv1alpha1.EtcdCluster{})

			for _, b := range []*etcdv1alpha1.EtcdBackup{toS3, toPVC} {
				expectBackupSucceeded(b)
				snap := b.Status.Snapshot
				Expect(snap.Revision).To(BeNumerically(">=", lastPutRevision), "%s holds every key written before it", b.Name)
				Expect(snap.EtcdVersion).To(Equal(after.Status.CurrentVersion))
				Expect(snap.ClusterID).To(Equal(sourceClusterID))
				Expect(memberIDs(after)).To(HaveKeyWithValue(snap.Member, snap.MemberID), "%s names a member of the cluster", b.Name)
				Expect(snap.Member).NotTo(BeElementOf(leaderBefore, leaderOf(after)),
					"%s: with every member healthy and current, a follower is snapshotted, not the leader", b.Name)
				Expect(b.Status.Artifact.SnapshotSize).To(BeNumerically(">", b.Status.Artifact.Size), "the artifact is compressed")
			}
			prefix := fmt.Sprintf("e2e/%s/%s/", ns, source.Name)
			Expect(toS3.Status.Artifact.Key).To(SatisfyAll(HavePrefix(prefix), HaveSuffix("-to-s3.db.zst")))
			Expect(toS3.Status.Artifact.Location).To(Equal("s3://" + store.bucket + "/" + toS3.Status.Artifact.Key))
			Expect(toPVC.Status.Artifact.Key).To(SatisfyAll(HavePrefix(fmt.Sprintf("etcd/%s/%s/", ns, source.Name)), HaveSuffix("-to-pvc.db.zst")))
			Expect(toPVC.Status.Artifact.Location).To(Equal("pvc://backups/" + toPVC.Status.Artifact.Key))

			cli := etcdV3Client(ctx, ns, source.Name)
			_, err := cli.Put(ctx, keyAfter, "must not be restored")
			Expect(err).NotTo(HaveOccurred())
		})

		It("stores in S3 exactly the artifact the backup's status describes, and nothing else", func(ctx SpecContext) {
			a := toS3.Status.Artifact
			expectS3Artifact(ctx, store, a)
			Expect(store.list(ctx, fmt.Sprintf("e2e/%s/", ns))).To(Equal(map[string]int64{a.Key: a.Size}))
		})

		It("verifies a backup on demand and a schedule's backups: restored into a throwaway member, each holds what it recorded; a tampered artifact fails", func(ctx SpecContext) {
			By("to-s3, verified on demand")
			b := get(ctx, ns, "to-s3", &etcdv1alpha1.EtcdBackup{})
			Expect(b.Status.Snapshot.Keys).NotTo(BeNil(), "the backup recorded its key count")
			Expect(b.Status.Snapshot.KVHash).NotTo(BeEmpty(), "and its member's hash")
			setVerify(ctx, b)
			verified := waitVerified(ctx, ns, "to-s3")
			v := meta.FindStatusCondition(verified.Status.Conditions, etcdv1alpha1.ConditionVerified)
			Expect(v.Status).To(Equal(metav1.ConditionTrue), "%s: %s", v.Reason, v.Message)
			Expect(v.Message).To(ContainSubstring("its key count and hash are the ones the backup recorded"))
			Expect(verified.Status.Verification.Keys).To(Equal(b.Status.Snapshot.Keys))
			Expect(verified.Status.Verification.KVHash).To(Equal(b.Status.Snapshot.KVHash))
			Expect(verified.Status.Verification.RestoredRevision).To(BeNumerically(">=", b.Status.Snapshot.Revision))

			By("a backup whose artifact is changed in the store after it was written")
			createBackup(ctx, ns, "tampered", source.Name, etcdv1alpha1.BackupDestination{S3: store.destination("e2e-tampered", s3CredentialsSecret)}, etcdv1alpha1.BackupDeletionPolicyRetain)
			createBackup(ctx, ns, "swapped", source.Name, etcdv1alpha1.BackupDestination{S3: store.destination("e2e-swapped", s3CredentialsSecret)}, etcdv1alpha1.BackupDeletionPolicyRetain)
			tampered := waitBackupFinished(ctx, ns, "tampered", 2*time.Minute)
			expectBackupSucceeded(tampered)
			store.alter(ctx, tampered.Status.Artifact.Key)
			setVerify(ctx, tampered)
			failed := waitVerified(ctx, ns, "tampered")
			v = meta.FindStatusCondition(failed.Status.Conditions, etcdv1alpha1.ConditionVerified)
			Expect(v.Status).To(Equal(metav1.ConditionFalse))
			Expect(v.Reason).To(Equal("ChecksumMismatch"), v.Message)
			Expect(meta.IsStatusConditionFalse(failed.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue(), "a backup that does not verify is not Ready")
			Expect(eventCount(ctx, Default, ns, "BackupVerificationFailed")).To(BeNumerically(">=", 1))

			By("a backup that records another cluster's valid snapshot, with that snapshot's checksum")
			// The checksum matches and the snapshot restores: only a comparison of the restored
			// data with what the backup recorded can tell. The other cluster holds fewer keys
			// and at least the recorded revision, so the data differs at that revision.
			swapped := waitBackupFinished(ctx, ns, "swapped", 2*time.Minute)
			expectBackupSucceeded(swapped)
			waitReady(ctx, other)
			otherCli := etcdV3Client(ctx, ns, other.Name)
			const otherKeys = nKeys / 2
			for i := range otherKeys {
				_, err := otherCli.Put(ctx, fmt.Sprintf("/other/key-%03d", i), "other")
				Expect(err).NotTo(HaveOccurred())
			}
			for rev := int64(0); rev <= swapped.Status.Snapshot.Revision; {
				resp, err := otherCli.Put(ctx, fmt.Sprintf("/other/key-%03d", 0), fmt.Sprintf("other-%d", rev))
				Expect(err).NotTo(HaveOccurred())
				rev = resp.Header.Revision
			}
			createBackup(ctx, ns, "other-snapshot", other.Name, etcdv1alpha1.BackupDestination{S3: store.destination("e2e-other", s3CredentialsSecret)}, etcdv1alpha1.BackupDeletionPolicyRetain)
			otherSnapshot := waitBackupFinished(ctx, ns, "other-snapshot", 2*time.Minute)
			expectBackupSucceeded(otherSnapshot)
			Expect(otherSnapshot.Status.Snapshot.Revision).To(BeNumerically(">", swapped.Status.Snapshot.Revision))
			Expect(otherSnapshot.Status.Snapshot.ClusterID).NotTo(Equal(swapped.Status.Snapshot.ClusterID))
			swapped.Status.Artifact = otherSnapshot.Status.Artifact.DeepCopy()
			Expect(k8sClient.Status().Update(ctx, swapped)).To(Succeed())
			setVerify(ctx, swapped)
			failed = waitVerified(ctx, ns, "swapped")
			v = meta.FindStatusCondition(failed.Status.Conditions, etcdv1alpha1.ConditionVerified)
			Expect(v.Status).To(Equal(metav1.ConditionFalse), "%s: %s", v.Reason, v.Message)
			Expect(v.Reason).To(Equal(etcdv1alpha1.ReasonVerificationFailed))
			Expect(v.Message).To(ContainSubstring(fmt.Sprintf("holds %d keys at revision %d, the backup recorded %d",
				otherKeys, swapped.Status.Snapshot.Revision, *swapped.Status.Snapshot.Keys)))

			By("the every-minute schedule verifies each backup it takes")
			Eventually(func(g Gomega) {
				s := get(ctx, ns, every.Name, &etcdv1alpha1.EtcdBackupSchedule{})
				g.Expect(s.Status.LastVerification).NotTo(BeNil())
				g.Expect(s.Status.LastVerification.Passed).To(BeTrue(), "%s: %s", s.Status.LastVerification.Reason, s.Status.LastVerification.Message)
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		It("restores each backup into a new cluster: every key, nothing written after the backup, a new identity", func(ctx SpecContext) {
			src := get(ctx, ns, source.Name, &etcdv1alpha1.EtcdCluster{})
			for _, c := range []*etcdv1alpha1.EtcdCluster{fromPVC, fromS3} {
				By("restoring " + c.Name)
				restored := waitReady(ctx, c)
				Expect(restored.Status.Members).To(HaveLen(int(c.Spec.Size)))
				cli := etcdV3Client(ctx, ns, c.Name)
				Expect(keysUnder(ctx, cli, "/e2e/")).To(Equal(keys), "exactly the keys written before the backup, with their values")
				Expect(clusterID(ctx, cli)).NotTo(Equal(sourceClusterID), "a restored cluster is a new cluster")
				for _, id := range memberIDs(restored) {
					Expect(memberIDs(src)).NotTo(ContainElement(id), "members of a restored cluster are new members")
				}

				first := get(ctx, ns, c.Name+"-0", &corev1.Pod{})
				Expect(restoreTermination(first)).To(HaveField("ExitCode", int32(0)), "the first member restored the backup")
				for _, m := range restored.Status.Members {
					if m.Name == first.Name {
						continue
					}
					pod := get(ctx, ns, m.Name, &corev1.Pod{})
					Expect(pod.Spec.InitContainers).NotTo(ContainElement(HaveField("Name", "restore")), "%s joins the first member rather than restoring", m.Name)
				}
			}
		})

		It("bumps the revisions of a cluster restored with bumpRevision and marks the older ones compacted", func(ctx SpecContext) {
			bumped := etcdV3Client(ctx, ns, fromS3.Name)
			resp, err := bumped.Put(ctx, "/e2e-restored/new", "v")
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Header.Revision).To(BeNumerically(">", bumpRevision+lastPutRevision))
			_, err = bumped.Get(ctx, "/e2e/key-000", clientv3.WithRev(lastPutRevision))
			Expect(err).To(MatchError(rpctypes.ErrCompacted), "a read at a revision of the source cluster")

			plain := etcdV3Client(ctx, ns, fromPVC.Name)
			resp, err = plain.Put(ctx, "/e2e-restored/new", "v")
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Header.Revision).To(SatisfyAll(BeNumerically(">", lastPutRevision), BeNumerically("<", bumpRevision)),
				"without bumpRevision the revisions go on from the snapshot's")
			got, err := plain.Get(ctx, "/e2e/key-000", clientv3.WithRev(lastPutRevision))
			Expect(err).NotTo(HaveOccurred())
			Expect(got.Kvs).To(HaveLen(1), "without markCompacted the snapshot's revisions are readable")
		})

		It("refuses to restore an artifact whose SHA-256 differs from the expected one, and says so", func(ctx SpecContext) {
			a := toS3.Status.Artifact
			corrupt := append([]byte(nil), store.read(ctx, a.Key)...)
			for i := len(corrupt) / 2; i < len(corrupt)/2+16; i++ {
				corrupt[i] ^= 0xff
			}
			corruptKey := fmt.Sprintf("e2e-corrupt/%s/corrupt.db.zst", ns)
			store.put(ctx, corruptKey, corrupt)
			corruptSum := sha256.Sum256(corrupt)

			c := createRestoredCluster(ctx, ns, "corrupt", 1, &etcdv1alpha1.RestoreSpec{Source: &etcdv1alpha1.RestoreSource{
				S3:     &etcdv1alpha1.S3Object{S3Bucket: store.destination("", s3CredentialsSecret).S3Bucket, Key: corruptKey},
				SHA256: a.SHA256,
			}})
			Eventually(func(g Gomega) {
				got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
				d := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
				g.Expect(d).NotTo(BeNil())
				g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
				g.Expect(d.Reason).To(Equal(etcdv1alpha1.ReasonRestoreFailed))
				g.Expect(d.Message).To(SatisfyAll(
					ContainSubstring("sha256 "+hex.EncodeToString(corruptSum[:])),
					ContainSubstring("expected "+a.SHA256)))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

			got := get(ctx, ns, c.Name, &etcdv1alpha1.EtcdCluster{})
			d := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			GinkgoWriter.Printf("Degraded=%s %s: %s\n", d.Status, d.Reason, d.Message)
			Expect(got.Status.ReadyMembers).To(BeZero())
			for _, m := range got.Status.Members {
				Expect(m.Healthy).To(BeFalse(), m.Name)
			}
			Expect(meta.IsStatusConditionTrue(got.Status.Conditions, etcdv1alpha1.ConditionAvailable)).To(BeFalse())
			pod := get(ctx, ns, c.Name+"-0", &corev1.Pod{})
			term := restoreTermination(pod)
			Expect(term).NotTo(BeNil(), "the restore init container ended")
			Expect(term.ExitCode).NotTo(BeZero())
			Expect(term.Message).To(ContainSubstring("ChecksumMismatch"))
			for _, s := range pod.Status.ContainerStatuses {
				Expect(s.State.Running).To(BeNil(), "etcd never starts on a refused artifact")
				Expect(s.LastTerminationState.Terminated).To(BeNil(), "etcd never started on a refused artifact")
			}

			Expect(k8sClient.Delete(ctx, c)).To(Succeed())
			Eventually(func() []corev1.Pod { return clusterPods(ctx, ns, c.Name) }).
				WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeEmpty())
		})

		It("fails a backup at once, without a pod, when its credentials Secret is missing", func(ctx SpecContext) {
			createBackup(ctx, ns, "no-credentials", source.Name,
				etcdv1alpha1.BackupDestination{S3: store.destination("e2e", "missing")}, etcdv1alpha1.BackupDeletionPolicyRetain)
			b := waitBackupFinished(ctx, ns, "no-credentials", 20*time.Second)
			c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
			Expect(c.Status).To(Equal(metav1.ConditionFalse))
			Expect(c.Reason).To(Equal(etcdv1alpha1.ReasonCredentialsNotFound))
			Expect(c.Message).To(ContainSubstring("Secret missing does not exist"))
			Expect(b.Status.Artifact).To(BeNil())
			err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "no-credentials-backup"}, &batchv1.Job{})
			Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no backup Job")
		})

		It("reports the cluster's backups in the operator's metrics", func(ctx SpecContext) {
			token := metricsReaderToken(ctx, ns)
			endpoint := metricsEndpoint(ctx)
			labels := fmt.Sprintf(`name="%s",namespace="%s"`, source.Name, ns)
			newest := max(toS3.Status.CompletedAt.Unix(), toPVC.Status.CompletedAt.Unix())
			Eventually(func(g Gomega) {
				code, body := getMetrics(ctx, endpoint, token)
				g.Expect(code).To(Equal(http.StatusOK), body)
				g.Expect(metricSample(body, "etcdpilot_backup_last_success_timestamp_seconds{"+labels+"}")).To(BeNumerically(">=", newest))
				g.Expect(metricSample(body, "etcdpilot_backup_last_size_bytes{"+labels+"}")).To(BeNumerically(">", 0))
				g.Expect(metricSample(body, "etcdpilot_backup_last_duration_seconds{"+labels+"}")).To(BeNumerically(">", 0))
				if operatorIncarnation(ctx) == counting {
					g.Expect(metricSample(body, "etcdpilot_backups_total{"+labels+`,outcome="succeeded"}`)).To(BeNumerically(">=", 2), "to-s3 and to-pvc")
					g.Expect(metricSample(body, "etcdpilot_backups_total{"+labels+`,outcome="failed"}`)).To(BeNumerically(">=", 1), "no-credentials")
				}
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		It("reports a schedule whose last backup failed as not Ready, saying which backup and why", func(ctx SpecContext) {
			var failed string
			Eventually(func(g Gomega) {
				s := get(ctx, ns, late.Name, &etcdv1alpha1.EtcdBackupSchedule{})
				r := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha1.ConditionReady)
				g.Expect(r).NotTo(BeNil())
				g.Expect(r.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(r.Reason).To(Equal(etcdv1alpha1.ReasonLastBackupFailed))
				g.Expect(s.Status.LastScheduleTime).NotTo(BeNil())
				failed = fmt.Sprintf("%s-%d", late.Name, s.Status.LastScheduleTime.Unix())
				g.Expect(r.Message).To(ContainSubstring("backup %s failed (CredentialsNotFound: Secret late-credentials does not exist)", failed))
			}).WithContext(ctx).WithTimeout(90 * time.Second).WithPolling(time.Second).Should(Succeed())
			b := get(ctx, ns, failed, &etcdv1alpha1.EtcdBackup{})
			Expect(meta.IsStatusConditionFalse(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue())

			By("creating the Secret: the next run succeeds (checked last)")
			copyS3Credentials(ctx, store, ns, "late-credentials")
		})

		It("deletes the artifact of a backup with deletionPolicy Delete before the backup goes, and keeps that of one with Retain", func(ctx SpecContext) {
			createBackup(ctx, ns, "delete-me", source.Name, etcdv1alpha1.BackupDestination{S3: store.destination("e2e-delete", s3CredentialsSecret)}, etcdv1alpha1.BackupDeletionPolicyDelete)
			b := waitBackupFinished(ctx, ns, "delete-me", 2*time.Minute)
			expectBackupSucceeded(b)
			Expect(store.list(ctx, "e2e-delete/"+ns+"/")).To(HaveKey(b.Status.Artifact.Key))

			Expect(k8sClient.Delete(ctx, b)).To(Succeed())
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKeyFromObject(b), &etcdv1alpha1.EtcdBackup{})
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound))
			Expect(store.list(ctx, "e2e-delete/"+ns+"/")).NotTo(HaveKey(b.Status.Artifact.Key), "the artifact was deleted before the backup")

			Expect(k8sClient.Delete(ctx, toS3)).To(Succeed())
			Eventually(func() error {
				return k8sClient.Get(ctx, client.ObjectKeyFromObject(toS3), &etcdv1alpha1.EtcdBackup{})
			}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Satisfy(apierrors.IsNotFound))
			Expect(store.list(ctx, fmt.Sprintf("e2e/%s/", ns))).To(HaveKey(toS3.Status.Artifact.Key), "Retain keeps the artifact")
		})

		It("runs a schedule every minute, keeps its newest backups and deletes the artifacts of the others", func(ctx SpecContext) {
			first := every.CreationTimestamp.Truncate(time.Minute).Add(time.Minute)
			name := func(run time.Time) string { return fmt.Sprintf("%s-%d", every.Name, run.Unix()) }
			// Checked between a run's completion and the next run, when nothing is in flight.
			Eventually(func(g Gomega) {
				s := get(ctx, ns, every.Name, &etcdv1alpha1.EtcdBackupSchedule{})
				g.Expect(s.Status.LastScheduleTime).NotTo(BeNil())
				last := s.Status.LastScheduleTime.UTC()
				g.Expect(last).To(BeTemporally(">=", first.Add(2*time.Minute)), "at least 3 runs")

				var kept etcdv1alpha1.EtcdBackupList
				g.Expect(k8sClient.List(ctx, &kept, client.InNamespace(ns), client.MatchingLabels{labelBackupSchedule: every.Name})).To(Succeed())
				names := map[string]bool{}
				for _, b := range kept.Items {
					g.Expect(meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue(), "backup %s succeeded", b.Name)
					names[b.Name] = true
				}
				g.Expect(names).To(Equal(map[string]bool{name(last.Add(-time.Minute)): true, name(last): true}), "the 2 newest runs are kept")

				recorded := scheduledArtifacts.snapshot()
				wantObjects := map[string]int64{}
				for run := first; !run.After(last); run = run.Add(time.Minute) {
					g.Expect(recorded).To(HaveKey(name(run)), "every minute's run made a backup that succeeded")
				}
				for n, a := range recorded {
					if names[n] {
						wantObjects[a.Key] = a.Size
					}
				}
				g.Expect(store.list(ctx, fmt.Sprintf("e2e-scheduled/%s/", ns))).To(Equal(wantObjects), "only the kept backups' artifacts remain")

				r := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha1.ConditionReady)
				g.Expect(r).NotTo(BeNil())
				g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s", r.Reason, r.Message)
				g.Expect(r.Reason).To(Equal(etcdv1alpha1.ReasonScheduled))
				g.Expect(s.Status.LastSuccessfulBackup).To(Equal(name(last)))
				g.Expect(s.Status.LastSuccessfulTime).NotTo(BeNil())
				g.Expect(s.Status.Backups).To(Equal(int32(retentionKept)))
				g.Expect(s.Status.NextScheduleTime).NotTo(BeNil())
				g.Expect(s.Status.NextScheduleTime.Time).To(BeTemporally("==", last.Add(time.Minute)))
			}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

			By("the schedule whose first backup failed: the run after its Secret appeared succeeded")
			Eventually(func(g Gomega) {
				s := get(ctx, ns, late.Name, &etcdv1alpha1.EtcdBackupSchedule{})
				r := meta.FindStatusCondition(s.Status.Conditions, etcdv1alpha1.ConditionReady)
				g.Expect(r).NotTo(BeNil())
				g.Expect(r.Status).To(Equal(metav1.ConditionTrue), "%s: %s", r.Reason, r.Message)
				g.Expect(s.Status.LastSuccessfulBackup).NotTo(BeEmpty())
				b := get(ctx, ns, s.Status.LastSuccessfulBackup, &etcdv1alpha1.EtcdBackup{})
				g.Expect(b.Status.Artifact).NotTo(BeNil())
				g.Expect(store.list(ctx, fmt.Sprintf("e2e-late/%s/", ns))).To(HaveKeyWithValue(b.Status.Artifact.Key, b.Status.Artifact.Size))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		It("lets its namespace be deleted while it holds backups with deletionPolicy Delete", func(ctx SpecContext) {
			var list etcdv1alpha1.EtcdBackupList
			Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
			Expect(list.Items).To(ContainElement(SatisfyAll(
				HaveField("Spec.DeletionPolicy", etcdv1alpha1.BackupDeletionPolicyDelete),
				HaveField("Status.Artifact", Not(BeNil())))), "a backup whose artifact the operator would delete with it")

			// A namespace being deleted accepts no new Job, so the artifacts cannot be deleted
			// any more; the backups must not hold the namespace for that. The bound leaves
			// room for the namespace controller's own retries, which back off.
			Expect(clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})).To(Succeed())
			Eventually(func(g Gomega) {
				g.Expect(k8sClient.List(ctx, &list, client.InNamespace(ns))).To(Succeed())
				var jobs batchv1.JobList
				g.Expect(k8sClient.List(ctx, &jobs, client.InNamespace(ns))).To(Succeed())
				backups, jobsLeft := []string{}, []string{}
				for _, b := range list.Items {
					backups = append(backups, fmt.Sprintf("%s (finalizers %v, deleting %t, artifact %t)",
						b.Name, b.Finalizers, !b.DeletionTimestamp.IsZero(), b.Status.Artifact != nil))
				}
				for _, j := range jobs.Items {
					jobsLeft = append(jobsLeft, fmt.Sprintf("%s (active %d, deleting %t)", j.Name, j.Status.Active, !j.DeletionTimestamp.IsZero()))
				}
				g.Expect(backups).To(BeEmpty(), "backups left in the namespace; its Jobs: %s", strings.Join(jobsLeft, "; "))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		})
	})

	// Taking the S3 server down would fail the backups of every other spec: Serial.
	Describe("while the object store is down", Serial, func() {
		It("fails a backup with DestinationUnreachable, leaving nothing behind; once the store is back, a backup succeeds", func(ctx SpecContext) {
			store := newS3Store(ctx)
			ns := newBackupNamespace(ctx, "e2e-s3-down-", store)
			c := createCluster(ctx, ns, "down", 1)
			waitReady(ctx, c)
			dest := etcdv1alpha1.BackupDestination{S3: store.destination("e2e-down", s3CredentialsSecret)}

			By("scaling the S3 server to zero")
			DeferCleanup(func(ctx SpecContext) { scaleS3(ctx, store, 1) }) // whatever happens below
			scaleS3(ctx, store, 0)

			createBackup(ctx, ns, "while-down", c.Name, dest, etcdv1alpha1.BackupDeletionPolicyRetain)
			b := waitBackupFinished(ctx, ns, "while-down", 3*time.Minute)
			cond := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
			Expect(cond.Status).To(Equal(metav1.ConditionFalse))
			Expect(cond.Reason).To(Equal(etcdv1alpha1.ReasonDestinationUnreachable), cond.Message)
			GinkgoWriter.Printf("Succeeded=False %s: %s\n", cond.Reason, cond.Message)
			u, err := url.Parse(store.endpoint)
			Expect(err).NotTo(HaveOccurred())
			Expect(cond.Message).To(SatisfyAll(ContainSubstring(u.Host), ContainSubstring(store.bucket)), "the message says which store did not answer")
			Expect(b.Status.Artifact).To(BeNil())

			By("bringing the S3 server back")
			scaleS3(ctx, store, 1)
			prefix := fmt.Sprintf("e2e-down/%s/", ns)
			Expect(store.list(ctx, prefix)).To(BeEmpty(), "no object, not even a partial one")
			Expect(store.incompleteUploads(ctx, prefix)).To(BeEmpty(), "no unfinished upload")

			createBackup(ctx, ns, "after-down", c.Name, dest, etcdv1alpha1.BackupDeletionPolicyRetain)
			b = waitBackupFinished(ctx, ns, "after-down", 2*time.Minute)
			expectBackupSucceeded(b)
			expectS3Artifact(ctx, store, b.Status.Artifact)
			Expect(store.list(ctx, prefix)).To(Equal(map[string]int64{b.Status.Artifact.Key: b.Status.Artifact.Size}))
		})
	})
})

// s3Store is the S3 server of the e2e run, as E2E_S3_* describe it, with a client of this
// process that talks to it through its Service's ClusterIP.
type s3Store struct {
	endpoint, namespace, secret, bucket string
	client                              *minio.Client
}

func newS3Store(ctx context.Context) s3Store {
	s := s3Store{
		endpoint:  os.Getenv("E2E_S3_ENDPOINT"),
		namespace: os.Getenv("E2E_S3_NAMESPACE"),
		secret:    os.Getenv("E2E_S3_CREDENTIALS_SECRET"),
		bucket:    os.Getenv("E2E_S3_BUCKET"),
	}
	ExpectWithOffset(1, []string{s.endpoint, s.namespace, s.secret, s.bucket}).NotTo(ContainElement(""),
		"E2E_S3_ENDPOINT, E2E_S3_NAMESPACE, E2E_S3_CREDENTIALS_SECRET and E2E_S3_BUCKET name the S3 server: run make test-e2e-deploy, or make s3-up and set them as it does")
	u, err := url.Parse(s.endpoint)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	svc, err := clientset.CoreV1().Services(s.namespace).Get(ctx, strings.Split(u.Hostname(), ".")[0], metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "the Service of %s", s.endpoint)
	creds, err := clientset.CoreV1().Secrets(s.namespace).Get(ctx, s.secret, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	s.client, err = minio.New(net.JoinHostPort(svc.Spec.ClusterIP, u.Port()), &minio.Options{
		Creds:        credentials.NewStaticV4(string(creds.Data["accessKeyID"]), string(creds.Data["secretAccessKey"]), ""),
		Region:       "us-east-1",
		BucketLookup: minio.BucketLookupPath,
	})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return s
}

// destination is an S3 destination of the e2e bucket under prefix, with the credentials
// of Secret secret in the backup's namespace.
func (s s3Store) destination(prefix, secret string) *etcdv1alpha1.S3Destination {
	return &etcdv1alpha1.S3Destination{
		S3Bucket: etcdv1alpha1.S3Bucket{
			Endpoint: s.endpoint, Bucket: s.bucket, Region: "us-east-1",
			CredentialsSecretName: secret, ForcePathStyle: true,
		},
		Prefix: prefix,
	}
}

// list returns the size of every object under prefix, by key.
func (s s3Store) list(ctx context.Context, prefix string) map[string]int64 {
	out := map[string]int64{}
	for obj := range s.client.ListObjects(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		ExpectWithOffset(1, obj.Err).NotTo(HaveOccurred())
		out[obj.Key] = obj.Size
	}
	return out
}

// incompleteUploads returns the keys of the unfinished multipart uploads under prefix.
func (s s3Store) incompleteUploads(ctx context.Context, prefix string) []string {
	var out []string
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, prefix, true) {
		ExpectWithOffset(1, u.Err).NotTo(HaveOccurred())
		out = append(out, u.Key)
	}
	return out
}

func (s s3Store) read(ctx context.Context, key string) []byte {
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer func() { _ = obj.Close() }()
	data, err := io.ReadAll(obj)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return data
}

// alter flips one byte in the middle of the object at key, as a change in the store after
// the backup wrote it.
func (s s3Store) alter(ctx context.Context, key string) {
	data := s.read(ctx, key)
	data[len(data)/2] ^= 0xff
	s.put(ctx, key, data)
}

func (s s3Store) put(ctx context.Context, key string, data []byte) {
	_, err := s.client.PutObject(ctx, s.bucket, key, bytes.NewReader(data), int64(len(data)), minio.PutObjectOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// expectS3Artifact streams the object a backup's artifact names and expects the size and
// SHA-256 its status gives, and a zstd stream (the default) of the snapshot's size.
func expectS3Artifact(ctx context.Context, s s3Store, a *etcdv1alpha1.BackupArtifact) {
	info, err := s.client.StatObject(ctx, s.bucket, a.Key, minio.StatObjectOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), a.Location)
	ExpectWithOffset(1, info.Size).To(Equal(a.Size), a.Location)

	obj, err := s.client.GetObject(ctx, s.bucket, a.Key, minio.GetObjectOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer func() { _ = obj.Close() }()
	digest := sha256.New()
	zr, err := zstd.NewReader(io.TeeReader(obj, digest))
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s is zstd", a.Location)
	defer zr.Close()
	n, err := io.Copy(io.Discard, zr)
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "%s is zstd", a.Location)
	ExpectWithOffset(1, n).To(Equal(a.SnapshotSize), "%s decompresses to the snapshot", a.Location)
	_, err = io.Copy(digest, obj) // anything after the zstd stream is part of the artifact too
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, hex.EncodeToString(digest.Sum(nil))).To(Equal(a.SHA256), a.Location)
}

// scaleS3 scales the S3 server and waits until this process sees it answer (replicas 1)
// or refuse connections (replicas 0).
func scaleS3(ctx context.Context, s s3Store, replicas int32) {
	scale, err := clientset.AppsV1().Deployments(s.namespace).GetScale(ctx, s3Deployment, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	scale.Spec.Replicas = replicas
	_, err = clientset.AppsV1().Deployments(s.namespace).UpdateScale(ctx, s3Deployment, scale, metav1.UpdateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	EventuallyWithOffset(1, func(g Gomega) {
		pods, err := clientset.CoreV1().Pods(s.namespace).List(ctx, metav1.ListOptions{LabelSelector: "app.kubernetes.io/name=" + s3Deployment})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(pods.Items).To(HaveLen(int(replicas)))
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err = s.client.BucketExists(cctx, s.bucket)
		if replicas == 0 {
			g.Expect(err).To(HaveOccurred(), "the S3 server still answers")
		} else {
			g.Expect(err).NotTo(HaveOccurred(), "the S3 server does not answer yet")
		}
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// newBackupNamespace creates a test namespace with a copy of the S3 credentials Secret.
// When the spec ends, its schedules and then its backups are deleted, and awaited, before
// the namespace: backups with deletionPolicy Delete take their artifacts with them, which
// needs the operator, the S3 server and a namespace that still accepts their Jobs. Then
// the artifacts left in the bucket under the namespace's name are removed.
func newBackupNamespace(ctx context.Context, prefix string, store s3Store) string {
	ns := newTestNamespace(ctx, prefix)
	copyS3Credentials(ctx, store, ns, s3CredentialsSecret)
	DeferCleanup(func(ctx SpecContext) { // after the backups are gone: what they kept
		for obj := range store.client.ListObjects(ctx, store.bucket, minio.ListObjectsOptions{Recursive: true}) {
			if obj.Err == nil && strings.Contains(obj.Key, "/"+ns+"/") {
				_ = store.client.RemoveObject(ctx, store.bucket, obj.Key, minio.RemoveObjectOptions{})
			}
		}
	})
	DeferCleanup(func(ctx SpecContext) {
		_ = k8sClient.DeleteAllOf(ctx, &etcdv1alpha1.EtcdBackupSchedule{}, client.InNamespace(ns))
		Eventually(func(g Gomega) {
			g.Expect(client.IgnoreNotFound(k8sClient.DeleteAllOf(ctx, &etcdv1alpha1.EtcdBackup{}, client.InNamespace(ns)))).To(Succeed())
			var left etcdv1alpha1.EtcdBackupList
			g.Expect(k8sClient.List(ctx, &left, client.InNamespace(ns))).To(Succeed())
			g.Expect(left.Items).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})
	return ns
}

func copyS3Credentials(ctx context.Context, store s3Store, ns, name string) {
	src, err := clientset.CoreV1().Secrets(store.namespace).Get(ctx, store.secret, metav1.GetOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	_, err = clientset.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Data:       src.Data,
	}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

func createClaim(ctx context.Context, ns, name string) {
	_, err := clientset.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("256Mi")},
			},
		},
	}, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

func createBackup(ctx context.Context, ns, name, cluster string, dest etcdv1alpha1.BackupDestination, policy etcdv1alpha1.BackupDeletionPolicy) {
	ExpectWithOffset(1, k8sClient.Create(ctx, &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       etcdv1alpha1.EtcdBackupSpec{ClusterName: cluster, Destination: dest, DeletionPolicy: policy},
	})).To(Succeed())
}

func createSchedule(ctx context.Context, ns, name, cluster string, dest *etcdv1alpha1.S3Destination, maxCount int32, verify bool) *etcdv1alpha1.EtcdBackupSchedule {
	s := &etcdv1alpha1.EtcdBackupSchedule{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupScheduleSpec{
			Schedule:       "* * * * *",
			Retention:      &etcdv1alpha1.BackupRetention{MaxCount: ptr.To(maxCount)},
			BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: cluster, Destination: etcdv1alpha1.BackupDestination{S3: dest}, Verify: verify},
		},
	}
	ExpectWithOffset(1, k8sClient.Create(ctx, s)).To(Succeed())
	return s
}

// createRestoredCluster creates a TLS cluster that starts from a backup.
func createRestoredCluster(ctx context.Context, ns, name string, size int32, restore *etcdv1alpha1.RestoreSpec) *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{
			Size:           size,
			DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
			Bootstrap:      &etcdv1alpha1.BootstrapSpec{Restore: restore},
		},
	}
	ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
	return c
}

// waitBackupFinished waits until the backup's Succeeded condition is True or False.
func waitBackupFinished(ctx context.Context, ns, name string, timeout time.Duration) *etcdv1alpha1.EtcdBackup {
	b := &etcdv1alpha1.EtcdBackup{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b)).To(Succeed())
		c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status).NotTo(Equal(metav1.ConditionUnknown), "%s: %s", c.Reason, c.Message)
	}).WithContext(ctx).WithTimeout(timeout).WithPolling(time.Second).Should(Succeed())
	return b
}

// expectBackupSucceeded expects a backup's status to say it succeeded and to describe
// what it stored.
func expectBackupSucceeded(b *etcdv1alpha1.EtcdBackup) {
	c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
	ExpectWithOffset(1, c.Status).To(Equal(metav1.ConditionTrue), "backup %s: %s: %s", b.Name, c.Reason, c.Message)
	ExpectWithOffset(1, c.Reason).To(Equal(etcdv1alpha1.ReasonBackupCompleted))
	ExpectWithOffset(1, meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1alpha1.ConditionReady)).To(BeTrue(), "backup %s Ready", b.Name)
	ExpectWithOffset(1, b.Status.StartedAt).NotTo(BeNil(), b.Name)
	ExpectWithOffset(1, b.Status.CompletedAt).NotTo(BeNil(), b.Name)
	ExpectWithOffset(1, b.Status.CompletedAt.Time).NotTo(BeTemporally("<", b.Status.StartedAt.Time), b.Name)
	a := b.Status.Artifact
	ExpectWithOffset(1, a).NotTo(BeNil(), b.Name)
	ExpectWithOffset(1, a.Compression).To(Equal(etcdv1alpha1.BackupCompressionZstd), "the default")
	ExpectWithOffset(1, a.SHA256).To(MatchRegexp(`^[0-9a-f]{64}$`))
	ExpectWithOffset(1, a.Size).To(BeNumerically(">", 0))
	ExpectWithOffset(1, a.SnapshotSize).To(BeNumerically(">", 0))
	s := b.Status.Snapshot
	ExpectWithOffset(1, s).NotTo(BeNil(), b.Name)
	ExpectWithOffset(1, s.Member).NotTo(BeEmpty())
	ExpectWithOffset(1, s.MemberID).NotTo(BeEmpty())
	ExpectWithOffset(1, s.Revision).To(BeNumerically(">", 0))
	ExpectWithOffset(1, s.EtcdVersion).NotTo(BeEmpty())
	ExpectWithOffset(1, s.ClusterID).NotTo(BeEmpty())
}

// artifactRecorder records the artifact of every backup of a schedule that succeeded,
// while the backups exist: retention deletes them later.
type artifactRecorder struct {
	mu        sync.Mutex
	artifacts map[string]etcdv1alpha1.BackupArtifact
}

// recordArtifacts polls the backups of schedule every second until the spec ends.
func recordArtifacts(ctx context.Context, ns, schedule string) *artifactRecorder {
	r := &artifactRecorder{artifacts: map[string]etcdv1alpha1.BackupArtifact{}}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	DeferCleanup(func() { cancel(); <-done })
	go func() {
		defer GinkgoRecover()
		defer close(done)
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			var list etcdv1alpha1.EtcdBackupList
			if err := k8sClient.List(rctx, &list, client.InNamespace(ns), client.MatchingLabels{labelBackupSchedule: schedule}); err == nil {
				r.mu.Lock()
				for _, b := range list.Items {
					if b.Status.Artifact != nil && meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded) {
						r.artifacts[b.Name] = *b.Status.Artifact
					}
				}
				r.mu.Unlock()
			}
			select {
			case <-rctx.Done():
				return
			case <-tick.C:
			}
		}
	}()
	return r
}

// snapshot returns the artifacts recorded so far, by backup name.
func (r *artifactRecorder) snapshot() map[string]etcdv1alpha1.BackupArtifact {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]etcdv1alpha1.BackupArtifact, len(r.artifacts))
	for k, v := range r.artifacts {
		out[k] = v
	}
	return out
}

// clusterID is the etcd cluster ID, in hex, as a member reports it.
func clusterID(ctx context.Context, cli *clientv3.Client) string {
	st, err := cli.Status(ctx, cli.Endpoints()[0])
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return fmt.Sprintf("%x", st.Header.ClusterId)
}

// keysUnder reads every key under prefix with its value.
func keysUnder(ctx context.Context, cli *clientv3.Client, prefix string) map[string]string {
	resp, err := cli.Get(ctx, prefix, clientv3.WithPrefix())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	out := map[string]string{}
	for _, kv := range resp.Kvs {
		out[string(kv.Key)] = string(kv.Value)
	}
	return out
}

// restoreTermination is how the restore init container of pod ended last, if it did.
func restoreTermination(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	for _, s := range pod.Status.InitContainerStatuses {
		if s.Name == "restore" {
			if s.State.Terminated != nil {
				return s.State.Terminated
			}
			return s.LastTerminationState.Terminated
		}
	}
	return nil
}

// leaderOf names the cluster's leader per its status; "" when it knows none.
func leaderOf(c *etcdv1alpha1.EtcdCluster) string {
	for _, m := range c.Status.Members {
		if m.Leader {
			return m.Name
		}
	}
	return ""
}

// setVerify asks for the verification of backup b (spec.verify), on demand.
func setVerify(ctx context.Context, b *etcdv1alpha1.EtcdBackup) {
	EventuallyWithOffset(1, func() error {
		got := get(ctx, b.Namespace, b.Name, &etcdv1alpha1.EtcdBackup{})
		got.Spec.Verify = true
		return k8sClient.Update(ctx, got)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

// waitVerified waits until backup name's verification ended: passed, failed, or incomplete
// (Unknown for good).
func waitVerified(ctx context.Context, ns, name string) *etcdv1alpha1.EtcdBackup {
	b := &etcdv1alpha1.EtcdBackup{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, b)).To(Succeed())
		c := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Status != metav1.ConditionUnknown || c.Reason == etcdv1alpha1.ReasonVerificationIncomplete).To(BeTrue(), "%s: %s", c.Reason, c.Message)
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return b
}
