package backup_test

import (
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/backup"
)

var now = time.Date(2025, time.June, 10, 12, 0, 0, 0, time.UTC)

func ago(hours int) time.Time { return now.Add(-time.Duration(hours) * time.Hour) }

func succeeded(name string, hoursAgo int) backup.Item {
	return backup.Item{Name: name, Created: ago(hoursAgo), Finished: true, Succeeded: true, Completed: ago(hoursAgo)}
}

func failed(name string, hoursAgo int) backup.Item {
	return backup.Item{Name: name, Created: ago(hoursAgo), Finished: true, Completed: ago(hoursAgo),
		Reason: etcdv1alpha1.ReasonBackupTimeout, Message: "no artifact after 30m"}
}

func running(name string, hoursAgo int) backup.Item {
	return backup.Item{Name: name, Created: ago(hoursAgo)}
}

func retention(maxCount int32, maxAge time.Duration) etcdv1alpha1.BackupRetention {
	var r etcdv1alpha1.BackupRetention
	if maxCount > 0 {
		r.MaxCount = ptr.To(maxCount)
	}
	if maxAge > 0 {
		r.MaxAge = &metav1.Duration{Duration: maxAge}
	}
	return r
}

func TestPrune(t *testing.T) {
	const day = 24 * time.Hour
	for _, tc := range []struct {
		name    string
		items   []backup.Item
		policy  etcdv1alpha1.BackupRetention
		deleted []string
	}{
		{
			name:    "count only: the oldest beyond maxCount go, oldest first",
			items:   []backup.Item{succeeded("b1", 1), succeeded("b2", 2), succeeded("b3", 3), succeeded("b4", 4), succeeded("b5", 5)},
			policy:  retention(3, 0),
			deleted: []string{"b5", "b4"},
		},
		{
			name:    "age only: older than maxAge go, exactly maxAge stays",
			items:   []backup.Item{succeeded("b1", 1), succeeded("b23", 23), succeeded("b24", 24), succeeded("b25", 25), succeeded("b48", 48)},
			policy:  retention(0, day),
			deleted: []string{"b48", "b25"},
		},
		{
			name:    "both: beyond maxCount or older than maxAge",
			items:   []backup.Item{succeeded("b1", 1), succeeded("b2", 2), succeeded("b30", 30), succeeded("b40", 40), succeeded("b50", 50)},
			policy:  retention(3, day),
			deleted: []string{"b50", "b40", "b30"},
		},
		{
			name:    "the newest success is kept when older than maxAge",
			items:   []backup.Item{failed("f1", 1), succeeded("s30", 30), succeeded("s40", 40), failed("f50", 50)},
			policy:  retention(0, day),
			deleted: []string{"f50", "s40"},
		},
		{
			name:    "the newest success is kept beyond maxCount, failures take their places",
			items:   []backup.Item{failed("f1", 1), failed("f2", 2), failed("f3", 3), succeeded("s4", 4), succeeded("s5", 5)},
			policy:  retention(2, 0),
			deleted: []string{"s5", "f3"},
		},
		{
			name:    "the newest success is kept when every policy would delete it",
			items:   []backup.Item{succeeded("s100", 100)},
			policy:  retention(1, day),
			deleted: nil,
		},
		{
			name:    "a running backup is never pruned, however old",
			items:   []backup.Item{succeeded("s1", 1), running("r30", 30), succeeded("s40", 40)},
			policy:  retention(1, day),
			deleted: []string{"s40"},
		},
		{
			name:    "a running backup takes a place in maxCount",
			items:   []backup.Item{running("r0", 0), succeeded("s1", 1), succeeded("s2", 2)},
			policy:  retention(2, 0),
			deleted: []string{"s2"},
		},
		{
			name:    "without a success, failures are pruned like any backup",
			items:   []backup.Item{failed("f1", 1), failed("f2", 2), failed("f3", 3)},
			policy:  retention(1, 0),
			deleted: []string{"f3", "f2"},
		},
		{
			name:    "no limit set: nothing is deleted",
			items:   []backup.Item{succeeded("b1", 1), succeeded("b900", 900)},
			policy:  etcdv1alpha1.BackupRetention{},
			deleted: nil,
		},
		{
			name:    "empty input",
			items:   nil,
			policy:  retention(1, day),
			deleted: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(backup.Prune(tc.items, tc.policy, now)).To(Equal(tc.deleted))

			// The input's order does not matter.
			reversed := slices.Clone(tc.items)
			slices.Reverse(reversed)
			g.Expect(backup.Prune(reversed, tc.policy, now)).To(Equal(tc.deleted))
		})
	}
}

