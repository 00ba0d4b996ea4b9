package consistency_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/consistency"
)

func TestDue(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	interval := 10 * time.Minute

	due, next := consistency.Due(time.Time{}, interval, now)
	g.Expect(due).To(BeTrue(), "never checked: due at once")
	g.Expect(next).To(Equal(interval))

	due, next = consistency.Due(now.Add(-4*time.Minute), interval, now)
	g.Expect(due).To(BeFalse())
	g.Expect(next).To(Equal(6*time.Minute), "the rest of the interval")

	due, next = consistency.Due(now.Add(-interval), interval, now)
	g.Expect(due).To(BeTrue(), "an interval old: due")
	g.Expect(next).To(Equal(interval))
}

func TestPlanAsksTheStartedVotersAtARevisionAllApplied(t *testing.T) {
	g := NewWithT(t)
	members := []consistency.Member{
		{Name: "e-0", ID: 1, Started: true, Revision: 120},
		{Name: "e-1", ID: 2, Started: true, Revision: 118, Corrupt: true},
		{Name: "e-2", ID: 3, Started: true, Learner: true, Revision: 40},
		{Name: "e-3", ID: 4, Revision: 0},
		{Name: "e-4", ID: 5, Started: true, Revision: 0},
	}
	c, ok := consistency.Plan(members)
	g.Expect(ok).To(BeTrue())
	g.Expect(c.Revision).To(Equal(int64(118)), "the lowest revision a voter reported; a learner's lag does not pull it down")
	g.Expect(c.Voters).To(HaveLen(3), "started voters only, the silent one too: it counts against the majority")
	g.Expect(c.Voters).NotTo(ContainElement(HaveField("Name", "e-2")), "a learner is not asked")
	g.Expect(c.Voters).NotTo(ContainElement(HaveField("Name", "e-3")), "a member not started is not asked")
	g.Expect(c.Corrupt).To(Equal([]uint64{2}))

	_, ok = consistency.Plan([]consistency.Member{{Name: "e-0", ID: 1, Started: true}})
	g.Expect(ok).To(BeFalse(), "no voter answered with a revision")
}
