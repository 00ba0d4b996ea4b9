package backup_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
)

func TestArtifactKey(t *testing.T) {
	// 10:04:05 in Paris is 08:04:05 UTC: the key is in UTC whatever the input's zone.
	paris := time.FixedZone("CEST", 2*60*60)
	created := time.Date(2025, time.June, 3, 10, 4, 5, 999, paris)
	const name = "20250603T080405Z-nightly-1748937845.db.zst"

	for _, tc := range []struct {
		prefix string
		want   string
	}{
		{"", "prod/main/" + name},
		{"etcd", "etcd/prod/main/" + name},
		{"etcd/", "etcd/prod/main/" + name},
		{"/etcd//", "etcd/prod/main/" + name},
		{"team/a//etcd/", "team/a/etcd/prod/main/" + name},
		{"a/../b", "a/../b/prod/main/" + name}, // S3 keys are opaque: ".." is a name there
	} {
		NewWithT(t).Expect(backup.ArtifactKey(tc.prefix, "prod", "main", "nightly-1748937845", created, etcdv1alpha1.BackupCompressionZstd)).
			To(Equal(tc.want), "prefix %q", tc.prefix)
	}

	// The suffix follows the compression.
	for c, want := range map[etcdv1alpha1.BackupCompression]string{
		etcdv1alpha1.BackupCompressionZstd: "prod/main/20250603T080405Z-b.db.zst",
		etcdv1alpha1.BackupCompressionGzip: "prod/main/20250603T080405Z-b.db.gz",
		etcdv1alpha1.BackupCompressionNone: "prod/main/20250603T080405Z-b.db",
	} {
		NewWithT(t).Expect(backup.ArtifactKey("", "prod", "main", "b", created, c)).To(Equal(want), "%s", c)
	}
}

func TestLocation(t *testing.T) {
	const key = "prod/main/20250603T080405Z-b.db.gz"
	s3 := etcdv1alpha1.BackupDestination{S3: &etcdv1alpha1.S3Destination{
		S3Bucket: etcdv1alpha1.S3Bucket{Bucket: "backups"}, Prefix: "etcd"}}
	pvc := func(path string) etcdv1alpha1.BackupDestination {
		return etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "snaps", Path: path}}
	}

	for _, tc := range []struct {
		name string
		dest etcdv1alpha1.BackupDestination
		want string
	}{
		{"s3", s3, "s3://backups/" + key},
		{"pvc at the root", pvc(""), "pvc://snaps/" + key},
		{"pvc in a directory", pvc("etcd/nightly"), "pvc://snaps/etcd/nightly/" + key},
		{"pvc path is cleaned", pvc("./etcd//nightly/"), "pvc://snaps/etcd/nightly/" + key},
		{"pvc path cannot climb out of the claim", pvc("../../etc"), "pvc://snaps/etc/" + key},
		{"pvc absolute path stays inside", pvc("/etcd"), "pvc://snaps/etcd/" + key},
		{"no destination", etcdv1alpha1.BackupDestination{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(backup.Location(tc.dest, key)).To(Equal(tc.want))
		})
	}
}

func TestClaimPathNeverEscapes(t *testing.T) {
	g := NewWithT(t)
	g.Expect(backup.ClaimPath(etcdv1alpha1.PVCDestination{Path: "a/../../.."}, "../x.db.gz")).To(Equal("x.db.gz"))
	g.Expect(backup.ClaimPath(etcdv1alpha1.PVCDestination{}, "ns/c/k.db.gz")).To(Equal("ns/c/k.db.gz"))
}

// A backup's artifact is found again from the object alone: an S3 destination's key
// carries its prefix, a claim's its directory.
func TestArtifactOf(t *testing.T) {
	g := NewWithT(t)
	created := metav1.NewTime(time.Date(2025, time.June, 3, 8, 4, 5, 0, time.UTC))
	b := &etcdv1alpha1.EtcdBackup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "prod", Name: "b", CreationTimestamp: created},
		Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "main", Destination: etcdv1alpha1.BackupDestination{
			S3: &etcdv1alpha1.S3Destination{S3Bucket: etcdv1alpha1.S3Bucket{Bucket: "backups"}, Prefix: "etcd"}}},
	}
	key, location := backup.ArtifactOf(b, etcdv1alpha1.BackupCompressionZstd)
	g.Expect(key).To(Equal("etcd/prod/main/20250603T080405Z-b.db.zst"))
	g.Expect(location).To(Equal("s3://backups/etcd/prod/main/20250603T080405Z-b.db.zst"))

	b.Spec.Destination = etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "keep", Path: "etcd"}}
	key, location = backup.ArtifactOf(b, etcdv1alpha1.BackupCompressionGzip)
	g.Expect(key).To(Equal("etcd/prod/main/20250603T080405Z-b.db.gz"), "the path inside the claim")
	g.Expect(location).To(Equal("pvc://keep/etcd/prod/main/20250603T080405Z-b.db.gz"))

	again, _ := backup.ArtifactOf(b.DeepCopy(), etcdv1alpha1.BackupCompressionGzip)
	g.Expect(again).To(Equal(key), "the same object gives the same key on every pass")
}
