package controllers

import (
	"context"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// A pass that decided from a stale object (the cache had not seen the previous pass's
// status yet) must store nothing: its status patch conflicts.
func TestPatchStatusRefusesAStaleObject(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := etcdv1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "e", Namespace: "ns"}, Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3}}
	cli := fake.NewClientBuilder().WithScheme(scheme).WithObjects(c).WithStatusSubresource(c).Build()

	stale := &etcdv1alpha1.EtcdCluster{}
	if err := cli.Get(ctx, client.ObjectKeyFromObject(c), stale); err != nil {
		t.Fatal(err)
	}
	fresh := stale.DeepCopy()
	recovering := &etcdv1alpha1.RecoveryStatus{ID: "r1", Phase: etcdv1alpha1.RecoveryRecovering}
	if _, changed, err := patchStatus(ctx, cli, fresh, &fresh.Status, etcdv1alpha1.EtcdClusterStatus{Recovery: recovering}); err != nil || !changed {
		t.Fatalf("first patch: changed %t, %v", changed, err)
	}

	awaiting := &etcdv1alpha1.RecoveryStatus{ID: "r1", Phase: etcdv1alpha1.RecoveryAwaitingApproval}
	_, changed, err := patchStatus(ctx, cli, stale, &stale.Status, etcdv1alpha1.EtcdClusterStatus{Recovery: awaiting})
	if !apierrors.IsConflict(err) || changed {
		t.Fatalf("a patch from the stale object: changed %t, %v; want a conflict", changed, err)
	}
	if stale.Status.Recovery != nil {
		t.Fatalf("the stale object's status was left as the refused patch: %+v", stale.Status.Recovery)
	}
	stored := &etcdv1alpha1.EtcdCluster{}
	if err := cli.Get(ctx, client.ObjectKeyFromObject(c), stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.Recovery == nil || stored.Status.Recovery.Phase != etcdv1alpha1.RecoveryRecovering {
		t.Fatalf("stored recovery %+v, want the Recovering record", stored.Status.Recovery)
	}
}
