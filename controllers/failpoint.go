package controllers

import (
	"context"
	"os"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Crash tests. With EtcdClusterReconciler.Failpoints on (ETCDPILOT_TEST_FAILPOINTS=true on
// the operator; the e2e deploy sets it, a release never does), an EtcdCluster annotated
//
//	test.etcdpilot.io/crash-after: AddLearner   (or RemoveMember, RestartMember)
//
// makes the operator exit right after that membership change succeeded in etcd, before the
// pod and claim work that follows it: the worst moment to die. RestartMember exits right
// after an upgrade's or a rollout's step deleted a member's pod, before the status says so.
// The annotation is removed first, so the crash happens once. The restarted operator must
// finish or undo the step.
const (
	// AnnotationCrashAfter names the membership change after which the operator exits.
	AnnotationCrashAfter = "test.etcdpilot.io/crash-after"
	// FailpointsEnv turns the failpoints on.
	FailpointsEnv = "ETCDPILOT_TEST_FAILPOINTS"
	// failpointExitCode is the operator's exit code at a failpoint.
	failpointExitCode = 86
)

// AnnotationBrokenImageVersion names an etcd version whose member pods, with failpoints on,
// run an image that does not exist (upgrade rollback tests).
const AnnotationBrokenImageVersion = "test.etcdpilot.io/broken-image-version"

// brokenImage returns the broken image for pods of version when the cluster asks for it.
func (r *EtcdClusterReconciler) brokenImage(c *etcdv1alpha1.EtcdCluster, version string) string {
	if !r.Failpoints || version == "" || c.Annotations[AnnotationBrokenImageVersion] != version {
		return ""
	}
	image := r.EtcdImages.For(version)
	return versions.Image(image[:strings.LastIndex(image, ":")], "0.0.0-broken")
}

// crashAfter exits the process when failpoints are on and c asks for a crash after step.
func (r *EtcdClusterReconciler) crashAfter(ctx context.Context, c *etcdv1alpha1.EtcdCluster, step membership.Kind) {
	if !r.Failpoints || c.Annotations[AnnotationCrashAfter] != string(step) {
		return
	}
	logger := log.FromContext(ctx)
	patch := client.MergeFrom(c.DeepCopy())
	delete(c.Annotations, AnnotationCrashAfter)
	if err := r.Client.Patch(ctx, c, patch); err != nil {
		logger.Error(err, "Failpoint: not crashing, the annotation could not be removed", "step", step)
		return
	}
	logger.Info("Failpoint: exiting right after the step", "step", step)
	exit := r.Exit
	if exit == nil {
		exit = os.Exit
	}
	exit(failpointExitCode)
}
