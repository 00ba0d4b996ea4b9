package resources

import (
	"fmt"
	"hash/fnv"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// The backup agent is the operator's own binary run with the subcommand "agent": as the
// container of a backup or artifact-deletion Job, and as the restore init container of a
// restored cluster's first member. It reports its result as JSON in the container's
// termination message.
const (
	// AgentBinary is the operator binary in the operator image.
	AgentBinary = "/manager"
	// AgentContainerName names the agent's container in backup and deletion Jobs.
	AgentContainerName = "agent"
	// RestoreContainerName names the restore init container of a restored cluster's
	// first member.
	RestoreContainerName = "restore"

	// LabelBackup names the EtcdBackup a Job belongs to.
	LabelBackup = "etcd.etcdpilot.io/backup"
	// LabelBackupSchedule names the EtcdBackupSchedule that created an EtcdBackup.
	LabelBackupSchedule = "etcd.etcdpilot.io/backup-schedule"

	// Paths inside the agent's container.
	agentClientTLSPath = "/etc/etcdpilot/etcd-client"
	agentS3CAPath      = "/etc/etcdpilot/s3-ca"
	agentFileRoot      = "/backup"
	// agentTmp is a writable scratch directory (the root filesystem is read-only).
	agentTmp = "/tmp"

	// S3 credential keys in the user's Secret, and the CA key in the CA Secret.
	S3AccessKeyIDKey     = "accessKeyID"
	S3SecretAccessKeyKey = "secretAccessKey"
	S3SessionTokenKey    = "sessionToken"
	S3CAKey              = "ca.crt"
)

// BackupJobName and DeleteJobName name the Jobs of an EtcdBackup. Job names feed the
// pods' job-name label, so they are kept within a label value's 63 characters.
func BackupJobName(backup string) string { return jobName(backup, "backup") }

// VerifyJobName names the Job that verifies an EtcdBackup (spec.verify).
func VerifyJobName(backup string) string { return jobName(backup, "verify") }

// DeleteJobName names the Job that deletes an EtcdBackup's artifact.
func DeleteJobName(backup string) string { return jobName(backup, "delete") }

func jobName(backup, suffix string) string {
	const maxLen = 63
	name := backup + "-" + suffix
	if len(name) <= maxLen {
		return name
	}
	// Keep the name unique: a hash of the full backup name replaces the cut-off part.
	f := fnv.New32a()
	_, _ = f.Write([]byte(backup))
	h := fmt.Sprintf("%08x", f.Sum32())
	keep := maxLen - len(suffix) - len(h) - 2
	return strings.TrimRight(backup[:keep], "-.") + "-" + h + "-" + suffix
}

// BackupJob returns the Job that takes backup b of cluster c: the agent asks every listed
// member for its status, streams the snapshot from the healthiest one, compresses it as
// spec.compression says and writes it to key at the backup's destination. The Job runs once (no retries: a schedule
// takes the next backup) and is bounded by spec.timeout.
func BackupJob(b *etcdv1alpha1.EtcdBackup, c *etcdv1alpha1.EtcdCluster, endpoints []backup.Source, key, image string) *batchv1.Job {
	cl := cluster.For(c)
	eps := make([]string, 0, len(endpoints))
	for _, e := range endpoints {
		eps = append(eps, e.Member+"="+e.ClientURL)
	}
	args := []string{"agent", "backup", "--endpoints=" + strings.Join(eps, ","),
		"--compression=" + string(backup.CompressionOf(b.Spec))}
	if b.Spec.Timeout != nil {
		args = append(args, "--timeout="+b.Spec.Timeout.Duration.String())
	}
	var vols []corev1.Volume
	var mounts []corev1.VolumeMount
	if cl.TLS {
		args = append(args,
			"--etcd-cacert="+agentClientTLSPath+"/ca.crt",
			"--etcd-cert="+agentClientTLSPath+"/tls.crt",
			"--etcd-key="+agentClientTLSPath+"/tls.key")
		vols = append(vols, corev1.Volume{Name: "etcd-client", VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: cl.ClientTLSSecret(), DefaultMode: ptr.To(tlsFileMode)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "etcd-client", MountPath: agentClientTLSPath, ReadOnly: true})
	}
	st := destinationStore(b.Spec.Destination, key)
	args = append(args, st.args...)
	job := agentJob(b, BackupJobName(b.Name), image, args, st.env, append(vols, st.vols...), append(mounts, st.mounts...))
	if b.Spec.Timeout != nil {
		job.Spec.ActiveDeadlineSeconds = ptr.To(int64(b.Spec.Timeout.Seconds()))
	}
	return job
}

// DeleteJob returns the Job that deletes the artifact of backup b (deletionPolicy Delete).
func DeleteJob(b *etcdv1alpha1.EtcdBackup, key, image string) *batchv1.Job {
	st := destinationStore(b.Spec.Destination, key)
	job := agentJob(b, DeleteJobName(b.Name), image, append([]string{"agent", "delete"}, st.args...), st.env, st.vols, st.mounts)
	job.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
	return job
}

// VerifyRestoreContainerName is the init container of a verification Job that restores the
// artifact: its failure is the verification's.
const VerifyRestoreContainerName = "restore"

// Where a verification Job's throwaway member listens, in its pod's network namespace only.
const (
	verifyClientURL = "http://127.0.0.1:2379"
	verifyPeerURL   = "http://127.0.0.1:2380"
	verifyName      = "verify"
	// verifyDataDir is the throwaway member's data directory, in the pod's scratch volume.
	verifyDataDir = agentTmp + "/verify/data"
	// verifyQuota is the throwaway member's quota: the largest an EtcdCluster may set, so
	// that no database a backup holds is refused.
	verifyQuota = "8589934592"
)

// VerifyJob returns the Job that proves backup b, which succeeded, restorable. Its pod
//
//  1. restores the artifact (agent restore, in an init container, a claim mounted
//     read-only): its SHA-256 must be the recorded one, and etcdutl checks the snapshot's
//     own trailer;
//  2. starts a throwaway single member on the restored data (a sidecar of etcdImage, the
//     release the backup was taken from: an older etcd refuses a newer one's data),
//     listening on loopback only;
//  3. checks that member against what b's status recorded (agent check): its revision, its
//     key count and its hash at the backup's revision.
//
// It runs once, bounded by spec.timeout.
func VerifyJob(b *etcdv1alpha1.EtcdBackup, image, etcdImage string) *batchv1.Job {
	a, snap := b.Status.Artifact, b.Status.Snapshot
	var st store
	if d := b.Spec.Destination; d.S3 != nil {
		st = storeOf(&d.S3.S3Bucket, "", a.Key, true)
	} else {
		st = storeOf(nil, d.PVC.ClaimName, a.Key, true)
	}
	timeout := 30 * time.Minute
	if b.Spec.Timeout != nil {
		timeout = b.Spec.Timeout.Duration
	}
	check := []string{"agent", "check", "--endpoint=" + verifyClientURL, "--sha256=" + a.SHA256,
		"--revision=" + strconv.FormatInt(snap.Revision, 10), "--timeout=" + timeout.String()}
	if snap.Keys != nil {
		check = append(check, "--keys="+strconv.FormatInt(*snap.Keys, 10))
	}
	if snap.KVHash != "" {
		check = append(check, "--kv-hash="+snap.KVHash, "--hash-compact-revision="+strconv.FormatInt(snap.HashCompactRevision, 10))
	}
	job := agentJob(b, VerifyJobName(b.Name), image, check, nil, nil, nil)
	spec := &job.Spec.Template.Spec
	job.Spec.ActiveDeadlineSeconds = ptr.To(int64(timeout.Seconds()) + 60)
	ct := &spec.Containers[0]
	ct.Resources = agentResources()
	restore := ct.DeepCopy()
	restore.Name = VerifyRestoreContainerName
	restore.Args = append([]string{"agent", "restore", "--sha256=" + a.SHA256, "--compression=" + string(a.Compression),
		"--data-dir=" + verifyDataDir, "--name=" + verifyName, "--initial-cluster=" + verifyName + "=" + verifyPeerURL,
		"--initial-advertise-peer-urls=" + verifyPeerURL, "--initial-cluster-token=" + verifyName,
		// The check asks the throwaway member without an identity: a backup of a cluster with
		// etcd's authentication on is checked with it off (only in the throwaway copy).
		"--disable-auth"}, st.args...)
	restore.Env = append(restore.Env, st.env...)
	restore.VolumeMounts = append(restore.VolumeMounts, st.mounts...)
	member := corev1.Container{
		Name: "etcd", Image: etcdImage, Command: []string{EtcdBinary},
		Args: []string{"--name=" + verifyName, "--data-dir=" + verifyDataDir,
			"--listen-client-urls=" + verifyClientURL, "--advertise-client-urls=" + verifyClientURL,
			"--listen-peer-urls=" + verifyPeerURL, "--initial-advertise-peer-urls=" + verifyPeerURL,
			"--initial-cluster=" + verifyName + "=" + verifyPeerURL, "--quota-backend-bytes=" + verifyQuota, "--log-level=warn"},
		// A sidecar: it starts after the restore and stops once the check has ended.
		RestartPolicy:   ptr.To(corev1.ContainerRestartPolicyAlways),
		VolumeMounts:    ct.VolumeMounts,
		SecurityContext: containerSecurityContext(),
		Resources: corev1.ResourceRequirements{
			// It holds every key's index in memory.
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		},
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
	}
	spec.InitContainers = []corev1.Container{*restore, member}
	spec.Volumes = append(spec.Volumes, st.vols...)
	return job
}

// destinationStore is the agent's view of key at a backup destination, mounted read-write.
func destinationStore(d etcdv1alpha1.BackupDestination, key string) store {
	if d.S3 != nil {
		return storeOf(&d.S3.S3Bucket, "", key, false)
	}
	return storeOf(nil, d.PVC.ClaimName, key, false)
}

// store is how the agent reaches an artifact: its flags, environment and volumes.
type store struct {
	args   []string
	env    []corev1.EnvVar
	vols   []corev1.Volume
	mounts []corev1.VolumeMount
}

// storeOf is the agent's view of an artifact at key in an S3 bucket or on a claim
// (exactly one is non-nil), mounted read-only for a restore.
func storeOf(s3 *etcdv1alpha1.S3Bucket, claim string, key string, readOnly bool) store {
	st := store{args: []string{"--key=" + key}}
	if s3 == nil {
		st.args = append(st.args, "--store=file", "--file-root="+agentFileRoot)
		st.vols = []corev1.Volume{{Name: "backup", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim, ReadOnly: readOnly}}}}
		st.mounts = []corev1.VolumeMount{{Name: "backup", MountPath: agentFileRoot, ReadOnly: readOnly}}
		return st
	}
	st.args = append(st.args, "--store=s3", "--s3-endpoint="+s3.Endpoint, "--s3-bucket="+s3.Bucket)
	if s3.Region != "" {
		st.args = append(st.args, "--s3-region="+s3.Region)
	}
	if s3.ForcePathStyle {
		st.args = append(st.args, "--s3-path-style")
	}
	secretKey := func(env, key string, optional bool) corev1.EnvVar {
		return corev1.EnvVar{Name: env, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
			LocalObjectReference: corev1.LocalObjectReference{Name: s3.CredentialsSecretName}, Key: key,
			Optional: ptr.To(optional)}}}
	}
	st.env = []corev1.EnvVar{
		secretKey("AWS_ACCESS_KEY_ID", S3AccessKeyIDKey, false),
		secretKey("AWS_SECRET_ACCESS_KEY", S3SecretAccessKeyKey, false),
		secretKey("AWS_SESSION_TOKEN", S3SessionTokenKey, true),
	}
	if s3.CASecretName != "" {
		st.args = append(st.args, "--s3-ca-file="+agentS3CAPath+"/"+S3CAKey)
		st.vols = []corev1.Volume{{Name: "s3-ca", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
			SecretName: s3.CASecretName, Items: []corev1.KeyToPath{{Key: S3CAKey, Path: S3CAKey}}}}}}
		st.mounts = []corev1.VolumeMount{{Name: "s3-ca", MountPath: agentS3CAPath, ReadOnly: true}}
	}
	return st
}

