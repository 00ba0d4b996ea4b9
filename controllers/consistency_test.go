package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// The consistency check (spec.consistencyCheck) against the fake etcd: the members' hashes
// at the lowest revision they all applied, a member that differs from the majority named,
// fenced and replaced (mode Replace) or only reported (mode Report).

// diverge makes the members of cluster name report revisions 1000 to 1002 and member
// `odd` a hash of its own, and has the cluster reconciled at once.
func diverge(g Gomega, f *fake.Client, ns, name string, odd uint64) {
	for i := range uint64(3) {
		f.SetStatus(memberURL(ns, name, i, 2379), etcd.MemberStatus{MemberID: i + 1, LeaderID: f.Leader(), Version: "3.7.3", Revision: 1000 + int64(i)})
	}
	f.SetHash(memberURL(ns, name, odd, 2379), 0xbad)
	poke(g, ns, name)
}

func TestAMemberWhoseDataDiffersFromTheMajorityIsReplaced(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "cc", nil)
	f.ResetCalls()
	diverge(g, f, ns, "cc", 2)

	g.Eventually(func(g Gomega) {
		st := get(g, ns, "cc", &etcdv1alpha1.EtcdCluster{}).Status.Consistency
		g.Expect(st).NotTo(BeNil())
		g.Expect(st.Result).To(Equal("Mismatch"))
		g.Expect(st.Revision).To(Equal(int64(1000)), "the lowest revision every member applied")
		g.Expect(st.Suspects).To(Equal([]etcdv1alpha1.SuspectMember{{Name: "cc-2", ID: "3"}}))
		g.Expect(st.Message).To(ContainSubstring("cc-2's hash 00000bad differs from 00000000 of cc-0, cc-1"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.HashKV)).To(ContainElements(
		"HashKV "+memberURL(ns, "cc", 0, 2379)+" 1000", "HashKV "+memberURL(ns, "cc", 1, 2379)+" 1000", "HashKV "+memberURL(ns, "cc", 2, 2379)+" 1000"))

	// Replaced: removed from the membership, its claim retained but never reused, and a
	// fresh member in its place.
	g.Eventually(f.MembershipChanges).WithTimeout(timeout).Should(ContainElement("MemberRemove 3"))
	g.Eventually(func(g Gomega) {
		get(g, ns, "cc-3", &corev1.Pod{})
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.MembershipChanges()).To(HaveLen(2), "one removal, then one learner added")
	claim := get(g, ns, "cc-2-data", &corev1.PersistentVolumeClaim{})
	g.Expect(claim.Annotations).To(HaveKeyWithValue("etcd.etcdpilot.io/removed", "true"))
	g.Eventually(func(g Gomega) []string { return eventReasons(g, ns) }).WithTimeout(timeout).Should(ContainElement(etcdv1alpha1.ReasonMemberCorrupt))
}

func TestInReportModeAMemberWhoseDataDiffersIsOnlyReported(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "rep", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckReport
	})
	diverge(g, f, ns, "rep", 1)

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "rep", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Consistency).NotTo(BeNil())
		g.Expect(got.Status.Consistency.Suspects).To(Equal([]etcdv1alpha1.SuspectMember{{Name: "rep-1", ID: "2"}}))
		degraded := condition(got, etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonMemberCorrupt))
		g.Expect(degraded.Message).To(ContainSubstring("consistencyCheck.mode is Report"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Consistently(f.MembershipChanges).WithTimeout(2*time.Second).Should(BeEmpty(), "nothing is changed")
}

// A member the consistency check named is fenced: a backup never streams from it.
func TestABackupNeverReadsAMemberWhoseDataDiffers(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	clusterWithMembers(g, ns, "src") // src-2 unhealthy
	g.Eventually(func(g Gomega) {
		c := get(g, ns, "src", &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckReport // reported, not replaced
		g.Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	// The verdict is written as a check would write it, until the operator has taken it in
	// (Degraded/MemberCorrupt): a pass that began before the write patches the status from
	// what it read, and may take the verdict away once.
	g.Eventually(func(g Gomega) {
		c := get(g, ns, "src", &etcdv1alpha1.EtcdCluster{})
		if c.Status.Consistency == nil || c.Status.Consistency.Result != "Mismatch" {
			c.Status.Consistency = &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.Now(), Revision: 9, Result: "Mismatch",
				Message: "src-1's hash differs", Suspects: []etcdv1alpha1.SuspectMember{{Name: "src-1", ID: "2"}}}
			g.Expect(k8sClient.Status().Update(ctx, c)).To(Succeed())
		}
		c = get(g, ns, "src", &etcdv1alpha1.EtcdCluster{})
		g.Expect(c.Status.Consistency).NotTo(BeNil())
		g.Expect(c.Status.Consistency.Result).To(Equal("Mismatch"))
		g.Expect(condition(c, etcdv1alpha1.ConditionDegraded).Reason).To(Equal(etcdv1alpha1.ReasonMemberCorrupt))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	g.Expect(k8sClient.Create(ctx, newBackup(ns, "fenced", "src"))).To(Succeed())
	job := &batchv1.Job{}
	g.Eventually(func(g Gomega) { get(g, ns, "fenced-backup", job) }).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	var endpoints string
	for _, a := range job.Spec.Template.Spec.Containers[0].Args {
		if v, ok := strings.CutPrefix(a, "--endpoints="); ok {
			endpoints = v
		}
	}
	g.Expect(endpoints).To(Equal("src-0="+memberURL(ns, "src", 0, 2379)), "src-1 is fenced, src-2 unhealthy")
}
