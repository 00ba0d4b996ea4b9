// Package clusterspec says what an EtcdCluster's spec means: its defaults (WithDefaults,
// the one place they live in Go, matching the CRD's markers), the spec the members should
// run once the operator's own decisions recorded in the status are applied (Effective:
// Auto raft timing, storage autoscaling), and the settings read from it (the consistency
// check's, the quorum-loss recovery's, the quota's ceiling). It is pure: no client, no I/O.
// The builders of internal/resources and the planners read the spec through it.
package clusterspec
