package backup

import (
	"slices"
	"strings"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Item is what retention and the schedule's status need to know about one backup of a
// schedule.
type Item struct {
	// Name is the EtcdBackup's name.
	Name string
	// Created is the EtcdBackup's creation time; backups are ranked by it.
	Created time.Time
	// Finished is true once the backup succeeded or failed (Succeeded is True or False).
	Finished bool
	// Succeeded is true when the backup finished and its artifact is stored.
	Succeeded bool
	// Completed is when the backup finished (status.completedAt); zero while it runs.
	Completed time.Time
	// Reason and Message are those of the Succeeded condition; they say why a finished
	// backup failed.
	Reason  string
	Message string
}

// newestFirst returns a copy of items ranked newest first: by creation time, then by name
// so that backups created in the same second still rank the same way on every call.
func newestFirst(items []Item) []Item {
	sorted := slices.Clone(items)
	slices.SortStableFunc(sorted, func(a, b Item) int {
		if c := b.Created.Compare(a.Created); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
	return sorted
}

// Prune returns the names of the backups that policy says to delete, oldest first.
//
// Backups are ranked newest first (by creation time, then name). A backup is deleted
// when its rank is maxCount or beyond (failed and running backups take a place too, as
// the API documents) or when it is older than maxAge at now. Two exceptions override
// the policy:
//
//   - the newest successful backup is never deleted, so a run of failures, or a
//     schedule suspended for longer than maxAge, never leaves the cluster without a
//     backup to restore;
//   - a backup that has not finished is never deleted: its pod is still writing the
//     artifact, and deleting it mid-way would leave half an object behind. It is
//     considered again once it has finished.
//
// An unset maxCount or maxAge does not limit anything; with neither set nothing is
// deleted (the API requires one of them).
//
// A backup listed twice (a pass that found its run's backup already created, from an
// earlier pass whose status it did not see yet) counts once: counted twice it would push an
// older backup out of maxCount.
func Prune(backups []Item, policy etcdv1alpha1.BackupRetention, now time.Time) []string {
	seen := map[string]bool{}
	backups = slices.DeleteFunc(slices.Clone(backups), func(it Item) bool {
		dup := seen[it.Name]
		seen[it.Name] = true
		return dup
	})
	ranked := newestFirst(backups)
	keepSucceeded := slices.IndexFunc(ranked, func(it Item) bool { return it.Succeeded })

	var doomed []string
	for i, it := range ranked {
		if i == keepSucceeded || !it.Finished {
			continue
		}
		beyondCount := policy.MaxCount != nil && i >= int(*policy.MaxCount)
		tooOld := policy.MaxAge != nil && now.Sub(it.Created) > policy.MaxAge.Duration
		if beyondCount || tooOld {
			doomed = append(doomed, it.Name)
		}
	}
	slices.Reverse(doomed)
	return doomed
}

// LastFinished returns the newest backup (by creation time) that has finished,
// successfully or not, or nil when none has. Its outcome is the schedule's: see
// [ScheduleReady].
func LastFinished(items []Item) *Item {
	return newest(items, func(it Item) bool { return it.Finished })
}

// LastSucceeded returns the newest backup (by creation time) that succeeded, or nil when
// none has: status.lastSuccessfulBackup and, with its Completed time,
// status.lastSuccessfulTime.
func LastSucceeded(items []Item) *Item {
	return newest(items, func(it Item) bool { return it.Succeeded })
}

func newest(items []Item, pred func(Item) bool) *Item {
	ranked := newestFirst(items)
	if i := slices.IndexFunc(ranked, pred); i >= 0 {
		return &ranked[i]
	}
	return nil
}

// Tally counts a schedule's backups by outcome.
type Tally struct {
	// Running backups have not finished yet.
	Running int
	// Succeeded backups have their artifact stored.
	Succeeded int
	// Failed backups finished without an artifact.
	Failed int
}

// Total is the number of backups counted: status.backups.
func (t Tally) Total() int { return t.Running + t.Succeeded + t.Failed }

// Counts tallies items by outcome.
func Counts(items []Item) Tally {
	var t Tally
	for _, it := range items {
		switch {
		case !it.Finished:
			t.Running++
		case it.Succeeded:
			t.Succeeded++
		default:
			t.Failed++
		}
	}
	return t
}
