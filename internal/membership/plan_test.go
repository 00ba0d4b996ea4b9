package membership_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

var c = cluster.Names{Name: "e", Namespace: "ns", TLS: true}

func member(ordinal int, id uint64, started, learner, healthy bool) membership.Member {
	name := c.MemberName(ordinal)
	return membership.Member{Name: name, ID: id, PeerURL: c.PeerURL(name), Started: started, Learner: learner,
		Healthy: healthy, Ready: healthy && !learner}
}

func voter(ordinal int, id uint64) membership.Member { return member(ordinal, id, true, false, true) }

func leader(m membership.Member) membership.Member {
	m.Leader = true
	return m
}

func pods(names ...string) map[string]membership.Pod {
	out := map[string]membership.Pod{}
	for _, n := range names {
		out[n] = membership.Pod{Ready: true}
	}
	return out
}

func pvcs(bootstrapped bool, names ...string) map[string]membership.PVC {
	out := map[string]membership.PVC{}
	for _, n := range names {
		out[n] = membership.PVC{Bootstrapped: bootstrapped}
	}
	return out
}

// static is the initial cluster of a 3-member static bootstrap.
var static = []string{
	c.MemberName(0) + "=" + c.PeerURL(c.MemberName(0)),
	c.MemberName(1) + "=" + c.PeerURL(c.MemberName(1)),
	c.MemberName(2) + "=" + c.PeerURL(c.MemberName(2)),
}

// staticPVCsStarted are the claims of staticPVCs, the first of them marked bootstrapped: its
// member was seen started, so the cluster has formed.
func staticPVCsStarted(names ...string) map[string]membership.PVC {
	out := staticPVCs(names...)
	first := out[names[0]]
	first.Bootstrapped = true
	out[names[0]] = first
	return out
}

// createsPod checks a CreatePod of member with the initial cluster and state given.
func createsPod(member string, initial []string, state string) func(Gomega, membership.Action) {
	return func(g Gomega, a membership.Action) {
		g.Expect(a.Member).To(Equal(member))
		g.Expect(a.InitialCluster).To(Equal(initial))
		g.Expect(a.InitialClusterState).To(Equal(state))
	}
}

// staticPVCs are claims a static bootstrap of 3 made, none of whose members was seen started.
func staticPVCs(names ...string) map[string]membership.PVC {
	out := map[string]membership.PVC{}
	for _, n := range names {
		out[n] = membership.PVC{InitialCluster: static}
	}
	return out
}

var now = time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)

// sick is a started voter first seen unhealthy `ago` before now.
func sick(ordinal int, id uint64, ago time.Duration) membership.Member {
	m := member(ordinal, id, true, false, false)
	m.UnhealthySince = now.Add(-ago)
	return m
}

