package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// The maintenance step (spec.maintenance) against the fake etcd: what the operator asks of
// the members, in which order, and what the status and events say.

const mi = int64(1) << 20

// setSizes makes every member of cluster name report its database file at size bytes with
// inUse in use, at revision 1000, member 1 leading, with errs as its reported errors, and
// has the cluster reconciled at once rather than at its next steady pass, 30 s away.
func setSizes(g Gomega, f *fake.Client, ns, name string, size, inUse int64, errs ...string) {
	for i := range uint64(3) {
		f.SetStatus(memberURL(ns, name, i, 2379), etcd.MemberStatus{MemberID: i + 1, LeaderID: 1, Version: "3.7.3",
			DBSize: size, DBSizeInUse: inUse, Revision: 1000, Errors: errs})
	}
	poke(g, ns, name)
}

// poke changes an annotation of cluster name, so that it is reconciled at once.
func poke(g Gomega, ns, name string) {
	g.Eventually(func(g Gomega) {
		c := get(g, ns, name, &etcdv1alpha1.EtcdCluster{})
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["test.etcdpilot.io/poke"] = time.Now().Format(time.RFC3339Nano)
		g.Expect(k8sClient.Update(context.Background(), c)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// calls are the fake's calls of the given methods, in order.
func calls(f *fake.Client, methods ...fake.Method) []string {
	var out []string
	for _, c := range f.Calls() {
		for _, m := range methods {
			if c == string(m) || strings.HasPrefix(c, string(m)+" ") {
				out = append(out, c)
			}
		}
	}
	return out
}

func eventReasons(g Gomega, ns string) []string {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Reason)
	}
	return out
}

// expectDefragmented expects every member of got defragmented from a file of before bytes
// to one of after.
func expectDefragmented(g Gomega, got *etcdv1alpha1.EtcdCluster, before, after int64) {
	for _, m := range got.Status.Members {
		g.Expect(m.LastDefragmentation).NotTo(BeNil(), "member %s", m.Name)
		g.Expect(m.LastDefragmentation.SizeBefore).To(Equal(before))
		g.Expect(m.LastDefragmentation.SizeAfter).To(Equal(after))
	}
}

// leaderLast is the Defragment calls of the three members of cluster name, member 1 leading
// (setSizes) and every member giving back as much: the followers by name, the leader last.
func leaderLast(ns, name string) []string {
	return []string{
		"Defragment " + memberURL(ns, name, 1, 2379),
		"Defragment " + memberURL(ns, name, 2, 2379),
		"Defragment " + memberURL(ns, name, 0, 2379),
	}
}

func TestAFragmentedClusterIsDefragmentedOneMemberAtATimeLeaderLast(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "frag", nil)
	f.ResetCalls()
	setSizes(g, f, ns, "frag", 400*mi, 100*mi) // 75 % and 300 MiB to reclaim: due under the defaults

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "frag", &etcdv1alpha1.EtcdCluster{})
		expectDefragmented(g, got, 400*mi, 100*mi)
		g.Expect(got.Status.Maintenance).NotTo(BeNil())
		g.Expect(got.Status.Maintenance.Reason).To(Equal("BelowThresholds"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())

	g.Expect(calls(f, fake.Defragment)).To(Equal(leaderLast(ns, "frag")),
		"followers first (by name when they give back as much), the leader last, each once")
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns)).To(ContainElements("MemberDefragmented", "MemberDefragmented", "MemberDefragmented"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// Fragmented again at once (a busy cluster): no member is defragmented again within
	// the minimum interval.
	setSizes(g, f, ns, "frag", 400*mi, 100*mi)
	g.Consistently(func() []string { return calls(f, fake.Defragment) }).WithTimeout(5 * time.Second).WithPolling(interval).Should(HaveLen(3))
	got := get(g, ns, "frag", &etcdv1alpha1.EtcdCluster{})
	g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "a defragmentation degrades nothing")
}

