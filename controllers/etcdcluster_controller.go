// Package controllers holds the Kubernetes glue of etcdpilot: it observes objects, asks the
// pure packages under internal/ what to do, and applies the answer.
package controllers

import (
	"context"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// EtcdClusterReconciler reconciles EtcdCluster objects.
type EtcdClusterReconciler struct {
	Client client.Client
	Scheme *runtime.Scheme

	// EtcdImageRepository is the repository etcd member images are pulled from
	// (for example gcr.io/etcd-development/etcd); the tag is the etcd version.
	EtcdImageRepository string
}

// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdclusters/finalizers,verbs=update

// Reconcile brings one EtcdCluster towards its spec. Steps:
//
//  1. Observe: read the EtcdCluster; a deleted one needs nothing (owned objects are
//     garbage-collected).
//  2. Decide: compute the status from the observation (internal/status).
//  3. Report: patch the status once, only when it changed.
func (r *EtcdClusterReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cluster := &etcdv1alpha1.EtcdCluster{}
	if err := r.Client.Get(ctx, req.NamespacedName, cluster); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}

	desired := status.Compute(cluster)

	if apiequality.Semantic.DeepEqual(cluster.Status, desired) {
		return reconcile.Result{}, nil
	}
	patch := client.MergeFrom(cluster.DeepCopy())
	cluster.Status = desired
	return reconcile.Result{}, r.Client.Status().Patch(ctx, cluster, patch)
}

// SetupWithManager registers the reconciler with the manager.
func (r *EtcdClusterReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&etcdv1alpha1.EtcdCluster{}).
		Named("etcdcluster").
		Complete(r)
}
