package framework_test

import (
	"context"
	"crypto/tls"
	"net"
	"net/netip"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	etcdfake "github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// reachable is a TLS cluster c whose client Service is c-client.
func reachable() *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	c.Status.ClientService, c.Status.ClientSecret = "c-client", "c-client-tls"
	c.Status.Members = []etcdv1alpha1.MemberStatus{{Name: "c-0"}, {Name: "c-1"}}
	return c
}

func podWithIP(c *etcdv1alpha1.EtcdCluster, name, ip string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: cluster.For(c).SelectorLabels()}}
	p.Status.PodIP = ip
	return p
}

// From a pod, members and the Service are reached by their DNS names.
func TestAddressesInCluster(t *testing.T) {
	g := NewWithT(t)
	c := reachable()
	env := newEnv(t)
	g.Expect(env.MemberAddresses(context.Background(), c)).To(Equal([]string{"c-0.c-peer.scorecard.svc:2379", "c-1.c-peer.scorecard.svc:2379"}))
	g.Expect(env.ServiceAddress(context.Background(), c)).To(Equal("c-client.scorecard.svc:2379"))
}

// From the machine, only pod IPs inside the pod network are dialed, and the Service by its
// ClusterIP.
func TestAddressesFromHost(t *testing.T) {
	g := NewWithT(t)
	c := reachable()
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c-client"}, Spec: corev1.ServiceSpec{ClusterIP: "198.19.128.9"}}
	env := newEnv(t, clientSecret(t), svc,
		podWithIP(c, "c-0", "198.18.0.5"), podWithIP(c, "c-1", "10.1.0.1"), podWithIP(c, "c-2", ""))
	env.PodNetwork = netip.MustParsePrefix("198.18.0.0/16")
	ctx := context.Background()

	g.Expect(env.MemberAddresses(ctx, c)).To(Equal([]string{"198.18.0.5:2379"}), "10.1.0.1 is outside the pod network")
	g.Expect(env.ServiceAddress(ctx, c)).To(Equal("198.19.128.9:2379"))

	etcd := etcdfake.New()
	env.NewEtcdClient = etcd.Factory()
	_, err := env.Connect(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(etcd.Calls()).To(Equal([]string{"New https://198.18.0.5:2379"}))

	read := env.ReadFromMember(ctx, c, "c-1", "/k")
	g.Expect(read.Err).To(MatchError(ContainSubstring(`member pod c-1 has no IP in 198.18.0.0/16 ("10.1.0.1")`)))

	noPods := newEnv(t, clientSecret(t))
	noPods.PodNetwork = env.PodNetwork
	_, err = noPods.Connect(ctx, c)
	g.Expect(err).To(MatchError(ContainSubstring("no member pod of c has an IP in 198.18.0.0/16 yet")))
}

// From the machine, the member's certificate is checked against the client Service's name,
// not the IP dialed: a certificate for another name is refused.
func TestClientTLSFromHost(t *testing.T) {
	g := NewWithT(t)
	ca := newCA(t)
	secret := clientSecretOf(t, ca)

	fromHost := newEnv(t, secret)
	fromHost.PodNetwork = netip.MustParsePrefix("198.18.0.0/16")
	inCluster := newEnv(t, secret)
	member, stranger := serveTLS(t, ca, "c-client"), serveTLS(t, ca, "other")
	g.Expect(handshake(t, fromHost, member)).To(Succeed())
	g.Expect(handshake(t, fromHost, stranger)).To(MatchError(ContainSubstring("other")))
	g.Expect(handshake(t, inCluster, member)).To(MatchError(ContainSubstring("127.0.0.1")), "in a pod, the name dialed is checked")

	plain := reachable()
	plain.Status.ClientSecret = ""
	g.Expect(fromHost.ClientTLS(context.Background(), plain)).To(BeNil())
}

// serveTLS serves TLS handshakes on loopback with a certificate of ca for dnsName, until
// the test ends, and returns its address.
func serveTLS(t *testing.T, ca *pki.CA, dnsName string) string {
	t.Helper()
	pair, err := ca.IssueServer("member", []string{dnsName}, nil, time.Hour, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		t.Fatal(err)
	}
	l, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			_ = conn.(*tls.Conn).Handshake()
			_ = conn.Close()
		}
	}()
	return l.Addr().String()
}

