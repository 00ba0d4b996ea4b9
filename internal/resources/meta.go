package resources

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// OwnerReference makes an object a dependent of the EtcdCluster c, with c as its
// controller. The garbage collector then deletes the object with the cluster, watches on
// owned objects map events back to c, and no other controller adopts the object.
// BlockOwnerDeletion keeps c visible (with a foreground deletion) until its dependents
// are gone. It is built by hand, not with controllerutil, so this package stays free of
// a scheme and of controller-runtime.
func OwnerReference(c *etcdv1alpha1.EtcdCluster) metav1.OwnerReference {
	return controllerReference("EtcdCluster", c.ObjectMeta)
}

// TenantOwnerReference makes an object (its Secret) a dependent of the EtcdTenant t, with t
// as its controller, as OwnerReference does for a cluster.
func TenantOwnerReference(t *etcdv1alpha1.EtcdTenant) metav1.OwnerReference {
	return controllerReference("EtcdTenant", t.ObjectMeta)
}

// controllerReference names the object of kind with meta as the controller owner.
func controllerReference(kind string, meta metav1.ObjectMeta) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         etcdv1alpha1.GroupVersion.String(),
		Kind:               kind,
		Name:               meta.Name,
		UID:                meta.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// objectMeta is the metadata shared by every object of the cluster: its name, the
// cluster's namespace, the given labels and the controller owner reference.
func objectMeta(c *etcdv1alpha1.EtcdCluster, name string, labels map[string]string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:            name,
		Namespace:       c.Namespace,
		Labels:          labels,
		OwnerReferences: []metav1.OwnerReference{OwnerReference(c)},
	}
}

// copyMap returns a copy of m, or nil when m is empty, so a returned object never shares
// a map with the EtcdCluster and an empty map and a missing one build the same object.
func copyMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// mergeLabels returns base overlaid with override: keys in both take override's value.
func mergeLabels(base, override map[string]string) map[string]string {
	out := make(map[string]string, len(base)+len(override))
	maps.Copy(out, base)
	maps.Copy(out, override)
	return out
}