func TestDefragmentationWaitsForAnUnhealthyMemberAndCanBeDisabled(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "wait", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defragmentation.MinReclaimable = ptr.To(resource.MustParse("10Mi"))
	})
	f.ResetCalls()
	for i := range uint64(3) {
		st := etcd.MemberStatus{MemberID: i + 1, LeaderID: 1, DBSize: 400 * mi, DBSizeInUse: 100 * mi, Revision: 1000}
		if i == 2 {
			st.Errors = []string{"raft: stopped"}
		}
		f.SetStatus(memberURL(ns, "wait", i, 2379), st)
	}
	poke(g, ns, "wait")

	g.Consistently(func() []string { return calls(f, fake.Defragment) }).WithTimeout(5*time.Second).WithPolling(interval).
		Should(BeEmpty(), "nothing while a member is unhealthy")

	updateCluster(g, ns, "wait", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Maintenance.Defragmentation.Mode = etcdv1alpha1.DefragmentationDisabled
	})
	setSizes(g, f, ns, "wait", 400*mi, 100*mi)
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "wait", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Maintenance).NotTo(BeNil())
		g.Expect(got.Status.Maintenance.Reason).To(Equal("Disabled"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Consistently(func() []string { return calls(f, fake.Defragment) }).WithTimeout(3 * time.Second).WithPolling(interval).Should(BeEmpty())
}

func TestNoSpaceIsRecoveredByCompactionDefragmentationAndDisarm(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "full", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("64Mi"))
		c.Spec.Etcd.AutoCompactionMode, c.Spec.Etcd.AutoCompactionRetention = etcdv1alpha1.AutoCompactionRevision, "100"
	})
	f.ResetCalls()
	// Member 2 reached the quota; every member reports the cluster's alarm. After the
	// defragmentations each file is 40 MiB, under 90 % of the quota, and under the 75 % at
	// which the configured history (the last 100 revisions) would not fit.
	setSizes(g, f, ns, "full", 64*mi, 40*mi, "memberID:2 alarm:NOSPACE")

	g.Eventually(func() []string { return calls(f, fake.AlarmDisarm) }).WithTimeout(time.Minute).WithPolling(interval).ShouldNot(BeEmpty())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "full", &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionDegraded).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		for _, m := range got.Status.Members {
			g.Expect(m.Alarms).To(BeEmpty())
		}
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())

	steps := calls(f, fake.Compact, fake.Defragment, fake.AlarmDisarm)
	g.Expect(steps[0]).To(Equal("Compact 900"), "compaction first, keeping the configured history: %v", steps)
	var rest []string
	for _, s := range steps {
		if !strings.HasPrefix(s, "Compact ") {
			rest = append(rest, s)
		}
	}
	g.Expect(rest).To(Equal([]string{
		"Defragment " + memberURL(ns, "full", 1, 2379),
		"Defragment " + memberURL(ns, "full", 2, 2379),
		"Defragment " + memberURL(ns, "full", 0, 2379),
		"AlarmDisarm 2 NOSPACE",
	}), "then every member, the leader last, then the alarm: %v", steps)
	g.Expect(f.Compacted()).To(Equal(int64(900)), "the last 100 revisions are kept")
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns)).To(ContainElements(etcdv1alpha1.ReasonNoSpace, "Compacted", "MemberDefragmented", "NoSpaceDisarmed", "NoSpaceRecovered"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// The recovery can take less than a second, too quick to catch the Degraded condition
	// by polling: its event says what it said. Which step it names depends on the first
	// status patch that landed (one refused for a conflict makes no event, and the next pass
	// is a step further), so any step of the recovery will do; the order is proven above.
	g.Expect(eventNotes(g, ns, etcdv1alpha1.ReasonNoSpace)).To(ContainElement(SatisfyAll(
		ContainSubstring("the NOSPACE alarm is raised on full-1"),
		MatchRegexp(`recovering: a NOSPACE alarm is raised: (compacting to revision 900|defragmenting member full-\d)`))))
}

// TestNoSpaceDropsTheHistoryThatDoesNotFit: with 50 MiB of 64 in use, at the 75 % trigger,
// keeping the last 100 revisions would leave the cluster at the trigger after its
// defragmentations. The operator compacts to them first, sees in the next pass that they
// do not fit, compacts to the current revision (a compaction etcd is then asked for in the
// same pass as the first one's refusal), and goes on to defragment and disarm.
func TestNoSpaceDropsTheHistoryThatDoesNotFit(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "nofit", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("64Mi"))
		c.Spec.Etcd.AutoCompactionMode, c.Spec.Etcd.AutoCompactionRetention = etcdv1alpha1.AutoCompactionRevision, "100"
	})
	f.ResetCalls()
	setSizes(g, f, ns, "nofit", 64*mi, 50*mi, "memberID:2 alarm:NOSPACE")

	g.Eventually(func() []string { return calls(f, fake.AlarmDisarm) }).WithTimeout(time.Minute).WithPolling(interval).ShouldNot(BeEmpty())
	g.Expect(f.Compacted()).To(Equal(int64(1000)), "the whole history goes when what it keeps does not fit")
	steps := calls(f, fake.Compact, fake.Defragment, fake.AlarmDisarm)
	g.Expect(steps).To(ContainElement("Compact 900"), "the configured history is tried first: %v", steps)
	g.Expect(calls(f, fake.Defragment)).To(HaveLen(3), "every member defragmented: %v", steps)
	g.Expect(steps[len(steps)-1]).To(Equal("AlarmDisarm 2 NOSPACE"))
}

