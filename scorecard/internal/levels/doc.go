// Package levels holds the five scorecard tests of etcdpilot, one per capability level,
// and the runner that gives each its bundle, its cluster access and its time budget.
//
// A test checks for real what the operator can do today and fails, naming what is
// missing, where a capability is not built yet. The lists of missing items are assembled
// by pure functions (missing.go); the runner guarantees that everything a test creates is
// deleted before its result is returned, whether it passed, failed or panicked.
package levels
