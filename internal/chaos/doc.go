// Package chaos holds the pure parts of the chaos suite (test/e2e/chaos_test.go, make
// test-chaos): the history a client records of its operations on etcd, the key-value model
// that porcupine (github.com/anishathalye/porcupine) checks that history against, the
// random but bounded plan of faults, and the quorum invariant judged from samples of the
// members' health. None of it does I/O; the suite does, and this package decides.
//
// # The history
//
// Clients run puts, gets and compare-and-swap transactions on a few keys. Each operation is
// recorded with its invocation and response time and one of three outcomes: ok (etcd
// answered), failed (a read that got no answer: it changed nothing and is left out of the
// check) or unknown (a write that got no answer: it may or may not have been applied, now
// or later). An unknown write is given a response time after everything else, and the
// model lets it take effect or not, so the checker looks for any order in which the
// answers the clients saw are those of one copy of the data.
//
// # The invariant
//
// A fault may take a member down; the operator must never be the one that leaves fewer
// than a quorum of healthy voters. QuorumViolations looks at every member that went from
// healthy to unhealthy outside the windows of the faults the suite injected on it (so: the
// operator took it down, to restart, replace or remove it) and reports those taken while
// the others healthy at that moment were fewer than a quorum.
package chaos
