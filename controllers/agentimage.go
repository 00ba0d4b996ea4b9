package controllers

import (
	"context"
	"fmt"
	"maps"
	"os"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// Environment of the operator's pod that tells it its own image: backups and restores run
// the operator's binary in their own pods (the agent), so they need the very image the
// operator runs, whether `make deploy`, OLM or a mirror put it there.
const (
	// AgentImageEnv names the agent's image explicitly (for `make run` outside a cluster).
	AgentImageEnv = "ETCDPILOT_AGENT_IMAGE"
	// PodNameEnv and PodNamespaceEnv are the operator pod's name and namespace (downward
	// API); its container named ManagerContainer gives the image.
	PodNameEnv       = "POD_NAME"
	PodNamespaceEnv  = "POD_NAMESPACE"
	ManagerContainer = "manager"
)

// AgentImage returns the image the agent runs: AgentImageEnv when set, otherwise the image
// of the manager container of the operator's own pod. It returns "" outside a pod.
func AgentImage(ctx context.Context, reader client.Reader) (string, error) {
	if img := os.Getenv(AgentImageEnv); img != "" {
		return img, nil
	}
	pod, err := ownPod(ctx, reader, "its image")
	if pod == nil || err != nil {
		return "", err
	}
	for _, c := range pod.Spec.Containers {
		if c.Name == ManagerContainer {
			return c.Image, nil
		}
	}
	return "", fmt.Errorf("the operator's pod %s/%s has no container %q", pod.Namespace, pod.Name, ManagerContainer)
}

// ownPod reads the operator's own pod (PodNameEnv, PodNamespaceEnv), for what; nil with no
// error outside a pod.
func ownPod(ctx context.Context, reader client.Reader, what string) (*corev1.Pod, error) {
	name, ns := os.Getenv(PodNameEnv), os.Getenv(PodNamespaceEnv)
	if name == "" || ns == "" {
		return nil, nil
	}
	pod := &corev1.Pod{}
	if err := reader.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, pod); err != nil {
		return nil, fmt.Errorf("reading the operator's own pod %s/%s for %s: %w", ns, name, what, err)
	}
	return pod, nil
}

// podTemplateHashLabel is the label a ReplicaSet adds to its pods: it changes with every
// rollout of the operator, so the NetworkPolicy does not select on it.
const podTemplateHashLabel = "pod-template-hash"

// OperatorPods returns who the operator's pods are (their namespace and labels), which the
// members' NetworkPolicy admits to the client and metrics ports: read from the operator's
// own pod, so that whatever labels its installer (kustomize, OLM) gave it are the ones
// admitted. Outside a pod it returns the zero value.
func OperatorPods(ctx context.Context, reader client.Reader) (resources.Operator, error) {
	pod, err := ownPod(ctx, reader, "its labels")
	if pod == nil || err != nil {
		return resources.Operator{}, err
	}
	labels := maps.Clone(pod.Labels)
	delete(labels, podTemplateHashLabel)
	if len(labels) == 0 {
		return resources.Operator{}, fmt.Errorf("the operator's pod %s/%s has no labels for the NetworkPolicy to admit it by", pod.Namespace, pod.Name)
	}
	return resources.Operator{Namespace: pod.Namespace, Labels: labels}, nil
}