// agentJob is a run-once Job of the agent with args, owned by backup b.
func agentJob(b *etcdv1alpha1.EtcdBackup, name, image string, args []string, env []corev1.EnvVar, vols []corev1.Volume, mounts []corev1.VolumeMount) *batchv1.Job {
	// Not the cluster's selector labels (its name is not "etcd"): the PodDisruptionBudget
	// and the operator must never count a backup pod as a member.
	labels := cluster.Names{Name: b.Spec.ClusterName}.JobSelectorLabels()
	labels[LabelBackup] = b.Name
	vols = append(vols, corev1.Volume{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	mounts = append(mounts, corev1.VolumeMount{Name: "tmp", MountPath: agentTmp})
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: b.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{backupOwner(b)},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy:                corev1.RestartPolicyNever,
					AutomountServiceAccountToken: ptr.To(false),
					EnableServiceLinks:           ptr.To(false),
					SecurityContext:              podSecurityContext(),
					Containers: []corev1.Container{{
						Name:                     AgentContainerName,
						Image:                    image,
						Command:                  []string{AgentBinary},
						Args:                     args,
						Env:                      append(env, corev1.EnvVar{Name: "TMPDIR", Value: agentTmp}),
						VolumeMounts:             mounts,
						SecurityContext:          containerSecurityContext(),
						TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
						Resources:                agentResources(),
					}},
					Volumes: vols,
				},
			},
		},
	}
}

