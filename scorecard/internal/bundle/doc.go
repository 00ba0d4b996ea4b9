// Package bundle reads what the scorecard tests need from the operator bundle that
// scorecard mounts into every test pod: the EtcdCluster example from the CSV's
// alm-examples, the etcd releases the bundle supports, and which monitoring objects it
// ships. Everything but Load is a pure function, tested without a cluster.
package bundle
