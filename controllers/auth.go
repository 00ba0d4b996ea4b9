package controllers

import (
	"context"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/auth"
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
	o := auth.Observed{Enabled: enabled}
	if last != nil && last.Enabled && enabled {
		o.RootUsers = last.RootUsers
	}
	admins := auth.Admins(p.tls.clientCN, p.tls.memberCN)
	// At most GrantRoot then Enable, or Disable: each Plan after an act is closer to None.
	for range 3 {
		a := auth.Plan(want, admins, o)
		switch a.Kind {
		case auth.None:
			return authStatus(o), nil
		case auth.GrantRoot:
			rooted, err := cli.GrantRoot(ctx, a.Users)
			o.RootUsers = rooted
			if err != nil {
				return authStatus(o), err
			}
		case auth.Enable, auth.Disable:
			if err := cli.SetAuth(ctx, a.Kind == auth.Enable); err != nil {
				return authStatus(o), err
			}
			o.Enabled = a.Kind == auth.Enable
		}
	}
	return authStatus(o), nil
}

// authStatus is status.auth from what etcd reported: the root users only while auth is on.
func authStatus(o auth.Observed) *etcdv1alpha1.AuthStatus {
	st := &etcdv1alpha1.AuthStatus{Enabled: o.Enabled}
	if o.Enabled {
		st.RootUsers = o.RootUsers
	}
	return st
}
