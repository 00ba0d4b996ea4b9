package framework

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// What level 5 sees of a member whose data diverged, from etcd itself and from the events:
// the values the members serve from their own data, and which member the operator's events
// blame.

// EventMemberRemoved is recorded when the operator removes a member from the cluster, with
// the message "Removed member <name> (<why>)".
const EventMemberRemoved = "MemberRemoved"

// MemberRead is what one member served for a key from its own data (ReadFromMember).
type MemberRead struct {
	Value string
	Found bool
	// MemberID is the etcd member that answered, from the response's header (0 when not
	// known): a member replaced under the same name answers with a new ID.
	MemberID uint64
	Err      error
}

// CheckDivergence checks what each member of reads served for key from its own data:
// victim (none when "") the rewritten value, every other member the original one. Before the
// operator acts, this shows the divergence in etcd's own answers: the rewritten member serves
// what the others do not. Once the victim is replaced, every member must serve the original.
// victimID is the victim's etcd member ID (hexadecimal, as in the status): a read answered
// by another ID (a new member under the same name, or another member's address behind the
// name) did not reach the victim, which says nothing of the rewrite.
func CheckDivergence(key string, reads map[string]MemberRead, victim, victimID, original, rewritten string) error {
	if err := checkVictimRead(reads, victim, victimID); err != nil {
		return err
	}
	for _, m := range slices.Sorted(maps.Keys(reads)) {
		got := reads[m]
		switch {
		case got.Err != nil:
			return got.Err
		case !got.Found:
			return fmt.Errorf("member %s serves no key %s from its own data", m, key)
		case m == victim && got.Value == original:
			return fmt.Errorf("member %s, whose data the test rewrote, serves %s's original value from its own data: "+
				"the rewrite does not show in what etcd serves, so nothing diverged", m, key)
		case m == victim && got.Value != rewritten:
			return fmt.Errorf("member %s, whose data the test rewrote, serves %q for %s, neither the original %q nor the rewritten %q",
				m, got.Value, key, original, rewritten)
		case m != victim && got.Value == rewritten:
			return fmt.Errorf("member %s serves the rewritten value of %s from its own data, not the majority's %q", m, key, original)
		case m != victim && got.Value != original:
			return fmt.Errorf("member %s serves %q for %s from its own data, not the original %q", m, got.Value, key, original)
		}
	}
	return nil
}

// checkVictimRead checks that the victim (none when "") was read, and from the member
// whose data was rewritten (CheckDivergence).
func checkVictimRead(reads map[string]MemberRead, victim, victimID string) error {
	got, ok := reads[victim]
	switch {
	case victim == "":
	case !ok:
		return fmt.Errorf("member %s, whose data the test rewrote, was not read", victim)
	case got.Err == nil && got.MemberID != 0 && strconv.FormatUint(got.MemberID, 16) != victimID:
		return fmt.Errorf("the read from member %s was answered by etcd member %x, not %s whose data the test rewrote "+
			"(the name leads to another member: the victim replaced, or a stale name record), so it cannot show the divergence",
			victim, got.MemberID, victimID)
	}
	return nil
}

// DescribeReads says, for the log, what each member of reads served: the original value,
// the rewritten one, another, none, or why it could not be read.
func DescribeReads(reads map[string]MemberRead, original, rewritten string) string {
	parts := make([]string, 0, len(reads))
	for _, m := range slices.Sorted(maps.Keys(reads)) {
		got, what := reads[m], ""
		switch {
		case got.Err != nil:
			what = "not read: " + got.Err.Error()
		case !got.Found:
			what = "no such key"
		case got.Value == original:
			what = "the original value"
		case got.Value == rewritten:
			what = "the rewritten value"
		default:
			what = fmt.Sprintf("%q", got.Value)
		}
		parts = append(parts, m+" "+what)
	}
	return strings.Join(parts, ", ")
}

// FirstNamed is the one of members that message names first, or "" when it names none. The
// operator's messages about a member name it first: "Consistency check at revision 7:
// <member>'s hash ... differs from ... of <the others>", "Removed member <member> (...)".
// A name counts only as a whole word, so that c-1 does not match in c-10.
func FirstNamed(message string, members []string) string {
	first, pos := "", len(message)
	for _, m := range members {
		for from := 0; ; {
			i := strings.Index(message[from:], m)
			if i < 0 || from+i >= pos {
				break
			}
			if i += from; wordAt(message, i, len(m)) {
				first, pos = m, i
				break
			}
			from = i + 1
		}
	}
	return first
}

// wordAt says whether message[i:i+n] stands alone: no letter, digit or dash of a name
// touches it.
func wordAt(message string, i, n int) bool {
	namePart := func(b byte) bool {
		return b == '-' || b >= 'a' && b <= 'z' || b >= '0' && b <= '9'
	}
	return (i == 0 || !namePart(message[i-1])) && (i+n == len(message) || !namePart(message[i+n]))
}

// CheckBlame checks the events about a cluster whose member victim's data the test rewrote:
// a MemberCorrupt event must name victim first, and no MemberCorrupt or MemberRemoved event
// may name another of members first: the operator found and replaced that member, not
// another.
func CheckBlame(events []corev1.Event, members []string, victim string) error {
	blamed := false
	for _, e := range events {
		if e.Reason != etcdv1alpha1.ReasonMemberCorrupt && e.Reason != EventMemberRemoved {
			continue
		}
		switch m := FirstNamed(e.Message, members); {
		case m == victim:
			blamed = blamed || e.Reason == etcdv1alpha1.ReasonMemberCorrupt
		case m != "":
			return fmt.Errorf("a %s event names member %s, not %s, whose data the test rewrote: %q", e.Reason, m, victim, e.Message)
		}
	}
	if !blamed {
		return fmt.Errorf("no %s event names member %s, whose data the test rewrote (events: %s)",
			etcdv1alpha1.ReasonMemberCorrupt, victim, SummarizeReasons(events, etcdv1alpha1.ReasonMemberCorrupt))
	}
	return nil
}

// SummarizeReasons quotes the messages of the events with reason, "none" without any.
func SummarizeReasons(events []corev1.Event, reason string) string {
	var msgs []string
	for _, e := range events {
		if e.Reason == reason {
			msgs = append(msgs, fmt.Sprintf("%s %q", e.Reason, e.Message))
		}
	}
	return orNone(msgs)
}
