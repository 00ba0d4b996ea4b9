package controllers_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// readyCluster creates a 3-member cluster whose (fake) etcd answers with three healthy
// members, name-0 leading, and waits until it is Ready with its spec in force. The test
// plays the kubelet: podsReady marks every member pod Ready.
func readyCluster(g Gomega, ns, name string, mutate func(*etcdv1alpha1.EtcdCluster)) *fake.Client {
	ctx := context.Background()
	member := func(id uint64) etcd.Member {
		return etcd.Member{ID: id + 1, Name: fmt.Sprintf("%s-%d", name, id),
			PeerURLs: []string{memberURL(ns, name, id, 2380)}, ClientURLs: []string{memberURL(ns, name, id, 2379)}}
	}
	f := fake.New(member(0), member(1), member(2))
	f.SetLeader(1)
	fakeEtcd.register(ns, f)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}
	if mutate != nil {
		mutate(c)
	}
	// The members hold data already (the fake etcd knows them all): their claims exist
	// before the cluster does (without an owner, which needs the cluster's UID), so the
	// operator brings their pods back rather than bootstrapping or replacing them.
	for _, m := range []string{name + "-0", name + "-1", name + "-2"} {
		pvc := resources.MemberPVC(c, m)
		pvc.OwnerReferences = nil
		pvc.Annotations = map[string]string{"etcd.etcdpilot.io/bootstrapped": "true"}
		g.Expect(k8sClient.Create(ctx, pvc)).To(Succeed())
	}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())
	g.Eventually(func(g Gomega) {
		podsReady(g, ns)
		got := get(g, ns, name, &etcdv1alpha1.EtcdCluster{})
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue), "%+v", got.Status.Conditions)
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return f
}

func podsReady(g Gomega, ns string) { podsReadyOf(g, ns, nil) }

// podsReadyOf marks Ready the pods of the namespace that are in uids (name and UID), or
// every pod when uids is nil.
func podsReadyOf(g Gomega, ns string, uids map[string]types.UID) {
	var pods corev1.PodList
	g.Expect(k8sClient.List(context.Background(), &pods, client.InNamespace(ns))).To(Succeed())
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && !isReady(&p) && (uids == nil || uids[p.Name] == p.UID) {
			markPodReady(g, ns, p.Name)
		}
	}
}

func isReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podUIDs(g Gomega, ns string) map[string]types.UID {
	var pods corev1.PodList
	g.Expect(k8sClient.List(context.Background(), &pods, client.InNamespace(ns))).To(Succeed())
	out := map[string]types.UID{}
	for _, p := range pods.Items {
		out[p.Name] = p.UID
	}
	return out
}

