package tenant_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

func TestAdmit(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	a := tenant.Tenant{Name: "a", Prefix: "/a/", Created: t0}
	ok := tenant.Cluster{Found: true, Name: "c", OperatorCA: true, AuthEnabled: true}

	_, admitted := tenant.Admit(a, ok, nil)
	g.Expect(admitted).To(BeTrue())

	for _, tc := range []struct {
		cluster tenant.Cluster
		reason  string
	}{
		{tenant.Cluster{Name: "c"}, tenant.BlockedNoCluster},
		{tenant.Cluster{Found: true, Name: "c", AuthEnabled: true}, tenant.BlockedNoTLS},
		{tenant.Cluster{Found: true, Name: "c", OperatorCA: true}, tenant.BlockedNoAuth},
		{tenant.Cluster{Found: true, Name: "c", OperatorCA: true, AuthEnabled: true, Hibernated: true}, tenant.BlockedHibernated},
	} {
		b, admitted := tenant.Admit(a, tc.cluster, nil)
		g.Expect(admitted).To(BeFalse())
		g.Expect(b.Reason).To(Equal(tc.reason))
		g.Expect(b.Message).To(ContainSubstring("EtcdCluster c"))
	}

	older := tenant.Tenant{Name: "old", Prefix: "/", Created: t0.Add(-time.Hour)}
	b, admitted := tenant.Admit(a, ok, []tenant.Tenant{older, {Name: "z", Prefix: "/z/", Created: t0}})
	g.Expect(admitted).To(BeFalse())
	g.Expect(b.Reason).To(Equal(tenant.BlockedByConflict))
	g.Expect(b.Message).To(ContainSubstring("older tenant old"))

	_, admitted = tenant.Admit(older, ok, []tenant.Tenant{a})
	g.Expect(admitted).To(BeTrue(), "the older one keeps its prefix")
}

func TestCountDue(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	g.Expect(tenant.CountDue(nil, t0)).To(BeTrue())
	g.Expect(tenant.CountDue(&tenant.Usage{At: t0}, t0.Add(59*time.Second))).To(BeFalse())
	g.Expect(tenant.CountDue(&tenant.Usage{At: t0}, t0.Add(time.Minute))).To(BeTrue())

	// The size: measured at the first count, then every ten minutes, whatever the counts.
	g.Expect(tenant.SizeDue(nil, t0)).To(BeTrue())
	g.Expect(tenant.SizeDue(&tenant.Usage{At: t0}, t0)).To(BeTrue(), "counted, never measured")
	g.Expect(tenant.SizeDue(&tenant.Usage{At: t0.Add(9 * time.Minute), SizedAt: t0}, t0.Add(9*time.Minute+59*time.Second))).To(BeFalse())
	g.Expect(tenant.SizeDue(&tenant.Usage{At: t0.Add(9 * time.Minute), SizedAt: t0}, t0.Add(10*time.Minute))).To(BeTrue())
	last := &tenant.Usage{Keys: 3, Revision: 10, At: t0, Bytes: 4096, SizedAt: t0}
	g.Expect(tenant.Counted(last, 4, 12, t0.Add(time.Minute))).To(Equal(tenant.Usage{Keys: 4, Revision: 12, At: t0.Add(time.Minute), Bytes: 4096, SizedAt: t0}),
		"a count keeps the size it did not measure")
	g.Expect(tenant.Counted(nil, 4, 12, t0)).To(Equal(tenant.Usage{Keys: 4, Revision: 12, At: t0}))
}

// The keys go only after QuietPeriod without a write, or at once when forced.
func TestDelete(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	last := &tenant.Usage{Keys: 3, Revision: 10, At: t0}
	at := func(d time.Duration, rev int64) tenant.Usage {
		return tenant.Usage{Keys: 3, Revision: rev, At: t0.Add(d)}
	}

	d := tenant.Delete(nil, at(0, 10), false)
	g.Expect(d).To(Equal(tenant.Deletion{Record: at(0, 10), Wait: tenant.QuietPeriod}), "never counted: count now, look again after the period")

	d = tenant.Delete(last, at(10*time.Second, 10), false)
	g.Expect(d).To(Equal(tenant.Deletion{Record: *last, Wait: 20 * time.Second}), "quiet so far: the older count is kept, its age counts")

	d = tenant.Delete(last, at(40*time.Second, 11), false)
	g.Expect(d.Proceed).To(BeFalse())
	g.Expect(d.InUse).To(BeTrue())
	g.Expect(d.Record).To(Equal(at(40*time.Second, 11)))
	g.Expect(d.Wait).To(Equal(tenant.QuietPeriod))
	g.Expect(d.Message).To(ContainSubstring("revision 11"))
	g.Expect(d.Message).To(ContainSubstring("etcd.etcdpilot.io/force-delete"))

	g.Expect(tenant.Delete(last, at(30*time.Second, 10), false).Proceed).To(BeTrue())
	g.Expect(tenant.Delete(last, at(time.Second, 12), true).Proceed).To(BeTrue(), "forced")
	g.Expect(tenant.Delete(nil, at(0, 12), true).Proceed).To(BeTrue(), "forced")
}

func TestSecretName(t *testing.T) {
	NewWithT(t).Expect(tenant.SecretName("cp-a")).To(Equal("cp-a-etcd-client"))
}

// The keys go with a tenant only with deletionPolicy Delete, and only when it held its
// prefix.
func TestKeysGo(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	older := tenant.Tenant{Name: "a", Prefix: "/a/", Created: t0}
	younger := tenant.Tenant{Name: "d", Prefix: "/a/registry/", Created: t0.Add(time.Minute)}
	other := tenant.Tenant{Name: "z", Prefix: "/z/", Created: t0}

	gone, why := tenant.KeysGo(true, younger, []tenant.Tenant{older, other})
	g.Expect(gone).To(BeFalse())
	g.Expect(why).To(Equal("they are the older tenant a's: its prefix /a/ overlaps this one"))
	gone, why = tenant.KeysGo(false, older, nil)
	g.Expect(gone).To(BeFalse())
	g.Expect(why).To(Equal("deletionPolicy Retain"))
	gone, _ = tenant.KeysGo(true, older, []tenant.Tenant{younger, other})
	g.Expect(gone).To(BeTrue(), "the older one holds its prefix, the younger's keys inside it included")
}
