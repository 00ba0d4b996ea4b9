package cron

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	robfig "github.com/robfig/cron/v3"
)

// descriptors are the @ shorthands the API accepts, each a fixed five-field schedule.
var descriptors = map[string]bool{
	"@yearly": true, "@annually": true, "@monthly": true, "@weekly": true,
	"@daily": true, "@midnight": true, "@hourly": true,
}

// cronField is one of the five fields of a cron expression and its range.
type cronField struct {
	name     string
	min, max int
}

var cronFields = [5]cronField{
	{"minute", 0, 59},
	{"hour", 0, 23},
	{"day-of-month", 1, 31},
	{"month", 1, 12},
	{"day-of-week", 0, 6},
}

// maxStep is the largest step ("*/99") a field accepts: numbers have at most two digits.
const maxStep = 99

// neverFiresProbe is where Parse starts looking for a schedule's first run. The
// cron library looks five years ahead; from 2000 that covers a leap year (2000, 2004)
// and every weekday of every month, so a schedule without a run in that window has none
// at all.
var neverFiresProbe = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Schedule is a parsed spec.schedule, evaluated in UTC. The zero Schedule never fires.
type Schedule struct {
	expr string
	spec *robfig.SpecSchedule
}

// String returns the expression the schedule was parsed from.
func (s Schedule) String() string { return s.expr }

// Next returns the first scheduled time strictly after t, in UTC. Scheduled times fall
// on whole minutes. It is the zero time when there is none within five years of t (the
// cron library's horizon: only a schedule on 29 February can hit it, around 2100) or
// the Schedule is the zero Schedule.
func (s Schedule) Next(t time.Time) time.Time {
	if s.spec == nil {
		return time.Time{}
	}
	next := s.spec.Next(t)
	if next.IsZero() {
		return next
	}
	return next.UTC()
}

// LongestGap returns the longest time between two consecutive runs among the next runs
// runs after from: how old the newest backup of a schedule that runs on time may get
// (plus the backup's own duration). Zero when the schedule does not fire twice.
func (s Schedule) LongestGap(from time.Time, runs int) time.Duration {
	var gap time.Duration
	prev := s.Next(from)
	for range runs {
		if prev.IsZero() {
			break
		}
		next := s.Next(prev)
		if next.IsZero() {
			break
		}
		gap = max(gap, next.Sub(prev))
		prev = next
	}
	return gap
}

// Parse parses a schedule (spec.schedule of a backup schedule, spec.maintenance.defragmentation.schedule): five space-separated fields in UTC (minute 0-59,
// hour 0-23, day-of-month 1-31, month 1-12, day-of-week 0-6 with 0 Sunday), or one of
// the descriptors @yearly (@annually), @monthly, @weekly, @daily (@midnight), @hourly.
//
// A field is a comma list of items, each "*", "n", "a-b", "*/s", "a-b/s" or "n/s" (from
// n to the field's maximum, every s); numbers have one or two decimal digits, so "05"
// is 5, and a step is 1 to 99. Schedules are evaluated with robfig.ParseStandard of
// robfig/cron/v3 (robfig.ParseStandard), as Kubernetes CronJobs are, including its day rule: when both
// day-of-month and day-of-week are restricted (neither is "*"), a day matching
// either fires.
//
// It accepts less than robfig.ParseStandard, to accept exactly what the CRD's validation
// accepts and what the API documents:
//
//   - no time zone prefix (CRON_TZ=, TZ=): schedules are always UTC;
//   - no @every: a schedule is calendar times, not intervals from the operator's start;
//   - no month or day names (JAN, MON), no "?", and single spaces between fields;
//
// and two things the CRD's regular expression cannot check: a range must not end before
// it starts ("30-10"), and the schedule must fire at all ("0 0 30 2 *" never does).
func Parse(expr string) (Schedule, error) {
	if strings.HasPrefix(expr, "@") {
		if !descriptors[expr] {
			return Schedule{}, fmt.Errorf("schedule %q: unknown descriptor; use @hourly, @daily, @weekly, @monthly or @yearly (@every is not supported: schedules are calendar times in UTC)", expr)
		}
	} else if err := checkFields(expr); err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}

	parsed, err := robfig.ParseStandard(expr)
	if err != nil {
		return Schedule{}, fmt.Errorf("schedule %q: %w", expr, err)
	}
	spec, ok := parsed.(*robfig.SpecSchedule)
	if !ok { // Only @every parses to something else, and it was refused above.
		return Schedule{}, fmt.Errorf("schedule %q: not a calendar schedule", expr)
	}
	// ParseStandard leaves the location at time.Local, which evaluates in the location of
	// the time passed to Next: "0 0 * * *" would be midnight in whatever zone the caller's
	// time is in. Pinning UTC makes it midnight UTC, whatever the caller passes.
	spec.Location = time.UTC
	s := Schedule{expr: expr, spec: spec}
	if s.Next(neverFiresProbe).IsZero() {
		return Schedule{}, fmt.Errorf("schedule %q never fires: no month it allows has the days it allows", expr)
	}
	return s, nil
}

