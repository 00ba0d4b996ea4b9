package framework

import (
	"context"
	"fmt"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// NodeCtl runs ctl, the command that stops and starts a node of the local cluster (make sets
// NODE_CTL to hack/local-cluster.sh with the cluster's environment), with action
// (node-stop or node-start) and node.
func NodeCtl(ctx context.Context, ctl, action, node string) error {
	out, err := exec.CommandContext(ctx, "sh", "-c", ctl+" "+action+" "+node).CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %w: %s", action, node, err, out)
	}
	return nil
}

// Pods names pods: those of Namespace with Labels (all of the namespace without).
type Pods struct {
	Namespace string
	Labels    map[string]string
}

// RecoveryNeeds are the pods the replacement of a lost member needs running: the operator's,
// in operatorNamespace, and the local cluster's volume provisioner (by its label: the
// short-lived helper pods it runs in its namespace go to the node of each volume it makes or
// deletes).
func RecoveryNeeds(operatorNamespace string) []Pods {
	return []Pods{
		{Namespace: operatorNamespace, Labels: map[string]string{"control-plane": "controller-manager", "app.kubernetes.io/name": "etcdpilot"}},
		{Namespace: "local-path-storage", Labels: map[string]string{"app": "local-path-provisioner"}},
	}
}

// NodesRunning are the nodes that run one of the pods named.
func NodesRunning(ctx context.Context, c client.Client, named ...Pods) (map[string]bool, error) {
	out := map[string]bool{}
	for _, n := range named {
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(n.Namespace), client.MatchingLabels(n.Labels)); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" {
				out[p.Spec.NodeName] = true
			}
		}
	}
	return out, nil
}

// MemberToLose is the last member, in status order, placed on a node not in keep: the one a
// node-loss test stops the node of without stopping what the recovery needs (the operator,
// the volume provisioner). ok is false when every member shares a node with them.
func MemberToLose(members []etcdv1alpha1.MemberStatus, keep map[string]bool) (m etcdv1alpha1.MemberStatus, ok bool) {
	for _, candidate := range members {
		if candidate.Node != "" && !keep[candidate.Node] {
			m, ok = candidate, true
		}
	}
	return m, ok
}

// NodeNotReadySince is when node's Ready condition turned False or Unknown, as the API
// server has it; ok is false while it is True or absent.
func NodeNotReadySince(node *corev1.Node) (since time.Time, ok bool) {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
			return c.LastTransitionTime.Time, true
		}
	}
	return time.Time{}, false
}
