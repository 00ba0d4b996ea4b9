package resources_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

const agentImage = "quay.io/etcdpilot/etcdpilot:v0.3.0"

func s3Backup() *etcdv1alpha1.EtcdBackup {
	return &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Name: "nightly", Namespace: "db", UID: "b-uid"},
		Spec: etcdv1alpha1.EtcdBackupSpec{
			ClusterName: "main",
			Destination: etcdv1alpha1.BackupDestination{S3: &etcdv1alpha1.S3Destination{S3Bucket: etcdv1alpha1.S3Bucket{
				Endpoint: "https://s3.example.com", Bucket: "backups", Region: "eu-west-1",
				CredentialsSecretName: "s3-creds", CASecretName: "s3-ca", ForcePathStyle: true,
			}}},
			Timeout: &metav1.Duration{Duration: 20 * time.Minute},
		},
	}
}

func TestBackupJob(t *testing.T) {
	g := NewWithT(t)
	eps := []backup.Source{{Member: "main-0", ClientURL: "https://main-0.main-peer.db.svc:2379"}, {Member: "main-1", ClientURL: "https://main-1.main-peer.db.svc:2379"}}
	job := resources.BackupJob(s3Backup(), newCluster(), eps, "db/main/x.db.gz", agentImage)

	g.Expect(job.Name).To(Equal("nightly-backup"))
	g.Expect(job.Namespace).To(Equal("db"))
	g.Expect(job.OwnerReferences).To(HaveLen(1))
	g.Expect(job.OwnerReferences[0].Kind).To(Equal("EtcdBackup"))
	g.Expect(job.OwnerReferences[0].Controller).To(Equal(ptr.To(true)))
	g.Expect(job.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "etcdpilot"))
	g.Expect(job.Spec.Template.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "etcdpilot"), "the pods must be in the operator's cache")
	selector := cluster.For(newCluster()).SelectorLabels()
	matches := true
	for k, v := range selector {
		matches = matches && job.Spec.Template.Labels[k] == v
	}
	g.Expect(matches).To(BeFalse(), "a backup pod must not look like a member to the PodDisruptionBudget")
	g.Expect(job.Spec.BackoffLimit).To(Equal(ptr.To[int32](0)), "a failed backup is not retried by the Job")
	g.Expect(job.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](1200)))

	pod := job.Spec.Template.Spec
	g.Expect(pod.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	g.Expect(pod.Containers).To(HaveLen(1))
	ct := pod.Containers[0]
	g.Expect(ct.Image).To(Equal(agentImage))
	g.Expect(ct.Command).To(Equal([]string{"/manager"}))
	g.Expect(ct.Args).To(ContainElements(
		"agent", "backup",
		"--endpoints=main-0=https://main-0.main-peer.db.svc:2379,main-1=https://main-1.main-peer.db.svc:2379",
		"--key=db/main/x.db.gz", "--store=s3", "--s3-endpoint=https://s3.example.com", "--s3-bucket=backups",
		"--s3-region=eu-west-1", "--s3-path-style", "--s3-ca-file=/etc/etcdpilot/s3-ca/ca.crt",
		"--etcd-cacert=/etc/etcdpilot/etcd-client/ca.crt", "--etcd-cert=/etc/etcdpilot/etcd-client/tls.crt",
		"--timeout=20m0s", "--compression=zstd",
	))
	g.Expect(ct.Args[:2]).To(Equal([]string{"agent", "backup"}))
	g.Expect(ct.TerminationMessagePolicy).To(Equal(corev1.TerminationMessageFallbackToLogsOnError))
	g.Expect(*ct.SecurityContext.ReadOnlyRootFilesystem).To(BeTrue())
	g.Expect(ct.Resources.Limits.Memory().String()).To(Equal("256Mi"))

	env := map[string]corev1.EnvVar{}
	for _, e := range ct.Env {
		env[e.Name] = e
	}
	g.Expect(env["AWS_ACCESS_KEY_ID"].ValueFrom.SecretKeyRef.Name).To(Equal("s3-creds"))
	g.Expect(env["AWS_ACCESS_KEY_ID"].ValueFrom.SecretKeyRef.Key).To(Equal("accessKeyID"))
	g.Expect(env["AWS_SECRET_ACCESS_KEY"].ValueFrom.SecretKeyRef.Key).To(Equal("secretAccessKey"))
	g.Expect(*env["AWS_SESSION_TOKEN"].ValueFrom.SecretKeyRef.Optional).To(BeTrue())

	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	g.Expect(vols["etcd-client"].Secret.SecretName).To(Equal("main-client-tls"))
	g.Expect(vols["s3-ca"].Secret.SecretName).To(Equal("s3-ca"))
	g.Expect(vols).To(HaveKey("tmp"))
}

