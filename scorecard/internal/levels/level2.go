package levels

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// upgradeSize is the size of the cluster that is upgraded: the smallest that keeps quorum
// while one member at a time is replaced.
const upgradeSize = 3

// unavailablePerRestart is how long writes through the client Service may go
// unacknowledged for each member the upgrade restarts. Two members of three keep quorum, so
// a restarted follower costs writes nothing in etcd itself; the leader is restarted only
// after leadership moved, which holds proposals for at most about an election timeout (1 s
// by default). What remains is the client: it holds one connection, through the Service, to
// one member, and when that member stops it reconnects to another ready one, about a second
// while kube-proxy drops the stopping pod. The writer counts an outage from the start of its
// first failed attempt (an attempt waits up to 5 x writeEvery, 1 s) to the end of the next
// acknowledged one (writeEvery later at best), up to a second more than etcd's own. Together,
// at their worst on a loaded 2-core node, about 3 s a restart. A cluster that refuses writes
// for as long as a member takes to restart (the pod ends, a new one starts, etcd replays its
// log: 10 s or more) exceeds it at the first restart.
const unavailablePerRestart = 3 * time.Second

// maxUnavailable is how long, in all, writes may go unacknowledged during level 2's upgrade,
// in which each of the upgradeSize members restarts once: 9 s.
const maxUnavailable = upgradeSize * unavailablePerRestart

// sampleTimeout bounds each member's answer in a sample of the versions: a member that has
// not answered its Status by then is taken as down. A member that serves answers within
// milliseconds; a stopped one would hold the call until the deadline.
const sampleTimeout = 2 * time.Second

// Level 2's pace, which the in-process tests quicken to the fakes' restarts of milliseconds
// (SetUpgradeTiming).
var (
	// writeEvery is how often the writer writes during an upgrade: 5 writes a second.
	writeEvery = 200 * time.Millisecond
	// sampleEvery is how often the members' versions are sampled while every member answers
	// at once; sampleEveryRestarting from the first sample in which one does not (or is slow
	// to), to the end. Health gating is judged between consecutive samples: the member that
	// stops answering must not do so before the one restarted before it answers again. With
	// an operator that acts as soon as the member restarted before is Ready, the two may be
	// only a few hundred milliseconds apart (the kubelet's readiness probe runs every 2 s, the
	// operator reacts to it within a second), which samples a second apart would miss.
	sampleEvery           = time.Second
	sampleEveryRestarting = 250 * time.Millisecond
	// unavailableLimit is the bound level 2 applies: maxUnavailable.
	unavailableLimit = maxUnavailable
)

// seamlessUpgrades (level 2): a 3-member cluster of the newest release of the previous
// minor version is upgraded to the newest release the bundle supports: without losing an
// acknowledged write, with writes unacknowledged for at most maxUnavailable in all, and,
// as the members' own etcd shows it, one member restarted at a time, each once the one
// before answers at the new version. The API server is first asked, in a dry run, whether
// spec.version may change at all; when it refuses, the test fails with its answer.
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
	upgrade(ctx, in, r, c, from.String(), to.String())
}

// upgrade waits for c to settle, then changes spec.version from from to to while a writer
// writes and a sampler asks every member for its version. Once every member runs to, it
// checks that every write etcd acknowledged survived, that writes were not unacknowledged
// for longer than unavailableLimit in all, and that the samples show a rolling, health-gated
// upgrade (framework.CheckRollingUpgrade). The three checks are independent: each failure is
// reported.
func upgrade(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, from, to string) {
	var cli etcd.Client
	var w *writer
	var s *sampler
	var probes map[string]framework.VersionProbe
	defer func() {
		if s != nil {
			s.stop()
		}
		framework.CloseProbes(probes)
		if w != nil {
			w.stop()
		}
		if cli != nil {
			_ = cli.Close() // the result is known by then
		}
	}()
	var members []string
	var changed time.Time // when spec.version was set: the origin of the checks' times
	var samples []framework.VersionSample
	var acked map[string]string
	var attempts []framework.WriteAttempt
	ok := runSteps(r,
		settleStep(ctx, in, c, upgradeSize),
		step{"start writing 5 keys a second", func() error {
			var err error
			cli, err = in.Env.Connect(ctx, c)
			if err == nil {
				w = startWriter(ctx, cli, keyPrefix(c)+"/upgrade")
			}
			return err
		}},
		step{"set spec.version to " + to + ", and ask every member for its version every second, 4 times a second once one restarts", func() error {
			for _, m := range c.Status.Members {
				members = append(members, m.Name)
			}
			var err error
			if probes, err = in.Env.ProbeMembers(ctx, c, members); err != nil {
				return err
			}
			changed, s = time.Now(), startSampler(ctx, probes)
			return in.Env.SetVersion(ctx, c, to, false)
		}},
		step{"wait until every member runs " + to, func() error {
			err := in.Env.WaitFor(ctx, c, "every member on "+to, framework.All(framework.RunsVersion(to), framework.Settled(upgradeSize)))
			if err == nil {
				acked, attempts = w.stop()
				samples = append(s.stop(), framework.SampleVersions(ctx, probes, sampleTimeout))
			}
			return err
		}},
	)
	if !ok {
		return
	}
	runSteps(r, step{"check every acknowledged write", func() error {
		r.Logf("%d writes acknowledged, %d not acknowledged during the upgrade", len(acked), len(attempts)-len(acked))
		return checkKeys(ctx, in, c, acked)
	}})
	runSteps(r, step{fmt.Sprintf("check that writes went unacknowledged for at most %s in all (%s for each of the %d members restarted)",
		unavailableLimit, unavailableLimit/upgradeSize, upgradeSize), func() error {
		return checkUnavailability(r, attempts, changed)
	}})
	runSteps(r, step{"check the members' versions: one member restarted at a time, each once the one before answered at " + to, func() error {
		restarts := framework.DescribeRestarts(members, to, samples)
		r.Logf("the members' versions, %s: %s", fromChange, restarts)
		if err := framework.CheckRollingUpgrade(members, from, to, samples); err != nil {
			// The report's table shows only the error: it carries the restarts seen.
			return fmt.Errorf("%w (%s; %s)", err, fromChange, restarts)
		}
		return nil
	}})
}

