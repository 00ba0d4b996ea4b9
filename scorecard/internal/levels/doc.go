// Package levels holds the five scorecard tests of etcdpilot, one per capability level,
// and the runner that gives each its bundle, its cluster access and its time budget.
//
// A test checks for real what the operator can do today and fails, naming what is
// missing, where a capability is not built yet. Level 3, for one, proves on one cluster
// that the data survives scaling 3->5->3, the loss of a member's volume, and a backup: a
// new cluster restored from it holds every key written before the backup and none written
// after. The lists of missing items are assembled by pure functions (missing.go); the
// runner guarantees that everything a test creates is deleted before its result is
// returned, whether it passed, failed or panicked.
package levels