func TestBackupJobToAClaimWithoutTLS(t *testing.T) {
	g := NewWithT(t)
	b := s3Backup()
	b.Spec.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "etcd"}}
	job := resources.BackupJob(b, plainCluster(), []backup.Source{{Member: "main-0", ClientURL: "http://main-0:2379"}}, "etcd/db/main/x.db.gz", agentImage)

	ct := job.Spec.Template.Spec.Containers[0]
	g.Expect(ct.Args).To(ContainElements("--store=file", "--file-root=/backup", "--key=etcd/db/main/x.db.gz"))

	b.Spec.Compression = etcdv1alpha1.BackupCompressionGzip
	gz := resources.BackupJob(b, plainCluster(), []backup.Source{{Member: "main-0", ClientURL: "http://main-0:2379"}}, "etcd/db/main/x.db.gz", agentImage)
	g.Expect(gz.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--compression=gzip"), "spec.compression")
	for _, a := range ct.Args {
		g.Expect(a).NotTo(HavePrefix("--etcd-cacert"), "a plain-text cluster needs no certificate")
		g.Expect(a).NotTo(HavePrefix("--s3-"))
	}
	g.Expect(job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ClaimName).To(Equal("backups"))
	g.Expect(job.Spec.Template.Spec.Volumes[0].PersistentVolumeClaim.ReadOnly).To(BeFalse())
	g.Expect(ct.VolumeMounts).To(ContainElement(corev1.VolumeMount{Name: "backup", MountPath: "/backup"}))
}

func TestJobNamesFitALabel(t *testing.T) {
	g := NewWithT(t)
	long := strings.Repeat("a", 60) + "-1763700000"
	other := strings.Repeat("a", 60) + "-1763703600"
	for _, name := range []string{resources.BackupJobName(long), resources.DeleteJobName(long)} {
		g.Expect(len(name)).To(BeNumerically("<=", 63), name)
	}
	g.Expect(resources.BackupJobName(long)).NotTo(Equal(resources.BackupJobName(other)), "two long names must not collide")
	g.Expect(resources.BackupJobName("short")).To(Equal("short-backup"))
}

func TestDeleteJob(t *testing.T) {
	g := NewWithT(t)
	job := resources.DeleteJob(s3Backup(), "db/main/x.db.gz", agentImage)
	ct := job.Spec.Template.Spec.Containers[0]
	g.Expect(job.Name).To(Equal("nightly-delete"))
	g.Expect(ct.Args[:2]).To(Equal([]string{"agent", "delete"}))
	g.Expect(ct.Args).To(ContainElement("--key=db/main/x.db.gz"))
	g.Expect(ct.Image).To(Equal(agentImage))
}

