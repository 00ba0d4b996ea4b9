package cron_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/cron"
)

// at is a UTC time on 2025-06-<day> (a Tuesday on the 10th), or any date with date().
func at(day, hour, minute, second int) time.Time {
	return time.Date(2025, time.June, day, hour, minute, second, 0, time.UTC)
}

func date(year int, month time.Month, day, hour, minute int) time.Time {
	return time.Date(year, month, day, hour, minute, 0, 0, time.UTC)
}

func mustParse(t *testing.T, expr string) cron.Schedule {
	t.Helper()
	s, err := cron.Parse(expr)
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	return s
}

func TestDue(t *testing.T) {
	for _, tc := range []struct {
		name     string
		schedule string
		created  time.Time
		last     *time.Time
		now      time.Time
		run      time.Time // zero: not due
		next     time.Time
	}{
		{
			name: "first run after creation", schedule: "0 * * * *",
			created: at(10, 10, 30, 0), now: at(10, 11, 0, 30),
			run: at(10, 11, 0, 0), next: at(10, 12, 0, 0),
		},
		{
			name: "not yet due", schedule: "0 * * * *",
			created: at(10, 10, 30, 0), now: at(10, 10, 59, 59),
			next: at(10, 11, 0, 0),
		},
		{
			name: "exactly on the tick", schedule: "0 * * * *",
			created: at(9, 0, 0, 0), last: ptrTo(at(10, 10, 0, 0)), now: at(10, 11, 0, 0),
			run: at(10, 11, 0, 0), next: at(10, 12, 0, 0),
		},
		{
			name: "the run already taken is not due again", schedule: "0 * * * *",
			created: at(9, 0, 0, 0), last: ptrTo(at(10, 11, 0, 0)), now: at(10, 11, 0, 45),
			next: at(10, 12, 0, 0),
		},
		{
			name: "created on a tick: that tick is not a run", schedule: "0 * * * *",
			created: at(10, 11, 0, 0), now: at(10, 11, 30, 0),
			next: at(10, 12, 0, 0),
		},
		{
			name: "several missed runs give one, the latest", schedule: "0 * * * *",
			created: at(1, 0, 0, 0), last: ptrTo(at(10, 6, 0, 0)), now: at(10, 11, 20, 0),
			run: at(10, 11, 0, 0), next: at(10, 12, 0, 0),
		},
		{
			name: "a minutely schedule missed for a month", schedule: "* * * * *",
			created: date(2025, time.May, 1, 0, 0), last: ptrTo(date(2025, time.May, 10, 0, 0)), now: at(10, 12, 0, 30),
			run: at(10, 12, 0, 0), next: at(10, 12, 1, 0),
		},
		{
			name: "a yearly schedule missed for years", schedule: "@yearly",
			created: date(2019, time.March, 1, 0, 0), now: at(10, 12, 0, 0),
			run: date(2025, time.January, 1, 0, 0), next: date(2026, time.January, 1, 0, 0),
		},
		{
			name: "@hourly before its first tick", schedule: "@hourly",
			created: at(10, 10, 15, 0), now: at(10, 10, 59, 0),
			next: at(10, 11, 0, 0),
		},
		{
			name: "@hourly on its first tick", schedule: "@hourly",
			created: at(10, 10, 15, 0), now: at(10, 11, 0, 0),
			run: at(10, 11, 0, 0), next: at(10, 12, 0, 0),
		},
		{
			name: "monthly: not yet on the last second of the month", schedule: "0 0 1 * *",
			created: date(2024, time.December, 1, 0, 0), last: ptrTo(date(2025, time.January, 1, 0, 0)),
			now:  date(2025, time.January, 31, 23, 59).Add(59 * time.Second),
			next: date(2025, time.February, 1, 0, 0),
		},
		{
			name: "monthly: due on the first of the month", schedule: "0 0 1 * *",
			created: date(2024, time.December, 1, 0, 0), last: ptrTo(date(2025, time.January, 1, 0, 0)),
			now: date(2025, time.February, 1, 0, 0),
			run: date(2025, time.February, 1, 0, 0), next: date(2025, time.March, 1, 0, 0),
		},
		{
			name: "the 31st skips months without one", schedule: "0 0 31 * *",
			created: date(2025, time.March, 31, 0, 0), now: date(2025, time.April, 15, 0, 0),
			next: date(2025, time.May, 31, 0, 0),
		},
		{
			name: "29 February waits for a leap year", schedule: "0 0 29 2 *",
			created: date(2024, time.March, 1, 0, 0), now: date(2025, time.March, 1, 0, 0),
			next: date(2028, time.February, 29, 0, 0),
		},
		{
			name: "Sundays: not yet late on Saturday", schedule: "0 0 * * 0",
			created: at(1, 0, 0, 0), last: ptrTo(at(8, 0, 0, 0)), now: at(14, 23, 59, 59),
			next: at(15, 0, 0, 0),
		},
		{
			name: "Sundays: due at midnight", schedule: "0 0 * * 0",
			created: at(1, 0, 0, 0), last: ptrTo(at(8, 0, 0, 0)), now: at(15, 0, 0, 0),
			run: at(15, 0, 0, 0), next: at(22, 0, 0, 0),
		},
		{
			name: "Saturday is 6", schedule: "0 0 * * 6",
			created: at(1, 0, 0, 0), now: at(15, 0, 0, 0),
			run: at(14, 0, 0, 0), next: at(21, 0, 0, 0),
		},
		{
			// robfig/cron, like Vixie cron: with both day fields restricted, either fires.
			name: "day-of-month and day-of-week restricted: either matches", schedule: "0 0 13 * 5",
			created: at(14, 0, 0, 0), now: date(2025, time.July, 1, 0, 0),
			run: at(27, 0, 0, 0), next: date(2025, time.July, 4, 0, 0),
		},
		{
			name: "day-of-week unrestricted: only the day of month", schedule: "0 0 13 * *",
			created: at(14, 0, 0, 0), now: date(2025, time.July, 1, 0, 0),
			next: date(2025, time.July, 13, 0, 0),
		},
		{
			name: "a last schedule time before creation is ignored", schedule: "0 * * * *",
			created: at(10, 10, 30, 0), last: ptrTo(at(9, 0, 0, 0)), now: at(10, 10, 45, 0),
			next: at(10, 11, 0, 0),
		},
		{
			name: "now before creation (clock skew): not due", schedule: "0 * * * *",
			created: at(10, 10, 30, 0), now: at(10, 10, 0, 0),
			next: at(10, 11, 0, 0),
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			run, ok, next := cron.Due(mustParse(t, tc.schedule), tc.created, tc.last, tc.now)
			g.Expect(ok).To(Equal(!tc.run.IsZero()))
			g.Expect(run).To(Equal(tc.run))
			g.Expect(next).To(Equal(tc.next))
		})
	}
}

