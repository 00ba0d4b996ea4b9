package levels

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// The self-healing half of level 5: a cluster that loses two of its three members is
// recovered from the third without a human; a member whose data silently diverges is found
// and replaced.

// healWait bounds each wait for a recovery or a replacement: the loss is declared after
// quorumLossAfter, then the survivor restarts alone and two learners join; a corrupt member
// is found by the next consistency check (every minute here) and replaced. On the local
// cluster both took under two minutes (test/e2e/recovery_test.go).
var healWait = 4 * time.Minute

const (
	// quorumLossAfter is spec.quorumLossRecovery.after of the quorum-loss cluster: the
	// API's minimum.
	quorumLossAfter = 30 * time.Second
	// consistencyInterval is spec.consistencyCheck.interval of the corrupt-member
	// cluster: the API's minimum.
	consistencyInterval = time.Minute
	// canaryKey holds the value the test rewrites in one member's database file.
	canaryKey = "/canary"
)

// quorumLoss: a 3-member cluster with spec.quorumLossRecovery.policy Automatic loses two
// members, the leader among them (claims, then pods); the operator must recover it from the
// third with every key intact, status.recovery Succeeded, and a RecoverySucceeded event.
func quorumLoss(ctx context.Context, in Input, r *report.Report) {
	c, ok := newCluster(in, r, "sc-l5-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Name += "-quorum"
		c.Spec.Size = autoPilotSize
		c.Spec.QuorumLossRecovery = etcdv1alpha1.QuorumLossRecoverySpec{
			Policy: etcdv1alpha1.QuorumLossAutomatic, After: &metav1.Duration{Duration: quorumLossAfter}}
	})
	if !ok {
		return
	}
	var keep map[string]string
	var survivor string
	runSteps(r,
		createKeeping(ctx, in, c, "spec.quorumLossRecovery", func(c *etcdv1alpha1.EtcdCluster) bool {
			return c.Spec.QuorumLossRecovery.Policy == etcdv1alpha1.QuorumLossAutomatic
		}),
		settleStep(ctx, in, c, autoPilotSize),
		step{fmt.Sprintf("write %d keys", keepKeys), func() error {
			var err error
			keep, err = writeKeys(ctx, in, c, "/keep", keepKeys)
			return err
		}},
		step{"destroy two of the three members, the leader among them (claims, then pods)", func() error {
			var err error
			survivor, err = destroyMajority(ctx, in, c)
			return err
		}},
		step{"wait until the operator recovers the cluster from the surviving member: status.recovery Succeeded, 3 ready members", func() error {
			wctx, cancel := context.WithTimeout(ctx, healWait)
			defer cancel()
			if err := in.Env.WaitFor(wctx, c, "the recovery to succeed", framework.All(framework.Recovered(""), framework.Settled(autoPilotSize))); err != nil {
				return err
			}
			if got := c.Status.Recovery.Survivor; got != survivor {
				return fmt.Errorf("recovered from member %q, not from the survivor %s", got, survivor)
			}
			r.Logf("recovered from %s (recovery %s), revisions raised by %d", survivor, c.Status.Recovery.ID, c.Status.Recovery.RevisionBump)
			return nil
		}},
		step{fmt.Sprintf("read back the %d keys", keepKeys), func() error { return checkKeys(ctx, in, c, keep) }},
		step{"look for the event RecoverySucceeded", func() error { return waitEvents(ctx, in, r, c, "RecoverySucceeded") }},
	)
}

// destroyMajority destroys every member of c but one that is not the leader, together
// (DestroyMembers), and returns that one.
func destroyMajority(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster) (string, error) {
	spared, ok := framework.Victim(c)
	if !ok {
		return "", errors.New("no member that is not the leader")
	}
	var victims []string
	for _, m := range c.Status.Members {
		if m.Name != spared.Name {
			victims = append(victims, m.Name)
		}
	}
	return spared.Name, in.Env.DestroyMembers(ctx, c, victims)
}