// handshake dials address with env's ClientTLS of reachable().
func handshake(t *testing.T, env *framework.Env, address string) error {
	t.Helper()
	cfg, err := env.ClientTLS(context.Background(), reachable())
	if err != nil {
		t.Fatal(err)
	}
	return dial(address, cfg)
}

func dial(address string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", address, cfg)
	if err == nil {
		_ = conn.Close()
	}
	return err
}

// A reloading client trusts the CA of its last Reload, and presents the certificate of its
// last Reload or SetCertificate.
func TestReloadingTLS(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	oldCA, newCA := newCA(t), newCA(t)
	secret := clientSecretOf(t, oldCA)
	env := newEnv(t, secret)
	env.PodNetwork = netip.MustParsePrefix("198.18.0.0/16")
	c := reachable()

	rt, err := env.ReloadingTLS(ctx, c)
	g.Expect(err).NotTo(HaveOccurred())
	old, renewed := serveTLS(t, oldCA, "c-client"), serveTLS(t, newCA, "c-client")
	g.Expect(dial(old, rt.Config)).To(Succeed())
	g.Expect(dial(renewed, rt.Config)).To(MatchError(ContainSubstring("unknown authority")))
	first, err := rt.Config.GetClientCertificate(nil)
	g.Expect(err).NotTo(HaveOccurred())

	rotated := clientSecretOf(t, newCA)
	secret.Data = rotated.Data
	g.Expect(env.Client.Update(ctx, secret)).To(Succeed())
	g.Expect(dial(renewed, rt.Config)).To(MatchError(ContainSubstring("unknown authority")), "not reloaded yet")
	g.Expect(rt.Reload(ctx)).To(Succeed())
	g.Expect(dial(renewed, rt.Config)).To(Succeed())
	g.Expect(dial(old, rt.Config)).To(MatchError(ContainSubstring("unknown authority")))
	second, err := rt.Config.GetClientCertificate(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(second.Certificate[0]).NotTo(Equal(first.Certificate[0]))

	rt.SetCertificate(first)
	got, err := rt.Config.GetClientCertificate(nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(BeIdenticalTo(first))

	plain := reachable()
	plain.Status.ClientSecret = ""
	_, err = env.ReloadingTLS(ctx, plain)
	g.Expect(err).To(MatchError(ContainSubstring("no status.clientSecret")))
}

// A member's probe dials the IP its pod has at each dial, not what its name resolves to:
// after a restart in a new pod, the new IP at once; a pod without an IP (or, from the
// machine, with one outside the pod network) fails the dial without connecting anywhere.
func TestPodDialer(t *testing.T) {
	g := NewWithT(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = ln.Close() }()
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			_ = conn.Close()
		}
	}()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	c := reachable()
	env := newEnv(t, podWithIP(c, "c-0", "127.0.0.1"), podWithIP(c, "c-1", ""))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()

	conn, err := env.PodDialer(ns, "c-0")(ctx, "c-0.c-peer.scorecard.svc:"+port)
	g.Expect(err).NotTo(HaveOccurred(), "the name is not looked up: the pod's IP is dialed")
	g.Expect(conn.RemoteAddr().String()).To(Equal(ln.Addr().String()))
	_ = conn.Close()

	_, err = env.PodDialer(ns, "c-1")(ctx, "c-1.c-peer.scorecard.svc:"+port)
	g.Expect(err).To(MatchError(ContainSubstring("member pod c-1 has no IP to dial")))
	_, err = env.PodDialer(ns, "c-2")(ctx, "c-2.c-peer.scorecard.svc:"+port)
	g.Expect(err).To(MatchError(ContainSubstring("reading member pod c-2")))

	env.PodNetwork = netip.MustParsePrefix("198.18.0.0/16")
	_, err = env.PodDialer(ns, "c-0")(ctx, "198.18.0.5:"+port)
	g.Expect(err).To(MatchError(ContainSubstring("member pod c-0 has no IP to dial")), "from the machine, 127.0.0.1 is outside the pod network")
}
