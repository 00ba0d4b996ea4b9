package levels

import (
	"context"
	"fmt"
	"maps"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

const (
	// drainKeys is how many keys level 3 writes while a drained member is away.
	drainKeys = 5
	// evictWithin bounds the wait for the budget to admit the first eviction: right after a
	// member was replaced, the disruption controller may not have counted it healthy yet.
	evictWithin = time.Minute
	// uncordonWithin bounds the uncordon that always ends a drain, on a context of its own.
	uncordonWithin = 30 * time.Second
)

// drainNode (level 3) drains the node of a follower as kubectl drain does: the node cordoned,
// then the member's pod evicted. The cluster's PodDisruptionBudget must admit that eviction
// and refuse a second member's while the first is away, and writes must be acknowledged
// meanwhile (a quorum serves). Then the node is uncordoned, as after its maintenance, and the
// member must come back as itself (the same etcd ID: its data stayed on the node), on a new
// pod, with every key; before that, the status must have seen it away. The node is
// uncordoned whatever happens. With fewer than two schedulable nodes the drain is not tried,
// and the log says so: cordoning the only node would keep every new pod of the cluster, the
// other tests' among them, from being scheduled. The keys written during the drain are added
// to keys.
func drainNode(ctx context.Context, in Input, r *report.Report, c *etcdv1alpha1.EtcdCluster, keys map[string]string) bool {
	nodes, err := in.Env.SchedulableNodes(ctx)
	if err != nil {
		r.Fail(err.Error())
		return false
	}
	if len(nodes) < 2 {
		r.Logf("drain not tried: the cluster has %d schedulable node(s), and a drain needs another node to leave pods on", len(nodes))
		return true
	}
	victim, ok := framework.Victim(c)
	if !ok || victim.Node == "" {
		r.Fail(fmt.Sprintf("drain: no follower with a node in status.members: %s", framework.Describe(c)))
		return false
	}
	other, ok := otherMember(c, victim.Name)
	if !ok {
		r.Fail(fmt.Sprintf("drain: no second member in status.members: %s", framework.Describe(c)))
		return false
	}
	r.Logf("draining node %s (one of %d schedulable nodes) of member %s (etcd ID %s)", victim.Node, len(nodes), victim.Name, victim.ID)
	oldUID, err := in.Env.PodUID(ctx, c.Namespace, victim.Name)
	if err != nil {
		r.Fail(err.Error())
		return false
	}
	cordoned := false
	defer func() {
		if !cordoned {
			return
		}
		// The test's context may be over; the node must not stay cordoned.
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), uncordonWithin)
		defer cancel()
		if err := in.Env.Cordon(uctx, victim.Node, false); err != nil {
			r.Fail("uncordoning after the drain: " + err.Error())
		}
	}()
	return runSteps(r,
		step{"cordon node " + victim.Node, func() error {
			cordoned = true // set before: a patch that failed on its way back may still have cordoned it
			return in.Env.Cordon(ctx, victim.Node, true)
		}},
		step{"evict member " + victim.Name + " (the budget admits one member away)", func() error {
			return retryFor(ctx, evictWithin, time.Second, func(ctx context.Context) error {
				return in.Env.Evict(ctx, c.Namespace, victim.Name)
			})
		}},
		step{"evict member " + other + " too: refused while " + victim.Name + " is away", func() error {
			err := in.Env.Evict(ctx, c.Namespace, other)
			switch {
			case err == nil:
				return fmt.Errorf("the PodDisruptionBudget let %s go while %s was away: two of 3 members at once", other, victim.Name)
			case apierrors.IsTooManyRequests(err):
				r.Logf("refused: %v", err)
				return nil
			default:
				return err
			}
		}},
		step{fmt.Sprintf("write %d keys while %s is away", drainKeys, victim.Name), func() error {
			more, err := writeKeys(ctx, in, c, "/drain", drainKeys)
			maps.Copy(keys, more)
			return err
		}},
		step{"wait until the status has " + victim.Name + " away: its pod waits for its cordoned node", func() error {
			return in.Env.WaitFor(ctx, c, victim.Name+" not healthy", framework.MemberAway(victim.Name, victim.ID))
		}},
		step{"uncordon node " + victim.Node, func() error {
			if err := in.Env.Cordon(ctx, victim.Node, false); err != nil {
				return err
			}
			cordoned = false
			return nil
		}},
		step{"wait until " + victim.Name + " is back as itself on a new pod and the cluster has 3 ready members", func() error {
			if err := in.Env.WaitFor(ctx, c, victim.Name+" back with etcd ID "+victim.ID,
				framework.All(framework.MemberHealthy(victim.Name, victim.ID), framework.Settled(3))); err != nil {
				return err
			}
			uid, err := in.Env.PodUID(ctx, c.Namespace, victim.Name)
			if err != nil {
				return err
			}
			if uid == oldUID {
				return fmt.Errorf("pod %s is the one evicted (UID %s): the eviction did not take it", victim.Name, uid)
			}
			return nil
		}},
		step{fmt.Sprintf("read back the %d keys", len(keys)+drainKeys), func() error { return checkKeys(ctx, in, c, keys) }},
	)
}

// otherMember names a member of c other than name, a follower when there is one.
func otherMember(c *etcdv1alpha1.EtcdCluster, name string) (string, bool) {
	var found string
	for _, m := range c.Status.Members {
		if m.Name == name {
			continue
		}
		if !m.Leader {
			return m.Name, true
		}
		found = m.Name
	}
	return found, found != ""
}
