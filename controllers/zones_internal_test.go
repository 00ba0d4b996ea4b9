package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// A node's zone is read once per nodeZoneTTL: a label moved since shows after it, a node
// without the label has the empty zone, a node that cannot be read is an error that is not
// remembered, and nodes not read for a TTL are forgotten.
func TestNodeZonesAreReadOncePerTTL(t *testing.T) {
	g := NewWithT(t)
	a := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a", Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}
	b := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b"}}
	api := fakeAPI(g, a, b)
	ctx := context.Background()
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var z nodeZones

	g.Expect(z.zoneOf(ctx, api, "a", now)).To(Equal("zone-a"))
	g.Expect(z.zoneOf(ctx, api, "b", now)).To(BeEmpty())
	_, err := z.zoneOf(ctx, api, "c", now)
	g.Expect(err).To(HaveOccurred(), "no such node")

	a.Labels[corev1.LabelTopologyZone] = "zone-z"
	g.Expect(api.Update(ctx, a)).To(Succeed())
	g.Expect(z.zoneOf(ctx, api, "a", now.Add(nodeZoneTTL-time.Second))).To(Equal("zone-a"), "read once per TTL")
	g.Expect(z.zoneOf(ctx, api, "a", now.Add(nodeZoneTTL))).To(Equal("zone-z"), "then read again")

	c := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{corev1.LabelTopologyZone: "zone-c"}}}
	g.Expect(api.Create(ctx, c)).To(Succeed())
	g.Expect(z.zoneOf(ctx, api, "c", now)).To(Equal("zone-c"), "a failed read is not remembered")
	g.Expect(z.zones).NotTo(HaveKey("b"), "a node last read a TTL ago is forgotten")
}

// The node an unhealthy member needs is read: its pod's node NotReady (False or Unknown,
// since its condition changed) or gone; for a pod no node takes, its claim's node also when
// cordoned or refusing it (since the pod began to wait). Healthy members, members not yet started, a Ready
// node, and a cordoned node under a running pod are left alone.
func TestObserveLostNodes(t *testing.T) {
	g := NewWithT(t)
	since := metav1.NewTime(time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC))
	waiting := time.Date(2026, 11, 30, 1, 5, 0, 0, time.UTC)
	node := func(name string, ready corev1.ConditionStatus, cordoned bool) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.NodeSpec{Unschedulable: cordoned},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready, LastTransitionTime: since}}}}
	}
	r := &EtcdClusterReconciler{APIReader: fakeAPI(g, node("ready", corev1.ConditionTrue, false), node("silent", corev1.ConditionUnknown, false),
		node("failing", corev1.ConditionFalse, false), node("healthy-member", corev1.ConditionUnknown, false),
		node("drained", corev1.ConditionTrue, true), node("cordoned-under-pod", corev1.ConditionTrue, true), node("full", corev1.ConditionTrue, false))}
	o := &observation{membership: membership.Observed{
		Pods: map[string]membership.Pod{"on-ready": {Node: "ready"}, "on-silent": {Node: "silent"}, "on-failing": {Node: "failing"},
			"on-gone": {Node: "removed-node"}, "healthy": {Node: "healthy-member"}, "unplaced": {},
			"evicted":     {Unschedulable: "0/3 nodes are available", UnschedulableSince: waiting},
			"refused":     {Unschedulable: "0/3 nodes are available", UnschedulableSince: waiting},
			"on-cordoned": {Node: "cordoned-under-pod"}, "not-started": {Node: "silent"},
			"removed-on-silent": {Node: "silent", Terminating: true}, "removed-on-ready": {Node: "ready", Terminating: true},
			"removed-running": {Node: "silent"}},
		PVCs: map[string]membership.PVC{"evicted": {Node: "drained"}, "unplaced": {Node: "silent"}, "refused": {Node: "full"}},
		Members: []membership.Member{{Name: "on-ready", Started: true}, {Name: "on-silent", Started: true}, {Name: "on-failing", Started: true},
			{Name: "on-gone", Started: true}, {Name: "healthy", Started: true, Healthy: true}, {Name: "unplaced", Started: true},
			{Name: "evicted", Started: true}, {Name: "refused", Started: true}, {Name: "on-cordoned", Started: true}, {Name: "not-started"}},
	}}

	r.observeLostNodes(context.Background(), o)

	lost := map[string]string{}
	for name, p := range o.membership.Pods {
		if p.LostNode.Node != "" {
			lost[name] = p.LostNode.String()
		}
	}
	g.Expect(lost).To(Equal(map[string]string{
		"on-silent":  "node silent NotReady since 2026-11-30T01:00:00Z",
		"on-failing": "node failing NotReady since 2026-11-30T01:00:00Z",
		"on-gone":    "node removed-node gone",
		"evicted":    "node drained, which holds its data, cordoned since 2026-11-30T01:05:00Z",
		"refused":    "node full, which holds its data, refuses its pod since 2026-11-30T01:05:00Z",
		// A removed member's pod being deleted on a node that cannot confirm it.
		"removed-on-silent": "node silent NotReady since 2026-11-30T01:00:00Z",
	}), "a pod not placed and not waiting for a node (unplaced) is not judged by its claim")
}
