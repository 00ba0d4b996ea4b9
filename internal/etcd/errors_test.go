package etcd_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"

	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

func TestErrorClassifiers(t *testing.T) {
	classifiers := map[string]func(error) bool{
		"IsMemberNotFound":   etcd.IsMemberNotFound,
		"IsLearnerNotReady":  etcd.IsLearnerNotReady,
		"IsTooManyLearners":  etcd.IsTooManyLearners,
		"IsUnhealthyCluster": etcd.IsUnhealthyCluster,
		"IsPermissionDenied": etcd.IsPermissionDenied,
	}
	// Each error in the forms it can reach the operator in: as clientv3 returns it, and
	// straight from a gRPC stub.
	matches := map[string][]error{
		"IsMemberNotFound":   {rpctypes.ErrMemberNotFound, rpctypes.ErrGRPCMemberNotFound},
		"IsLearnerNotReady":  {rpctypes.ErrMemberLearnerNotReady, rpctypes.ErrGRPCLearnerNotReady},
		"IsTooManyLearners":  {rpctypes.ErrTooManyLearners, rpctypes.ErrGRPCTooManyLearners},
		"IsUnhealthyCluster": {rpctypes.ErrUnhealthy, rpctypes.ErrGRPCUnhealthy, rpctypes.ErrMemberNotEnoughStarted, rpctypes.ErrGRPCMemberNotEnoughStarted},
		"IsPermissionDenied": {rpctypes.ErrPermissionDenied, rpctypes.ErrGRPCPermissionDenied},
	}
	unrelated := []error{
		nil,
		errors.New("etcdserver: member not found"), // same text, not the same error
		context.DeadlineExceeded,
		rpctypes.ErrMemberNotLearner,
		rpctypes.ErrPeerURLExist,
		rpctypes.ErrNoLeader,
	}

	for name, is := range classifiers {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			for _, err := range matches[name] {
				g.Expect(is(err)).To(BeTrue(), "%v", err)
				g.Expect(is(fmt.Errorf("removing etcd member 1: %w", err))).To(BeTrue(), "wrapped %v", err)
			}
			for other, errs := range matches {
				if other == name {
					continue
				}
				for _, err := range errs {
					g.Expect(is(err)).To(BeFalse(), "%v is for %s", err, other)
				}
			}
			for _, err := range unrelated {
				g.Expect(is(err)).To(BeFalse(), "%v", err)
			}
		})
	}
}

// A learner refuses a membership change sent to it, with a different gRPC code in 3.5 and 3.6.
func TestIsNotSupportedForLearner(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcd.IsNotSupportedForLearner(rpctypes.ErrGRPCNotSupportedForLearner)).To(BeTrue())
	from35 := grpcstatus.Error(codes.Unavailable, "etcdserver: rpc not supported for learner")
	g.Expect(etcd.IsNotSupportedForLearner(fmt.Errorf("promoting etcd learner 1: %w", from35))).To(BeTrue())
	g.Expect(etcd.IsNotSupportedForLearner(grpcstatus.Error(codes.Unavailable, "etcdserver: leader changed"))).To(BeFalse())
	g.Expect(etcd.IsNotSupportedForLearner(errors.New("etcdserver: rpc not supported for learner"))).To(BeFalse())
	g.Expect(etcd.IsNotSupportedForLearner(nil)).To(BeFalse())
}

func TestExportedErrorsAreClassified(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcd.IsMemberNotFound(etcd.ErrMemberNotFound)).To(BeTrue())
	g.Expect(etcd.IsLearnerNotReady(etcd.ErrLearnerNotReady)).To(BeTrue())
	g.Expect(etcd.IsTooManyLearners(etcd.ErrTooManyLearners)).To(BeTrue())
	g.Expect(etcd.IsUnhealthyCluster(etcd.ErrUnhealthyCluster)).To(BeTrue())
}

func TestNewRequiresEndpoints(t *testing.T) {
	g := NewWithT(t)
	_, err := etcd.New(etcd.Config{})
	g.Expect(err).To(MatchError(ContainSubstring("no endpoints")))
}
