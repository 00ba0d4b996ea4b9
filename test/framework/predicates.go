package framework

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Predicate says whether a cluster has reached a state, and describes the state it is in
// (for the log).
type Predicate func(c *etcdv1alpha1.EtcdCluster) (done bool, state string)

// Settled is true when the operator has caught up with the spec and the cluster runs size
// healthy voting members: status for the current generation, Available and Ready True,
// size ready members.
func Settled(size int32) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		state := Describe(c)
		if c.Status.ObservedGeneration != c.Generation ||
			!conditionTrue(c, etcdv1alpha1.ConditionAvailable) ||
			!conditionTrue(c, etcdv1alpha1.ConditionReady) ||
			c.Status.ReadyMembers != size || len(c.Status.Members) != int(size) {
			return false, state
		}
		for _, m := range c.Status.Members {
			if !m.Healthy || m.Learner {
				return false, state
			}
		}
		return true, state
	}
}

// Ready is true when the Ready condition is True for the current generation: the operator
// has the spec in force and the cluster serves, as the operator sees it.
func Ready() Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		r := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionReady)
		return r != nil && r.Status == metav1.ConditionTrue && r.ObservedGeneration == c.Generation, Describe(c)
	}
}

// RunsVersion is true when every member reports etcd version v.
func RunsVersion(v string) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		if len(c.Status.Members) == 0 {
			return false, Describe(c)
		}
		for _, m := range c.Status.Members {
			if m.Version != v {
				return false, Describe(c)
			}
		}
		return true, Describe(c)
	}
}

// MemberGone is true when no member has etcd member ID id any more: a replaced member comes
// back with a new ID.
func MemberGone(id string) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		for _, m := range c.Status.Members {
			if m.ID == id {
				return false, Describe(c)
			}
		}
		return true, Describe(c)
	}
}

// MemberHealthy is true when member name is in status.members with etcd member ID id, healthy:
// a member back as itself, not replaced.
func MemberHealthy(name, id string) Predicate { return memberIs(name, id, true) }

// MemberAway is true when member name, with etcd member ID id, is in status.members and not
// healthy: its pod gone or not answering, not yet replaced.
func MemberAway(name, id string) Predicate { return memberIs(name, id, false) }

// memberIs is true when member name with etcd member ID id is in status.members with healthy
// as its health.
func memberIs(name, id string, healthy bool) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		for _, m := range c.Status.Members {
			if m.Name == name && m.ID == id && m.Healthy == healthy {
				return true, Describe(c)
			}
		}
		return false, Describe(c)
	}
}

// All is true when every one of ps is.
func All(ps ...Predicate) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		done, state := true, Describe(c)
		for _, p := range ps {
			ok, _ := p(c)
			done = done && ok
		}
		return done, state
	}
}

// Describe summarises a cluster's status in one line: conditions (with the reason and
// message of those not in their normal state), ready members and their versions.
func Describe(c *etcdv1alpha1.EtcdCluster) string {
	var parts []string
	if c.Status.ObservedGeneration != c.Generation {
		parts = append(parts, fmt.Sprintf("status of generation %d, spec at %d", c.Status.ObservedGeneration, c.Generation))
	}
	for _, t := range []string{etcdv1alpha1.ConditionAvailable, etcdv1alpha1.ConditionReady, etcdv1alpha1.ConditionProgressing, etcdv1alpha1.ConditionDegraded} {
		cond := meta.FindStatusCondition(c.Status.Conditions, t)
		if cond == nil {
			continue
		}
		normal := cond.Status == metav1.ConditionTrue
		if t == etcdv1alpha1.ConditionProgressing || t == etcdv1alpha1.ConditionDegraded {
			normal = cond.Status == metav1.ConditionFalse
		}
		if normal {
			parts = append(parts, fmt.Sprintf("%s=%s", t, cond.Status))
		} else {
			parts = append(parts, fmt.Sprintf("%s=%s (%s: %s)", t, cond.Status, cond.Reason, cond.Message))
		}
	}
	if len(c.Status.Conditions) == 0 {
		parts = append(parts, "no conditions yet")
	}
	parts = append(parts, fmt.Sprintf("%d of %d members ready", c.Status.ReadyMembers, c.Spec.Size))
	if vs := memberVersions(c.Status.Members); vs != "" {
		parts = append(parts, "versions "+vs)
	}
	return strings.Join(parts, ", ")
}

// memberVersions lists the distinct versions the members report, in member order.
func memberVersions(ms []etcdv1alpha1.MemberStatus) string {
	var seen []string
	for _, m := range ms {
		if m.Version != "" && !slices.Contains(seen, m.Version) {
			seen = append(seen, m.Version)
		}
	}
	return strings.Join(seen, "/")
}

func conditionTrue(c *etcdv1alpha1.EtcdCluster, t string) bool {
	cond := meta.FindStatusCondition(c.Status.Conditions, t)
	return cond != nil && cond.Status == metav1.ConditionTrue && cond.ObservedGeneration == c.Generation
}

// Victim chooses the member to destroy: the last one in the status that is not the
// leader, so that the test measures replacement rather than a leader election.
func Victim(c *etcdv1alpha1.EtcdCluster) (etcdv1alpha1.MemberStatus, bool) {
	ms := c.Status.Members
	for i := len(ms) - 1; i >= 0; i-- {
		if !ms[i].Leader {
			return ms[i], true
		}
	}
	return etcdv1alpha1.MemberStatus{}, false
}

// ServesKind reports whether resources (one group version's, from discovery) include
// kind as a resource of its own, not as a subresource.
func ServesKind(resources []metav1.APIResource, kind string) bool {
	for _, r := range resources {
		if r.Kind == kind && !strings.Contains(r.Name, "/") {
			return true
		}
	}
	return false
}

// Recovered is true when the last quorum-loss recovery (status.recovery) succeeded and is
// not the one named before (an ID, "" for none).
func Recovered(before string) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		r := c.Status.Recovery
		if r == nil {
			return false, "no recovery; " + Describe(c)
		}
		state := fmt.Sprintf("recovery %s %s (%s); %s", r.ID, r.Phase, r.Message, Describe(c))
		return r.ID != before && r.Phase == etcdv1alpha1.RecoverySucceeded, state
	}
}

// ConsistencyChecked is true once a consistency check found the members consistent after
// since (status.consistency).
func ConsistencyChecked(since metav1.Time) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		s := c.Status.Consistency
		if s == nil {
			return false, "no consistency check yet"
		}
		state := fmt.Sprintf("consistency check at %s: %s %s", s.LastCheckTime.UTC().Format("15:04:05"), s.Result, s.Message)
		return s.Result == "Consistent" && !s.LastCheckTime.Before(&since), state
	}
}
