package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Every validation rule of the backup APIs (EtcdBackup, EtcdBackupSchedule and an
// EtcdCluster's spec.bootstrap.restore), against the real API server.

func s3Bucket() etcdv1alpha1.S3Bucket {
	return etcdv1alpha1.S3Bucket{Endpoint: "https://s3.example.com", Bucket: "backups", CredentialsSecretName: "s3"}
}

func s3Destination() etcdv1alpha1.BackupDestination {
	return etcdv1alpha1.BackupDestination{S3: &etcdv1alpha1.S3Destination{S3Bucket: s3Bucket(), Prefix: "etcd"}}
}

// expectVerdict checks err against refusal: empty means accepted, otherwise an Invalid
// error whose message contains refusal.
func expectVerdict(g Gomega, err error, refusal string) {
	if refusal == "" {
		g.Expect(err).NotTo(HaveOccurred())
		return
	}
	g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	g.Expect(err.Error()).To(ContainSubstring(refusal))
}

func TestBackupDefaults(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "c", Destination: s3Destination()}}
	g.Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
	g.Expect(b.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.BackupDeletionPolicyRetain))
	g.Expect(b.Spec.Timeout).To(Equal(&metav1.Duration{Duration: 30 * time.Minute}))
	g.Expect(b.Spec.Compression).To(Equal(etcdv1alpha1.BackupCompressionZstd))

	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupScheduleSpec{Schedule: "@daily",
			BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: "c", Destination: s3Destination()}}}
	g.Expect(k8sClient.Create(context.Background(), s)).To(Succeed())
	g.Expect(s.Spec.Retention).To(Equal(&etcdv1alpha1.BackupRetention{MaxCount: ptr.To[int32](7)}))
	g.Expect(s.Spec.BackupTemplate.Timeout).To(Equal(&metav1.Duration{Duration: 30 * time.Minute}))
	g.Expect(s.Spec.BackupTemplate.Compression).To(Equal(etcdv1alpha1.BackupCompressionZstd))
}

