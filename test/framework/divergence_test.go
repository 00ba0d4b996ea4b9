package framework_test

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/etcdpilot/etcdpilot/test/framework"
)

func TestCheckDivergence(t *testing.T) {
	const key, original, rewritten = "/canary", "etcdpilot-canary-abc", "ETCDPILOT-CANARY-ABC"
	served := func(v string) framework.MemberRead { return framework.MemberRead{Value: v, Found: true} }
	diverged := func() map[string]framework.MemberRead {
		return map[string]framework.MemberRead{"c-0": served(original), "c-1": served(original), "c-2": served(rewritten)}
	}
	cases := []struct {
		name   string
		reads  map[string]framework.MemberRead
		victim string
		want   string
	}{
		{name: "the rewritten member serves its own value, the others the majority's", reads: diverged(), victim: "c-2"},
		{name: "after the replacement, every member the original", victim: "",
			reads: map[string]framework.MemberRead{"c-0": served(original), "c-1": served(original), "c-2": served(original)}},
		{name: "the rewrite does not show", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(original), "c-1": served(original), "c-2": served(original)},
			want: "member c-2, whose data the test rewrote, serves /canary's original value from its own data: " +
				"the rewrite does not show in what etcd serves, so nothing diverged"},
		{name: "another member serves the rewritten value", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(rewritten), "c-1": served(original), "c-2": served(rewritten)},
			want:  `member c-0 serves the rewritten value of /canary from its own data, not the majority's "etcdpilot-canary-abc"`},
		{name: "after the replacement, a member still serves the rewritten value", victim: "",
			reads: diverged(),
			want:  `member c-2 serves the rewritten value of /canary from its own data, not the majority's "etcdpilot-canary-abc"`},
		{name: "the rewritten member serves something else", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(original), "c-2": served("x")},
			want:  `member c-2, whose data the test rewrote, serves "x" for /canary, neither the original "etcdpilot-canary-abc" nor the rewritten "ETCDPILOT-CANARY-ABC"`},
		{name: "another member serves something else", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-1": served("x"), "c-2": served(rewritten)},
			want:  `member c-1 serves "x" for /canary from its own data, not the original "etcdpilot-canary-abc"`},
		{name: "a member without the key", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": {}, "c-2": served(rewritten)},
			want:  "member c-0 serves no key /canary from its own data"},
		{name: "a member that cannot be read", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": {Err: errors.New("reading /canary from member c-0 alone: context deadline exceeded")}, "c-2": served(rewritten)},
			want:  "reading /canary from member c-0 alone: context deadline exceeded"},
		{name: "the rewrite shows, read from the member whose data was rewritten", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(original), "c-2": {Value: rewritten, Found: true, MemberID: 0xabc}}},
		{name: "the read of the rewritten member answered by another member", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(original), "c-2": {Value: original, Found: true, MemberID: 0xdef}},
			want: "the read from member c-2 was answered by etcd member def, not abc whose data the test rewrote " +
				"(the name leads to another member: the victim replaced, or a stale name record), so it cannot show the divergence"},
		{name: "the rewritten member not read", victim: "c-2",
			reads: map[string]framework.MemberRead{"c-0": served(original)},
			want:  "member c-2, whose data the test rewrote, was not read"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			victimID := ""
			if tc.victim != "" {
				victimID = "abc"
			}
			err := framework.CheckDivergence(key, tc.reads, tc.victim, victimID, original, rewritten)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.want))
		})
	}
}

func TestDescribeReads(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.DescribeReads(map[string]framework.MemberRead{
		"c-2": {Value: "B", Found: true}, "c-0": {Value: "a", Found: true}, "c-1": {Err: errors.New("timed out")},
		"c-3": {}, "c-4": {Value: "x", Found: true},
	}, "a", "B")).To(Equal(`c-0 the original value, c-1 not read: timed out, c-2 the rewritten value, c-3 no such key, c-4 "x"`))
}

func TestFirstNamed(t *testing.T) {
	g := NewWithT(t)
	members := []string{"c-1", "c-2", "c-10"}
	g.Expect(framework.FirstNamed("Consistency check at revision 7: c-2's hash 0badbeef differs from 600dbeef of c-1, c-10 at revision 7", members)).To(Equal("c-2"))
	g.Expect(framework.FirstNamed("Removed member c-10 (replacing member c-10: its data differs from the majority's)", members)).To(Equal("c-10"),
		"c-1 does not match inside c-10")
	g.Expect(framework.FirstNamed("Removed member xc-1 (abc-2)", members)).To(BeEmpty(), "nor inside a longer name")
	g.Expect(framework.FirstNamed("c-1", members)).To(Equal("c-1"))
	g.Expect(framework.FirstNamed("no member", members)).To(BeEmpty())
}

func TestCheckBlame(t *testing.T) {
	members := []string{"c-0", "c-1", "c-2"}
	event := func(reason, msg string) corev1.Event { return corev1.Event{Reason: reason, Message: msg} }
	found := event("MemberCorrupt", "Consistency check at revision 7: c-2's hash 0badbeef differs from 600dbeef of c-0, c-1 at revision 7")
	cases := []struct {
		name   string
		events []corev1.Event
		want   string
	}{
		{name: "the check and the removal name the rewritten member", events: []corev1.Event{
			event("MemberAdded", "Added member c-0 as a learner"), found,
			event("MemberRemoved", "Removed member c-2 (replacing member c-2: its data differs from the majority's: c-2's hash ...)"),
		}},
		{name: "the check blames another", events: []corev1.Event{
			event("MemberCorrupt", "Consistency check at revision 7: c-0's hash 0badbeef differs from 600dbeef of c-1, c-2 at revision 7"),
		}, want: `a MemberCorrupt event names member c-0, not c-2, whose data the test rewrote: ` +
			`"Consistency check at revision 7: c-0's hash 0badbeef differs from 600dbeef of c-1, c-2 at revision 7"`},
		{name: "another member removed", events: []corev1.Event{found, event("MemberRemoved", "Removed member c-1 (replacing member c-1: ...)")},
			want: `a MemberRemoved event names member c-1, not c-2, whose data the test rewrote: "Removed member c-1 (replacing member c-1: ...)"`},
		{name: "no MemberCorrupt event", events: []corev1.Event{event("MemberRemoved", "Removed member c-2 (...)")},
			want: "no MemberCorrupt event names member c-2, whose data the test rewrote (events: none)"},
		{name: "a MemberCorrupt event that names no member", events: []corev1.Event{event("MemberCorrupt", "the data differs")},
			want: `no MemberCorrupt event names member c-2, whose data the test rewrote (events: MemberCorrupt "the data differs")`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := framework.CheckBlame(tc.events, members, "c-2")
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.want))
		})
	}
}
