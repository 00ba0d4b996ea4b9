package framework_test

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// cond is a condition of generation 2, the generation of settled().
func cond(t string, s metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: "R", Message: "m", ObservedGeneration: 2}
}

// member is a healthy voting member.
func member(name, id string, leader bool) etcdv1alpha1.MemberStatus {
	return etcdv1alpha1.MemberStatus{Name: name, ID: id, Healthy: true, Leader: leader, Version: "3.6.16"}
}

// settled is a 3-member cluster the operator is done with.
func settled() *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{}
	c.Name, c.Generation = "c", 2
	c.Spec.Size = 3
	c.Status = etcdv1alpha1.EtcdClusterStatus{
		ObservedGeneration: 2,
		Conditions: []metav1.Condition{
			cond(etcdv1alpha1.ConditionAvailable, metav1.ConditionTrue),
			cond(etcdv1alpha1.ConditionProgressing, metav1.ConditionFalse),
			cond(etcdv1alpha1.ConditionDegraded, metav1.ConditionFalse),
			cond(etcdv1alpha1.ConditionReady, metav1.ConditionTrue),
		},
		ReadyMembers: 3,
		Members: []etcdv1alpha1.MemberStatus{
			member("c-0", "a", true),
			member("c-1", "b", false),
			member("c-2", "c", false),
		},
	}
	return c
}

func TestReady(t *testing.T) {
	g := NewWithT(t)
	ready := framework.Ready()
	isReady := func(c *etcdv1alpha1.EtcdCluster) bool { done, _ := ready(c); return done }
	c := settled()
	g.Expect(isReady(c)).To(BeTrue())
	c.Status.ReadyMembers, c.Status.Members = 1, c.Status.Members[:1]
	g.Expect(isReady(c)).To(BeTrue(), "Ready says so, whatever the members")
	c.Generation = 3
	g.Expect(isReady(c)).To(BeFalse(), "Ready is of generation 2")
	c = settled()
	c.Status.Conditions[3].Status = metav1.ConditionFalse
	done, state := ready(c)
	g.Expect(done).To(BeFalse())
	g.Expect(state).To(ContainSubstring("Ready=False (R: m)"))
	c.Status.Conditions = nil
	g.Expect(isReady(c)).To(BeFalse())
}

func TestSettled(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *etcdv1alpha1.EtcdCluster)
		want   bool
	}{
		{name: "settled", change: func(*etcdv1alpha1.EtcdCluster) {}, want: true},
		{name: "spec changed since", change: func(c *etcdv1alpha1.EtcdCluster) { c.Generation = 3 }},
		{name: "not available", change: func(c *etcdv1alpha1.EtcdCluster) {
			c.Status.Conditions[0].Status = metav1.ConditionFalse
		}},
		{name: "ready for an old generation", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Conditions[3].ObservedGeneration = 1 }},
		{name: "no conditions", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Conditions = nil }},
		{name: "too few ready", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.ReadyMembers = 2 }},
		{name: "a learner", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Members[2].Learner = true }},
		{name: "an unhealthy member", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Members[1].Healthy = false }},
		{name: "a member too many", change: func(c *etcdv1alpha1.EtcdCluster) {
			c.Status.Members = append(c.Status.Members, member("c-3", "d", false))
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := settled()
			tc.change(c)
			done, state := framework.Settled(3)(c)
			g.Expect(done).To(Equal(tc.want))
			g.Expect(state).To(Equal(framework.Describe(c)))
		})
	}
	g := NewWithT(t)
	done, _ := framework.Settled(5)(settled())
	g.Expect(done).To(BeFalse())
}

func TestDescribe(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.Describe(settled())).To(Equal(
		"Available=True, Ready=True, Progressing=False, Degraded=False, 3 of 3 members ready, versions 3.6.16"))

	c := settled()
	c.Generation = 3
	c.Spec.Size = 5
	c.Status.Conditions[1] = metav1.Condition{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonAddingMember, Message: "adding member c-3"}
	c.Status.Members[0].Version = "3.7.3"
	g.Expect(framework.Describe(c)).To(Equal("status of generation 2, spec at 3, Available=True, Ready=True, " +
		"Progressing=True (AddingMember: adding member c-3), Degraded=False, 3 of 5 members ready, versions 3.7.3/3.6.16"))

	g.Expect(framework.Describe(&etcdv1alpha1.EtcdCluster{})).To(Equal("no conditions yet, 0 of 0 members ready"))
}

func TestRunsVersionMemberGoneAll(t *testing.T) {
	g := NewWithT(t)
	c := settled()
	ok, _ := framework.RunsVersion("3.6.16")(c)
	g.Expect(ok).To(BeTrue())
	ok, _ = framework.RunsVersion("3.7.3")(c)
	g.Expect(ok).To(BeFalse())
	ok, _ = framework.RunsVersion("3.6.16")(&etcdv1alpha1.EtcdCluster{})
	g.Expect(ok).To(BeFalse(), "no members: nothing runs the version yet")

	ok, _ = framework.MemberGone("b")(c)
	g.Expect(ok).To(BeFalse())
	ok, _ = framework.MemberGone("z")(c)
	g.Expect(ok).To(BeTrue())

	ok, _ = framework.All(framework.Settled(3), framework.MemberGone("z"))(c)
	g.Expect(ok).To(BeTrue())
	ok, _ = framework.All(framework.Settled(3), framework.MemberGone("b"))(c)
	g.Expect(ok).To(BeFalse())
}

func TestVictim(t *testing.T) {
	g := NewWithT(t)
	c := settled()
	v, ok := framework.Victim(c)
	g.Expect(ok).To(BeTrue())
	g.Expect(v.Name).To(Equal("c-2"))

	c.Status.Members[0].Leader, c.Status.Members[2].Leader = false, true
	v, _ = framework.Victim(c)
	g.Expect(v.Name).To(Equal("c-1"), "never the leader")

	c.Status.Members = c.Status.Members[2:]
	_, ok = framework.Victim(c)
	g.Expect(ok).To(BeFalse())
}

func TestServesKind(t *testing.T) {
	g := NewWithT(t)
	rs := []metav1.APIResource{
		{Name: "etcdclusters", Kind: "EtcdCluster"},
		{Name: "etcdclusters/status", Kind: "EtcdCluster"},
		{Name: "etcdbackups/status", Kind: "EtcdBackup"},
	}
	g.Expect(framework.ServesKind(rs, "EtcdCluster")).To(BeTrue())
	g.Expect(framework.ServesKind(rs, "EtcdBackup")).To(BeFalse(), "a subresource alone is not the kind")
	g.Expect(framework.ServesKind(append(rs, metav1.APIResource{Name: "etcdbackups", Kind: "EtcdBackup"}), "EtcdBackup")).To(BeTrue())
}
