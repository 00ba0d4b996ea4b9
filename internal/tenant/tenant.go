// Package tenant decides what a tenant of an EtcdCluster is in etcd: its user and role, the
// key range its prefix covers, and which of two tenants with overlapping prefixes keeps its
// own. It decides only; the controller acts.
package tenant

import (
	"errors"
	"slices"
	"strings"
	"time"
)

// userPrefix starts every tenant's etcd user and role. A Kubernetes name cannot hold ':', so
// no tenant's user can be root, the operator's or the members' (auth.Admins), whose names
// come from Kubernetes names and fixed words.
const userPrefix = "tenant:"

// User is the etcd user and role of the tenant named name, and the common name of its
// certificate.
func User(name string) string { return userPrefix + name }

// ValidPrefix says why prefix cannot be a tenant's, nil when it can: absolute, ending in '/'
// (so that /a/ does not cover /ab/), and not '/' alone (every key).
func ValidPrefix(prefix string) error {
	switch {
	case !strings.HasPrefix(prefix, "/"):
		return errors.New("a prefix must start with '/'")
	case !strings.HasSuffix(prefix, "/"):
		return errors.New("a prefix must end with '/', or it would cover the keys of longer prefixes too")
	case prefix == "/":
		return errors.New("a prefix cannot be '/' alone: it would cover every key")
	}
	return nil
}

// RangeEnd is the end of the key range that prefix starts: the keys k with prefix <= k <
// RangeEnd(prefix) are exactly those that start with prefix. A valid prefix ends in '/',
// whose successor is '0'; in general the last byte below 0xff is incremented and the rest
// dropped.
func RangeEnd(prefix string) string {
	end := []byte(prefix)
	for i := len(end) - 1; i >= 0; i-- {
		if end[i] < 0xff {
			end[i]++
			return string(end[:i+1])
		}
	}
	return "\x00" // every byte 0xff: to the end of the key space, as etcd writes it
}

// Overlap says whether two prefixes share keys: one starts with the other.
func Overlap(a, b string) bool {
	return strings.HasPrefix(a, b) || strings.HasPrefix(b, a)
}

// Tenant is what Conflict compares of a tenant.
type Tenant struct {
	Name    string
	Prefix  string
	Created time.Time
}

// Conflict returns the tenant among others whose prefix overlaps t's and that keeps its own:
// the one created first (by name when created in the same second), which is not t. A tenant
// that meets such a one gets nothing in etcd; the one created first is never taken from.
func Conflict(t Tenant, others []Tenant) (Tenant, bool) {
	var older []Tenant
	for _, o := range others {
		if o.Name != t.Name && Overlap(o.Prefix, t.Prefix) && first(o, t) {
			older = append(older, o)
		}
	}
	if len(older) == 0 {
		return Tenant{}, false
	}
	return slices.MinFunc(older, func(a, b Tenant) int {
		if first(a, b) {
			return -1
		}
		return 1
	}), true
}

// first says whether a was created before b, by name at the same time.
func first(a, b Tenant) bool {
	if !a.Created.Equal(b.Created) {
		return a.Created.Before(b.Created)
	}
	return a.Name < b.Name
}