// agentResources bound the agent: it streams the snapshot through fixed-size buffers (a
// 16 MiB upload part at most), so its memory does not grow with the database.
func agentResources() corev1.ResourceRequirements {
	return corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")},
	}
}

// restoreResources are the restore init container's: etcd's own limits, since restoring maps
// the whole database into memory as etcd does (mostly page cache), and a small request.
func restoreResources(c *etcdv1alpha1.EtcdCluster) corev1.ResourceRequirements {
	r := corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		Limits:   c.Spec.Resources.Limits.DeepCopy(),
	}
	for name, limit := range r.Limits {
		if req, ok := r.Requests[name]; ok && limit.Cmp(req) < 0 {
			r.Requests[name] = limit // a request above the limit is invalid
		}
	}
	return r
}

func backupOwner(b *etcdv1alpha1.EtcdBackup) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion: etcdv1alpha1.GroupVersion.String(), Kind: "EtcdBackup", Name: b.Name, UID: b.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	}
}

// RestoreSource is a resolved restore source: the artifact, where it is, and its checksum.
type RestoreSource struct {
	// S3 is the artifact's bucket, or nil when it is on a claim.
	S3 *etcdv1alpha1.S3Bucket
	// Claim is the PersistentVolumeClaim holding the artifact, when S3 is nil.
	Claim string
	// Key is the object key, or the path inside the claim.
	Key string
	// SHA256 is the checksum the artifact must have.
	SHA256 string
	// Compression is the artifact's compression, as its backup's status says; "" for an
	// artifact named by its key alone, whose format the agent reads from its first bytes.
	Compression etcdv1alpha1.BackupCompression
	// BumpRevision, when set, raises every revision by this much and marks them compacted.
	BumpRevision *int64
}

