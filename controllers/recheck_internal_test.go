package controllers

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	etcdfake "github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// The second look before a disruptive action reads the pods from the API server, not from
// the pass's observation, and asks the members again: a pod deleted since, a pod gone and a
// member that stopped answering all show, while the observation still has them as they were.
func TestTheSecondLookSeesWhatChangedSinceThePassBegan(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u1"}}
	names := cluster.For(c)
	e0, e1, e2, e3 := names.MemberName(0), names.MemberName(1), names.MemberName(2), names.MemberName(3)
	pod := func(member string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: "ns", Labels: names.MemberLabels(member)}}
	}
	// e-0 is being deleted (a drain), e-2's pod is gone, e-3's etcd stopped answering; only
	// e-1 is as the pass saw it.
	deleting := pod(e0)
	deleting.Finalizers = []string{"test.etcdpilot.io/hold"}
	now := metav1.Now()
	deleting.DeletionTimestamp = &now
	api := fakeAPI(g, deleting, pod(e1), pod(e3))
	var members []membership.Member
	var etcdMembers []etcd.Member
	for i, name := range []string{e0, e1, e2, e3} {
		id := uint64(10 + i)
		members = append(members, membership.Member{Name: name, ID: id, Started: true, Healthy: true, Ready: true})
		m := etcd.Member{ID: id, Name: name, PeerURLs: []string{names.PeerURL(name)}}
		if name != e3 {
			m.ClientURLs = []string{names.ClientURL(name)}
		}
		etcdMembers = append(etcdMembers, m)
	}
	o := &observation{etcd: etcdfake.New(etcdMembers...), membership: membership.Observed{Cluster: names, Members: members,
		Pods: map[string]membership.Pod{e0: {Ready: true}, e1: {Ready: true}, e2: {Ready: true}, e3: {Ready: true}}}}
	r := &EtcdClusterReconciler{APIReader: api}

	got, err := r.recheck(context.Background(), c, o)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got[e0].HasPod).To(BeTrue())
	g.Expect(got[e0].Pod.Terminating).To(BeTrue(), "the pod being deleted shows")
	g.Expect(got[e0].Healthy).To(BeFalse(), "a member whose pod is being deleted is not counted healthy")
	g.Expect(got[e1]).To(Equal(membership.Recheck{HasPod: true, Pod: membership.Pod{}, Healthy: true}), "the member as the pass saw it")
	g.Expect(got[e2].HasPod).To(BeFalse(), "the pod gone shows")
	g.Expect(got[e3].HasPod).To(BeTrue())
	g.Expect(got[e3].Healthy).To(BeFalse(), "the member that stopped answering shows")

	// What the planner makes of it: a restart of e-1 is held back.
	restart := membership.Action{Kind: membership.RestartMember, Member: e1, Reason: etcdv1alpha1.ReasonRollingOut, Message: "restarting member " + e1}
	g.Expect(o.membership.ConfirmDisruption(restart, got).Kind).To(Equal(membership.Wait))
}

// fakeAPI is an API server of Kubernetes' own kinds holding objs, for the tests of what the
// reconciler reads and writes there.
func fakeAPI(g Gomega, objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	g.ExpectWithOffset(1, clientgoscheme.AddToScheme(scheme)).To(Succeed())
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
}
