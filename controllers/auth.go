package controllers

import (
	"context"
	"fmt"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/auth"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// configureAuth brings etcd's authentication to spec.auth (auth.Plan): the admins made and
// given the root role, then authentication turned on; or turned off. It returns
// status.auth as etcd reported it after the changes; nil when it did not look (auth.Look).
func (r *EtcdClusterReconciler) configureAuth(ctx context.Context, p *clusterPass) (*etcdv1alpha1.AuthStatus, error) {
	c, cli := p.cluster, p.obs.etcd
	want := c.Spec.Auth.Enabled
	var last *auth.Observed
	if s := c.Status.Auth; s != nil {
		last = &auth.Observed{Enabled: s.Enabled, RootUsers: s.RootUsers}
	}
	restored := c.Spec.Bootstrap != nil && c.Spec.Bootstrap.Restore != nil
	if cli == nil || !auth.Look(want, last, restored) {
		return nil, nil
	}
	enabled, err := cli.AuthEnabled(ctx)
	if err != nil {
		return nil, err
	}
	o := auth.Observe(last, enabled)
	admins := auth.Admins(p.tls.clientCN, p.tls.memberCN)
	// At most GrantRoot then Enable, or Disable: each Plan after an act is closer to None.
	for range 2 {
		a := auth.Plan(want, admins, o)
		if a.Kind == auth.None {
			break
		}
		if err := applyAuth(ctx, cli, a, &o); err != nil {
			return authStatus(o), err
		}
	}
	return authStatus(o), nil
}

// applyAuth carries a out with cli and records in o what etcd then reports.
func applyAuth(ctx context.Context, cli etcd.Client, a auth.Action, o *auth.Observed) error {
	switch a.Kind {
	case auth.GrantRoot:
		rooted, err := cli.GrantRoot(ctx, a.Users)
		o.RootUsers = rooted
		if err != nil {
			return err
		}
		if lacking := auth.Lacking(a.Users, rooted); len(lacking) > 0 {
			// Enabling now could lock the operator out: say so, and try again next pass.
			return fmt.Errorf("etcd does not list the root role for users %s after granting it", strings.Join(lacking, ", "))
		}
	case auth.Enable, auth.Disable:
		if err := cli.SetAuth(ctx, a.Kind == auth.Enable); err != nil {
			return err
		}
		o.Enabled = a.Kind == auth.Enable
	}
	return nil
}

// authStatus is status.auth from what etcd reported: the root users only while auth is on.
func authStatus(o auth.Observed) *etcdv1alpha1.AuthStatus {
	st := &etcdv1alpha1.AuthStatus{Enabled: o.Enabled}
	if o.Enabled {
		st.RootUsers = o.RootUsers
	}
	return st
}
