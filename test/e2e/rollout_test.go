package e2e

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

var _ = Describe("rollouts of spec changes", longestSpec(110), func() {
	It("rolls a changed etcd option and resources out to a 3-member cluster under writes: each member restarted once, the leader last, Ready only after the last, no write lost; then moves to an older patch release", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-rollout-")
		cluster := createCluster(ctx, ns, "ro", 3)
		before := waitReady(ctx, cluster)
		leader := leaderOf(before)
		Expect(leader).NotTo(BeEmpty())
		podsBefore := podUIDs(ctx, ns, cluster.Name)
		w := startWriter(ctx, ns, cluster.Name)
		time.Sleep(2 * time.Second) // some writes before the change

		By("changing an etcd option and the resources")
		c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Etcd.SnapshotCount = 5000
		c.Spec.Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
		}
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
		generation := c.Generation

		By("following the rollout: one member at a time, the status never says done early")
		var order []string
		seen := map[string]map[string]bool{}
		var progress []string
		readyEarly := ""
		Eventually(func(g Gomega) {
			for name, uid := range podUIDs(ctx, ns, cluster.Name) {
				if seen[name] == nil {
					seen[name] = map[string]bool{podsBefore[name]: true}
				}
				if !seen[name][uid] {
					seen[name][uid] = true
					order = append(order, name)
				}
			}
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			if p := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionProgressing); p != nil && p.Reason == etcdv1alpha1.ReasonRollingOut {
				if len(progress) == 0 || progress[len(progress)-1] != p.Message {
					progress = append(progress, p.Message)
				}
			}
			ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
			// Ready counts for the change only once it is about its generation: right after
			// the patch, the operator has not looked yet, and Ready still speaks of the last one.
			doneEarly := ready.Status == metav1.ConditionTrue && ready.ObservedGeneration == generation || got.Status.ObservedGeneration == generation
			if len(order) < 3 && doneEarly && readyEarly == "" {
				readyEarly = fmt.Sprintf("Ready %s for generation %d (%s), observedGeneration %d", ready.Status, ready.ObservedGeneration, ready.Message, got.Status.ObservedGeneration)
			}
			g.Expect(order).To(HaveLen(3))
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
			g.Expect(got.Status.ObservedGeneration).To(Equal(generation))
			g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("restart order %v (leader before: %s); progress: %q\n", order, leader, progress)

		Expect(readyEarly).To(BeEmpty(), "Ready or observedGeneration reported the change done before every member ran it")
		// The leader restarts last, after handing over leadership: the leader of that moment,
		// which an election during the rollout may have made another member than the first.
		Expect(leadershipMovedFrom(ctx, ns, cluster.Name)).To(ContainElement(order[2]),
			"the last member restarted (%s) handed over leadership first (leader before the rollout: %s)", order[2], leader)
		Expect(progress).To(ContainElement(MatchRegexp(`^rolling out the new spec: [0-2] of 3 members updated`)), "Progressing/RollingOut said how far it got")
		stable := podUIDs(ctx, ns, cluster.Name)
		Consistently(func() map[string]string { return podUIDs(ctx, ns, cluster.Name) }).
			WithContext(ctx).WithTimeout(10*time.Second).WithPolling(time.Second).Should(Equal(stable), "the rollout is over")
		for name, uids := range seen {
			Expect(uids).To(HaveLen(2), "member %s restarted exactly once", name)
			pod := get(ctx, ns, name, &corev1.Pod{})
			Expect(pod.Spec.Containers[0].Args).To(ContainElement("--snapshot-count=5000"), name)
			Expect(pod.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("1Gi"), name)
		}
		after := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		Expect(memberIDs(after)).To(Equal(memberIDs(before)), "the same members, with their data")

		By("moving to an older patch release of the same minor: restarted like any change")
		Expect(after.Status.CurrentVersion).To(Equal("3.7.3"))
		setVersion(ctx, cluster, "3.7.2")
		Eventually(func(g Gomega) {
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			for _, m := range got.Status.Members {
				g.Expect(m.Version).To(Equal("3.7.2"), m.Name)
			}
			g.Expect(got.Status.CurrentVersion).To(Equal("3.7.2"))
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
		patched := waitReady(ctx, cluster)
		Expect(patched.Status.ObservedGeneration).To(Equal(patched.Generation))
		Expect(memberIDs(patched)).To(Equal(memberIDs(before)))
		for name := range seen {
			pod := get(ctx, ns, name, &corev1.Pod{})
			Expect(pod.Labels).To(HaveKeyWithValue("etcd.etcdpilot.io/version", "3.7.2"), name)
			Expect(pod.Spec.Containers[0].Args).To(ContainElement("--snapshot-count=5000"), "%s keeps the rolled-out option", name)
		}

		acked, failed := w.stop()
		Expect(failed).To(BeZero(), "every write was acknowledged within %s: the cluster kept taking writes through the rollout", writeWindow)
		Expect(len(acked)).To(BeNumerically(">", 50), "the writer kept writing during the rollout")
		expectKeys(ctx, ns, cluster.Name, acked)

		events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(events.Items).To(ContainElements(HaveField("Reason", "RolloutStarted"), HaveField("Reason", "RolloutCompleted")))
	})
})

// leadershipMovedFrom names the members the operator moved leadership away from, as its
// LeaderMoved events about cluster name say.
func leadershipMovedFrom(ctx context.Context, ns, name string) []string {
	var evs eventsv1.EventList
	ExpectWithOffset(1, k8sClient.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Reason != "LeaderMoved" || e.Regarding.Name != name {
			continue
		}
		if _, rest, ok := strings.Cut(e.Note, "away from member "); ok {
			out = append(out, strings.Fields(rest)[0])
		}
	}
	return out
}
