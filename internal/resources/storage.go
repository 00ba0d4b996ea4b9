package resources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
)

// MemberPVC returns the PersistentVolumeClaim holding member's data. It is a separate
// object from the pod, owned by the cluster, so a member's data survives its pod being
// deleted or rescheduled: the replacement pod mounts the same claim and rejoins with its
// old identity. ReadWriteOnce is enough because only the member's own pod mounts it. A
// nil storage class leaves the choice to the cluster's default StorageClass.
func MemberPVC(c *etcdv1alpha1.EtcdCluster, member string) *corev1.PersistentVolumeClaim {
	spec := clusterspec.Effective(c)
	cl := cluster.For(c)
	return &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "PersistentVolumeClaim"},
		ObjectMeta: objectMeta(c, cl.PVCName(member), cl.MemberLabels(member)),
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceStorage: spec.Storage.Size.DeepCopy()},
			},
			StorageClassName: copyString(spec.Storage.StorageClassName),
		},
	}
}

// copyString returns a copy of the string s points to, or nil.
func copyString(s *string) *string {
	if s == nil {
		return nil
	}
	v := *s
	return &v
}