// checkFields checks the syntax of a five-field expression and the range of every
// number, with an error message that says which field is wrong and why.
func checkFields(expr string) error {
	if expr == "" {
		return errors.New("empty; use five fields (minute hour day-of-month month day-of-week) such as \"0 */6 * * *\", or a descriptor such as @daily")
	}
	if strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") {
		return errors.New("time zone prefixes (CRON_TZ=, TZ=) are not supported: schedules are always UTC")
	}
	fields := strings.Split(expr, " ")
	if len(fields) != len(cronFields) {
		if len(strings.Fields(expr)) == len(cronFields) {
			return errors.New("separate the five fields with single spaces")
		}
		return fmt.Errorf("%d fields, want 5: minute hour day-of-month month day-of-week", len(strings.Fields(expr)))
	}
	for i, f := range fields {
		if err := checkField(f, cronFields[i]); err != nil {
			return fmt.Errorf("%s field %q: %w", cronFields[i].name, f, err)
		}
	}
	return nil
}

func checkField(field string, r cronField) error {
	if strings.ContainsFunc(field, isLetter) {
		return errors.New("names such as JAN or MON are not supported; use numbers")
	}
	for item := range strings.SplitSeq(field, ",") {
		if err := checkItem(item, r); err != nil {
			return err
		}
	}
	return nil
}

// checkItem checks one item of a comma list: "*", "n", "a-b", each optionally "/s".
func checkItem(item string, r cronField) error {
	if item == "" {
		return errors.New("empty item in the list")
	}
	base, step, hasStep := strings.Cut(item, "/")
	if hasStep {
		s, ok := number(step)
		if !ok || s < 1 { // two digits: at most maxStep
			return fmt.Errorf("step %q: want a number from 1 to %d", step, maxStep)
		}
	}
	if base == "*" {
		return nil
	}
	lo, hi, isRange := strings.Cut(base, "-")
	a, ok := number(lo)
	if !ok {
		return fmt.Errorf("%q: want *, a number, or a range a-b", base)
	}
	b := a
	if isRange {
		if b, ok = number(hi); !ok {
			return fmt.Errorf("%q: want *, a number, or a range a-b", base)
		}
	}
	if a < r.min || b > r.max {
		return fmt.Errorf("%q is out of range %d-%d", base, r.min, r.max)
	}
	if a > b {
		return fmt.Errorf("range %q ends before it starts", base)
	}
	return nil
}

// number parses one or two decimal digits.
func number(s string) (int, bool) {
	if len(s) < 1 || len(s) > 2 || strings.ContainsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	return n, err == nil
}

func isLetter(r rune) bool { return (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') }

// Due says whether a schedule has a run to start now, and when the next one is.
//
// run is the latest scheduled time t with after < t <= now, where after is the later of
// created (the schedule's creation) and last (status.lastScheduleTime, nil before the
// first run). When several runs were missed (the operator was down, or the schedule was
// suspended) only the latest is returned: one backup catches up, not a burst of them,
// as a CronJob does with its missed starts. ok is false when there is no such time.
//
// next is the first scheduled time after now (zero when there is none, see
// [Schedule.Next]): the time to requeue at and status.nextScheduleTime.
//
// now comes from the caller's clock; the package never reads one. All times are UTC.
func Due(s Schedule, created time.Time, last *time.Time, now time.Time) (run time.Time, ok bool, next time.Time) {
	after := created.UTC()
	if last != nil && last.After(after) {
		after = last.UTC()
	}
	now = now.UTC()
	run, ok = latest(s, after, now)
	return run, ok, s.Next(now)
}

// latest returns the latest scheduled time in (after, now]. The cron library only looks
// forwards, so it walks the runs of a window ending at now, doubling the window while it
// holds none: an hour of a minutely schedule takes 60 steps, and a yearly schedule
// missed for years takes a few dozen, where walking from after could take millions.
func latest(s Schedule, after, now time.Time) (time.Time, bool) {
	if !now.After(after) {
		return time.Time{}, false
	}
	for window := time.Hour; ; window *= 2 {
		from := now.Add(-window)
		if !from.After(after) {
			from = after
		}
		var found time.Time
		for t := s.Next(from); !t.IsZero() && !t.After(now); t = s.Next(t) {
			found = t
		}
		if !found.IsZero() {
			return found, true
		}
		if from.Equal(after) {
			return time.Time{}, false
		}
	}
}
