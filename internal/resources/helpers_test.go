package resources_test

import (
	"github.com/etcdpilot/etcdpilot/internal/versions"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

const repo = "registry.example/etcd"

// images runs every release from repo.
var images = versions.Images{Repository: repo}

// newCluster is an EtcdCluster as a user would write it: no spec field set, so every
// builder has to fall back on the defaults.
func newCluster() *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{
		Name:      "main",
		Namespace: "db",
		UID:       "6f1c2d7e-0b7a-4a53-9d55-3c1c2b0f8e11",
	}}
}

// plainCluster is newCluster with TLS disabled.
func plainCluster() *etcdv1alpha1.EtcdCluster {
	c := newCluster()
	c.Spec.TLS.Mode = etcdv1alpha1.TLSModeDisabled
	return c
}

// initialCluster lists the first n members of c as "name=peerURL".
func initialCluster(c *etcdv1alpha1.EtcdCluster, n int) []string {
	cl := cluster.For(c)
	var out []string
	for i := range n {
		out = append(out, cl.MemberName(i)+"="+cl.PeerURL(cl.MemberName(i)))
	}
	return out
}
