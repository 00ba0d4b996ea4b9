package etcd

import (
	"errors"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	"google.golang.org/grpc/status"
)

// The errors etcd answers membership changes with, as the real Client returns them. They are
// exported so the fake and tests of other packages can produce exactly these values without
// importing etcd's packages; code deciding what to do should use the IsXxx functions, which
// also recognise the raw gRPC forms.
var (
	// ErrMemberNotFound is returned for a member ID that is not (or no longer) in the cluster.
	ErrMemberNotFound = rpctypes.ErrMemberNotFound
	// ErrLearnerNotReady is returned when promoting a learner that has not caught up with
	// the leader yet.
	ErrLearnerNotReady = rpctypes.ErrMemberLearnerNotReady
	// ErrTooManyLearners is returned when adding a learner while the cluster already has as
	// many as it allows (one by default).
	ErrTooManyLearners = rpctypes.ErrTooManyLearners
	// ErrUnhealthyCluster is returned when a membership change is refused because members
	// are down and the change could cost the cluster its quorum.
	ErrUnhealthyCluster = rpctypes.ErrUnhealthy
	// ErrCompacted is returned when compacting at a revision that is already compacted.
	ErrCompacted = rpctypes.ErrCompacted
)

// IsMemberNotFound reports whether err says the member does not exist, for instance because
// an earlier MemberRemove already removed it.
func IsMemberNotFound(err error) bool {
	return isAny(err, rpctypes.ErrMemberNotFound, rpctypes.ErrGRPCMemberNotFound)
}

// IsLearnerNotReady reports whether err is etcd refusing to promote a learner that is not in
// sync with the leader yet ("can only promote a learner member which is in sync with
// leader"). It is a reason to retry later, not a failure.
func IsLearnerNotReady(err error) bool {
	return isAny(err, rpctypes.ErrMemberLearnerNotReady, rpctypes.ErrGRPCLearnerNotReady)
}

// IsTooManyLearners reports whether err is etcd refusing to add a learner because the
// cluster already has the maximum number of learners.
func IsTooManyLearners(err error) bool {
	return isAny(err, rpctypes.ErrTooManyLearners, rpctypes.ErrGRPCTooManyLearners)
}

// IsUnhealthyCluster reports whether err is etcd refusing a membership change to protect its
// quorum. etcd has two such answers and the operator reacts to both the same way (wait for
// the members to be healthy, change nothing): "unhealthy cluster", when too few members are
// connected to the leader, and "re-configuration failed due to not enough started members",
// when too few members have ever started (for instance removing the last started member).
func IsUnhealthyCluster(err error) bool {
	return isAny(err,
		rpctypes.ErrUnhealthy, rpctypes.ErrGRPCUnhealthy,
		rpctypes.ErrMemberNotEnoughStarted, rpctypes.ErrGRPCMemberNotEnoughStarted)
}

// IsCompacted reports whether err is etcd refusing a compaction at a revision that is
// already compacted: what was asked for is done.
func IsCompacted(err error) bool {
	return isAny(err, rpctypes.ErrCompacted, rpctypes.ErrGRPCCompacted)
}

// IsPermissionDenied reports whether err is etcd refusing a request its user may not make:
// with authentication on, a key outside the user's roles, or an operation only root may do.
func IsPermissionDenied(err error) bool {
	return isAny(err, rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied)
}

// IsNotSupportedForLearner reports whether err is a learner refusing a request it cannot
// serve ("rpc not supported for learner"): the client happened to send a membership change
// to the learner's endpoint. It is a reason to retry (the next attempt goes elsewhere), not a
// failure. etcd 3.5 servers send it with gRPC code Unavailable, 3.6 with FailedPrecondition,
// so the status message is what identifies it.
func IsNotSupportedForLearner(err error) bool {
	if errors.Is(err, rpctypes.ErrGRPCNotSupportedForLearner) {
		return true
	}
	var st interface{ GRPCStatus() *status.Status }
	return errors.As(err, &st) && st.GRPCStatus().Message() == rpctypes.ErrorDesc(rpctypes.ErrGRPCNotSupportedForLearner)
}

// isAny reports whether err matches any of targets. clientv3 returns rpctypes.EtcdError
// values, but an error straight from a gRPC stub is a status error; errors.Is compares the
// former by value and the latter by status code and message.
func isAny(err error, targets ...error) bool {
	for _, target := range targets {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}
