package framework

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

func TestMemberToLoseAvoidsTheNodesToKeep(t *testing.T) {
	g := NewWithT(t)
	members := []etcdv1alpha1.MemberStatus{{Name: "m-0", Node: "node1"}, {Name: "m-1", Node: "node2"}, {Name: "m-2", Node: "node3"}, {Name: "m-3"}}

	m, ok := MemberToLose(members, map[string]bool{"node1": true, "node3": true})
	g.Expect(ok).To(BeTrue())
	g.Expect(m.Name).To(Equal("m-1"))
	m, ok = MemberToLose(members, map[string]bool{"node1": true})
	g.Expect(ok).To(BeTrue())
	g.Expect(m.Name).To(Equal("m-2"), "the last one, and never a member not placed")
	_, ok = MemberToLose(members, map[string]bool{"node1": true, "node2": true, "node3": true})
	g.Expect(ok).To(BeFalse())
}

func TestNodeNotReadySince(t *testing.T) {
	g := NewWithT(t)
	at := time.Date(2026, 11, 30, 2, 0, 0, 0, time.UTC)
	node := func(s corev1.ConditionStatus) *corev1.Node {
		return &corev1.Node{Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
			{Type: corev1.NodeReady, Status: s, LastTransitionTime: metav1.NewTime(at)}}}}
	}
	for _, s := range []corev1.ConditionStatus{corev1.ConditionFalse, corev1.ConditionUnknown} {
		since, ok := NodeNotReadySince(node(s))
		g.Expect(ok).To(BeTrue(), string(s))
		g.Expect(since).To(Equal(at))
	}
	_, ok := NodeNotReadySince(node(corev1.ConditionTrue))
	g.Expect(ok).To(BeFalse())
	_, ok = NodeNotReadySince(&corev1.Node{})
	g.Expect(ok).To(BeFalse())
}
