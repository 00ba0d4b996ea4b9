package cluster_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

func TestMemberURLsRoundTrip(t *testing.T) {
	g := NewWithT(t)
	c := cluster.Names{Name: "main", Namespace: "db", TLS: true}

	g.Expect(c.PeerURL("main-2")).To(Equal("https://main-2.main-peer.db.svc:2380"))
	g.Expect(c.ClientURL("main-2")).To(Equal("https://main-2.main-peer.db.svc:2379"))
	name, ok := c.MemberFromPeerURL(c.PeerURL("main-2"))
	g.Expect(ok).To(BeTrue())
	g.Expect(name).To(Equal("main-2"))

	plain := cluster.Names{Name: "main", Namespace: "db"}
	g.Expect(plain.PeerURL("main-0")).To(Equal("http://main-0.main-peer.db.svc:2380"))
}

func TestMemberFromPeerURLRefusesForeignURLs(t *testing.T) {
	c := cluster.Names{Name: "main", Namespace: "db", TLS: true}
	for _, u := range []string{
		"https://main-0.other-peer.db.svc:2380",  // another cluster
		"https://main-0.main-peer.prod.svc:2380", // another namespace
		"https://other-0.main-peer.db.svc:2380",  // not a member name of this cluster
		"https://main-x.main-peer.db.svc:2380",   // no ordinal
		"https://main-01.main-peer.db.svc:2380",  // not canonical
		"https://10.0.0.1:2380",
		"::not a url",
	} {
		_, ok := c.MemberFromPeerURL(u)
		NewWithT(t).Expect(ok).To(BeFalse(), u)
	}
}

func TestMemberOrdinal(t *testing.T) {
	g := NewWithT(t)
	c := cluster.Names{Name: "a-1"}
	n, ok := c.MemberOrdinal("a-1-7")
	g.Expect(ok).To(BeTrue())
	g.Expect(n).To(Equal(7))
	_, ok = c.MemberOrdinal("a-17")
	g.Expect(ok).To(BeFalse())
}
