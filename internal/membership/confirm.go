package membership

import "fmt"

// Confirming a disruption. A pass plans from what it observed when it began; a member pod
// deleted or an etcd process that died a moment later (a node drain, a crash, a user) is
// not in that observation, and an operator that restarted or removed another voter then
// would take the quorum away itself. So before an action that takes a voter away, for a
// while or for good, the controller looks again: at the pods, uncached, and at the voters'
// health. The action goes ahead only if every other voter the plan saw healthy still is;
// otherwise the pass does nothing and the next one decides from what it then sees.

// Disruptive says whether a takes a voter away: a restart, or a removal.
func Disruptive(a Action) bool {
	return a.Kind == RestartMember || a.Kind == RemoveMember
}

// Recheck is the second look at a member, just before a disruptive action.
type Recheck struct {
	// HasPod says whether the member's pod exists; Pod is what it is then.
	HasPod bool
	Pod    Pod
	// Healthy: the member answered its status call without errors.
	Healthy bool
}

// ConfirmDisruption returns a when it may go ahead: it is not disruptive, or every voter
// other than a.Member that the observation saw healthy still has its pod, not being
// deleted, and still answers healthy (now, by member name). Otherwise it returns a Wait
// with a's reason that says which voter changed.
func (o Observed) ConfirmDisruption(a Action, now map[string]Recheck) Action {
	if !Disruptive(a) {
		return a
	}
	for _, m := range o.Members {
		if m.Name == a.Member || m.Learner || !m.Healthy {
			continue
		}
		var changed string
		switch r := now[m.Name]; {
		case !r.HasPod:
			changed = "its pod is gone"
		case r.Pod.Terminating:
			changed = "its pod is being deleted"
		case !r.Healthy:
			changed = "it no longer answers healthy"
		default:
			continue
		}
		return Action{Kind: Wait, Member: a.Member, Reason: a.Reason,
			Message: fmt.Sprintf("held back (%s): member %s was healthy when this pass began, but %s; deciding again", a.Message, m.Name, changed)}
	}
	return a
}