// fromChange says where the times of level 2's checks count from.
const fromChange = "times from the change of spec.version"

// checkUnavailability logs the outages of attempts and fails when they add up to more than
// unavailableLimit.
func checkUnavailability(r *report.Report, attempts []framework.WriteAttempt, changed time.Time) error {
	if len(attempts) == 0 {
		return errors.New("the writer tried no write")
	}
	outages := framework.Outages(attempts)
	total, err := framework.CheckOutages(outages, unavailableLimit, changed)
	r.Logf("writes went unacknowledged %d times, for %s in all", len(outages), total.Round(time.Millisecond))
	if err != nil {
		return fmt.Errorf("%w, %s: a rolling upgrade of %d members allows about an election timeout and a reconnection for each restart",
			err, fromChange, upgradeSize)
	}
	return nil
}

// writer writes a new key every writeEvery until stopped, and remembers every attempt and
// the writes etcd acknowledged. A write that failed may or may not have happened, so only
// acknowledged ones are checked.
type writer struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	acked    map[string]string
	attempts []framework.WriteAttempt
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
			start := time.Now()
			err := cli.Put(wctx, key, value)
			wcancel()
			if ctx.Err() != nil {
				return // cut short by the stop: neither acknowledged nor failed
			}
			w.attempts = append(w.attempts, framework.WriteAttempt{Start: start, End: time.Now(), Acked: err == nil})
			if err == nil {
				w.acked[key] = value
			}
		}
	}()
	return w
}

// stop stops the writer and returns what etcd acknowledged and every attempt, in order; it
// may be called more than once.
func (w *writer) stop() (acked map[string]string, attempts []framework.WriteAttempt) {
	w.once.Do(func() {
		w.cancel()
		<-w.done
	})
	return w.acked, w.attempts
}

// sampler takes framework.SampleVersions of the members until stopped: every sampleEvery
// until a sample shows a member silent or has not ended within sampleEveryRestarting, then
// every sampleEveryRestarting. Samples overlap: one waits up to sampleTimeout for a member
// that does not answer while the next ones start.
type sampler struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once

	mu      sync.Mutex
	samples []framework.VersionSample
}

func startSampler(ctx context.Context, probes map[string]framework.VersionProbe) *sampler {
	ctx, cancel := context.WithCancel(ctx)
	s := &sampler{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		var inFlight sync.WaitGroup
		defer inFlight.Wait()
		restarting := false
		for {
			start := time.Now()
			answered := make(chan bool, 1)
			inFlight.Go(func() {
				sample := framework.SampleVersions(ctx, probes, sampleTimeout)
				if ctx.Err() != nil {
					return // cut short by the stop: a member's silence says nothing
				}
				s.mu.Lock()
				s.samples = append(s.samples, sample)
				s.mu.Unlock()
				answered <- len(sample.Silent()) == 0
			})
			if !restarting {
				select {
				case <-ctx.Done():
					return
				case all := <-answered:
					restarting = !all
				case <-time.After(sampleEveryRestarting):
					restarting = true
				}
			}
			next := sampleEvery
			if restarting {
				next = sampleEveryRestarting
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Until(start.Add(next))):
			}
		}
	}()
	return s
}

// stop stops the sampler and returns its samples in time order; it may be called more than
// once.
func (s *sampler) stop() []framework.VersionSample {
	s.once.Do(func() {
		s.cancel()
		<-s.done
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	slices.SortFunc(s.samples, func(a, b framework.VersionSample) int { return a.At.Compare(b.At) })
	return s.samples
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