// WithRestore adds the restore init container to the pod of a restored cluster's first
// member m: before etcd starts, the agent fetches the artifact, verifies its checksum and
// restores it into the member's data directory with the new cluster's identity. It does
// nothing when the data directory already holds a member, so the pod may restart.
func WithRestore(pod *corev1.Pod, c *etcdv1alpha1.EtcdCluster, m MemberConfig, src RestoreSource, image string) {
	cl := cluster.For(c)
	st := storeOf(src.S3, src.Claim, src.Key, true)
	args := append([]string{"agent", "restore"}, st.args...)
	if src.Compression != "" {
		args = append(args, "--compression="+string(src.Compression))
	}
	args = append(args,
		"--sha256="+src.SHA256,
		"--data-dir="+DataDir,
		"--name="+m.Name,
		"--initial-cluster="+strings.Join(m.InitialCluster, ","),
		"--initial-advertise-peer-urls="+cl.PeerURL(m.Name),
		"--initial-cluster-token="+cluster.Token(c),
	)
	if src.BumpRevision != nil {
		args = append(args, "--bump-revision="+strconv.FormatInt(*src.BumpRevision, 10), "--mark-compacted")
	}
	mounts := append([]corev1.VolumeMount{{Name: DataVolume, MountPath: DataMountPath}}, st.mounts...)
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:                     RestoreContainerName,
		Image:                    image,
		Command:                  []string{AgentBinary},
		Args:                     args,
		Env:                      append(st.env, corev1.EnvVar{Name: "TMPDIR", Value: DataMountPath}),
		VolumeMounts:             mounts,
		SecurityContext:          containerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                restoreResources(c),
	})
	pod.Spec.Volumes = append(pod.Spec.Volumes, st.vols...)
}

