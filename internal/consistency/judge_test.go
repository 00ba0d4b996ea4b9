package consistency_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/consistency"
)

func h(member string, id uint64, value uint32) consistency.Hash {
	return consistency.Hash{Member: member, ID: id, Revision: 100, CompactRevision: 40, Value: value}
}

// failed is a member that could not be reached.
func failed(member string, id uint64) consistency.Hash {
	return consistency.Hash{Member: member, ID: id, Err: "unreachable"}
}

func at(x consistency.Hash, rev, compact int64) consistency.Hash {
	x.Revision, x.CompactRevision = rev, compact
	return x
}

func TestJudge(t *testing.T) {
	cases := []struct {
		name     string
		voters   int
		hashes   []consistency.Hash
		corrupt  []uint64
		want     consistency.Kind
		suspects []string
		ids      []uint64
		message  string
	}{
		{name: "three members agree", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 7), h("e-2", 3, 7)},
			want:   consistency.Consistent, message: "e-0, e-1, e-2 hold the same data at revision 100"},
		{name: "one of three differs: it alone is the suspect", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 9), h("e-2", 3, 7)},
			want:   consistency.Mismatch, suspects: []string{"e-1"}, ids: []uint64{2},
			message: "e-1's hash 00000009 differs from 00000007 of e-0, e-2 at revision 100"},
		{name: "two of five differ, each its own way: both suspects, the other three agree", voters: 5,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 8), h("e-2", 3, 7), h("e-3", 4, 9), h("e-4", 5, 7)},
			want:   consistency.Mismatch, suspects: []string{"e-1", "e-3"}, ids: []uint64{2, 4}},
		{name: "three different hashes among three: no majority, nothing condemned", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 8), h("e-2", 3, 9)},
			want:   consistency.Inconclusive, message: "no 2 of the 3 voting members agree: 3 different hashes"},
		{name: "two against two of four: no majority", voters: 4,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 7), h("e-2", 3, 9), h("e-3", 4, 9)},
			want:   consistency.Inconclusive},
		{name: "one answer of three: too few to compare", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), failed("e-1", 2), failed("e-2", 3)},
			want:   consistency.Inconclusive, message: "1 of 3 voting members answered at one revision and compaction, short of the 2 needed to compare; e-1: unreachable"},
		{name: "a member that does not answer is not judged; the two others agree", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), failed("e-1", 2), h("e-2", 3, 7)},
			want:   consistency.Consistent},
		{name: "a compaction between the answers: different compactions are never compared", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), at(h("e-1", 2, 8), 100, 90), at(h("e-2", 3, 9), 100, 95)},
			want:   consistency.Inconclusive, message: "1 of 3 voting members answered at one revision and compaction"},
		{name: "the two comparable hashes agree, the third was taken after a compaction: not a suspect", voters: 3,
			hashes: []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 7), at(h("e-2", 3, 8), 100, 90)},
			want:   consistency.Consistent},
		{name: "CORRUPT alarm on a member outside the agreeing majority: a suspect", voters: 3,
			hashes:  []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 7), failed("e-2", 3)},
			corrupt: []uint64{3}, want: consistency.Mismatch, suspects: []string{"e-2"}, ids: []uint64{3},
			message: "etcd raised the CORRUPT alarm on e-2, which is not among the 2 members that agree"},
		{name: "CORRUPT alarm on a member whose hash agrees with the majority: not condemned", voters: 3,
			hashes:  []consistency.Hash{h("e-0", 1, 7), h("e-1", 2, 7), h("e-2", 3, 7)},
			corrupt: []uint64{3}, want: consistency.Consistent},
		{name: "CORRUPT alarm without a majority that agrees: nothing condemned, the alarm reported", voters: 3,
			hashes:  []consistency.Hash{h("e-0", 1, 7), failed("e-1", 2), failed("e-2", 3)},
			corrupt: []uint64{3}, want: consistency.Inconclusive, message: "etcd raised the CORRUPT alarm on e-2; nothing is changed"},
		{name: "a single member: agrees with itself", voters: 1,
			hashes: []consistency.Hash{h("e-0", 1, 7)}, want: consistency.Consistent},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			v := consistency.Judge(tc.voters, tc.hashes, tc.corrupt)
			g.Expect(v.Kind).To(Equal(tc.want), v.Message)
			g.Expect(v.Suspects).To(Equal(tc.suspects))
			g.Expect(v.SuspectIDs).To(Equal(tc.ids))
			g.Expect(v.Message).To(ContainSubstring(tc.message))
			if tc.want != consistency.Inconclusive {
				g.Expect(v.Revision).To(Equal(int64(100)))
			}
		})
	}
}

func TestCommonRevision(t *testing.T) {
	g := NewWithT(t)
	rev, ok := consistency.CommonRevision([]int64{120, 0, 118, 125})
	g.Expect(ok).To(BeTrue())
	g.Expect(rev).To(Equal(int64(118)), "the lowest revision a member reported: every member has applied it")
	_, ok = consistency.CommonRevision([]int64{0, 0})
	g.Expect(ok).To(BeFalse(), "no member reported a revision")
}
