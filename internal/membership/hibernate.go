package membership

import (
	"fmt"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// hibernate decides for a cluster whose spec asks it to hibernate (Observed.Hibernate):
// the final backup first, while every member still runs, when a destination is set; then
// the members stop one at a time, each only once the last has stopped, followers before
// the leader, so that no stop forces an election among members about to stop. Once no
// member runs there is nothing left to do: the claims hold the data, and waking is the
// planner's ordinary path for a cluster none of whose members answers.
func (o Observed) hibernate() Action {
	var running, stopping []string
	for _, name := range o.PodNames() {
		if o.Pods[name].Terminating {
			stopping = append(stopping, name)
		} else {
			running = append(running, name)
		}
	}
	if len(stopping) > 0 {
		return Action{Kind: Wait, Member: stopping[0], Reason: etcdv1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernating: waiting for %s to stop", strings.Join(stopping, ", "))}
	}
	if len(running) == 0 {
		return Action{Kind: None, Reason: etcdv1alpha1.ReasonHibernated,
			Message: "every member is stopped; their claims keep the data. Set spec.hibernation.enabled to false to wake the cluster"}
	}
	if a, ok := o.finalBackup(running); ok {
		return a
	}
	next := o.nextToStop(running)
	return Action{Kind: StopMember, Member: next, Reason: etcdv1alpha1.ReasonHibernating,
		Message: fmt.Sprintf("hibernating: stopping member %s (%d of %d members still run)", next, len(running), len(o.knownMembers()))}
}

// finalBackup holds the next stop until the final backup (Observed.FinalBackup) succeeded,
// while a quorum of the members still runs: a member missing before the hibernation does not
// excuse the backup, and a spec change in the middle of the stops (a new generation, so a
// new backup's name) takes another of the members still running. Once fewer than a quorum
// run, no backup can succeed: the backup was taken before the stops that got there, and
// stopping the rest is safe.
func (o Observed) finalBackup(running []string) (Action, bool) {
	b := o.FinalBackup
	if b == nil || b.State == BackupSucceeded || len(running) <= len(o.knownMembers())/2 {
		return Action{}, false
	}
	switch b.State {
	case BackupMissing:
		return Action{Kind: CreateBackup, Backup: b.Name, Reason: etcdv1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernating: taking the final backup %s before the members stop", b.Name)}, true
	case BackupRunning:
		return Action{Kind: Wait, Backup: b.Name, Reason: etcdv1alpha1.ReasonHibernating,
			Message: fmt.Sprintf("hibernating: waiting for the final backup %s before the members stop", b.Name)}, true
	}
	return Action{Kind: Blocked, Backup: b.Name, Reason: etcdv1alpha1.ReasonHibernationBlocked,
		Message: fmt.Sprintf("the final backup %s failed (%s); no more members stop until one succeeds. Delete EtcdBackup %s to take it again, or remove spec.hibernation.backupDestination to hibernate without it",
			b.Name, b.Message, b.Name)}, true
}

// nextToStop picks, among the members whose pods run (in member order), the one to stop
// next: the follower of the highest ordinal, and the leader only when it is the last.
func (o Observed) nextToStop(running []string) string {
	leader := ""
	for _, m := range o.Members {
		if m.Leader {
			leader = m.Name
		}
	}
	for i := len(running) - 1; i >= 0; i-- {
		if running[i] != leader {
			return running[i]
		}
	}
	return running[0]
}