// corruptMember: a 3-member cluster checked every minute (spec.consistencyCheck) holds a
// canary key; the test rewrites the canary's value in one follower's database file while
// it runs, so that its data silently differs from the others'. etcd itself must show it:
// read alone (serializable), that member serves the rewritten value and the others the
// original. The operator must then replace it with a new member, and say which one it
// found (a MemberCorrupt event naming it, no event blaming another); afterwards the client
// Service's linearizable reads serve every key and the canary's original value, and so does
// every member from its own data, the new one included.
func corruptMember(ctx context.Context, in Input, r *report.Report) {
	c, ok := newCluster(in, r, "sc-l5-", func(c *etcdv1alpha1.EtcdCluster) {
		c.Name += "-corrupt"
		c.Spec.Size = autoPilotSize
		c.Spec.ConsistencyCheck = etcdv1alpha1.ConsistencyCheckSpec{
			Mode: etcdv1alpha1.ConsistencyCheckReplace, Interval: &metav1.Duration{Duration: consistencyInterval}}
	})
	if !ok {
		return
	}
	canary := "etcdpilot-canary-" + utilrand.String(16)
	corrupted := strings.ToUpper(canary)
	var keep map[string]string
	var victim etcdv1alpha1.MemberStatus
	var members []string // the members when the canary was rewritten
	var written metav1.Time
	key := keyPrefix(c) + canaryKey
	runSteps(r,
		createKeeping(ctx, in, c, "spec.consistencyCheck.interval", func(c *etcdv1alpha1.EtcdCluster) bool {
			return c.Spec.ConsistencyCheck.Interval != nil
		}),
		settleStep(ctx, in, c, autoPilotSize),
		step{fmt.Sprintf("write %d keys and a canary key", keepKeys), func() error {
			var err error
			if keep, err = writeKeys(ctx, in, c, "/keep", keepKeys); err != nil {
				return err
			}
			keep[key] = canary
			// The status keeps whole seconds: a check in the second of the write counts.
			written = metav1.NewTime(time.Now().Truncate(time.Second))
			return putKey(ctx, in, c, key, canary)
		}},
		step{"wait for a consistency check that finds the members consistent, canary included", func() error {
			wctx, cancel := context.WithTimeout(ctx, healWait)
			defer cancel()
			return in.Env.WaitFor(wctx, c, "a consistent check", framework.ConsistencyChecked(written))
		}},
		step{"rewrite the canary's value in a follower's database file while it runs", func() error {
			var ok bool
			if victim, ok = framework.Victim(c); !ok {
				return errors.New("no member that is not the leader")
			}
			members = memberNames(c)
			msg, err := in.Env.CorruptMember(ctx, c, victim.Name, canary, corrupted)
			if err == nil {
				r.Logf("member %s: %s", victim.Name, msg)
			}
			return err
		}},
		// The check that found the members consistent has just run, so the next one, which
		// may replace the member, is most of consistencyInterval away.
		step{"read the canary from each member alone (serializable): the rewritten member serves the rewritten value, the others the original", func() error {
			return checkServed(ctx, in, r, c, members, key, victim, canary, corrupted)
		}},
		step{"wait until the operator replaces that member (a new member ID), 3 ready members", func() error {
			wctx, cancel := context.WithTimeout(ctx, healWait)
			defer cancel()
			return in.Env.WaitFor(wctx, c, "member "+victim.Name+" replaced", framework.All(framework.MemberGone(victim.ID), framework.Settled(autoPilotSize)))
		}},
		step{fmt.Sprintf("read back the %d keys and the canary through the client Service (linearizable: the majority's data)", keepKeys), func() error {
			return checkKeys(ctx, in, c, keep)
		}},
		step{"read the canary from each member alone: every member, the new one included, serves the original", func() error {
			return checkServed(ctx, in, r, c, memberNames(c), key, etcdv1alpha1.MemberStatus{}, canary, corrupted)
		}},
		step{"look for the event MemberCorrupt: it names the rewritten member, and no event blames another", func() error {
			if err := waitEvents(ctx, in, r, c, etcdv1alpha1.ReasonMemberCorrupt); err != nil {
				return err
			}
			events, err := in.Env.EventsFor(ctx, c)
			if err != nil {
				return err
			}
			return framework.CheckBlame(events, members, victim.Name)
		}},
	)
}

// memberNames are the names of c's members, in status order.
func memberNames(c *etcdv1alpha1.EtcdCluster) []string {
	names := make([]string, len(c.Status.Members))
	for i, m := range c.Status.Members {
		names[i] = m.Name
	}
	return names
}

// checkServed reads key from each of members alone and checks what each serves from its
// own data (framework.CheckDivergence: victim the rewritten value, the others original),
// logging what they served.
func checkServed(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, members []string, key string,
	victim etcdv1alpha1.MemberStatus, original, rewritten string) error {
	reads := make(map[string]framework.MemberRead, len(members))
	for _, m := range members {
		reads[m] = in.Env.ReadFromMember(ctx, c, m, key)
	}
	r.Logf("%s from each member's own data: %s", key, framework.DescribeReads(reads, original, rewritten))
	return framework.CheckDivergence(key, reads, victim.Name, victim.ID, original, rewritten)
}

// putKey writes one key to c.
func putKey(ctx context.Context, in Input, c *etcdv1alpha1.EtcdCluster, key, value string) error {
	cli, err := in.Env.Connect(ctx, c)
	if err != nil {
		return err
	}
	defer func() { _ = cli.Close() }() // the write was acknowledged or failed by then
	return cli.Put(ctx, key, value)
}

// waitEvents waits for events with the reasons about c, and logs what c's events are.
func waitEvents(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, reasons ...string) error {
	return waitEventsWithin(ctx, in, r, c, eventsWait, autoPilotPoll, reasons...)
}

// waitEventsWithin is waitEvents, looking every poll for at most within.
func waitEventsWithin(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, within, poll time.Duration, reasons ...string) error {
	var summary string
	err := retryFor(ctx, within, poll, func(ctx context.Context) error {
		events, err := in.Env.EventsFor(ctx, c)
		if err != nil {
			return err
		}
		summary = SummarizeEvents(events)
		if missing := framework.MissingReasons(events, reasons...); len(missing) > 0 {
			return fmt.Errorf("no %s event about EtcdCluster %s (events: %s)", strings.Join(missing, " or "), c.Name, summary)
		}
		return nil
	})
	if err == nil {
		r.Logf("events about EtcdCluster %s: %s", c.Name, summary)
	}
	return err
}