func TestPlan(t *testing.T) {
	e0, e1, e2, e3 := c.MemberName(0), c.MemberName(1), c.MemberName(2), c.MemberName(3)
	cases := []struct {
		name  string
		obs   membership.Observed
		want  membership.Kind
		check func(g Gomega, a membership.Action)
	}{
		{
			name: "empty cluster: create the seed as a new cluster of one",
			obs:  membership.Observed{Size: 3},
			want: membership.CreateSeed,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.InitialCluster).To(Equal([]string{e0 + "=" + c.PeerURL(e0)}))
				g.Expect(a.InitialClusterState).To(Equal("new"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
			},
		},
		{
			name: "empty cluster on claims, not restored: create every initial member together",
			obs:  membership.Observed{Size: 3, StaticBootstrap: true},
			want: membership.CreateSeed,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Members).To(Equal([]string{e0, e1, e2}))
				g.Expect(a.InitialCluster).To(Equal(static))
				g.Expect(a.InitialClusterState).To(Equal("new"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
			},
		},
		{
			name: "static bootstrap allowed but ephemeral: the seed alone",
			obs:  membership.Observed{Size: 3, StaticBootstrap: true, Ephemeral: true},
			want: membership.CreateSeed,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Members).To(Equal([]string{e0}))
				g.Expect(a.InitialCluster).To(HaveLen(1))
			},
		},
		{
			name:  "static bootstrap: the operator stopped after the claims, before a pod: create it as new",
			obs:   membership.Observed{Size: 3, StaticBootstrap: true, PVCs: staticPVCs(e0, e1, e2), Pods: pods(e0)},
			want:  membership.CreatePod,
			check: createsPod(e1, static, "new"),
		},
		{
			name: "static bootstrap: a member's claim is missing: it joins as existing, never new, on a claim made for it",
			obs:  membership.Observed{Size: 3, StaticBootstrap: true, PVCs: staticPVCs(e0, e2), Pods: pods(e0, e2)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				createsPod(e1, static, "existing")(g, a)
				g.Expect(a.OnExistingClaim).To(BeFalse(), "it never started: a new claim holds nothing it had")
			},
		},
		{
			name: "static cluster scaled down to one, every pod down: the removed members are not brought back",
			obs:  membership.Observed{Size: 1, StaticBootstrap: true, PVCs: staticPVCsStarted(e0)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
				g.Expect(a.InitialCluster).To(Equal([]string{e0 + "=" + c.PeerURL(e0)}), "the members known now, not the initial ones")
			},
		},
		{
			name: "static cluster scaled down to one, its pod back but not answering yet: wait, nothing for the removed members",
			obs:  membership.Observed{Size: 1, StaticBootstrap: true, Pods: pods(e0), PVCs: staticPVCsStarted(e0)},
			want: membership.Wait,
		},
		{
			name: "static bootstrap: once a member was seen started, a pod comes back as existing",
			obs:  membership.Observed{Size: 3, StaticBootstrap: true, Pods: pods(e0, e2), PVCs: staticPVCsStarted(e0, e1, e2)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.InitialCluster).To(HaveLen(3))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
			},
		},
		{
			name: "static bootstrap: every pod made, none answers yet: wait for them",
			obs:  membership.Observed{Size: 3, StaticBootstrap: true, PVCs: staticPVCs(e0, e1, e2), Pods: pods(e0, e1, e2)},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
				g.Expect(a.Message).To(ContainSubstring("initial members"))
			},
		},
		{
			name: "seed pod starting: wait, do not create a second seed",
			obs:  membership.Observed{Size: 3, Pods: pods(e0), PVCs: pvcs(false, e0)},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonBootstrapping))
			},
		},
		{
			name: "seed pod deleted before it ever started: start it anew",
			obs:  membership.Observed{Size: 3, PVCs: pvcs(false, e0)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.InitialClusterState).To(Equal("new"))
			},
		},
		{
			name: "bootstrapped seed pod deleted while unreachable: rejoin as existing, never new",
			obs:  membership.Observed{Size: 1, PVCs: pvcs(true, e0)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
			},
		},
		{
			name: "several members and none answers: recreate a missing pod as existing, only on the claim that holds its data",
			obs:  membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(false, e0, e1, e2)},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
				g.Expect(a.InitialCluster).To(HaveLen(3))
				g.Expect(a.OnExistingClaim).To(BeTrue(), "a fresh claim would start it empty under its identity")
			},
		},
		{
			name: "several members, all pods present, none answers: wait",
			obs:  membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2)},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonWaitingForMembers))
			},
		},
		{
			name: "ephemeral cluster whose pods are all gone: its data is gone, bootstrap again",
			obs:  membership.Observed{Size: 3, Ephemeral: true},
			want: membership.CreateSeed, // nothing of the old cluster is left to protect
		},
		{
			name: "seed healthy, size 3: add the next member as a learner",
			obs:  membership.Observed{Size: 3, Pods: pods(e0), PVCs: pvcs(true, e0), Members: []membership.Member{voter(0, 10)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.PeerURL).To(Equal(c.PeerURL(e1)))
				g.Expect(a.InitialCluster).To(Equal([]string{e0 + "=" + c.PeerURL(e0), e1 + "=" + c.PeerURL(e1)}))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
			},
		},
		{
			name: "learner added but the operator stopped before creating its pod: create it",
			obs: membership.Observed{Size: 3, Pods: pods(e0), PVCs: pvcs(true, e0),
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false)}},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
				g.Expect(a.InitialCluster).To(ContainElement(e1 + "=" + c.PeerURL(e1)))
			},
		},
		{
			name: "learner pod starting: wait, add nothing",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1), PVCs: pvcs(true, e0),
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonPromotingLearner))
			},
		},
		{
			name: "learner started and healthy: promote it",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1), PVCs: pvcs(true, e0, e1),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, true, true)}},
			want: membership.Promote,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.MemberID).To(Equal(uint64(11)))
			},
		},
		{
			name: "a voter is unhealthy: do not grow",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1), PVCs: pvcs(true, e0, e1),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, false, false)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "a voter unhealthy for longer than the bound: replace it",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: 10 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 11*time.Minute), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.MemberID).To(Equal(uint64(11)))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonReplacingMember))
				g.Expect(a.Message).To(ContainSubstring("unhealthy since 2026-11-21T11:49:00Z, longer than spec.replaceUnhealthyMemberAfter (10m0s)"))
			},
		},
		{
			name: "a voter unhealthy on a lost node past the node bound: replace it before the general bound",
			obs: membership.Observed{Size: 3, Pods: onLostNode(pods(e0, e1, e2), e1, 4*time.Minute), PVCs: pvcs(true, e0, e1, e2), Now: now,
				ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 5*time.Minute), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("unhealthy since 2026-11-21T11:55:00Z, node lost-node NotReady since 2026-11-21T11:56:00Z, " +
					"longer than spec.replaceMemberOnLostNodeAfter (3m0s)"))
			},
		},
		{
			name: "a voter unhealthy on a node NotReady for less than the bound: wait, counted from the later of the two",
			obs: membership.Observed{Size: 3, Pods: onLostNode(pods(e0, e1, e2), e1, 2*time.Minute), PVCs: pvcs(true, e0, e1, e2), Now: now,
				ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 9*time.Minute), voter(2, 12)}},
			want: membership.Wait,
		},
		{
			name: "a voter unhealthy on a node that is gone: the node bound counts from when it stopped answering",
			obs: membership.Observed{Size: 3, Pods: onLostNode(pods(e0, e1, e2), e1, 0), PVCs: pvcs(true, e0, e1, e2), Now: now,
				ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 4*time.Minute), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(ContainSubstring("unhealthy since 2026-11-21T11:56:00Z, node lost-node gone, longer than"))
			},
		},
		{
			name: "a drained member whose data's node is cordoned: replaced after the node bound, counted from when its pod began to wait",
			obs: membership.Observed{Size: 3, Pods: func() map[string]membership.Pod {
				ps := pods(e0, e1, e2)
				ps[e1] = membership.Pod{Unschedulable: "0/3 nodes are available", UnschedulableSince: now.Add(-4 * time.Minute),
					LostNode: membership.NodeLoss{Node: "drained", How: membership.NodeCordoned, Since: now.Add(-4 * time.Minute)}}
				return ps
			}(), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 5*time.Minute), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(ContainSubstring("node drained, which holds its data, cordoned since 2026-11-21T11:56:00Z, longer than"))
			},
		},
		{
			name: "the node bound off: a member on a lost node waits for the general bound",
			obs: membership.Observed{Size: 3, Pods: onLostNode(pods(e0, e1, e2), e1, 9*time.Minute), PVCs: pvcs(true, e0, e1, e2), Now: now,
				ReplaceUnhealthyAfter: 10 * time.Minute,
				Members:               []membership.Member{leader(voter(0, 10)), sick(1, 11, 9*time.Minute), voter(2, 12)}},
			want: membership.Wait,
		},
		{
			name: "a member on a lost node whose loss would leave no quorum: blocked, nothing removed",
			obs: membership.Observed{Size: 3, Pods: onLostNode(onLostNode(pods(e0, e1, e2), e1, 5*time.Minute), e2, 5*time.Minute),
				PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: 10 * time.Minute, ReplaceOnLostNodeAfter: 3 * time.Minute,
				Members: []membership.Member{leader(voter(0, 10)), sick(1, 11, 5*time.Minute), sick(2, 12, 5*time.Minute)}},
			want: membership.Blocked,
		},
		{
			name: "a voter unhealthy within the bound: wait for it",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: 10 * time.Minute,
				Members: []membership.Member{voter(0, 10), sick(1, 11, 9*time.Minute), voter(2, 12)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonWaitingForMembers))
			},
		},
		{
			name: "replacement off (bound 0): an unhealthy voter is only waited for",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now,
				Members: []membership.Member{voter(0, 10), sick(1, 11, time.Hour), voter(2, 12)}},
			want: membership.Wait,
		},
		{
			name: "two of three voters unhealthy too long: no quorum to replace with, touch nothing",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: time.Minute,
				Members: []membership.Member{voter(0, 10), sick(1, 11, time.Hour), sick(2, 12, time.Hour)}},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonMembersUnhealthy))
				g.Expect(a.Message).To(ContainSubstring("1 of the 2 other voting members are healthy, short of a quorum"))
			},
		},
		{
			name: "an unhealthy learner is not replaced: it is waited for (it has nothing to lose)",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: time.Minute,
				Members: []membership.Member{voter(0, 10), voter(1, 11), func() membership.Member {
					m := member(2, 12, true, true, false)
					m.UnhealthySince = now.Add(-time.Hour)
					return m
				}()}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonPromotingLearner))
			},
		},
		{
			name: "scale down while a member is unhealthy too long: the unhealthy one goes first",
			obs: membership.Observed{Size: 1, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Now: now, ReplaceUnhealthyAfter: time.Minute,
				Members: []membership.Member{voter(0, 10), voter(1, 11), sick(2, 12, time.Hour)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e2))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRemovingMember))
			},
		},
		{
			name: "a promoted voter whose pod is not Ready yet: wait before the next member",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1), PVCs: pvcs(true, e0, e1),
				Members: []membership.Member{voter(0, 10), {Name: e1, ID: 11, PeerURL: c.PeerURL(e1), Started: true, Healthy: true}}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(ContainSubstring("pod of member " + e1))
			},
		},
		{
			name: "member pod deleted: recreate it with its data, no membership change",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e1, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, false, false), voter(2, 12)}},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.InitialClusterState).To(Equal("existing"))
				g.Expect(a.OnExistingClaim).To(BeTrue(), "only on the claim that holds its data")
			},
		},
		{
			name: "started member whose claim is gone: replace it",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, false, false), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonReplacingMember))
			},
		},
		{
			name: "claim gone while the pod is still there (stuck without its volume): replace it",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, false, false), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "data lost but the others lack a healthy quorum: touch nothing",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, true, false, false), member(2, 12, true, false, false)}},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonMemberDataLost))
			},
		},
		{
			// Two members destroyed a few milliseconds apart: the second still answers while its
			// etcd shuts down. Removing the first would change the membership for a quorum that
			// is about to go; the loss is left whole to quorum-loss recovery.
			name: "data lost, and another member answers but its claim is gone too: touch nothing",
			obs: membership.Observed{Size: 3, Pods: pods(e1, e2), PVCs: pvcs(true, e2),
				Members: []membership.Member{member(0, 10, true, false, false), voter(1, 11), leader(voter(2, 12))}},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.Message).To(ContainSubstring("1 of the 2 other voting members are healthy"))
			},
		},
		{
			name: "data lost, and another member answers but its pod is being deleted: wait for it",
			obs: membership.Observed{Size: 3, Pods: map[string]membership.Pod{e1: {Ready: true, Terminating: true}, e2: {Ready: true}},
				PVCs: pvcs(true, e1, e2), Members: []membership.Member{member(0, 10, true, false, false), voter(1, 11), leader(voter(2, 12))}},
			want: membership.Blocked,
		},
		{
			name: "shrinking never counts on a member whose pod is being deleted",
			obs: membership.Observed{Size: 2, Pods: map[string]membership.Pod{e0: {Ready: true}, e1: {Ready: true, Terminating: true}, e2: {Ready: true}},
				PVCs: pvcs(true, e0, e1, e2), Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12)}},
			want: membership.Wait,
		},
		{
			name: "ephemeral member whose pod is gone: replace it",
			obs: membership.Observed{Size: 3, Ephemeral: true, Pods: pods(e0, e2),
				Members: []membership.Member{leader(voter(0, 10)), member(1, 11, true, false, false), voter(2, 12)}},
			want: membership.RemoveMember,
		},
		{
			name: "retained claim of an old member is never reused for a new member",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e1, e2),
				Members: []membership.Member{voter(0, 10), voter(2, 12)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e3))
			},
		},
		{
			name: "a claim still being deleted keeps its name: the replacement gets a new one",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e2), ClaimsGoing: map[string]bool{e1: true},
				Members: []membership.Member{voter(0, 10), voter(2, 12)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e3))
			},
		},
		{
			name: "a learner that never started lost its claim under its pod: delete the pod so that both are made again",
			obs: membership.Observed{Size: 3, Now: now, Pods: map[string]membership.Pod{
				e0: {Ready: true}, e1: {Created: now.Add(-time.Minute)}, e2: {Ready: true}}, PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false), voter(2, 12)}},
			want: membership.DeletePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRecreatingPod))
			},
		},
		{
			name: "a new learner's pod whose claim the cache does not show yet: wait, the pod is not deleted",
			obs: membership.Observed{Size: 3, Now: now, Pods: map[string]membership.Pod{
				e0: {Ready: true}, e1: {Created: now.Add(-5 * time.Second)}, e2: {Ready: true}}, PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false), voter(2, 12)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonPromotingLearner))
			},
		},
		{
			name: "a learner without pod whose old claim is still being deleted: wait for it before creating the pod",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e2), ClaimsGoing: map[string]bool{e1: true},
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false), voter(2, 12)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("old claim"))
			},
		},
		{
			name: "the same learner once its old claim is gone: its pod (and claim) are created",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e2),
				Members: []membership.Member{voter(0, 10), member(1, 11, false, true, false), voter(2, 12)}},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "a member whose data differs from the majority's: removed, to be replaced",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Corrupt: map[uint64]string{11: "hash differs"},
				Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.MemberID).To(Equal(uint64(11)))
				g.Expect(a.Message).To(ContainSubstring("its data differs from the majority's: hash differs"))
			},
		},
		{
			name: "the leader's data differs: leadership moves first",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Corrupt: map[uint64]string{10: "hash differs"},
				Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12)}},
			want: membership.MoveLeader,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
			},
		},
		{
			name: "a corrupt member while the others lack a healthy quorum: touch nothing, say why",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2), Corrupt: map[uint64]string{11: "hash differs"},
				Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), member(2, 12, true, false, false)}},
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonMemberCorrupt))
			},
		},
		{
			name: "a corrupt member already replaced (its ID gone): the cluster grows back",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e2), PVCs: pvcs(true, e0, e1, e2), Corrupt: map[uint64]string{11: "hash differs"},
				Members: []membership.Member{leader(voter(0, 10)), voter(2, 12)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e3), "the corrupt member's retained claim is never reused")
			},
		},
		{
			name: "all members healthy and voting: nothing to do",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2),
				Members: []membership.Member{voter(0, 10), voter(1, 11), voter(2, 12)}},
			want: membership.None,
		},
		{
			name: "scale down: remove the highest ordinal first",
			obs: membership.Observed{Size: 1, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2),
				Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e2))
				g.Expect(a.MemberID).To(Equal(uint64(12)))
			},
		},
		{
			name: "scale down: an unhealthy member goes first",
			obs: membership.Observed{Size: 3, Pods: pods(e0, e1, e2, e3, c.MemberName(4)), PVCs: pvcs(true, e0, e1, e2, e3, c.MemberName(4)),
				Members: []membership.Member{leader(voter(0, 10)), member(1, 11, true, false, false), voter(2, 12), voter(3, 13), voter(4, 14)}},
			want: membership.RemoveMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "scale down: leadership moves away before the leader is removed",
			obs: membership.Observed{Size: 1, Pods: pods(e0, e1), PVCs: pvcs(true, e0, e1),
				Members: []membership.Member{voter(0, 10), leader(voter(1, 11))}},
			want: membership.MoveLeader,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.MemberID).To(Equal(uint64(10)), "the new leader")
			},
		},
		{
			name: "scale down: never remove a healthy member while another is sick",
			obs: membership.Observed{Size: 1, Pods: pods(e0, e1, e2), PVCs: pvcs(true, e0, e1, e2),
				Members: []membership.Member{leader(voter(0, 10)), member(1, 11, true, false, false), member(2, 12, true, false, false)}},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(ContainSubstring("leaves no margin"))
			},
		},
		{
			name: "removed member whose pod is still there: delete the pod",
			obs: membership.Observed{Size: 1, Pods: pods(e0, e1), PVCs: pvcs(true, e0, e1),
				Members: []membership.Member{leader(voter(0, 10))}},
			want: membership.DeletePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "removed member whose pod is being deleted but whose claim is not settled: apply the policy",
			obs: membership.Observed{Size: 3, Pods: map[string]membership.Pod{e0: {Ready: true}, e1: {Terminating: true}, e2: {Ready: true}},
				PVCs: pvcs(true, e0, e1, e2), Members: []membership.Member{leader(voter(0, 10)), voter(2, 12)}},
			want: membership.DeletePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "removed member whose pod stays terminating on a lost node: a fresh member joins under another name",
			obs: membership.Observed{Size: 3, Pods: map[string]membership.Pod{e0: {Ready: true}, e2: {Ready: true},
				e1: {Terminating: true, Node: "lost", LostNode: membership.NodeLoss{Node: "lost", How: membership.NodeNotReady}}},
				PVCs:    map[string]membership.PVC{e0: {Bootstrapped: true}, e1: {Bootstrapped: true, Removed: true}, e2: {Bootstrapped: true}},
				Members: []membership.Member{leader(voter(0, 10)), voter(2, 12)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e3))
			},
		},
		{
			name: "removed member whose pod and claim are both going on a lost node: a fresh member joins under another name",
			obs: membership.Observed{Size: 3, Pods: map[string]membership.Pod{e0: {Ready: true}, e2: {Ready: true},
				e1: {Terminating: true, LostNode: membership.NodeLoss{Node: "lost", How: membership.NodeGone}}},
				PVCs: pvcs(true, e0, e1, e2), ClaimsGoing: map[string]bool{e1: true},
				Members: []membership.Member{leader(voter(0, 10)), voter(2, 12)}},
			want: membership.AddLearner,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e3))
			},
		},
		{
			name: "removed member whose pod is being deleted on a live node: wait for it to go before anything else",
			obs: membership.Observed{Size: 3, Pods: map[string]membership.Pod{e0: {Ready: true}, e1: {Terminating: true, Node: "n"}, e2: {Ready: true}},
				PVCs: pvcs(true, e0, e2), ClaimsGoing: map[string]bool{e1: true},
				Members: []membership.Member{leader(voter(0, 10)), voter(2, 12)}},
			want: membership.DeletePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
			},
		},
		{
			name: "a retained claim of a removed member never starts again",
			obs:  membership.Observed{Size: 1, PVCs: map[string]membership.PVC{e0: {Bootstrapped: true}, e1: {Bootstrapped: true, Removed: true}}},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.InitialCluster).To(Equal([]string{e0 + "=" + c.PeerURL(e0)}))
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tc.obs.Cluster = c
			a := membership.Plan(tc.obs)
			g.Expect(a.Kind).To(Equal(tc.want), "action: %+v", a)
			g.Expect(a.Message).NotTo(BeEmpty())
			if tc.check != nil {
				tc.check(g, a)
			}
		})
	}
}

