package backup

import (
	"path"
	"strings"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// artifactTimeLayout is the creation time in an artifact's name: UTC, basic ISO 8601,
// so names sort by time and contain no colons.
const artifactTimeLayout = "20060102T150405Z"

// ArtifactKey is where a backup's artifact is stored, relative to the destination:
// <prefix>/<namespace>/<cluster>/<created>-<backupName><suffix>, with created in UTC as
// 20060102T150405Z and the suffix that of the artifact's compression ([Suffix]: .db.zst,
// .db.gz or .db).
//
// The namespace and cluster directories keep the artifacts of different clusters apart
// when several share a bucket or a claim; the timestamp first makes a plain listing of a
// cluster's directory chronological; the backup's name makes the key unique and leads
// back to the EtcdBackup.
//
// The prefix is an S3 key prefix; pass "" for a PVC, whose directory is applied by
// [ClaimPath]. Slashes at either end of the prefix and runs of slashes inside it are
// dropped, so "etcd", "etcd/" and "/etcd//" give the same key and an empty prefix gives
// no leading slash. Nothing else is interpreted: an S3 key is an opaque string, in which
// "." and ".." are ordinary names.
func ArtifactKey(prefix, namespace, cluster, backupName string, created time.Time, c etcdv1alpha1.BackupCompression) string {
	name := created.UTC().Format(artifactTimeLayout) + "-" + backupName + Suffix(c)
	parts := make([]string, 0, 4)
	for p := range strings.SplitSeq(prefix, "/") {
		if p != "" {
			parts = append(parts, p)
		}
	}
	return strings.Join(append(parts, namespace, cluster, name), "/")
}

// ClaimPath is the path of an artifact inside a PersistentVolumeClaim: key (from
// [ArtifactKey] with an empty prefix) below the destination's directory, pvc.path.
//
// The API refuses a path that is absolute or contains "..", but the path is joined as if
// rooted all the same, so no path can point outside the claim, whatever the API lets
// through. The result is relative (no leading slash) and clean.
func ClaimPath(pvc etcdv1alpha1.PVCDestination, key string) string {
	return strings.TrimPrefix(path.Join("/", pvc.Path, key), "/")
}

// Location names an artifact for status.artifact.location and for people:
// s3://<bucket>/<key> for S3, pvc://<claim>/<ClaimPath> for a PVC. It is "" for a
// destination with neither set, which the API refuses.
func Location(dest etcdv1alpha1.BackupDestination, key string) string {
	switch {
	case dest.S3 != nil:
		return "s3://" + dest.S3.Bucket + "/" + key
	case dest.PVC != nil:
		return "pvc://" + dest.PVC.ClaimName + "/" + ClaimPath(*dest.PVC, key)
	default:
		return ""
	}
}

// ArtifactOf is where backup b's artifact, compressed with c, goes (the object key, or the
// path inside the claim) and its location, derived from the object and c alone so every
// reconcile finds the same key. The Job is given the key of spec.compression; the status
// records the key of the compression the agent reports, which differs only for a Job an
// older operator started (gzip, .db.gz). The deletion uses the key in status.
func ArtifactOf(b *etcdv1alpha1.EtcdBackup, c etcdv1alpha1.BackupCompression) (key, location string) {
	d := b.Spec.Destination
	if d.S3 != nil {
		key = ArtifactKey(d.S3.Prefix, b.Namespace, b.Spec.ClusterName, b.Name, b.CreationTimestamp.Time, c)
		return key, Location(d, key)
	}
	rel := ArtifactKey("", b.Namespace, b.Spec.ClusterName, b.Name, b.CreationTimestamp.Time, c)
	return ClaimPath(*d.PVC, rel), Location(d, rel)
}
