package controllers

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
