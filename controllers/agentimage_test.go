package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/etcdpilot/etcdpilot/controllers"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// The operator learns its image and who its pods are from its own pod: the image of its
// manager container, and its namespace and labels without the ReplicaSet's
// pod-template-hash (which changes with every rollout).
func TestTheOperatorReadsItselfFromItsPod(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	self := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "op-5d8f-x", Namespace: "etcdpilot-system",
		Labels: map[string]string{"control-plane": "controller-manager", "pod-template-hash": "5d8f"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "registry.example/etcdpilot:v1"}}}}
	reader := fake.NewClientBuilder().WithObjects(self).Build()

	t.Setenv(controllers.PodNameEnv, "")
	t.Setenv(controllers.PodNamespaceEnv, "")
	t.Setenv(controllers.AgentImageEnv, "")
	op, err := controllers.OperatorPods(ctx, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(op).To(Equal(resources.Operator{}), "outside a pod: unknown, and no error")

	t.Setenv(controllers.PodNameEnv, "op-5d8f-x")
	t.Setenv(controllers.PodNamespaceEnv, "etcdpilot-system")
	op, err = controllers.OperatorPods(ctx, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(op).To(Equal(resources.Operator{Namespace: "etcdpilot-system", Labels: map[string]string{"control-plane": "controller-manager"}}))
	image, err := controllers.AgentImage(ctx, reader)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(image).To(Equal("registry.example/etcdpilot:v1"))

	self.Labels = map[string]string{"pod-template-hash": "5d8f"}
	g.Expect(reader.Update(ctx, self)).To(Succeed())
	_, err = controllers.OperatorPods(ctx, reader)
	g.Expect(err).To(MatchError(ContainSubstring("has no labels for the NetworkPolicy to admit it by")))

	t.Setenv(controllers.PodNameEnv, "gone")
	_, err = controllers.OperatorPods(ctx, reader)
	g.Expect(err).To(MatchError(ContainSubstring("reading the operator's own pod etcdpilot-system/gone for its labels")))
}
