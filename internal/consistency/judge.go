package consistency

import (
	"fmt"
	"slices"
	"strings"
)

// Hash is what one member answered to HashKV, or why it did not.
type Hash struct {
	// Member is the member's name; ID its etcd member ID.
	Member string
	ID     uint64
	// Revision is the revision the hash covers and CompactRevision the compaction the
	// hashed history starts from: two hashes are comparable only when both are equal.
	Revision, CompactRevision int64
	// Value is the hash.
	Value uint32
	// Err says why the member gave no hash (unreachable, the revision compacted under the
	// check); empty when it did.
	Err string
}

// Kind is the outcome of a check.
type Kind string

const (
	// Consistent means every member that answered agrees, and they are a majority of the voters.
	Consistent Kind = "Consistent"
	// Mismatch means Suspects disagree with a majority of the voters that agree among
	// themselves; they are to be replaced.
	Mismatch Kind = "Mismatch"
	// Inconclusive means nothing can be told (too few comparable answers, or no majority
	// agrees); nothing is touched.
	Inconclusive Kind = "Inconclusive"
)

// Verdict is what Judge found.
type Verdict struct {
	Kind Kind
	// Revision is the revision the compared hashes cover (0 when none was compared).
	Revision int64
	// Suspects are the members that disagree with the majority, by name, sorted, with
	// their IDs in SuspectIDs (same order). Empty unless Kind is Mismatch.
	Suspects   []string
	SuspectIDs []uint64
	// Message says what was found, for the status and the events.
	Message string
}

// Judge compares the hashes of a cluster of voters voting members (learners are not
// asked) and the members that carry a CORRUPT alarm (by ID). A member is a suspect when its
// hash differs from that of a majority of the voters (voters/2+1 members with the same hash
// at the same revision and compaction), or when it carries a CORRUPT alarm and is not one of
// that majority. Without such a majority the verdict is Inconclusive, alarms or not: a
// member is only ever condemned by a majority that agrees.
func Judge(voters int, hashes []Hash, corrupt []uint64) Verdict {
	quorum := voters/2 + 1
	group, rev := largestComparable(hashes)
	byValue := map[uint32][]Hash{}
	for _, h := range group {
		byValue[h.Value] = append(byValue[h.Value], h)
	}
	var majority []Hash
	for _, hs := range byValue {
		if len(hs) >= quorum {
			majority = hs
		}
	}
	if majority == nil {
		return Verdict{Kind: Inconclusive, Revision: rev, Message: inconclusive(voters, quorum, hashes, group, byValue, corrupt)}
	}
	agree := map[uint64]bool{}
	for _, h := range majority {
		agree[h.ID] = true
	}
	suspects := map[uint64]string{}
	why := []string{}
	for _, h := range group {
		if !agree[h.ID] {
			suspects[h.ID] = h.Member
			why = append(why, fmt.Sprintf("%s's hash %08x differs from %08x of %s", h.Member, h.Value, majority[0].Value, names(majority)))
		}
	}
	for _, id := range corrupt {
		if agree[id] {
			// etcd's alarm and the majority's hash disagree about this member: the hash
			// comparison is the newer evidence, and no member is condemned against it.
			continue
		}
		if _, ok := suspects[id]; !ok {
			suspects[id] = memberName(hashes, id)
			why = append(why, fmt.Sprintf("etcd raised the CORRUPT alarm on %s, which is not among the %d members that agree", suspects[id], len(majority)))
		}
	}
	if len(suspects) == 0 {
		return Verdict{Kind: Consistent, Revision: rev,
			Message: fmt.Sprintf("%s hold the same data at revision %d (hash %08x)", names(majority), rev, majority[0].Value)}
	}
	v := Verdict{Kind: Mismatch, Revision: rev, Message: strings.Join(why, "; ") + fmt.Sprintf(" at revision %d", rev)}
	ids := make([]uint64, 0, len(suspects))
	for id := range suspects {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b uint64) int { return strings.Compare(suspects[a], suspects[b]) })
	for _, id := range ids {
		v.Suspects = append(v.Suspects, suspects[id])
		v.SuspectIDs = append(v.SuspectIDs, id)
	}
	return v
}

// largestComparable returns the largest set of answered hashes at one revision and
// compaction, and that revision. Ties go to the higher revision, then compaction.
func largestComparable(hashes []Hash) ([]Hash, int64) {
	type key struct{ rev, compact int64 }
	sets := map[key][]Hash{}
	for _, h := range hashes {
		if h.Err == "" {
			k := key{h.Revision, h.CompactRevision}
			sets[k] = append(sets[k], h)
		}
	}
	var best key
	var out []Hash
	for k, hs := range sets {
		if len(hs) > len(out) || (len(hs) == len(out) && (k.rev > best.rev || (k.rev == best.rev && k.compact > best.compact))) {
			best, out = k, hs
		}
	}
	return out, best.rev
}

// inconclusive says why no majority could be found.
func inconclusive(voters, quorum int, hashes, group []Hash, byValue map[uint32][]Hash, corrupt []uint64) string {
	var parts []string
	switch {
	case len(group) < quorum:
		parts = append(parts, fmt.Sprintf("%d of %d voting members answered at one revision and compaction, short of the %d needed to compare", len(group), voters, quorum))
	default:
		parts = append(parts, fmt.Sprintf("no %d of the %d voting members agree: %d different hashes", quorum, voters, len(byValue)))
	}
	for _, h := range hashes {
		if h.Err != "" {
			parts = append(parts, fmt.Sprintf("%s: %s", h.Member, h.Err))
		}
	}
	for _, id := range corrupt {
		parts = append(parts, fmt.Sprintf("etcd raised the CORRUPT alarm on %s", memberName(hashes, id)))
	}
	return strings.Join(parts, "; ") + "; nothing is changed"
}

func names(hs []Hash) string {
	n := make([]string, len(hs))
	for i, h := range hs {
		n[i] = h.Member
	}
	slices.Sort(n)
	return strings.Join(n, ", ")
}

// memberName is the name of member id among hashes, or its ID in hexadecimal as etcd
// prints it.
func memberName(hashes []Hash, id uint64) string {
	for _, h := range hashes {
		if h.ID == id {
			return h.Member
		}
	}
	return fmt.Sprintf("%x", id)
}

// CommonRevision is the revision to hash at: the lowest of the members' current revisions,
// which every member has applied. ok is false when there is none.
func CommonRevision(revisions []int64) (rev int64, ok bool) {
	for _, r := range revisions {
		if r > 0 && (!ok || r < rev) {
			rev, ok = r, true
		}
	}
	return rev, ok
}
