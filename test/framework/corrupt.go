package framework

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/corrupt"
)

// CorruptCommand is the scorecard image's command and subcommand that rewrite bytes of a
// member's database file (internal/corrupt).
var CorruptCommand = []string{"/usr/local/bin/etcdpilot-scorecard-tests", "corrupt-member-data"}

// CorruptMember makes member's data diverge while it runs: a pod of the test's own image,
// on the member's claim and node and as its user, rewrites every occurrence of find in the
// member's database file with replace. It waits for the pod to end, deletes it, and returns
// what the pod said it did; a pod that found nothing to rewrite fails.
func (e *Env) CorruptMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member, find, replace string) (string, error) {
	image, err := e.ownImage(ctx)
	if err != nil {
		return "", err
	}
	m := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: member}, m); err != nil {
		return "", fmt.Errorf("reading the pod of member %s: %w", member, err)
	}
	pod := corrupt.Pod(member+"-rewrite", m, cluster.For(c).PVCName(member), image, CorruptCommand, find, replace)
	pod.Labels[PartOfLabel] = PartOfValue
	if err := e.Client.Create(ctx, pod); err != nil {
		return "", fmt.Errorf("creating Pod %s: %w", pod.Name, err)
	}
	e.track(pod)
	done := func(p *corev1.Pod) (bool, string) {
		return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed, "phase " + string(p.Status.Phase)
	}
	if err := waitFor(ctx, e, "Pod", pod, "pod "+pod.Name+" to end", done); err != nil {
		return "", err
	}
	msg := terminationMessage(pod)
	if err := e.deletePod(ctx, pod); err != nil {
		return "", err
	}
	if pod.Status.Phase != corev1.PodSucceeded {
		return "", fmt.Errorf("pod %s failed: %s", pod.Name, msg)
	}
	return msg, nil
}

// ownImage is e.Image, or else the image of the test's own pod (its name is the host
// name).
func (e *Env) ownImage(ctx context.Context) (string, error) {
	if e.Image != "" {
		return e.Image, nil
	}
	name, err := os.Hostname()
	if err != nil {
		return "", err
	}
	self := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: e.Namespace, Name: name}, self); err != nil {
		return "", fmt.Errorf("reading the test's own pod %s, for its image: %w", name, err)
	}
	if len(self.Spec.Containers) == 0 {
		return "", fmt.Errorf("the test's own pod %s has no container", name)
	}
	return self.Spec.Containers[0].Image, nil
}

func terminationMessage(p *corev1.Pod) string {
	for _, s := range p.Status.ContainerStatuses {
		if t := s.State.Terminated; t != nil {
			return t.Message
		}
	}
	return "(no termination message)"
}

// deletePod deletes pod and waits until it is gone.
func (e *Env) deletePod(ctx context.Context, pod *corev1.Pod) error {
	start := time.Now()
	if err := e.Client.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	if err := e.waitGone(ctx, pod); err != nil {
		return fmt.Errorf("pod %s is not gone: %w", pod.Name, err)
	}
	e.Report.Logf("deleted Pod %s in %s", pod.Name, time.Since(start).Round(time.Millisecond))
	return nil
}