// A changed etcd option and resources reach every member: each pod is recreated exactly once
// with the new flags, followers first, leadership moved before the leader's turn, and the
// status says the change is done only after the last member.
func TestASpecChangeIsRolledOutOneMemberAtATimeLeaderLast(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "roll", nil)
	before := podUIDs(g, ns)
	f.ResetCalls()

	c := updateCluster(g, ns, "roll", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.Etcd.SnapshotCount = 5000
		c.Spec.Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}
	})
	generation := c.Generation

	var restarted []string
	uids := map[string]map[types.UID]bool{}
	sawRollingOut, earlyDone := false, ""
	g.Eventually(func(g Gomega) {
		snapshot := podUIDs(g, ns)
		for name, uid := range snapshot {
			if uids[name] == nil {
				uids[name] = map[types.UID]bool{before[name]: true}
			}
			if !uids[name][uid] {
				uids[name][uid] = true
				restarted = append(restarted, name)
			}
		}
		got := get(g, ns, "roll", &etcdv1alpha1.EtcdCluster{})
		if p := condition(got, etcdv1alpha1.ConditionProgressing); p.Reason == etcdv1alpha1.ReasonRollingOut {
			sawRollingOut = true
			g.Expect(p.Message).To(MatchRegexp(`\d of 3 members updated`))
		}
		// Not done: the status must not say it is, for this generation (right after the
		// update, Ready may still speak of the last one). Recorded, not asserted here: a
		// failed assertion inside Eventually is only retried.
		ready := condition(got, etcdv1alpha1.ConditionReady)
		if len(restarted) < 3 && earlyDone == "" &&
			(got.Status.ObservedGeneration >= generation || ready.ObservedGeneration == generation && ready.Status == metav1.ConditionTrue) {
			earlyDone = fmt.Sprintf("after %v: observedGeneration %d, Ready %s for generation %d", restarted, got.Status.ObservedGeneration, ready.Status, ready.ObservedGeneration)
		}
		// Only pods this iteration recorded become Ready: a pod made Ready before the test saw
		// it would let the next restart happen between two looks, and the order be lost.
		podsReadyOf(g, ns, snapshot)
		g.Expect(restarted).To(HaveLen(3))
		g.Expect(got.Status.ObservedGeneration).To(Equal(generation))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(got.Status.UpdatedMembers).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(50 * time.Millisecond).Should(Succeed())

	g.Expect(sawRollingOut).To(BeTrue(), "Progressing/RollingOut during the rollout")
	g.Expect(earlyDone).To(BeEmpty(), "the status said the change was done before every member ran it")
	g.Expect(restarted).To(Equal([]string{"roll-1", "roll-2", "roll-0"}), "followers first, the leader last")
	g.Expect(f.Calls()).To(ContainElement("MoveLeader 2"), "leadership moved off roll-0 before it restarted")
	for name, seen := range uids {
		g.Expect(seen).To(HaveLen(2), "%s restarted exactly once", name)
		pod := get(g, ns, name, &corev1.Pod{})
		g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--snapshot-count=5000"))
		g.Expect(pod.Spec.Containers[0].Resources.Limits.Memory().String()).To(Equal("1Gi"))
	}
	g.Expect(f.MembershipChanges()).To(BeEmpty(), "a rollout keeps every member's identity")

	// Labels and annotations of the pod template need no restart: applied in place.
	restartsBefore := podUIDs(g, ns)
	c = updateCluster(g, ns, "roll", func(c *etcdv1alpha1.EtcdCluster) {
		c.Spec.PodTemplate.Labels = map[string]string{"team": "storage"}
		c.Spec.PodTemplate.Annotations = map[string]string{"example.com/scrape": "true"}
	})
	g.Eventually(func(g Gomega) {
		for name := range restartsBefore {
			pod := get(g, ns, name, &corev1.Pod{})
			g.Expect(pod.Labels).To(HaveKeyWithValue("team", "storage"))
			g.Expect(pod.Annotations).To(HaveKeyWithValue("example.com/scrape", "true"))
		}
		got := get(g, ns, "roll", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.ObservedGeneration).To(Equal(c.Generation))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(podUIDs(g, ns)).To(Equal(restartsBefore), "no pod restarted for metadata")
}

// A pod made before the operator recorded spec hashes is adopted as it is: no restart.
func TestAPodWithoutASpecHashIsAdoptedWithoutARestart(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	readyCluster(g, ns, "legacy", nil)
	pod := get(g, ns, "legacy-1", &corev1.Pod{})
	hash := pod.Annotations[resources.AnnotationSpecHash]
	g.Expect(hash).NotTo(BeEmpty())
	patch := client.MergeFrom(pod.DeepCopy())
	delete(pod.Annotations, resources.AnnotationSpecHash)
	g.Expect(k8sClient.Patch(ctx, pod, patch)).To(Succeed())

	g.Eventually(func(g Gomega) {
		got := get(g, ns, "legacy-1", &corev1.Pod{})
		g.Expect(got.UID).To(Equal(pod.UID))
		g.Expect(got.Annotations).To(HaveKeyWithValue(resources.AnnotationSpecHash, hash))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// bindClaims plays the persistent volume controller: every claim of the namespace is bound,
// with capacity of its request (an unbound claim cannot be expanded).
func bindClaims(g Gomega, ns string) {
	ctx := context.Background()
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns))).To(Succeed())
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		if pvc.Spec.VolumeName == "" {
			pvc.Spec.VolumeName = "pv-" + ns + "-" + pvc.Name
			g.Expect(k8sClient.Update(ctx, pvc)).To(Succeed())
		}
		if pvc.Status.Phase != corev1.ClaimBound {
			pvc.Status.Phase = corev1.ClaimBound
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]}
			g.Expect(k8sClient.Status().Update(ctx, pvc)).To(Succeed())
		}
	}
}

