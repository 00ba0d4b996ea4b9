package controllers

import (
	"bytes"
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// PodExec runs command in a container of a pod and returns what it printed.
type PodExec func(ctx context.Context, namespace, pod, container string, command []string) (stdout, stderr string, err error)

// NewPodExec returns the PodExec of a real cluster: the pods/exec subresource, over
// WebSockets, or SPDY when the API server does not upgrade to WebSockets.
func NewPodExec(cfg *rest.Config) (PodExec, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, namespace, pod, container string, command []string) (string, string, error) {
		req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
			VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
		ws, err := remotecommand.NewWebSocketExecutor(cfg, "GET", req.URL().String())
		if err != nil {
			return "", "", err
		}
		spdy, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
		if err != nil {
			return "", "", err
		}
		exec, err := remotecommand.NewFallbackExecutor(ws, spdy, func(err error) bool {
			return httpstream.IsUpgradeFailure(err) || httpstream.IsHTTPSProxyError(err)
		})
		if err != nil {
			return "", "", err
		}
		var stdout, stderr bytes.Buffer
		if err := exec.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
			return stdout.String(), stderr.String(), fmt.Errorf("exec %v in %s/%s: %w", command, namespace, pod, err)
		}
		return stdout.String(), stderr.String(), nil
	}, nil
}
