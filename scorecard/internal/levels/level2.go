package levels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/harness"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
)

// upgradeSize is the size of the cluster that is upgraded: the smallest that keeps quorum
// while one member at a time is replaced.
const upgradeSize = 3

// writeEvery is how often the writer writes during an upgrade: 5 writes a second.
const writeEvery = 200 * time.Millisecond

// seamlessUpgrades (level 2): a 3-member cluster of the newest release of the previous
// minor version is upgraded to the newest release the bundle supports, without losing an
// acknowledged write. The API server is first asked, in a dry run, whether spec.version
// may change at all; today it refuses (the CRD forbids the change), and the test fails
// with its answer.
func seamlessUpgrades(ctx context.Context, in Input, r *report.Report) {
	supported := bundle.SupportedVersions(in.Bundle.CSV)
	r.Logf("the bundle supports etcd %s", joinVersions(supported))
	from, to, err := bundle.UpgradePair(supported)
	if err != nil {
		r.Fail(fmt.Sprintf("%v (supported: %s)", err, joinVersions(supported)))
		return
	}
	r.Logf("testing the upgrade from %s to %s", from, to)
	c, ok := newCluster(in, r, "sc-l2-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Size, c.Spec.Version = upgradeSize, from.String()
	})
	if !ok || !runSteps(r, createStep(ctx, in, c)) {
		return
	}
	err = r.Step("ask the API server (dry run) to accept spec.version "+to.String(), func() error {
		return in.Env.SetVersion(ctx, c, to.String(), true)
	})
	if err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) || apierrors.IsBadRequest(err) {
			r.Fail(fmt.Sprintf("the API server refuses to change spec.version from %s to %s (%s); %s", from, to, refusal(err), upgradesMissing))
			r.Suggest("Roll upgrades one member at a time, each gated on the cluster's health, then allow spec.version to change.")
			return
		}
		r.Fail(fmt.Sprintf("asking the API server to accept spec.version %s: %v", to, err))
		return
	}
	upgrade(ctx, in, r, c, to.String())
}

// upgrade waits for c to settle, then changes spec.version to version while a writer
// writes, and checks that every write etcd acknowledged survived.
func upgrade(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, version string) {
	var cli etcd.Client
	var w *writer
	defer func() {
		if w != nil {
			w.stop()
		}
		if cli != nil {
			_ = cli.Close() // the result is known by then
		}
	}()
	runSteps(r,
		settleStep(ctx, in, c, upgradeSize),
		step{"start writing 5 keys a second", func() error {
			var err error
			cli, err = in.Env.Connect(ctx, c)
			if err == nil {
				w = startWriter(ctx, cli, keyPrefix(c)+"/upgrade")
			}
			return err
		}},
		step{"set spec.version to " + version, func() error { return in.Env.SetVersion(ctx, c, version, false) }},
		step{"wait until every member runs " + version, func() error {
			return in.Env.WaitFor(ctx, c, "every member on "+version, harness.All(harness.RunsVersion(version), harness.Settled(upgradeSize)))
		}},
		step{"check every acknowledged write", func() error {
			acked, failed := w.stop()
			r.Logf("%d writes acknowledged, %d not acknowledged during the upgrade", len(acked), failed)
			return checkKeys(ctx, in, c, acked)
		}},
	)
}

// writer writes a new key every writeEvery until stopped, and remembers the writes etcd
// acknowledged. A write that failed may or may not have happened, so only acknowledged
// ones are checked.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	acked  map[string]string
	failed int
}

func startWriter(ctx context.Context, cli etcd.Client, prefix string) *writer {
	ctx, cancel := context.WithCancel(ctx)
	w := &writer{cancel: cancel, done: make(chan struct{}), acked: map[string]string{}}
	go func() {
		defer close(w.done)
		tick := time.NewTicker(writeEvery)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			key, value := fmt.Sprintf("%s/%06d", prefix, i), fmt.Sprintf("write %d", i)
			wctx, wcancel := context.WithTimeout(ctx, 5*writeEvery)
			if err := cli.Put(wctx, key, value); err != nil {
				w.failed++
			} else {
				w.acked[key] = value
			}
			wcancel()
		}
	}()
	return w
}

// stop stops the writer and returns what it wrote; it may be called more than once.
func (w *writer) stop() (acked map[string]string, failed int) {
	w.once.Do(func() {
		w.cancel()
		<-w.done
	})
	return w.acked, w.failed
}

func joinVersions(vs []bundle.Version) string {
	if len(vs) == 0 {
		return "none"
	}
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = v.String()
	}
	return strings.Join(s, ", ")
}

// refusal is what the API server says about the refused field, without the object's
// (random) name: the causes of an Invalid status, else the whole error.
func refusal(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil || len(status.Status().Details.Causes) == 0 {
		return err.Error()
	}
	var causes []string
	for _, c := range status.Status().Details.Causes {
		causes = append(causes, c.Field+": "+c.Message)
	}
	return strings.Join(causes, "; ")
}
