package e2e

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// busyboxImage is pushed to the local registry by `make cluster-up`.
const busyboxImage = "localhost:5000/busybox:1.35"

// etcd members keep their data on PVCs, so the cluster must provision them dynamically and
// keep the data when a pod goes away.
var _ = Describe("the cluster's default StorageClass", func() {
	It("provisions a PVC whose data survives the deletion of its pod", func(ctx SpecContext) {
		By("finding exactly one default StorageClass")
		classes, err := clientset.StorageV1().StorageClasses().List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		var defaults []storagev1.StorageClass
		for _, sc := range classes.Items {
			if sc.Annotations["storageclass.kubernetes.io/is-default-class"] == "true" {
				defaults = append(defaults, sc)
			}
		}
		Expect(defaults).To(HaveLen(1), "want one default StorageClass")

		ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-storage-"},
		}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func(ctx SpecContext) {
			_ = clientset.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
		})

		By("creating a PVC without a storageClassName")
		pvc := &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("64Mi")},
				},
			},
		}
		_, err = clientset.CoreV1().PersistentVolumeClaims(ns.Name).Create(ctx, pvc, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())

		marker := fmt.Sprintf("written-%d", time.Now().UnixNano())
		By("writing a marker from a first pod")
		runToCompletion(ctx, ns.Name, "writer", fmt.Sprintf("echo %s > /data/marker && sync", marker))

		claim, err := clientset.CoreV1().PersistentVolumeClaims(ns.Name).Get(ctx, "data", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(claim.Status.Phase).To(Equal(corev1.ClaimBound))
		Expect(ptr.Deref(claim.Spec.StorageClassName, "")).To(Equal(defaults[0].Name))

		By("deleting the pod and reading the marker from a new one")
		Expect(clientset.CoreV1().Pods(ns.Name).Delete(ctx, "writer", metav1.DeleteOptions{})).To(Succeed())
		Eventually(func() bool {
			_, err := clientset.CoreV1().Pods(ns.Name).Get(ctx, "writer", metav1.GetOptions{})
			return err != nil
		}).WithContext(ctx).WithTimeout(time.Minute).Should(BeTrue())
		out := runToCompletion(ctx, ns.Name, "reader", "cat /data/marker")
		Expect(out).To(Equal(marker + "\n"))
	})
})

// runToCompletion runs a busybox pod with the "data" PVC mounted at /data, waits for it to
// succeed and returns its log.
func runToCompletion(ctx context.Context, ns, name, script string) string {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PodSpec{
			RestartPolicy:                 corev1.RestartPolicyNever,
			TerminationGracePeriodSeconds: ptr.To[int64](1),
			Containers: []corev1.Container{{
				Name:         "main",
				Image:        busyboxImage,
				Command:      []string{"/bin/sh", "-c", script},
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}},
			}},
			Volumes: []corev1.Volume{{
				Name: "data",
				VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"},
				},
			}},
		},
	}
	_, err := clientset.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	Eventually(func(g Gomega) {
		got, err := clientset.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(got.Status.Phase).NotTo(Equal(corev1.PodFailed), "pod %s failed", name)
		g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	logs, err := clientset.CoreV1().Pods(ns).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(logs)
}