func TestTrackUnhealthy(t *testing.T) {
	g := NewWithT(t)
	earlier := now.Add(-5 * time.Minute)
	members := []membership.Member{
		voter(0, 10),                      // healthy: no record
		member(1, 11, true, false, false), // unhealthy, seen before: keeps its record
		member(2, 12, true, false, false), // unhealthy for the first time: now
		member(3, 13, false, true, false), // never started: no record
	}
	since := map[string]time.Time{c.MemberName(0): earlier, c.MemberName(1): earlier, c.MemberName(3): earlier}
	membership.TrackUnhealthy(members, since, now)
	g.Expect(members[0].UnhealthySince).To(BeZero(), "a healthy member's record is cleared")
	g.Expect(members[1].UnhealthySince).To(Equal(earlier))
	g.Expect(members[2].UnhealthySince).To(Equal(now))
	g.Expect(members[3].UnhealthySince).To(BeZero())
}

// A pod the scheduler found no node for, made from a spec that has changed since, is made
// again from the current spec: at bootstrap, when no member answers, and in a running
// cluster (a new member's pod). A pod no node took that runs the current spec is left to
// wait, and so is one the scheduler has not judged yet.
func TestAPodNoNodeTookIsMadeAgainFromTheCurrentSpec(t *testing.T) {
	g := NewWithT(t)
	e0, e1, e2, e3 := c.MemberName(0), c.MemberName(1), c.MemberName(2), c.MemberName(3)
	stuck := func(hash string) membership.Pod {
		return membership.Pod{SpecHash: hash, Unschedulable: "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."}
	}
	hashes := map[string]string{e0: "new", e1: "new", e2: "new", e3: "new"}

	bootstrap := membership.Observed{Cluster: c, Size: 3, StaticBootstrap: true, PVCs: staticPVCs(e0, e1, e2), SpecHashes: hashes,
		Pods: map[string]membership.Pod{e0: stuck("new"), e1: stuck("old"), e2: stuck("old")}}
	a := membership.Plan(bootstrap)
	g.Expect(a.Kind).To(Equal(membership.RestartMember))
	g.Expect(a.Member).To(Equal(e1), "the first outdated one")
	g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonRecreatingPod))

	bootstrap.Pods = map[string]membership.Pod{e0: stuck("new"), e1: stuck("new"), e2: {SpecHash: "old"}}
	g.Expect(membership.Plan(bootstrap).Kind).To(Equal(membership.Wait), "current, or not judged by the scheduler yet: wait")

	running := membership.Observed{Cluster: c, Size: 4, SpecHashes: hashes, PVCs: pvcs(true, e0, e1, e2, e3),
		Members: []membership.Member{leader(voter(0, 10)), voter(1, 11), voter(2, 12), member(3, 13, false, true, false)},
		Pods:    map[string]membership.Pod{e0: {Ready: true, SpecHash: "new"}, e1: {Ready: true, SpecHash: "new"}, e2: {Ready: true, SpecHash: "new"}, e3: stuck("old")}}
	a = membership.Plan(running)
	g.Expect(a.Kind).To(Equal(membership.RestartMember))
	g.Expect(a.Member).To(Equal(e3))
}

// onLostNode puts the pod of member name on a lost node, NotReady for notReadyFor (gone, when
// zero).
func onLostNode(ps map[string]membership.Pod, name string, notReadyFor time.Duration) map[string]membership.Pod {
	p := ps[name]
	p.Node, p.LostNode = "lost-node", membership.NodeLoss{Node: "lost-node", How: membership.NodeGone}
	if notReadyFor > 0 {
		p.LostNode.How, p.LostNode.Since = membership.NodeNotReady, now.Add(-notReadyFor)
	}
	ps[name] = p
	return ps
}
