package levels

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// step is one named step of a test.
type step struct {
	name string
	do   func() error
}

// runSteps runs steps in order, logging each with its duration, and stops at the first
// that fails; that failure fails the test. It reports whether all passed.
func runSteps(r *report.Report, steps ...step) bool {
	if err := firstFailure(r, steps...); err != nil {
		r.Fail(err.Error())
		return false
	}
	return true
}

// firstFailure runs steps in order, logging each with its duration, and returns the first
// failure, named by its step; the steps after it do not run. It is runSteps for a part of
// a test whose failure the caller reports.
func firstFailure(r *report.Report, steps ...step) error {
	for _, s := range steps {
		if err := r.Step(s.name, s.do); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
	}
	return nil
}

// newCluster returns the EtcdCluster of the CSV's alm-examples, prepared for this test
// under a new name with prefix, with change applied. A bundle without a usable example
// fails the test.
func newCluster(in Input, r *report.Report, prefix string, change func(c *etcdv1alpha1.EtcdCluster)) (*etcdv1alpha1.EtcdCluster, bool) {
	example, err := bundle.EtcdClusterExample(in.Bundle.CSV)
	if err != nil {
		r.Fail(err.Error())
		return nil, false
	}
	c := framework.Prepare(example, framework.NewName(prefix), in.Env.Namespace)
	if change != nil {
		change(c)
	}
	r.Logf("EtcdCluster %s is the CSV's alm-examples %s, with deletionPolicy Delete", c.Name, example.Name)
	return c, true
}

// createStep creates c.
func createStep(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster) step {
	return step{"create EtcdCluster " + c.Name, func() error { return in.Env.Create(ctx, c) }}
}

// settleStep waits until c runs size healthy members and is Available and Ready.
func settleStep(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, size int32) step {
	what := fmt.Sprintf("%d ready members, Available and Ready", size)
	if size == 1 {
		what = "1 ready member, Available and Ready"
	}
	return step{"wait for " + what, func() error { return in.Env.WaitFor(ctx, c, what, framework.Settled(size)) }}
}

// checkKeys reads want back from c over a new connection, so that every check goes
// through the client Service as it is now.
func checkKeys(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, want map[string]string) error {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // nothing to do about a failed close of a read-only client
	return framework.CheckKeys(ctx, cli, want)
}

// checkAbsent reads keys from c over a new connection and fails when c holds any of them.
func checkAbsent(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, keys map[string]string) error {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // nothing to do about a failed close of a read-only client
	got, err := framework.ReadKeys(ctx, cli, keys)
	if err != nil {
		return err
	}
	if len(got) > 0 {
		return fmt.Errorf("%s holds %d of the %d keys written after the backup, first %q: it was not restored from the backup",
			c.Name, len(got), len(keys), slices.Sorted(maps.Keys(got))[0])
	}
	return nil
}

// keyPrefix is where a test cluster's keys go.
func keyPrefix(c *etcdv1alpha1.EtcdCluster) string { return "/etcdpilot-scorecard/" + c.Name }

// retryFor runs check every interval until it passes or within is over, and returns its
// last error: what was still wrong, rather than the deadline. A refusal of the test's token
// (a 401 or 403 from a metrics endpoint) is final: waiting does not change RBAC.
func retryFor(ctx context.Context, within, interval time.Duration, check func(context.Context) error) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, interval, within, true, func(ctx context.Context) (bool, error) {
		problem := check(ctx)
		if problem != nil && ctx.Err() != nil && last != nil {
			// The wait ended during this check: the problem worth reporting is the last one
			// a whole check found, not the deadline.
			return false, nil
		}
		last = problem
		var se *framework.StatusError
		if errors.As(last, &se) && se.Refused() {
			return false, last
		}
		return last == nil, nil
	})
	if last != nil {
		return last
	}
	return err
}
