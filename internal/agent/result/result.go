// Package result is what the agent (internal/agent) reports when a command ends, as one
// JSON object in its container's termination message, and how the operator reads it back.
// It is small on purpose: the controllers import it without the agent's S3 and etcd code.
package result

import (
	"encoding/json"
	"strings"
)

// ReasonChecksumMismatch is the failure reason of a restore whose artifact's SHA-256 is not
// the expected one: the artifact is corrupt, or is another backup than the one named.
const ReasonChecksumMismatch = "ChecksumMismatch"

// Result is what a command reports, as one JSON object in its result file. A failed
// command sets Reason and Error only; a successful one leaves them empty and sets the
// fields of its command. The operator decodes it from the container's termination message:
//
//	res, ok := result.Parse(state.Terminated.Message)
type Result struct {
	// Reason is empty on success. On failure it is an EtcdBackup condition reason of
	// api/v1alpha1 (ClusterNotAvailable, DestinationUnreachable, SnapshotFailed, Timeout...),
	// or ReasonChecksumMismatch, or RestoreFailed for another restore failure.
	Reason string `json:"reason,omitempty"`
	// Error says what failed, for a user, in at most 1 KiB.
	Error string `json:"error,omitempty"`

	// SHA256 is the hex SHA-256 of the artifact as stored (compressed): written by backup,
	// verified by restore.
	SHA256 string `json:"sha256,omitempty"`
	// Size is the artifact's size in bytes, as stored.
	Size int64 `json:"size,omitempty"`
	// SnapshotSize is the size in bytes of the uncompressed etcd snapshot.
	SnapshotSize int64 `json:"snapshotSize,omitempty"`
	// Compression is the artifact's compression: zstd, gzip or none. An agent that leaves
	// it out predates the choice and wrote gzip (backup.ReportedCompression).
	Compression string `json:"compression,omitempty"`
	// StreamSeconds is how long the artifact streamed: from opening the member's snapshot
	// stream to the store's acknowledgment (backup), from opening the artifact to the
	// uncompressed snapshot on disk (restore). Dividing SnapshotSize by it gives the
	// throughput without the pod's start.
	StreamSeconds float64 `json:"streamSeconds,omitempty"`

	// Revision (backup) is the etcd revision the snapshot holds at least: every key as of
	// this revision is in it (see Backup for where it comes from).
	Revision int64 `json:"revision,omitempty"`
	// EtcdVersion (backup) is the etcd release of the member the snapshot came from.
	EtcdVersion string `json:"etcdVersion,omitempty"`
	// MemberID (backup) is that member's ID, in hex.
	MemberID string `json:"memberID,omitempty"`
	// ClusterID (backup) is the etcd cluster's ID, in hex.
	ClusterID string `json:"clusterID,omitempty"`
	// Member (backup) is that member's name, when the member list could be read.
	Member string `json:"member,omitempty"`
	// Keys is how many keys the cluster held at Revision: read from the member the
	// snapshot came from (backup), or from the member restored from it (check). Nil when
	// it could not be read.
	Keys *int64 `json:"keys,omitempty"`
	// KVHash is etcd's HashKV at Revision, in hex, of the same member; HashCompactRevision
	// the compaction the hash starts from (two hashes compare only when those are equal).
	// Empty when it could not be read.
	KVHash              string `json:"kvHash,omitempty"`
	HashCompactRevision int64  `json:"hashCompactRevision,omitempty"`
	// RestoredRevision (check) is the revision of the member restored from the artifact:
	// at least the backup's Revision.
	RestoredRevision int64 `json:"restoredRevision,omitempty"`
	// KeysChecked and HashChecked (check) say which of what the backup recorded were
	// compared (a hash compares only from the same compaction); HashNotCompared says why
	// the hash was not, for a user. A check without both compared proves less than a
	// verification promises: the operator does not report it Verified=True.
	KeysChecked     bool   `json:"keysChecked,omitempty"`
	HashChecked     bool   `json:"hashChecked,omitempty"`
	HashNotCompared string `json:"hashNotCompared,omitempty"`

	// AlreadyRestored (restore) says the data directory already held a member, restored by
	// an earlier run of the same init container: nothing was done.
	AlreadyRestored bool `json:"alreadyRestored,omitempty"`

	// MaxRSSBytes is the agent's peak resident memory, for sizing the pod's memory limit.
	MaxRSSBytes int64 `json:"maxRSSBytes,omitempty"`
}

// Parse decodes the result the agent left in its container's termination message. ok
// is false when the message holds no result (the agent died before writing it, or the
// message is someone else's): a result says either what was stored (SHA256) or what failed
// (Error).
func Parse(terminationMessage string) (res Result, ok bool) {
	if err := json.Unmarshal([]byte(terminationMessage), &res); err != nil || res.SHA256 == "" && res.Error == "" {
		return Result{}, false
	}
	return res, true
}

// LastLine is the last non-empty line of a container's last words (a termination message
// without a result, a panic), for a message.
func LastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// Failed reports whether the result is a failure's.
func (r Result) Failed() bool {
	return r.Reason != ""
}