func eventNotes(g Gomega, ns, reason string) []string {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(context.Background(), &evs, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range evs.Items {
		if e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func TestNoSpaceThatDoesNotFitIsReportedAndNotDisarmed(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "toofull", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("64Mi"))
	})
	f.ResetCalls()
	// 62 MiB in use: above 90 % of the quota even once defragmented.
	setSizes(g, f, ns, "toofull", 64*mi, 62*mi, "memberID:1 alarm:NOSPACE")

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "toofull", &etcdv1alpha1.EtcdCluster{})
		degraded := condition(got, etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonNoSpaceDataDoesNotFit))
		g.Expect(degraded.Message).To(ContainSubstring("raise spec.etcd.quotaBackendBytes, or delete data"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.Defragment)).To(HaveLen(3), "every member defragmented once")
	g.Consistently(func() []string { return calls(f, fake.AlarmDisarm) }).WithTimeout(3 * time.Second).WithPolling(interval).Should(BeEmpty())
	g.Eventually(func(g Gomega) {
		g.Expect(eventReasons(g, ns)).To(ContainElement(etcdv1alpha1.ReasonNoSpaceDataDoesNotFit))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

func TestNoSpaceRecoveryCanBeLeftToAHuman(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "manual", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Maintenance.NoSpaceRecovery = etcdv1alpha1.NoSpaceRecoveryDisabled
		c.Spec.Maintenance.Defragmentation.Mode = etcdv1alpha1.DefragmentationDisabled
	})
	f.ResetCalls()
	setSizes(g, f, ns, "manual", 64*mi, 40*mi, fmt.Sprintf("memberID:%d alarm:NOSPACE", 3))

	g.Eventually(func(g Gomega) {
		degraded := condition(get(g, ns, "manual", &etcdv1alpha1.EtcdCluster{}), etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonNoSpace))
		g.Expect(degraded.Message).To(ContainSubstring("automatic recovery is off"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Consistently(func() []string { return calls(f, fake.Compact, fake.Defragment, fake.AlarmDisarm) }).
		WithTimeout(3 * time.Second).WithPolling(interval).Should(BeEmpty())
}

// Quota pressure with storage autoscaling on, under a 24Mi quota (threshold 18Mi): files of
// 20Mi with 12Mi in use are defragmented, the leader last, and the quota stays; the same
// files back at 20Mi within 10 minutes of their defragmentation get the larger quota, with
// no defragmentation. Maintenance and autoscaling decide in the same pass from the same
// observation (controllers.storageMembers).
func TestQuotaPressureIsDefragmentedBeforeTheQuotaIsRaised(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "pressure", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("24Mi"))
		c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto}
	})
	f.ResetCalls()
	setSizes(g, f, ns, "pressure", 20*mi, 12*mi)

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "pressure", &etcdv1alpha1.EtcdCluster{})
		expectDefragmented(g, got, 20*mi, 12*mi)
		g.Expect(got.Status.Storage).NotTo(BeNil())
		g.Expect(got.Status.Storage.Reason).To(Equal("BelowThreshold"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.Defragment)).To(Equal(leaderLast(ns, "pressure")))
	got := get(g, ns, "pressure", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.Storage.QuotaBackendBytes.String()).To(Equal("24Mi"), "the defragmentations were enough")
	g.Expect(eventReasons(g, ns)).NotTo(ContainElement("QuotaRaised"))

	setSizes(g, f, ns, "pressure", 20*mi, 12*mi)
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "pressure", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Storage.QuotaBackendBytes.String()).To(Equal("64Mi"))
		g.Expect(got.Status.Storage.Reason).To(Equal("NearQuota"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.Defragment)).To(HaveLen(3), "no member defragmented again within 10 minutes")
}
