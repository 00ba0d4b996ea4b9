// Package artifact stores backup artifacts: the compressed etcd snapshots the backup agent
// writes and the restore agent reads back.
//
// A Store is one place artifacts live, addressed by key: a directory on a mounted volume
// (NewFS, for a PersistentVolumeClaim) or an S3 bucket (NewS3). Both make the same promise,
// the one the backup controller relies on: an artifact becomes visible under its key only
// once it is complete. A backup that fails or is killed halfway leaves nothing a restore
// could mistake for a good artifact: S3 keeps an unfinished multipart upload invisible (and
// Put aborts it), and a file is written under a temporary name and renamed when it is
// complete and on disk.
//
// Put streams: it never holds a whole artifact in memory, so the agent's memory stays flat
// whatever the size of the etcd database.
//
// Reason turns a Store's error into the EtcdBackup condition reason the user sees
// (DestinationUnreachable, DestinationRejected, DestinationNotFound, DestinationFull).
package artifact
