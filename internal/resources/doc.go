// Package resources builds the Kubernetes objects that make up one etcd cluster: the
// member pods and their PersistentVolumeClaims, the peer and client Services and the
// PodDisruptionBudget.
//
// Every builder is a pure function of the EtcdCluster (and, for a member, of its
// [MemberConfig]): it makes no client calls and does no I/O, and the same inputs always
// give deeply equal objects. The reconciler can therefore compare what it built with
// what it finds in the cluster, and tests can check every field without an API server.
//
// Builders never trust that the API server has filled in the CRD defaults: objects built
// by hand in tests, or stored before a default was added, may lack them. Each builder
// reads the spec through clusterspec.WithDefaults (or clusterspec.Effective), the one
// place the defaults live in Go.
//
// Names, labels, ports and URLs all come from package cluster, so an object built here
// can always be found again by the name or selector the rest of the operator derives.
// Builders copy every map, slice and pointer they take from the EtcdCluster, so changing
// a returned object never changes the EtcdCluster, and the other way round.
package resources
