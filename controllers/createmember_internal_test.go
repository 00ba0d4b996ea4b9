package controllers

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// A member brought back with its data (Action.OnExistingClaim) gets its pod only on the claim
// that holds that data, as the API server has it now: a claim deleted since the pass began
// (the cache still shows it) is not made again empty, and no pod is made. A member without
// data yet gets its claim made.
func TestAMemberWithDataIsNeverRecreatedOnAFreshClaim(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns", UID: "u1"},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, Version: "3.6.16"}}
	names := cluster.For(c)
	e0, e1, e2 := names.MemberName(0), names.MemberName(1), names.MemberName(2)
	going := resources.MemberPVC(c, e2)
	going.Finalizers = []string{"kubernetes.io/pvc-protection"}
	now := metav1.Now()
	going.DeletionTimestamp = &now
	api := fakeAPI(g, resources.MemberPVC(c, e0), going)
	r := &EtcdClusterReconciler{Client: api, APIReader: api}
	ctx := context.Background()
	recreate := func(member string) membership.Action {
		return membership.Action{Kind: membership.CreatePod, Member: member, OnExistingClaim: true, Version: "3.6.16",
			InitialCluster: []string{e0 + "=" + names.PeerURL(e0)}, InitialClusterState: "existing"}
	}
	exists := func(obj client.Object, name string) bool {
		err := api.Get(ctx, client.ObjectKey{Namespace: "ns", Name: name}, obj)
		g.Expect(client.IgnoreNotFound(err)).To(Succeed())
		return !apierrors.IsNotFound(err)
	}

	created, err := r.createMember(ctx, c, recreate(e0), "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(created).To(BeTrue())
	g.Expect(exists(&corev1.Pod{}, e0)).To(BeTrue(), "the pod is made on the claim that holds the data")

	for _, gone := range []string{e1, e2} {
		created, err = r.createMember(ctx, c, recreate(gone), "", nil)
		var waiting *waitingError
		g.Expect(errors.As(err, &waiting)).To(BeTrue(), "%v", err)
		g.Expect(waiting.reason).To(Equal(etcdv1alpha1.ReasonMemberDataLost))
		g.Expect(waiting.message).To(ContainSubstring("the claim of member " + gone + ", which holds its data, is gone"))
		g.Expect(created).To(BeFalse())
		g.Expect(exists(&corev1.Pod{}, gone)).To(BeFalse(), "no pod for %s", gone)
	}
	g.Expect(exists(&corev1.PersistentVolumeClaim{}, resources.MemberPVC(c, e1).Name)).To(BeFalse(), "no fresh claim under the identity of a member with data")

	fresh := recreate(e1)
	fresh.OnExistingClaim = false
	_, err = r.createMember(ctx, c, fresh, "", nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exists(&corev1.PersistentVolumeClaim{}, resources.MemberPVC(c, e1).Name)).To(BeTrue(), "a member without data gets its claim made")
}