// provideRequested plays the storage provider: every claim of the namespace gets the
// capacity it requests.
func provideRequested(g Gomega, ns string) {
	ctx := context.Background()
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns))).To(Succeed())
	for i := range pvcs.Items {
		pvc := &pvcs.Items[i]
		want := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if have := pvc.Status.Capacity[corev1.ResourceStorage]; have.Cmp(want) != 0 {
			pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: want}
			g.Expect(k8sClient.Status().Update(ctx, pvc)).To(Succeed())
		}
	}
}

func requested(g Gomega, ns string) map[string]string {
	var pvcs corev1.PersistentVolumeClaimList
	g.Expect(k8sClient.List(context.Background(), &pvcs, client.InNamespace(ns))).To(Succeed())
	out := map[string]string{}
	for _, pvc := range pvcs.Items {
		q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		out[pvc.Name] = q.String()
	}
	return out
}

func storageClass(g Gomega, name string, expandable bool) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/none",
		AllowVolumeExpansion: ptr.To(expandable)}
	g.Expect(k8sClient.Create(context.Background(), sc)).To(Succeed())
}

func TestALargerStorageSizeGrowsTheClaimsOneAtATime(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	storageClass(g, "expandable-"+ns, true)
	readyCluster(g, ns, "grow", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("expandable-" + ns) })
	bindClaims(g, ns)

	updateCluster(g, ns, "grow", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("8Gi")) })

	g.Eventually(func(g Gomega) map[string]string { return requested(g, ns) }).WithTimeout(timeout).WithPolling(interval).
		Should(Equal(map[string]string{"grow-0-data": "8Gi", "grow-1-data": "4Gi", "grow-2-data": "4Gi"}))
	// The volume has not grown yet: no other claim is touched, and the status says so.
	g.Consistently(func(g Gomega) map[string]string { return requested(g, ns) }).WithTimeout(2 * time.Second).
		Should(Equal(map[string]string{"grow-0-data": "8Gi", "grow-1-data": "4Gi", "grow-2-data": "4Gi"}))
	got := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{})
	g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Reason).To(Equal(etcdv1alpha1.ReasonExpandingVolumes))
	g.Expect(condition(got, etcdv1alpha1.ConditionProgressing).Message).To(ContainSubstring("waiting for the claim of member grow-0 to grow from 4Gi to 8Gi"))
	g.Expect(got.Status.ObservedGeneration).To(BeNumerically("<", got.Generation))

	// The storage provider grows each volume in turn.
	g.Eventually(func(g Gomega) {
		provideRequested(g, ns)
		g.Expect(requested(g, ns)).To(Equal(map[string]string{"grow-0-data": "8Gi", "grow-1-data": "8Gi", "grow-2-data": "8Gi"}))
		got := get(g, ns, "grow", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}

// A class that does not allow expansion, or that is gone: no claim changes, and the cluster
// says why, naming the class, while it stays Available.
func TestAClassThatCannotExpandLeavesTheClaimsAndSaysSo(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	for _, tc := range []struct {
		name, class string
		create      bool
		says        string
	}{
		{name: "fixed", class: "fixed", create: true, says: `StorageClass "fixed-%s" does not allow volume expansion`},
		{name: "gone", class: "missing", says: `StorageClass "missing-%s" was not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := newNamespace(t)
			class := tc.class + "-" + ns
			if tc.create {
				storageClass(g, class, false)
			}
			readyCluster(g, ns, tc.name, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To(class) })
			bindClaims(g, ns)

			updateCluster(g, ns, tc.name, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("8Gi")) })

			g.Eventually(func(g Gomega) {
				got := get(g, ns, tc.name, &etcdv1alpha1.EtcdCluster{})
				degraded := condition(got, etcdv1alpha1.ConditionDegraded)
				g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonVolumeExpansionNotSupported))
				g.Expect(degraded.Message).To(ContainSubstring(fmt.Sprintf(tc.says, ns)))
				g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionFalse))
				g.Expect(condition(got, etcdv1alpha1.ConditionAvailable).Status).To(Equal(metav1.ConditionTrue))
			}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
			g.Expect(requested(g, ns)).To(Equal(map[string]string{
				tc.name + "-0-data": "4Gi", tc.name + "-1-data": "4Gi", tc.name + "-2-data": "4Gi"}))
		})
	}
}
