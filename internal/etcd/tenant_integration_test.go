package etcd_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/auth"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

// The calls a tenant needs, against a real etcd with authentication on and each identity a
// client certificate: what the tenant's own certificate may then do, etcd says.
func TestTenantRangeAgainstRealEtcd(t *testing.T) {
	g := NewWithT(t)
	certs := etcdtest.WriteCerts(t, t.TempDir(), etcdtest.CertOptions{
		CAName: "etcd-test-ca", ServerName: "etcd-test", ClientName: "etcdpilot", OtherClients: []string{"tenant:a", "tenant:b"},
	})
	e := etcdtest.Start(t, etcdtest.Options{Certs: certs})
	url := e.ClientURLs[0]
	root := newClient(t, etcd.Config{Endpoints: []string{url}, TLS: certs.ClientTLS(t)})
	e.WaitReady(t, func(ctx context.Context) error { return root.Health(ctx, url) })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	_, err := root.GrantRoot(ctx, []string{auth.RootUser, "etcdpilot"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(root.SetAuth(ctx, true)).To(Succeed())

	a := etcd.Range{Key: "/tenants/a/", End: tenant.RangeEnd("/tenants/a/")}
	g.Expect(root.GrantRange(ctx, tenant.User("a"), a)).To(Succeed())
	g.Expect(root.GrantRange(ctx, tenant.User("a"), a)).To(Succeed(), "a second time changes nothing")
	g.Expect(root.Put(ctx, "/tenants/ab/other", "x")).To(Succeed())
	g.Expect(root.Put(ctx, "/tenants/b/other", "x")).To(Succeed())
	tenantA := newClient(t, etcd.Config{Endpoints: []string{url}, TLS: certs.TLSAs(t, "tenant:a")})
	denied := WithTransform(etcd.IsPermissionDenied, BeTrue())

	g.Expect(tenantA.Put(ctx, "/tenants/a/registry/pods/p", "1")).To(Succeed())
	g.Expect(read(ctx, tenantA, "/tenants/a/registry/pods/p")).To(Equal("1"))
	g.Expect(tenantA.Put(ctx, "/tenants/ab/x", "1")).To(denied, "the trailing '/' bounds the range")
	g.Expect(tenantA.Put(ctx, "/tenants/b/x", "1")).To(denied)
	_, _, err = tenantA.Get(ctx, "/tenants/b/other")
	g.Expect(err).To(denied)
	_, err = tenantA.MemberList(ctx)
	g.Expect(err).NotTo(HaveOccurred(), "listing the members is open to any client")
	g.Expect(tenantA.MemberRemove(ctx, 12345)).To(denied, "member management is root's (checked before the member is looked up)")
	g.Expect(tenantA.Compact(ctx, 1)).To(denied, "compaction is root's: etcd's own auto-compaction does it")

	g.Expect(root.Put(ctx, "/tenants/b/later", "x")).To(Succeed())
	keys, revision, err := root.CountRange(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(keys).To(Equal(int64(1)))
	st, err := root.Status(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(revision).To(BeNumerically("<", st.Revision), "the newest write under the prefix, not the cluster's")
	g.Expect(revision).To(BeNumerically(">", 1))
	// More keys than a page holds: every page counted once, nothing outside the range.
	for i := range etcd.SizePageKeys + 5 {
		g.Expect(root.Put(ctx, fmt.Sprintf("/tenants/a/registry/configmaps/cm-%03d", i), "0123456789")).To(Succeed())
	}
	size, err := root.SizeRange(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())
	want := int64(len("/tenants/a/registry/pods/p") + len("1"))
	for i := range etcd.SizePageKeys + 5 {
		want += int64(len(fmt.Sprintf("/tenants/a/registry/configmaps/cm-%03d", i)) + len("0123456789"))
	}
	g.Expect(size).To(Equal(want))
	cms := etcd.Range{Key: "/tenants/a/registry/configmaps/", End: tenant.RangeEnd("/tenants/a/registry/configmaps/")}
	g.Expect(root.DeleteRange(ctx, cms)).To(Equal(int64(etcd.SizePageKeys + 5)))

	// A role given by hand is taken away again.
	_, err = root.GrantRoot(ctx, []string{tenant.User("a")})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(tenantA.Put(ctx, "/tenants/b/x", "1")).To(Succeed(), "root, by hand")
	g.Expect(root.GrantRange(ctx, tenant.User("a"), a)).To(Succeed())
	g.Expect(tenantA.Put(ctx, "/tenants/b/x", "1")).To(denied, "only its own role again")

	// Read-only in place: reads go on, writes are refused.
	g.Expect(root.GrantRange(ctx, tenant.User("a"), etcd.Range{Key: a.Key, End: a.End, ReadOnly: true})).To(Succeed())
	g.Expect(tenantA.Put(ctx, "/tenants/a/registry/pods/q", "1")).To(denied)
	g.Expect(read(ctx, tenantA, "/tenants/a/registry/pods/p")).To(Equal("1"))

	// Another user's certificate is nobody until it is granted.
	tenantB := newClient(t, etcd.Config{Endpoints: []string{url}, TLS: certs.TLSAs(t, "tenant:b")})
	g.Expect(tenantB.Put(ctx, "/tenants/b/x", "1")).NotTo(Succeed())

	deleted, err := root.DeleteRange(ctx, a)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(deleted).To(Equal(int64(1)))
	g.Expect(read(ctx, root, "/tenants/ab/other")).To(Equal("x"), "only the prefix's keys go")
	g.Expect(root.RevokeUser(ctx, tenant.User("a"))).To(Succeed())
	g.Expect(root.RevokeUser(ctx, tenant.User("a"))).To(Succeed(), "already gone counts as done")
	_, _, err = tenantA.Get(ctx, "/tenants/a/registry/pods/p")
	g.Expect(err).To(HaveOccurred(), "the certificate opens nothing once the user is gone")
}

// read is the value of key, or the error of reading it; "" when it does not exist.
func read(ctx context.Context, c etcd.Client, key string) (string, error) {
	v, _, err := c.Get(ctx, key)
	return v, err
}
