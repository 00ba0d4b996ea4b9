// Package auth decides how etcd's authentication follows spec.auth: which users hold the root
// role, and when authentication is turned on or off. It decides only; the controller acts.
package auth

import (
	"slices"
)

// RootRole is etcd's role that may do anything; etcd refuses to enable authentication until
// the user RootUser holds it.
const RootRole = "root"

// RootUser is the user etcd requires before it enables authentication. The operator makes it
// without a password and issues no certificate for it: nobody can act as it.
const RootUser = "root"

// Observed is what etcd reported of its authentication.
type Observed struct {
	// Enabled is etcd's own AuthStatus.
	Enabled bool
	// RootUsers are the users last seen holding the root role (status.auth.rootUsers), as
	// the status recorded them; nil when never checked or when auth was off.
	RootUsers []string
}

// Kind is what Plan asks of the operator.
type Kind string

const (
	// None says that etcd's authentication is what the spec asks.
	None Kind = ""
	// GrantRoot makes each of Users (with no password) and gives it the root role, then
	// reads their roles back. Each part is harmless when already done.
	GrantRoot Kind = "GrantRoot"
	// Enable turns authentication on; every user of Admins holds the root role.
	Enable Kind = "Enable"
	// Disable turns authentication off; users and roles stay.
	Disable Kind = "Disable"
)

// Action is Plan's answer.
type Action struct {
	Kind  Kind
	Users []string
}

// Admins are the users that must hold the root role while authentication is on: root, and
// the common names of the client certificate (the operator's, backups' and the holder of
// status.clientSecret) and of the members' certificate (their own etcdctl, the snapshots the
// operator takes in a member). Empty names are left out; the result is sorted, without
// duplicates.
func Admins(clientCN, memberCN string) []string {
	out := []string{RootUser}
	for _, n := range []string{clientCN, memberCN} {
		if n != "" {
			out = append(out, n)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Plan returns the next step towards want (spec.auth.enabled) from what etcd reported:
// with auth wanted, the admins first hold the root role (and are seen holding it), then
// authentication is enabled; a cluster whose authentication is on is checked again only when
// the admins are not all known to hold the root role, as after a restore from another
// cluster's backup. With auth not wanted, authentication is disabled.
func Plan(want bool, admins []string, o Observed) Action {
	switch {
	case !want && o.Enabled:
		return Action{Kind: Disable}
	case !want:
		return Action{}
	case missing(admins, o.RootUsers):
		return Action{Kind: GrantRoot, Users: admins}
	case !o.Enabled:
		return Action{Kind: Enable, Users: admins}
	}
	return Action{}
}

// missing says whether some of want is not in have.
func missing(want, have []string) bool {
	return len(Lacking(want, have)) > 0
}

// Lacking are the users of want that are not in have, in want's order.
func Lacking(want, have []string) []string {
	var out []string
	for _, w := range want {
		if !slices.Contains(have, w) {
			out = append(out, w)
		}
	}
	return out
}

// Observe is what etcd reports (enabled: its AuthStatus) together with what the last status
// recorded: the root users last seen are kept only while authentication stayed on, since a
// cluster whose authentication was off, or turned on by a restore, must be checked again.
func Observe(last *Observed, enabled bool) Observed {
	o := Observed{Enabled: enabled}
	if last != nil && last.Enabled && enabled {
		o.RootUsers = last.RootUsers
	}
	return o
}

// Look says whether the operator asks etcd about its authentication in a pass: when auth is
// wanted, when it was last seen on, and once for a cluster restored from a backup, whose
// data carries the authentication of the cluster it was taken from. last is nil when the
// operator never asked. A cluster that never asked for auth costs etcd nothing.
func Look(want bool, last *Observed, restored bool) bool {
	return want || last != nil && last.Enabled || restored && last == nil
}