func TestDueIsInUTCWhateverTheInputZone(t *testing.T) {
	g := NewWithT(t)
	tokyo := time.FixedZone("JST", 9*60*60)
	// 09:30 in Tokyo is 00:30 UTC: @daily ran at 00:00 UTC, not at midnight in Tokyo.
	run, ok, next := cron.Due(mustParse(t, "@daily"), at(9, 12, 0, 0).In(tokyo), nil, at(10, 0, 30, 0).In(tokyo))
	g.Expect(ok).To(BeTrue())
	g.Expect(run).To(Equal(at(10, 0, 0, 0)))
	g.Expect(run.Location()).To(Equal(time.UTC))
	g.Expect(next).To(Equal(at(11, 0, 0, 0)))

	g.Expect(mustParse(t, "0 0 * * *").Next(at(10, 0, 30, 0).In(tokyo))).To(Equal(at(11, 0, 0, 0)))
}

func TestDueWithTheZeroScheduleNeverFires(t *testing.T) {
	g := NewWithT(t)
	_, ok, next := cron.Due(cron.Schedule{}, at(1, 0, 0, 0), nil, at(10, 0, 0, 0))
	g.Expect(ok).To(BeFalse())
	g.Expect(next.IsZero()).To(BeTrue())
}

func TestParseErrors(t *testing.T) {
	for _, tc := range []struct {
		expr string
		want string
	}{
		{"", "empty"},
		{"@every 1h", "@every is not supported"},
		{"@reboot", "unknown descriptor"},
		{"CRON_TZ=Europe/Paris 0 0 * * *", "time zone prefixes (CRON_TZ=, TZ=) are not supported"},
		{"TZ=UTC 0 0 * * *", "time zone prefixes"},
		{"0 0 * * MON", `day-of-week field "MON": names such as JAN or MON are not supported`},
		{"0 0 * jan *", `month field "jan": names`},
		{"0  0 * * *", "single spaces"},
		{"0 0 * * * ", "single spaces"},
		{"* * * *", "4 fields, want 5"},
		{"0 0 * * * *", "6 fields, want 5"},
		{"60 * * * *", `minute field "60": "60" is out of range 0-59`},
		{"0 24 * * *", `hour field "24": "24" is out of range 0-23`},
		{"0 0 0 * *", `day-of-month field "0": "0" is out of range 1-31`},
		{"0 0 * 13 *", `month field "13"`},
		{"0 0 * * 7", `day-of-week field "7": "7" is out of range 0-6`},
		{"*/0 * * * *", `step "0": want a number from 1 to 99`},
		{"1,,2 * * * *", "empty item"},
		{"? * * * *", `"?": want *, a number, or a range a-b`},
		{"30-10 * * * *", `range "30-10" ends before it starts`},
		{"0 0 30 2 *", "never fires"},
		{"0 0 31 4,6,9,11 *", "never fires"},
	} {
		_, err := cron.Parse(tc.expr)
		NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tc.want)), "%q", tc.expr)
	}
}

func TestParseKeepsTheExpression(t *testing.T) {
	NewWithT(t).Expect(mustParse(t, "5,35 8-17/2 * * 1-5").String()).To(Equal("5,35 8-17/2 * * 1-5"))
}

func ptrTo(t time.Time) *time.Time { return &t }

func TestLongestGapBetweenRuns(t *testing.T) {
	from := time.Date(2026, 11, 25, 10, 30, 0, 0, time.UTC)
	for _, tc := range []struct {
		expr string
		want time.Duration
	}{
		{"@hourly", time.Hour},
		{"*/15 * * * *", 15 * time.Minute},
		{"0 2 * * *", 24 * time.Hour},
		// Twice a day at uneven hours: the long gap counts, not the average.
		{"0 1,7 * * *", 18 * time.Hour},
		// Weekdays only: Friday night to Monday night.
		{"0 2 * * 1-5", 72 * time.Hour},
	} {
		s, err := cron.Parse(tc.expr)
		if err != nil {
			t.Fatalf("%s: %v", tc.expr, err)
		}
		if got := s.LongestGap(from, 16); got != tc.want {
			t.Errorf("%s: longest gap %s, want %s", tc.expr, got, tc.want)
		}
	}
	if got := (cron.Schedule{}).LongestGap(from, 16); got != 0 {
		t.Errorf("the zero Schedule: %s, want 0", got)
	}
}
