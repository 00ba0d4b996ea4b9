package consistency

import "time"

// Member is what the operator observed of one member of the cluster for a check.
type Member struct {
	Name string
	ID   uint64
	// Started says the member has joined (it has a name in etcd's member list); Learner that
	// it does not vote.
	Started, Learner bool
	// Revision is the member's current revision; zero when it did not answer.
	Revision int64
	// Corrupt says the member carries etcd's CORRUPT alarm.
	Corrupt bool
}

// Check is one consistency check to make: the voting members to ask for their hash, the
// revision to hash at, and those of them carrying a CORRUPT alarm (Judge's corrupt).
type Check struct {
	Voters   []Member
	Revision int64
	Corrupt  []uint64
}

// Due says whether a check is due, given when the last one was made (zero: never) and the
// interval between checks, and how long until the next one is due after this decision: the
// rest of the interval when none is due, the whole interval when one is.
func Due(last time.Time, interval time.Duration, now time.Time) (due bool, next time.Duration) {
	if !last.IsZero() {
		if wait := last.Add(interval).Sub(now); wait > 0 {
			return false, wait
		}
	}
	return true, interval
}

// Plan picks what a check asks: every started voting member (learners hold no vote and
// may lag), at the lowest revision every one of them has applied (CommonRevision). ok is
// false when no voter answered with a revision: nothing can be checked this time.
func Plan(members []Member) (c Check, ok bool) {
	var revisions []int64
	for _, m := range members {
		if !m.Started || m.Learner {
			continue
		}
		c.Voters = append(c.Voters, m)
		revisions = append(revisions, m.Revision)
		if m.Corrupt {
			c.Corrupt = append(c.Corrupt, m.ID)
		}
	}
	c.Revision, ok = CommonRevision(revisions)
	return c, ok
}