func TestPruneBreaksTiesByName(t *testing.T) {
	g := NewWithT(t)
	// Created in the same second: "a" ranks before "b" whatever the input order, so
	// every reconcile deletes the same one.
	a, b, c := succeeded("a", 1), succeeded("b", 1), succeeded("c", 1)
	for _, items := range [][]backup.Item{{a, b, c}, {c, b, a}, {b, c, a}} {
		g.Expect(backup.Prune(items, retention(1, 0), now)).To(Equal([]string{"c", "b"}))
	}
}

// A backup listed twice (its run's backup found created already by a pass that had not seen
// the last status) counts once: maxCount 2 keeps it and the one before.
func TestPruneCountsABackupListedTwiceOnce(t *testing.T) {
	g := NewWithT(t)
	items := []backup.Item{failed("run-2", 3), failed("run-3", 2), failed("run-4", 1), failed("run-4", 1)}
	g.Expect(backup.Prune(items, retention(2, 0), now)).To(Equal([]string{"run-2"}))
	g.Expect(items).To(HaveLen(4), "the input is left alone")
}

func TestPruneDoesNotReorderItsInput(t *testing.T) {
	g := NewWithT(t)
	items := []backup.Item{succeeded("old", 5), succeeded("new", 1)}
	backup.Prune(items, retention(1, 0), now)
	g.Expect(items[0].Name).To(Equal("old"))
}

func TestLastFinishedAndLastSucceeded(t *testing.T) {
	for _, tc := range []struct {
		name          string
		items         []backup.Item
		lastFinished  string
		lastSucceeded string
	}{
		{"none", nil, "", ""},
		{"only running", []backup.Item{running("r1", 1)}, "", ""},
		{"running is skipped", []backup.Item{running("r1", 1), failed("f2", 2), succeeded("s3", 3)}, "f2", "s3"},
		{"newest by creation, not by input order", []backup.Item{succeeded("s5", 5), succeeded("s2", 2), failed("f9", 9)}, "s2", "s2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			name := func(it *backup.Item) string {
				if it == nil {
					return ""
				}
				return it.Name
			}
			g.Expect(name(backup.LastFinished(tc.items))).To(Equal(tc.lastFinished))
			g.Expect(name(backup.LastSucceeded(tc.items))).To(Equal(tc.lastSucceeded))
		})
	}
}

func TestCounts(t *testing.T) {
	g := NewWithT(t)
	c := backup.Counts([]backup.Item{running("r", 0), succeeded("s1", 1), succeeded("s2", 2), failed("f", 3)})
	g.Expect(c).To(Equal(backup.Tally{Running: 1, Succeeded: 2, Failed: 1}))
	g.Expect(c.Total()).To(Equal(4))
	g.Expect(backup.Counts(nil).Total()).To(BeZero())
}

func TestScheduleReady(t *testing.T) {
	for _, tc := range []struct {
		name      string
		suspended bool
		items     []backup.Item
		status    metav1.ConditionStatus
		reason    string
		message   string
	}{
		{"no backup yet", false, nil, metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled, "no backup has finished yet"},
		{"only a running backup", false, []backup.Item{running("r", 0)},
			metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled, "no backup has finished yet"},
		{"last succeeded", false, []backup.Item{succeeded("s1", 1), failed("f2", 2)},
			metav1.ConditionTrue, etcdv1alpha1.ReasonScheduled, "backup s1 succeeded"},
		{"last failed, an older one succeeded", false, []backup.Item{running("r0", 0), failed("f1", 1), succeeded("s2", 2)},
			metav1.ConditionFalse, etcdv1alpha1.ReasonLastBackupFailed, "backup f1 failed (Timeout: no artifact after 30m); the next run tries again"},
		{"failed without a reason", false, []backup.Item{{Name: "f", Created: ago(1), Finished: true}},
			metav1.ConditionFalse, etcdv1alpha1.ReasonLastBackupFailed, "backup f failed; the next run tries again"},
		{"suspended wins over a failure", true, []backup.Item{failed("f1", 1)},
			metav1.ConditionFalse, etcdv1alpha1.ReasonSuspended, "spec.suspend is set: no backup is created"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			status, reason, message := backup.ScheduleReady(tc.suspended, tc.items)
			g.Expect(status).To(Equal(tc.status))
			g.Expect(reason).To(Equal(tc.reason))
			g.Expect(message).To(Equal(tc.message))
		})
	}
}
