// Package restore decides, as a pure function of what the operator observed, how the start
// of a cluster restored from a backup (spec.bootstrap.restore) goes: it adjusts the action
// internal/membership planned for the first member.
package restore

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// A cluster with spec.bootstrap.restore starts from a backup: its first member's pod gets an
// init container that fetches the artifact, verifies its checksum and restores it into the
// member's data directory with the new cluster's identity; the other members then join as
// usual and copy the data from it. Only a first member that starts a new cluster (its data
// directory empty) is restored; once it holds data, nothing here applies.

// CreatesFirstMember reports whether action a creates the pod of a cluster's first member
// as a new cluster: for a restored cluster, the pod that restores the backup.
func CreatesFirstMember(a membership.Action) bool {
	return a.Kind == membership.CreateSeed || a.Kind == membership.CreatePod && a.InitialClusterState == "new"
}

// WaitsForFirstMember reports whether action a waits for the first member to start.
func WaitsForFirstMember(a membership.Action) bool {
	return a.Kind == membership.Wait && a.Reason == etcdv1alpha1.ReasonBootstrapping
}

// Observed is what the operator observed about a restored cluster's start.
type Observed struct {
	// Source describes the artifact the first member restores ("backup b (s3://...)"); empty
	// while it is not ready, and NotReady says why (the backup has not succeeded).
	Source   string
	NotReady string
	// FirstMember is the first member's name.
	FirstMember string
	// HasInit says whether the first member's pod exists with the restore init container,
	// and Init is that container's status as the kubelet reports it (nil before it does).
	HasInit bool
	Init    *corev1.ContainerStatus
}

// Plan adjusts the action planned for a restored cluster: creating the first member
// waits until the source is ready and says what it restores from; waiting for the first
// member says that it restores, and a failed restore is Blocked (Degraded/RestoreFailed)
// with the agent's words. Other actions are left as they are.
func Plan(a membership.Action, r Observed) membership.Action {
	switch {
	case CreatesFirstMember(a):
		if r.Source == "" {
			return membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonRestoreSourceNotReady, Message: r.NotReady}
		}
		a.Reason = etcdv1alpha1.ReasonRestoring
		a.Message = fmt.Sprintf("creating the first member %s, restored from %s", a.Member, r.Source)
		return a
	case WaitsForFirstMember(a) && r.HasInit:
		return progress(a, r)
	}
	return a
}

// progress reads the restore init container: done, etcd is starting (a stays);
// failed, now or in its last run, the restore is Blocked; otherwise it is restoring.
func progress(a membership.Action, r Observed) membership.Action {
	restoring := a
	restoring.Reason, restoring.Message = etcdv1alpha1.ReasonRestoring, fmt.Sprintf("the first member %s is restoring the backup", r.FirstMember)
	if r.Init == nil {
		return restoring // the kubelet has not reported the init container yet
	}
	var term *corev1.ContainerStateTerminated
	switch now, last := r.Init.State.Terminated, r.Init.LastTerminationState.Terminated; {
	case now != nil && now.ExitCode == 0:
		return a // restored; etcd is starting
	case now != nil:
		term = now
	case last != nil && last.ExitCode != 0:
		term = last
	default:
		return restoring
	}
	msg := term.Message
	if res, ok := result.Parse(term.Message); ok && res.Error != "" {
		msg = res.Error
	}
	return membership.Action{Kind: membership.Blocked, Reason: etcdv1alpha1.ReasonRestoreFailed,
		Message: fmt.Sprintf("the first member %s could not restore the backup (it retries with a growing back-off): %s", r.FirstMember, result.LastLine(msg))}
}