// RecoveryContainerName names the init container of a member that is recovered from a
// lost quorum (internal/recovery).
const RecoveryContainerName = "recover"

// AnnotationRecovery is on the pod of a member recovered from a lost quorum: the recovery's
// ID, which its init container carries out.
const AnnotationRecovery = "etcd.etcdpilot.io/recovery"

// WithRecovery adds the init container that recovers member m, the survivor of a lost
// quorum: before etcd starts, the agent restores the snapshot saved on the member's volume
// (snapshotKey, relative to it) as a new cluster of m alone, with every revision raised by
// bump, and replaces the member's data directory with it, once (it records recovery id
// beside the data directory, so the pod may restart).
func WithRecovery(pod *corev1.Pod, c *etcdv1alpha1.EtcdCluster, m MemberConfig, id, snapshotKey string, bump int64, image string) {
	cl := cluster.For(c)
	args := []string{"agent", "restore", "--store=file", "--file-root=" + DataMountPath, "--key=" + snapshotKey,
		"--recovery=" + id,
		"--data-dir=" + DataDir,
		"--name=" + m.Name,
		"--initial-cluster=" + m.Name + "=" + cl.PeerURL(m.Name),
		"--initial-advertise-peer-urls=" + cl.PeerURL(m.Name),
		// A new cluster ID: nothing of the cluster that lost its quorum can join it.
		"--initial-cluster-token=" + cluster.Token(c) + "-" + id,
		"--bump-revision=" + strconv.FormatInt(bump, 10), "--mark-compacted",
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[AnnotationRecovery] = id
	pod.Spec.InitContainers = append(pod.Spec.InitContainers, corev1.Container{
		Name:                     RecoveryContainerName,
		Image:                    image,
		Command:                  []string{AgentBinary},
		Args:                     args,
		Env:                      []corev1.EnvVar{{Name: "TMPDIR", Value: DataMountPath}},
		VolumeMounts:             []corev1.VolumeMount{{Name: DataVolume, MountPath: DataMountPath}},
		SecurityContext:          containerSecurityContext(),
		TerminationMessagePolicy: corev1.TerminationMessageFallbackToLogsOnError,
		Resources:                restoreResources(c),
	})
}