func TestBackupCreateValidation(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name    string
		mutate  func(b *etcdv1alpha1.EtcdBackupSpec)
		refusal string
	}{
		{"S3", func(*etcdv1alpha1.EtcdBackupSpec) {}, ""},
		{"PVC", func(b *etcdv1alpha1.EtcdBackupSpec) {
			b.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "etcd/prod"}}
		}, ""},
		{"no destination", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination = etcdv1alpha1.BackupDestination{} },
			"set exactly one of destination.pvc and destination.s3"},
		{"two destinations", func(b *etcdv1alpha1.EtcdBackupSpec) {
			b.Destination.PVC = &etcdv1alpha1.PVCDestination{ClaimName: "backups"}
		}, "set exactly one of destination.pvc and destination.s3"},
		{"PVC path escaping the claim", func(b *etcdv1alpha1.EtcdBackupSpec) {
			b.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "a/../../etc"}}
		}, "path must be relative to the claim's root and must not contain '..'"},
		{"absolute PVC path", func(b *etcdv1alpha1.EtcdBackupSpec) {
			b.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "/etc"}}
		}, "path must be relative to the claim's root"},
		{"endpoint without scheme", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.Endpoint = "s3.example.com" },
			"endpoint must be a URL with an http or https scheme and a host, and no path"},
		{"endpoint with a path", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.Endpoint = "https://s3.example.com/bucket" },
			"endpoint must be a URL with an http or https scheme and a host, and no path"},
		{"plain http endpoint with a port", func(b *etcdv1alpha1.EtcdBackupSpec) {
			b.Destination.S3.Endpoint = "http://minio.storage.svc:9000"
		}, ""},
		{"bucket with capitals", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.Bucket = "Backups" },
			"spec.destination.s3.bucket in body should match"},
		{"no credentials", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.CredentialsSecretName = "" },
			"spec.destination.s3.credentialsSecretName"},
		{"prefix with a leading slash", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.Prefix = "/etcd" },
			"prefix must not start with '/'"},
		{"timeout too short", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Timeout = &metav1.Duration{Duration: 10 * time.Second} },
			"timeout must be at least 1m"},
		{"unknown deletion policy", func(b *etcdv1alpha1.EtcdBackupSpec) { b.DeletionPolicy = "Orphan" },
			`spec.deletionPolicy: Unsupported value: "Orphan"`},
		{"no cluster", func(b *etcdv1alpha1.EtcdBackupSpec) { b.ClusterName = "" }, "spec.clusterName"},
		{"gzip", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = etcdv1alpha1.BackupCompressionGzip }, ""},
		{"no compression", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = etcdv1alpha1.BackupCompressionNone }, ""},
		{"unknown compression", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = "lz4" },
			`spec.compression: Unsupported value: "lz4": supported values: "zstd", "gzip", "none"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{GenerateName: "b-", Namespace: ns},
				Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "c", Destination: s3Destination()}}
			tc.mutate(&b.Spec)
			expectVerdict(NewWithT(t), k8sClient.Create(context.Background(), b), tc.refusal)
		})
	}
}

func TestBackupUpdateValidation(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name    string
		update  func(b *etcdv1alpha1.EtcdBackupSpec)
		refusal string
	}{
		{"deletion policy changed", func(b *etcdv1alpha1.EtcdBackupSpec) { b.DeletionPolicy = etcdv1alpha1.BackupDeletionPolicyDelete }, ""},
		{"cluster changed", func(b *etcdv1alpha1.EtcdBackupSpec) { b.ClusterName = "other" },
			"clusterName and destination cannot be changed: a backup is taken once"},
		{"destination changed", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Destination.S3.Prefix = "elsewhere" },
			"clusterName and destination cannot be changed"},
		{"compression changed", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = etcdv1alpha1.BackupCompressionGzip },
			"compression cannot be changed: a backup is taken once; create a new EtcdBackup instead"},
		{"compression left out", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = "" }, ""}, // defaulted to zstd again
		{"compression restated", func(b *etcdv1alpha1.EtcdBackupSpec) { b.Compression = etcdv1alpha1.BackupCompressionZstd }, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{GenerateName: "b-", Namespace: ns},
				Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "c", Destination: s3Destination()}}
			g.Expect(k8sClient.Create(context.Background(), b)).To(Succeed())
			// The backup controller updates the object too: retry on a conflict.
			var err error
			for range 20 {
				g.Expect(k8sClient.Get(context.Background(), client.ObjectKeyFromObject(b), b)).To(Succeed())
				tc.update(&b.Spec)
				if err = k8sClient.Update(context.Background(), b); !apierrors.IsConflict(err) {
					break
				}
			}
			expectVerdict(g, err, tc.refusal)
		})
	}
}

func TestBackupScheduleValidation(t *testing.T) {
	ns := newNamespace(t)
	const cronMessage = "schedule must be a cron expression of five fields in range"
	cases := []struct {
		name    string
		mutate  func(s *etcdv1alpha1.EtcdBackupScheduleSpec)
		refusal string
	}{
		{"every six hours", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 */6 * * *" }, ""},
		{"weekdays in office hours", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "5,35 8-17/2 * * 1-5" }, ""},
		{"yearly", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 0 1 1 *" }, ""},
		{"descriptor", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "@hourly" }, ""},
		{"leading zeros", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "00 05 01 01 *" }, ""},
		{"backwards range", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 17-8 * * *" },
			"schedule: a range a-b must not end before it starts"},
		{"minute 60", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "60 * * * *" }, cronMessage},
		{"hour 24", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 24 * * *" }, cronMessage},
		{"day 0", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 0 0 * *" }, cronMessage},
		{"four fields", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 0 * *" }, cronMessage},
		{"day names", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "0 0 * * MON" }, cronMessage},
		{"@every", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "@every 1h" }, cronMessage},
		{"time zone prefix", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.Schedule = "CRON_TZ=Europe/Paris 0 0 * * *" }, cronMessage},
		{"retention by age", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) {
			s.Retention = &etcdv1alpha1.BackupRetention{MaxAge: &metav1.Duration{Duration: 7 * 24 * time.Hour}}
		}, ""},
		{"retention of nothing", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) {
			s.Retention = &etcdv1alpha1.BackupRetention{MaxCount: ptr.To[int32](0)}
		}, "spec.retention.maxCount: Invalid value: 0: spec.retention.maxCount in body should be greater than or equal to 1"},
		{"retention age zero", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) {
			s.Retention = &etcdv1alpha1.BackupRetention{MaxAge: &metav1.Duration{}}
		}, "retention.maxAge must be at least 1m"},
		{"template without a destination", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) {
			s.BackupTemplate.Destination = etcdv1alpha1.BackupDestination{}
		}, "set exactly one of destination.pvc and destination.s3"},
		{"template with gzip", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) {
			s.BackupTemplate.Compression = etcdv1alpha1.BackupCompressionGzip
		}, ""},
		{"template with an unknown compression", func(s *etcdv1alpha1.EtcdBackupScheduleSpec) { s.BackupTemplate.Compression = "xz" },
			`spec.backupTemplate.compression: Unsupported value: "xz"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{GenerateName: "s-", Namespace: ns},
				Spec: etcdv1alpha1.EtcdBackupScheduleSpec{Schedule: "@daily",
					BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: "c", Destination: s3Destination()}}}
			tc.mutate(&s.Spec)
			expectVerdict(NewWithT(t), k8sClient.Create(context.Background(), s), tc.refusal)
		})
	}

	t.Run("name too long", func(t *testing.T) {
		s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Name: strings.Repeat("s", 64), Namespace: ns},
			Spec: etcdv1alpha1.EtcdBackupScheduleSpec{Schedule: "@daily",
				BackupTemplate: etcdv1alpha1.EtcdBackupTemplate{ClusterName: "c", Destination: s3Destination()}}}
		expectVerdict(NewWithT(t), k8sClient.Create(context.Background(), s), "metadata.name must be at most 63 characters")
	})

	t.Run("empty retention", func(t *testing.T) {
		// Only a raw object can send an explicitly empty retention past the default.
		g := NewWithT(t)
		u := map[string]any{
			"apiVersion": etcdv1alpha1.GroupVersion.String(), "kind": "EtcdBackupSchedule",
			"metadata": map[string]any{"name": "empty-retention", "namespace": ns},
			"spec": map[string]any{"schedule": "@daily", "retention": map[string]any{},
				"backupTemplate": map[string]any{"clusterName": "c", "destination": map[string]any{
					"pvc": map[string]any{"claimName": "backups"}}}},
		}
		err := k8sClient.Create(context.Background(), &unstructured.Unstructured{Object: u})
		expectVerdict(g, err, "retention needs maxCount, maxAge or both")
	})
}

