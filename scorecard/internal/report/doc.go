// Package report collects what one scorecard test finds and writes it the only way
// scorecard can read it: one JSON TestStatus (scorecard v1alpha3) and nothing else.
//
// Scorecard parses the whole log of a test pod, stdout and stderr together, as a single
// TestStatus, so a test never prints progress: it goes into the result's log, with a
// timestamp per line, and what went wrong goes into its errors.
package report
