// Package backup makes the operator's backup decisions: where an artifact goes, which
// member to snapshot, when a schedule's next backup is due, which old backups to delete
// and what the schedule's status says. Every function is pure: no Kubernetes client, no
// etcd client, no I/O, and no clock. The controllers observe, call these functions, and
// act on the answer.
//
// # Artifacts
//
// A backup is one etcd snapshot, compressed as its spec says ([CompressionOf]: zstd by
// default, gzip, or none), stored once under a key that says what it is:
// <prefix>/<namespace>/<cluster>/<UTC creation time>-<backup>.db.zst (.db.gz, .db: see
// [Suffix], [ArtifactKey]). Keys never collide between clusters sharing a bucket or a claim, a
// directory listing is chronological, and a key leads back to its EtcdBackup. On a PVC
// the key is placed below the destination's path, which can never point outside the
// claim ([ClaimPath]). [Location] is the s3:// or pvc:// name shown in status. A restore
// reads every format ever written: by the backup's status.artifact.compression, or, for an
// artifact named by its key alone, by its first bytes ([Sniff]).
//
// # Which member
//
// A snapshot streams the member's whole database. [ChooseMember] prefers a healthy
// voting follower that is current (within [MaxLag] raft entries of the most advanced
// healthy voter), so the leader, whose slowness slows every write, is used only when no
// follower is current. Learners are never used: they may not hold all the data yet.
//
// # Schedules
//
// When a schedule's run is due is internal/cron's. [NameForRun] derives the backup's name
// from the run time, so creating it is idempotent: a controller that crashed after the
// create finds the backup again.
//
// # Retention
//
// [Prune] ranks backups newest first and deletes those beyond maxCount or older than
// maxAge, but never the newest successful backup (a run of failures must not leave the
// cluster without one to restore) and never a backup still running (its artifact is
// being written). [ScheduleReady] turns the newest finished backup into the schedule's
// Ready condition.
package backup