func TestRestoreValidation(t *testing.T) {
	ns := newNamespace(t)
	sum := strings.Repeat("ab", 32)
	cases := []struct {
		name    string
		mutate  func(c *etcdv1alpha1.EtcdClusterSpec)
		refusal string
	}{
		{"from a backup", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "nightly"}}
		}, ""},
		{"from an S3 object for Kubernetes", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
				Source:       &etcdv1alpha1.RestoreSource{S3: &etcdv1alpha1.S3Object{S3Bucket: s3Bucket(), Key: "a/b.db.gz"}, SHA256: sum},
				BumpRevision: ptr.To[int64](1000000000), MarkCompacted: true}}
		}, ""},
		{"from a PVC file", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
				Source: &etcdv1alpha1.RestoreSource{PVC: &etcdv1alpha1.PVCFile{ClaimName: "backups", Path: "x.db.gz"}, SHA256: sum}}}
		}, ""},
		{"neither backup nor source", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{}}
		}, "restore needs exactly one of backupName and source"},
		{"source without checksum", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
				Source: &etcdv1alpha1.RestoreSource{PVC: &etcdv1alpha1.PVCFile{ClaimName: "backups", Path: "x.db.gz"}, SHA256: "abc"}}}
		}, "spec.bootstrap.restore.source.sha256 in body should match"},
		{"source in two places", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
				Source: &etcdv1alpha1.RestoreSource{PVC: &etcdv1alpha1.PVCFile{ClaimName: "b", Path: "x"},
					S3: &etcdv1alpha1.S3Object{S3Bucket: s3Bucket(), Key: "x"}, SHA256: sum}}}
		}, "restore.source needs exactly one of pvc and s3"},
		{"markCompacted alone", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "n", MarkCompacted: true}}
		}, "restore.bumpRevision and restore.markCompacted go together"},
		{"bumpRevision alone", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "n", BumpRevision: ptr.To[int64](1000)}}
		}, "restore.bumpRevision and restore.markCompacted go together"},
		{"restore into 3.5", func(c *etcdv1alpha1.EtcdClusterSpec) {
			c.Version = "3.5.35"
			c.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "n"}}
		}, "restoring from a backup needs etcd 3.6 or newer"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "r-", Namespace: ns}}
			tc.mutate(&c.Spec)
			expectVerdict(NewWithT(t), k8sClient.Create(context.Background(), c), tc.refusal)
		})
	}

	t.Run("bootstrap is immutable", func(t *testing.T) {
		g := NewWithT(t)
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "r-", Namespace: ns}}
		g.Expect(k8sClient.Create(context.Background(), c)).To(Succeed())
		// Patches, not updates: the operator adds its finalizer meanwhile, and an update from
		// the created object would meet a conflict before the validation.
		base := c.DeepCopy()
		c.Spec.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "n"}}
		expectVerdict(g, k8sClient.Patch(context.Background(), c, client.MergeFrom(base)), "bootstrap cannot be added or removed after the cluster is created")

		r := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "r-", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Bootstrap: &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{BackupName: "n"}}}}
		g.Expect(k8sClient.Create(context.Background(), r)).To(Succeed())
		base = r.DeepCopy()
		r.Spec.Bootstrap.Restore.BackupName = "other"
		expectVerdict(g, k8sClient.Patch(context.Background(), r, client.MergeFrom(base)), "bootstrap cannot be changed")
	})
}
