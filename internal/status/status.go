// Package status computes an EtcdCluster's status from what the operator observed. It is the
// one place status is decided; the controller only patches the result.
package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Compute returns the status the cluster should have after a successful reconcile of its
// current generation. Existing conditions keep their lastTransitionTime when their status
// does not change.
//
// This release does not create etcd members, so Ready is always False with
// ReasonMembersNotManaged; the message says so, rather than leaving users guessing.
func Compute(cluster *etcdv1alpha1.EtcdCluster) etcdv1alpha1.EtcdClusterStatus {
	out := *cluster.Status.DeepCopy()
	out.ObservedGeneration = cluster.Generation
	meta.SetStatusCondition(&out.Conditions, metav1.Condition{
		Type:               etcdv1alpha1.ConditionReady,
		Status:             metav1.ConditionFalse,
		Reason:             etcdv1alpha1.ReasonMembersNotManaged,
		Message:            "this etcdpilot release accepts EtcdCluster objects but does not create etcd members yet",
		ObservedGeneration: cluster.Generation,
	})
	return out
}
