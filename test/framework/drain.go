package framework

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cordon marks node unschedulable, or schedulable again, as kubectl cordon and uncordon do.
func (e *Env) Cordon(ctx context.Context, node string, cordoned bool) error {
	n := &corev1.Node{}
	if err := e.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
		return fmt.Errorf("reading Node %s: %w", node, err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Spec.Unschedulable = cordoned
	if err := e.Client.Patch(ctx, n, patch); err != nil {
		return fmt.Errorf("setting Node %s unschedulable=%t: %w", node, cordoned, err)
	}
	return nil
}

// Evict asks the API server to evict pod name of namespace, as kubectl drain does: the pod's
// PodDisruptionBudgets decide, and a refusal is a 429 (apierrors.IsTooManyRequests).
func (e *Env) Evict(ctx context.Context, namespace, name string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	return e.Client.SubResource("eviction").Create(ctx, pod, &policyv1.Eviction{ObjectMeta: pod.ObjectMeta})
}

// PodUID is the UID of pod name of namespace: a pod made again under the same name has a new
// one.
func (e *Env) PodUID(ctx context.Context, namespace, name string) (types.UID, error) {
	pod := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, pod); err != nil {
		return "", fmt.Errorf("reading Pod %s: %w", name, err)
	}
	return pod.UID, nil
}

// SchedulableNodes lists, sorted, the nodes that are Ready and not cordoned: those a drain
// can move pods to.
func (e *Env) SchedulableNodes(ctx context.Context) ([]string, error) {
	var nodes corev1.NodeList
	if err := e.Client.List(ctx, &nodes); err != nil {
		return nil, fmt.Errorf("listing Nodes: %w", err)
	}
	var out []string
	for _, n := range nodes.Items {
		if n.Spec.Unschedulable {
			continue
		}
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				out = append(out, n.Name)
			}
		}
	}
	slices.Sort(out)
	return out, nil
}
