package tenant

import (
	"fmt"
	"time"
)

// QuietPeriod is how long no key under a tenant's prefix must have been written before a
// deletion with deletionPolicy Delete removes its keys. A live kube-apiserver writes its
// lease every 10 seconds, so one still using the prefix holds the deletion.
const QuietPeriod = 30 * time.Second

// CountInterval is how often a tenant's keys are counted: a count reads every key of the
// prefix in the member, so it is bounded in rate whatever the tenant's size.
const CountInterval = time.Minute

// SizeInterval is how often the bytes under a tenant's prefix are measured: a measure reads
// every key and value of the prefix, so it is far rarer than a count.
const SizeInterval = 10 * time.Minute

// SecretName is the Secret that holds the certificate of the tenant named name.
func SecretName(name string) string { return name + "-etcd-client" }

// Usage is what a tenant's keys were found to be: how many, and the highest revision at
// which one of them was written, counted at At; and the bytes of their keys and values,
// measured at SizedAt (zero: never).
type Usage struct {
	Keys     int64
	Revision int64
	At       time.Time
	Bytes    int64
	SizedAt  time.Time
}

// CountDue says whether the keys are to be counted again at now, after last (nil: never).
func CountDue(last *Usage, now time.Time) bool {
	return last == nil || now.Sub(last.At) >= CountInterval
}

// SizeDue says whether the bytes are to be measured again at now, after last (nil: never).
func SizeDue(last *Usage, now time.Time) bool {
	return last == nil || last.SizedAt.IsZero() || now.Sub(last.SizedAt) >= SizeInterval
}

// Counted is a count of keys and revision made at, with the size last measured (none when
// last is nil): a count does not measure the size, and does not forget it either.
func Counted(last *Usage, keys, revision int64, at time.Time) Usage {
	u := Usage{Keys: keys, Revision: revision, At: at}
	if last != nil {
		u.Bytes, u.SizedAt = last.Bytes, last.SizedAt
	}
	return u
}

// Blocker is why a tenant gets nothing in etcd; the zero value lets it proceed.
type Blocker struct {
	Reason, Message string
}

// Cluster is what a tenant needs to know of its cluster.
type Cluster struct {
	// Found is false when the cluster does not exist or is being deleted.
	Found bool
	// Name is the cluster's name.
	Name string
	// OperatorCA: the cluster's certificates are signed by a CA the operator holds.
	OperatorCA bool
	// AuthEnabled: etcd's authentication is on, as the cluster's status reports it.
	AuthEnabled bool
	// Hibernated: the cluster's spec asks it to hibernate; its members stop or are stopped.
	Hibernated bool
}

// The blockers' reasons, as the API names them (api/v1alpha1 ReasonClusterNotFound and
// the others): this package does not import the API.
const (
	BlockedNoCluster  = "ClusterNotFound"
	BlockedNoTLS      = "TLSModeUnsupported"
	BlockedNoAuth     = "AuthNotEnabled"
	BlockedByConflict = "PrefixConflict"
	BlockedHibernated = "ClusterHibernated"
)

// Admit says whether tenant t of cluster c, beside the tenants others of the same cluster,
// may have a user in etcd; the first blocker found says why not. Its prefix is valid: the
// API refuses any other (ValidPrefix is what it checks).
func Admit(t Tenant, c Cluster, others []Tenant) (Blocker, bool) {
	switch {
	case !c.Found:
		return Blocker{BlockedNoCluster, fmt.Sprintf("no EtcdCluster %s in this namespace: the tenant waits for it", c.Name)}, false
	case !c.OperatorCA:
		return Blocker{BlockedNoTLS, fmt.Sprintf("EtcdCluster %s does not use tls.mode OperatorCA: the operator holds no CA key to sign the tenant's certificate with", c.Name)}, false
	case !c.AuthEnabled:
		return Blocker{BlockedNoAuth, fmt.Sprintf("EtcdCluster %s does not have authentication on in etcd (spec.auth.enabled, then status.auth.enabled): without it a prefix bounds nothing", c.Name)}, false
	}
	if o, conflict := Conflict(t, others); conflict {
		return Blocker{BlockedByConflict, fmt.Sprintf("prefix %s overlaps prefix %s of the older tenant %s, which keeps it: delete this tenant and create one with another prefix", t.Prefix, o.Prefix, o.Name)}, false
	}
	if c.Hibernated {
		return Blocker{BlockedHibernated, fmt.Sprintf("EtcdCluster %s hibernates: its members are stopped, and the tenant's user, role and keys wait in their data; its Secret is kept. The tenant is looked at again when the cluster wakes", c.Name)}, false
	}
	return Blocker{}, true
}

// Deletion is what a pass does for a tenant being deleted with deletionPolicy Delete.
type Deletion struct {
	// Proceed: delete the user, then the keys.
	Proceed bool
	// Record is the usage to keep in status for the next pass (the newest count) when the
	// deletion waits.
	Record Usage
	// Wait is how long before looking again, when the deletion waits.
	Wait time.Duration
	// InUse: a key was written since the last count; Message says so.
	InUse   bool
	Message string
}

// Delete decides whether the keys of a tenant being deleted may go, from the last count in
// its status (nil: none) and a count just made: only when the newest write is the same as
// at a count at least QuietPeriod old, or at once when forced. Otherwise it waits, keeping
// the older count while nothing was written (its age is what counts) and the newer when
// something was.
func Delete(last *Usage, now Usage, forced bool) Deletion {
	switch {
	case forced:
		return Deletion{Proceed: true}
	case last == nil:
		return Deletion{Record: now, Wait: QuietPeriod}
	case now.Revision != last.Revision:
		return Deletion{Record: now, Wait: QuietPeriod, InUse: true,
			Message: fmt.Sprintf("a key under the prefix was written (revision %d) since %s: the keys are kept until no client writes for %s, or the annotation etcd.etcdpilot.io/force-delete is \"true\"",
				now.Revision, last.At.UTC().Format(time.RFC3339), QuietPeriod)}
	}
	if quiet := now.At.Sub(last.At); quiet < QuietPeriod {
		return Deletion{Record: *last, Wait: QuietPeriod - quiet}
	}
	return Deletion{Proceed: true}
}

// KeysGo says whether the keys under t's prefix are deleted with t, among the other tenants
// of its cluster, and why not when they are not: only with deletionPolicy Delete
// (deletePolicy), and only when t holds its prefix. A tenant that met an older one never had
// its prefix: the keys under it are the older tenant's.
func KeysGo(deletePolicy bool, t Tenant, others []Tenant) (bool, string) {
	if !deletePolicy {
		return false, "deletionPolicy Retain"
	}
	if o, conflict := Conflict(t, others); conflict {
		return false, fmt.Sprintf("they are the older tenant %s's: its prefix %s overlaps this one", o.Name, o.Prefix)
	}
	return true, ""
}
