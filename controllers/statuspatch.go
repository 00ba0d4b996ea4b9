package controllers

import (
	"context"
	"fmt"
	"time"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdpilot/etcdpilot/internal/status"
)

// patchStatus is the one way the three kinds write their status: obj's status subresource
// is patched to desired when it differs from *current (obj's own status field), once per
// reconcile. It returns the status the patch replaced and whether it patched, so that the
// caller derives its events from the transitions the patch made, after the patch succeeded:
// each transition is reported once, and never for a status that was not stored.
//
// The patch carries obj's resourceVersion: a pass that decided from an object the cache had
// not yet updated with the previous pass's status gets a conflict and stores nothing, and
// the next pass decides again from the newer object. Without it, such a pass once replaced
// a quorum-loss recovery under way (Recovering, from a backup) by the record of the loss
// before it (AwaitingApproval), and the cluster grew back with no recovery recorded.
func patchStatus[S any](ctx context.Context, c client.Client, obj client.Object, current *S, desired S) (old S, changed bool, err error) {
	old = *current
	if apiequality.Semantic.DeepEqual(old, desired) {
		return old, false, nil
	}
	patch := client.MergeFromWithOptions(obj.DeepCopyObject().(client.Object), client.MergeFromWithOptimisticLock{})
	*current = desired
	if err := c.Status().Patch(ctx, obj, patch); err != nil {
		*current = old
		return old, false, fmt.Errorf("patching status: %w", err)
	}
	return old, true, nil
}

// emit records events about obj.
func emit(recorder events.EventRecorder, obj runtime.Object, evs []status.Event) {
	if recorder == nil {
		return
	}
	for _, e := range evs {
		recorder.Eventf(obj, nil, e.Type, e.Reason, e.Action, "%s", e.Message)
	}
}

// eventf records one event about obj, when the reconciler has a recorder: what an action
// did, told at once (a status transition's events go through emit, after the patch).
func eventf(recorder events.EventRecorder, obj runtime.Object, eventType, reason, action, note string, args ...any) {
	if recorder != nil {
		recorder.Eventf(obj, nil, eventType, reason, action, note, args...)
	}
}

// nowOf is the time by clock, the reconcilers' Now, or the wall clock's when it is nil.
func nowOf(clock func() time.Time) time.Time {
	if clock != nil {
		return clock()
	}
	return time.Now()
}