func TestVerifyJob(t *testing.T) {
	g := NewWithT(t)
	b := s3Backup()
	b.Status.Artifact = &etcdv1alpha1.BackupArtifact{Key: "db/main/x.db.zst", Compression: "zstd", SHA256: strings.Repeat("ab", 32)}
	b.Status.Snapshot = &etcdv1alpha1.BackupSnapshot{Revision: 42, Keys: ptr.To[int64](7), KVHash: "1f2e", HashCompactRevision: 30, EtcdVersion: "3.7.3"}
	job := resources.VerifyJob(b, agentImage, "registry/etcd:v3.7.3")
	spec := job.Spec.Template.Spec
	g.Expect(job.Name).To(Equal("nightly-verify"))
	g.Expect(*job.Spec.ActiveDeadlineSeconds).To(Equal(int64(20*60 + 60)))

	By := func(string) {}
	By("first the restore, of the recorded artifact, into the pod's scratch space")
	g.Expect(spec.InitContainers).To(HaveLen(2))
	restore := spec.InitContainers[0]
	g.Expect(restore.Name).To(Equal("restore"))
	g.Expect(restore.Image).To(Equal(agentImage))
	g.Expect(restore.Args[:2]).To(Equal([]string{"agent", "restore"}))
	g.Expect(restore.Args).To(ContainElements("--key=db/main/x.db.zst", "--store=s3", "--sha256="+strings.Repeat("ab", 32), "--compression=zstd",
		"--data-dir=/tmp/verify/data", "--name=verify", "--initial-cluster=verify=http://127.0.0.1:2380"))
	g.Expect(restore.Env).To(ContainElement(HaveField("Name", "AWS_ACCESS_KEY_ID")), "the S3 credentials")

	By("then a member of the backup's release on it, a sidecar on loopback")
	member := spec.InitContainers[1]
	g.Expect(member.Image).To(Equal("registry/etcd:v3.7.3"))
	g.Expect(member.RestartPolicy).To(HaveValue(Equal(corev1.ContainerRestartPolicyAlways)))
	g.Expect(member.Args).To(ContainElements("--data-dir=/tmp/verify/data", "--listen-client-urls=http://127.0.0.1:2379", "--listen-peer-urls=http://127.0.0.1:2380"))
	g.Expect(member.VolumeMounts).To(ContainElement(HaveField("MountPath", "/tmp")))
	g.Expect(member.Resources.Limits.Memory().String()).To(Equal("1Gi"), "it holds every key's index")

	By("then the check, against what the backup recorded")
	ct := spec.Containers[0]
	g.Expect(ct.Args[:2]).To(Equal([]string{"agent", "check"}))
	g.Expect(ct.Args).To(ContainElements("--endpoint=http://127.0.0.1:2379", "--sha256="+strings.Repeat("ab", 32),
		"--revision=42", "--keys=7", "--kv-hash=1f2e", "--hash-compact-revision=30", "--timeout=20m0s"))

	By("a backup recorded by an older operator: no key count or hash to compare; a claim is mounted read-only")
	b.Status.Snapshot = &etcdv1alpha1.BackupSnapshot{Revision: 42}
	b.Spec.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups"}}
	job = resources.VerifyJob(b, agentImage, "registry/etcd:v3.7.3")
	g.Expect(job.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--keys")))
	g.Expect(job.Spec.Template.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--kv-hash")))
	g.Expect(job.Spec.Template.Spec.InitContainers[0].Args).To(ContainElement("--store=file"))
	g.Expect(job.Spec.Template.Spec.Volumes).To(ContainElement(HaveField("VolumeSource.PersistentVolumeClaim.ReadOnly", true)))
}

func TestWithRestore(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	c.Spec.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
		BackupName: "nightly", BumpRevision: ptr.To[int64](1000000000), MarkCompacted: true}}
	m := resources.MemberConfig{Name: "main-0", InitialCluster: initialCluster(c, 1), InitialClusterState: "new"}
	pod := resources.MemberPod(c, m, images)
	resources.WithRestore(pod, c, m, resources.RestoreSource{Claim: "backups", Key: "db/main/x.db.gz", SHA256: "abc", BumpRevision: ptr.To[int64](1000000000)}, agentImage)

	g.Expect(pod.Spec.InitContainers).To(HaveLen(1))
	ic := pod.Spec.InitContainers[0]
	g.Expect(ic.Name).To(Equal("restore"))
	g.Expect(ic.Image).To(Equal(agentImage))
	g.Expect(ic.Args[:2]).To(Equal([]string{"agent", "restore"}))
	g.Expect(ic.Args).To(ContainElements(
		"--store=file", "--key=db/main/x.db.gz", "--sha256=abc", "--data-dir=/var/lib/etcd/data",
		"--name=main-0", "--initial-cluster="+strings.Join(initialCluster(c, 1), ","),
		"--initial-advertise-peer-urls=https://main-0.main-peer.db.svc:2380",
		"--initial-cluster-token=main-6f1c2d7e-0b7a-4a53-9d55-3c1c2b0f8e11",
		"--bump-revision=1000000000", "--mark-compacted",
	))
	g.Expect(ic.VolumeMounts).To(ContainElements(
		corev1.VolumeMount{Name: "data", MountPath: "/var/lib/etcd"},
		corev1.VolumeMount{Name: "backup", MountPath: "/backup", ReadOnly: true},
	))
	g.Expect(volume(pod, "backup").PersistentVolumeClaim.ReadOnly).To(BeTrue(), "a restore never writes to the backups")
	// The etcd container is unchanged: the restored data directory is its own.
	g.Expect(pod.Spec.Containers).To(Equal(memberPodWith(c, m).Spec.Containers))
	for _, a := range ic.Args {
		g.Expect(a).NotTo(HavePrefix("--compression"), "a source without a declared compression is sniffed by the agent")
	}

	// A backup's artifact: its compression, as its status says, is declared.
	declared := resources.MemberPod(c, m, images)
	resources.WithRestore(declared, c, m, resources.RestoreSource{Claim: "backups", Key: "db/main/x.db.zst", SHA256: "abc",
		Compression: etcdv1alpha1.BackupCompressionZstd}, agentImage)
	g.Expect(declared.Spec.InitContainers[0].Args).To(ContainElement("--compression=zstd"))
}

func memberPodWith(c *etcdv1alpha1.EtcdCluster, m resources.MemberConfig) *corev1.Pod {
	return resources.MemberPod(c, m, images)
}
