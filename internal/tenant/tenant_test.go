package tenant_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/etcdpilot/etcdpilot/internal/auth"
	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

func TestUserCannotBeAnAdmin(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tenant.User("a")).To(Equal("tenant:a"))
	for _, admin := range auth.Admins("etcdpilot", "root-member") {
		g.Expect(tenant.User("root")).NotTo(Equal(admin))
		g.Expect(tenant.User("member")).NotTo(Equal(admin))
	}
}

func TestValidPrefix(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tenant.ValidPrefix("/tenants/a/")).To(Succeed())
	g.Expect(tenant.ValidPrefix("/a/")).To(Succeed())
	g.Expect(tenant.ValidPrefix("tenants/a/")).To(MatchError(ContainSubstring("must start with '/'")))
	g.Expect(tenant.ValidPrefix("/tenants/a")).To(MatchError(ContainSubstring("must end with '/'")))
	g.Expect(tenant.ValidPrefix("/")).To(MatchError(ContainSubstring("every key")))
}

// RangeEnd is etcd's own prefix range end.
func TestRangeEndIsEtcds(t *testing.T) {
	g := NewWithT(t)
	for _, p := range []string{"/tenants/a/", "/a/", "/x\xff", "/\xff\xff", "\xff"} {
		g.Expect(tenant.RangeEnd(p)).To(Equal(clientv3.GetPrefixRangeEnd(p)), "%q", p)
	}
	g.Expect(tenant.RangeEnd("/a/")).To(Equal("/a0"))
}

func TestOverlap(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tenant.Overlap("/a/", "/a/b/")).To(BeTrue())
	g.Expect(tenant.Overlap("/a/b/", "/a/")).To(BeTrue())
	g.Expect(tenant.Overlap("/a/", "/a/")).To(BeTrue())
	g.Expect(tenant.Overlap("/a/", "/ab/")).To(BeFalse(), "the trailing '/' keeps /a/ from covering /ab/")
}

// The tenant created first keeps its prefix; the younger one is told which it meets.
func TestConflict(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	a := tenant.Tenant{Name: "a", Prefix: "/shared/", Created: t0}
	b := tenant.Tenant{Name: "b", Prefix: "/shared/b/", Created: t0.Add(time.Minute)}
	c := tenant.Tenant{Name: "c", Prefix: "/c/", Created: t0}
	all := []tenant.Tenant{a, b, c}

	_, conflict := tenant.Conflict(a, all)
	g.Expect(conflict).To(BeFalse(), "the older one keeps its prefix")
	got, conflict := tenant.Conflict(b, all)
	g.Expect(conflict).To(BeTrue())
	g.Expect(got.Name).To(Equal("a"))
	_, conflict = tenant.Conflict(c, all)
	g.Expect(conflict).To(BeFalse(), "no overlap")

	// Created in the same second: the name decides, the same way for both.
	a2 := tenant.Tenant{Name: "a2", Prefix: "/shared/", Created: t0}
	got, conflict = tenant.Conflict(a2, append(all, a2))
	g.Expect(conflict).To(BeTrue())
	g.Expect(got.Name).To(Equal("a"))
	_, conflict = tenant.Conflict(a, append(all, a2))
	g.Expect(conflict).To(BeFalse())
}
