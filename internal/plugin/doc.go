// Package plugin is kubectl-etcdpilot, the kubectl plugin for etcdpilot: kubectl etcdpilot
// status, certificates, backup, restore, approve-recovery and etcdctl. Each command is a thin
// client of the declarative API: it reads the objects the operator writes, or creates and
// patches objects the operator acts on, and waits on their status when asked. Nothing it does
// is impossible with kubectl alone; docs/kubectl-plugin.md shows both.
//
// What a command shows is computed by pure functions of the objects read (StatusOf,
// CertificatesOf), rendered for a terminal of 80 columns or as JSON, and tested without a
// cluster.
package plugin
