// Package agent is the part of the manager binary that runs inside backup and restore pods:
// `manager agent backup|restore|delete ...`.
//
// The operator never streams a snapshot itself: a backup is a Job whose pod runs the
// operator's own image with the agent's backup command, a restore is an init container of
// the first member of a new cluster, and deleting an artifact is again a Job. Running in a
// pod of its own keeps the snapshot's bytes, its memory and its network traffic out of the
// operator, and lets the pod mount what only it needs: the claim or the S3 credentials, and
// the etcd client certificate.
//
// Each command reports one Result, as JSON, to its result file: by default the container's
// termination message (/dev/termination-log), which Kubernetes keeps in the pod's status,
// where the operator reads it (capped at 4096 bytes, so the error is truncated to 1 KiB).
// The exit code is 0 on success and 1 on failure; stderr gets a one-line summary for a
// human reading `kubectl logs`.
//
// A backup streams the snapshot from one member through its compressor (zstd by default,
// gzip, or none) and SHA-256 to the store, never holding it whole (the backup function's
// doc has the pipeline). A restore fetches the artifact, decompresses it in the format it
// was declared in or, without a declaration, the one its first bytes show, refuses it
// unless its SHA-256 is the expected one, and builds the member's
// data directory with etcdutl's library; it can be killed at any point and run again (the
// restore function's doc has the steps).
package agent
