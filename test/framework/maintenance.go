package framework

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// The reasons of the events the operator records about its maintenance
// (docs/maintenance.md).
const (
	// EventMemberDefragmented is recorded for every member the operator defragments, with
	// the message "Defragmented member <name>: its database file went from ... to ...",
	// followed by LeaderDefragmented when the member was the leader at the time.
	EventMemberDefragmented = "MemberDefragmented"
	// LeaderDefragmented ends the EventMemberDefragmented message of a member that was the
	// raft leader when the operator defragmented it.
	LeaderDefragmented = "; it was the leader"
	// EventNoSpaceDisarmed is recorded when the operator disarms the NOSPACE alarm.
	EventNoSpaceDisarmed = "NoSpaceDisarmed"
	// EventNoSpaceRecovered is recorded once the alarm is gone and the cluster accepts
	// writes again.
	EventNoSpaceRecovered = "NoSpaceRecovered"
)

// IsNoSpace reports whether err is etcd refusing a write because a member's database
// reached its quota (the NOSPACE alarm). clientv3 returns etcd's error value; a raw gRPC
// status, or an error that lost both on its way, still says "database space exceeded".
func IsNoSpace(err error) bool {
	return err != nil && (errors.Is(err, rpctypes.ErrNoSpace) || errors.Is(err, rpctypes.ErrGRPCNoSpace) ||
		strings.Contains(err.Error(), rpctypes.ErrorDesc(rpctypes.ErrGRPCNoSpace)))
}

// Defragmented is true when every one of the cluster's spec.size members records a
// defragmentation by the operator (status.members[].lastDefragmentation) that made its
// database file at least shrink bytes smaller. The state names, for every member, its
// file and what its record says.
func Defragmented(shrink int64) Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		done := len(c.Status.Members) == int(c.Spec.Size)
		parts := make([]string, 0, len(c.Status.Members))
		for _, m := range c.Status.Members {
			d := m.LastDefragmentation
			switch {
			case d == nil:
				done = false
				parts = append(parts, fmt.Sprintf("%s not defragmented (file %s, %d%% free)", m.Name, MiB(m.DBSize), m.FragmentationPercent))
			case d.SizeBefore-d.SizeAfter < shrink:
				done = false
				parts = append(parts, fmt.Sprintf("%s defragmented from %s to %s, less than %s smaller", m.Name, MiB(d.SizeBefore), MiB(d.SizeAfter), MiB(shrink)))
			default:
				parts = append(parts, fmt.Sprintf("%s defragmented from %s to %s", m.Name, MiB(d.SizeBefore), MiB(d.SizeAfter)))
			}
		}
		if len(parts) == 0 {
			return false, "no members in status yet"
		}
		return done, strings.Join(parts, "; ")
	}
}

// NoAlarms is true when no member reports an alarm (status.members[].alarms).
func NoAlarms() Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		var alarmed []string
		for _, m := range c.Status.Members {
			if len(m.Alarms) > 0 {
				alarmed = append(alarmed, fmt.Sprintf("%s %s", m.Name, strings.Join(m.Alarms, "+")))
			}
		}
		if len(alarmed) > 0 {
			return false, Describe(c) + ", alarms on " + strings.Join(alarmed, ", ")
		}
		return true, Describe(c)
	}
}

// DefragmentationOrder names the members of members that MemberDefragmented events
// describe, in the order of the events (the oldest first) and each once, at its first
// defragmentation. Events carry microseconds; the status only seconds.
func DefragmentationOrder(events []corev1.Event, members []string) []string {
	var defrags []corev1.Event
	for _, e := range events {
		if e.Reason == EventMemberDefragmented {
			defrags = append(defrags, e)
		}
	}
	sort.SliceStable(defrags, func(i, j int) bool { return eventTime(defrags[i]).Before(eventTime(defrags[j])) })
	var order []string
	for _, e := range defrags {
		if m := defragmentedMember(e, members); m != "" && !slices.Contains(order, m) {
			order = append(order, m)
		}
	}
	return order
}

// defragmentedMember is the one of members a MemberDefragmented event is about, or "".
func defragmentedMember(e corev1.Event, members []string) string {
	for _, m := range members {
		// "Defragmented member <name>: ...": the colon keeps c-1 from matching c-10.
		if strings.Contains(e.Message, "member "+m+":") {
			return m
		}
	}
	return ""
}

// CheckDefragmentationOrder checks the MemberDefragmented events about c: one for every
// member in c's status, and the one of the member that was the leader when it was
// defragmented last, since a defragmenting leader stalls every write. The leader is the one
// the events name (LeaderDefragmented), not the one c's status names now: defragmenting the
// leader may well move leadership. It returns the order the events tell.
func CheckDefragmentationOrder(c *etcdv1alpha1.EtcdCluster, events []corev1.Event) ([]string, error) {
	var members []string
	for _, m := range c.Status.Members {
		members = append(members, m.Name)
	}
	order := DefragmentationOrder(events, members)
	leader := ""
	for _, e := range events {
		if e.Reason == EventMemberDefragmented && strings.HasSuffix(e.Message, LeaderDefragmented) {
			if m := defragmentedMember(e, members); m != "" {
				leader = m
			}
		}
	}
	var without []string
	for _, m := range members {
		if !slices.Contains(order, m) {
			without = append(without, m)
		}
	}
	switch {
	case len(without) > 0:
		return order, fmt.Errorf("no %s event about member %s (events of members %s)",
			EventMemberDefragmented, strings.Join(without, ", "), orNone(order))
	case leader == "":
		return order, fmt.Errorf("no %s event about EtcdCluster %s says its member was the leader (%q)", EventMemberDefragmented, c.Name, LeaderDefragmented)
	case order[len(order)-1] != leader:
		return order, fmt.Errorf("the leader %s was not defragmented last: the events tell the order %s", leader, strings.Join(order, ", "))
	}
	return order, nil
}

// MissingReasons returns those of reasons that no event has, in the order given.
func MissingReasons(events []corev1.Event, reasons ...string) []string {
	var missing []string
	for _, reason := range reasons {
		if !slices.ContainsFunc(events, func(e corev1.Event) bool { return e.Reason == reason }) {
			missing = append(missing, reason)
		}
	}
	return missing
}

// eventTime is when e happened: its eventTime (events.k8s.io, in microseconds), else its
// last or first timestamp (core events, in seconds), else its creation.
func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.FirstTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return e.CreationTimestamp.Time
}

// MiB shows a size in bytes as MiB with one decimal, as the operator's events do.
func MiB(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

func orNone(ss []string) string {
	if len(ss) == 0 {
		return "none"
	}
	return strings.Join(ss, ", ")
}
