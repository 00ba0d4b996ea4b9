package pki_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// now is a fixed whole-second instant: certificates store times with second precision,
// so exact comparisons need one.
var now = time.Date(2026, time.March, 1, 12, 0, 0, 0, time.UTC)

const (
	caValidity   = 10 * 365 * 24 * time.Hour
	leafValidity = 365 * 24 * time.Hour
)

// Names as the operator would use them: a wildcard over the headless peer Service plus
// the client Service and loopback.
var (
	serverDNSNames = []string{"*.etcd-peer.ns.svc", "etcd-client.ns.svc"}
	serverIPs      = []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("::1")}
)

// newCA creates and loads a CA. All test CAs have the same name, as an old and a new CA
// would after a rotation: only their keys tell them apart.
func newCA(g Gomega, at time.Time) (pki.KeyPair, *pki.CA) {
	pair, err := pki.NewCA("etcd-ca", caValidity, at)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(pair)
	g.Expect(err).NotTo(HaveOccurred())
	return pair, ca
}

func issueServer(g Gomega, ca *pki.CA) pki.KeyPair {
	pair, err := ca.IssueServer("etcd-server", serverDNSNames, serverIPs, leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	return pair
}

func issueClient(g Gomega, ca *pki.CA) pki.KeyPair {
	pair, err := ca.IssueClient("root", leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	return pair
}

func parseCert(g Gomega, certPEM []byte) *x509.Certificate {
	block, _ := pem.Decode(certPEM)
	g.Expect(block).NotTo(BeNil())
	g.Expect(block.Type).To(Equal("CERTIFICATE"))
	cert, err := x509.ParseCertificate(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	return cert
}

// expectP256Key checks that the key PEM is PKCS#8, P-256, and belongs to the certificate.
func expectP256Key(g Gomega, pair pki.KeyPair) {
	block, _ := pem.Decode(pair.KeyPEM)
	g.Expect(block).NotTo(BeNil())
	g.Expect(block.Type).To(Equal("PRIVATE KEY"))
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	ecKey, ok := key.(*ecdsa.PrivateKey)
	g.Expect(ok).To(BeTrue(), "key is %T, want *ecdsa.PrivateKey", key)
	g.Expect(ecKey.Curve).To(Equal(elliptic.P256()))
	g.Expect(ecKey.PublicKey.Equal(parseCert(g, pair.CertPEM).PublicKey)).To(BeTrue())
}

func TestNewCA(t *testing.T) {
	g := NewWithT(t)

	pair, ca := newCA(g, now)
	cert := parseCert(g, pair.CertPEM)

	g.Expect(cert.Subject.CommonName).To(Equal("etcd-ca"))
	g.Expect(cert.IsCA).To(BeTrue())
	g.Expect(cert.BasicConstraintsValid).To(BeTrue())
	g.Expect(cert.MaxPathLen).To(Equal(0))
	g.Expect(cert.MaxPathLenZero).To(BeTrue(), "the CA must not be allowed to sign intermediates")
	g.Expect(cert.KeyUsage).To(Equal(x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature))
	g.Expect(cert.NotBefore).To(BeTemporally("==", now.Add(-time.Hour)), "NotBefore is back-dated for clock skew")
	g.Expect(cert.NotAfter).To(BeTemporally("==", now.Add(caValidity)))
	g.Expect(cert.CheckSignatureFrom(cert)).To(Succeed(), "the CA is self-signed")
	g.Expect(cert.SerialNumber.Sign()).To(Equal(1))
	g.Expect(cert.SerialNumber.BitLen()).To(BeNumerically("<=", 128))
	expectP256Key(g, pair)
	g.Expect(ca.CertPEM()).To(Equal(pair.CertPEM))

	other, _ := newCA(g, now)
	g.Expect(parseCert(g, other.CertPEM).SerialNumber).NotTo(Equal(cert.SerialNumber), "serial numbers are random")
}

func TestNewCARejectsBadInput(t *testing.T) {
	cases := []struct {
		name       string
		commonName string
		validity   time.Duration
		wantErr    string
	}{
		{name: "empty common name", commonName: "", validity: time.Hour, wantErr: "common name is empty"},
		{name: "zero validity", commonName: "ca", validity: 0, wantErr: "not positive"},
		{name: "negative validity", commonName: "ca", validity: -time.Hour, wantErr: "not positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := pki.NewCA(tc.commonName, tc.validity, now)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

// caWithoutCertSign returns a self-signed CA:TRUE certificate whose key usage does not
// allow signing certificates, which NewCA never produces.
func caWithoutCertSign(g Gomega) pki.KeyPair {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "no-cert-sign"},
		NotBefore:             now,
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	g.Expect(err).NotTo(HaveOccurred())
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	g.Expect(err).NotTo(HaveOccurred())
	return pki.KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}
}

// sec1Key re-encodes a PKCS#8 EC key as SEC 1 ("EC PRIVATE KEY"), as openssl writes it.
func sec1Key(g Gomega, keyPEM []byte) []byte {
	block, _ := pem.Decode(keyPEM)
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	der, err := x509.MarshalECPrivateKey(key.(*ecdsa.PrivateKey))
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der})
}

func TestLoadCA(t *testing.T) {
	g := NewWithT(t)
	caPair, ca := newCA(g, now)
	otherCAPair, _ := newCA(g, now)
	leaf := issueServer(g, ca)

	cases := []struct {
		name    string
		pair    pki.KeyPair
		wantErr string // empty: LoadCA must succeed
	}{
		{name: "CA from NewCA", pair: caPair},
		{name: "SEC 1 key", pair: pki.KeyPair{CertPEM: caPair.CertPEM, KeyPEM: sec1Key(g, caPair.KeyPEM)}},
		{name: "leaf certificate", pair: leaf, wantErr: "is not a CA certificate"},
		{name: "key of another CA", pair: pki.KeyPair{CertPEM: caPair.CertPEM, KeyPEM: otherCAPair.KeyPEM}, wantErr: "private key does not match public key"},
		{name: "CA without certSign", pair: caWithoutCertSign(g), wantErr: "lacks the certSign key usage"},
		{name: "no certificate", pair: pki.KeyPair{KeyPEM: caPair.KeyPEM}, wantErr: "failed to find any PEM data in certificate input"},
		{name: "no key", pair: pki.KeyPair{CertPEM: caPair.CertPEM}, wantErr: "failed to find any PEM data in key input"},
		{name: "key and certificate swapped", pair: pki.KeyPair{CertPEM: caPair.KeyPEM, KeyPEM: caPair.CertPEM}, wantErr: "loading CA key pair"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := pki.LoadCA(tc.pair)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(got.CertPEM()).To(Equal(caPair.CertPEM))
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
			g.Expect(got).To(BeNil())
		})
	}
}

func TestIssueServer(t *testing.T) {
	g := NewWithT(t)
	caPair, ca := newCA(g, now)
	pair := issueServer(g, ca)
	cert := parseCert(g, pair.CertPEM)

	g.Expect(cert.Subject.CommonName).To(Equal("etcd-server"))
	g.Expect(cert.IsCA).To(BeFalse())
	g.Expect(cert.DNSNames).To(Equal(serverDNSNames))
	g.Expect(cert.IPAddresses).To(HaveLen(2))
	g.Expect(cert.IPAddresses[0].Equal(serverIPs[0])).To(BeTrue())
	g.Expect(cert.IPAddresses[1].Equal(serverIPs[1])).To(BeTrue())
	g.Expect(cert.ExtKeyUsage).To(ConsistOf(x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth))
	g.Expect(cert.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment))
	g.Expect(cert.NotBefore).To(BeTemporally("==", now.Add(-time.Hour)), "NotBefore is back-dated for clock skew")
	g.Expect(cert.NotAfter).To(BeTemporally("==", now.Add(leafValidity)))
	g.Expect(cert.CheckSignatureFrom(parseCert(g, caPair.CertPEM))).To(Succeed())
	expectP256Key(g, pair)
}

func TestIssueClient(t *testing.T) {
	g := NewWithT(t)
	caPair, ca := newCA(g, now)
	pair := issueClient(g, ca)
	cert := parseCert(g, pair.CertPEM)

	g.Expect(cert.Subject.CommonName).To(Equal("root"), "etcd takes the common name as the user name")
	g.Expect(cert.IsCA).To(BeFalse())
	g.Expect(cert.DNSNames).To(BeEmpty())
	g.Expect(cert.IPAddresses).To(BeEmpty())
	g.Expect(cert.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}))
	g.Expect(cert.KeyUsage).To(Equal(x509.KeyUsageDigitalSignature))
	g.Expect(cert.NotBefore).To(BeTemporally("==", now.Add(-time.Hour)))
	g.Expect(cert.NotAfter).To(BeTemporally("==", now.Add(leafValidity)))
	g.Expect(cert.CheckSignatureFrom(parseCert(g, caPair.CertPEM))).To(Succeed())
	expectP256Key(g, pair)
}

func TestIssuedCertificatesEndWithTheCA(t *testing.T) {
	g := NewWithT(t)
	caPair, err := pki.NewCA("short-lived-ca", 48*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(caPair)
	g.Expect(err).NotTo(HaveOccurred())
	caNotAfter := now.Add(48 * time.Hour)

	server, err := ca.IssueServer("etcd-server", serverDNSNames, nil, leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parseCert(g, server.CertPEM).NotAfter).To(BeTemporally("==", caNotAfter))

	client, err := ca.IssueClient("root", leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(parseCert(g, client.CertPEM).NotAfter).To(BeTemporally("==", caNotAfter))

	_, err = ca.IssueClient("root", leafValidity, caNotAfter)
	g.Expect(err).To(MatchError(ContainSubstring(`CA "short-lived-ca" expired`)))
}

func TestIssueRejectsBadInput(t *testing.T) {
	_, ca := newCA(NewWithT(t), now)
	cases := []struct {
		name       string
		commonName string
		dnsNames   []string
		ips        []net.IP
		validity   time.Duration
		wantErr    string
	}{
		{name: "no names", commonName: "server", validity: time.Hour, wantErr: "no DNS names or IP addresses"},
		{name: "empty DNS name", commonName: "server", dnsNames: []string{"a.ns.svc", ""}, validity: time.Hour, wantErr: "empty DNS name"},
		{name: "nil IP", commonName: "server", ips: []net.IP{nil}, validity: time.Hour, wantErr: "invalid IP address"},
		{name: "empty common name", dnsNames: []string{"a.ns.svc"}, validity: time.Hour, wantErr: "common name is empty"},
		{name: "zero validity", commonName: "server", dnsNames: []string{"a.ns.svc"}, wantErr: "not positive"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			_, err := ca.IssueServer(tc.commonName, tc.dnsNames, tc.ips, tc.validity, now)
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestVerify(t *testing.T) {
	g := NewWithT(t)
	_, ca := newCA(g, now)
	server := issueServer(g, ca)
	client := issueClient(g, ca)
	_, otherCA := newCA(g, now)
	foreign := issueServer(g, otherCA)

	cases := []struct {
		name    string
		leaf    []byte
		dnsName string
		usage   x509.ExtKeyUsage
		at      time.Time
		wantErr string // empty: Verify must succeed
	}{
		{name: "member name under the wildcard", leaf: server.CertPEM, dnsName: "etcd-0.etcd-peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now},
		{name: "wildcard match ignores case", leaf: server.CertPEM, dnsName: "ETCD-0.Etcd-Peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now},
		{name: "client Service name", leaf: server.CertPEM, dnsName: "etcd-client.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now},
		{name: "loopback IP", leaf: server.CertPEM, dnsName: "127.0.0.1", usage: x509.ExtKeyUsageServerAuth, at: now},
		{name: "no name to check", leaf: server.CertPEM, usage: x509.ExtKeyUsageServerAuth, at: now},
		{name: "server certificate as client (peer dialing peer)", leaf: server.CertPEM, usage: x509.ExtKeyUsageClientAuth, at: now},
		{name: "client certificate as client", leaf: client.CertPEM, usage: x509.ExtKeyUsageClientAuth, at: now},
		{name: "the wildcard's own domain", leaf: server.CertPEM, dnsName: "etcd-peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "not etcd-peer.ns.svc"},
		{name: "two labels under the wildcard", leaf: server.CertPEM, dnsName: "a.etcd-0.etcd-peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "not a.etcd-0.etcd-peer.ns.svc"},
		{name: "another Service", leaf: server.CertPEM, dnsName: "etcd-0.other-peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "not etcd-0.other-peer.ns.svc"},
		{name: "IP not in the certificate", leaf: server.CertPEM, dnsName: "10.0.0.1", usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "10.0.0.1"},
		{name: "client certificate as server", leaf: client.CertPEM, usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "incompatible key usage"},
		{name: "signed by another CA", leaf: foreign.CertPEM, dnsName: "etcd-0.etcd-peer.ns.svc", usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "unknown authority"},
		{name: "expired", leaf: server.CertPEM, usage: x509.ExtKeyUsageServerAuth, at: now.Add(leafValidity + time.Second), wantErr: "expired"},
		{name: "not valid yet", leaf: server.CertPEM, usage: x509.ExtKeyUsageServerAuth, at: now.Add(-time.Hour - time.Second), wantErr: "not yet valid"},
		{name: "not PEM", leaf: []byte("garbage"), usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: "no PEM data"},
		{name: "key instead of certificate", leaf: server.KeyPEM, usage: x509.ExtKeyUsageServerAuth, at: now, wantErr: `PEM block is "PRIVATE KEY"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := ca.Verify(tc.leaf, tc.dnsName, tc.usage, tc.at)
			if tc.wantErr == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
		})
	}
}

func TestNeedsRenewal(t *testing.T) {
	g := NewWithT(t)
	_, ca := newCA(g, now)
	// Valid from now-1h to now+24h.
	pair, err := ca.IssueClient("root", 24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	notBefore, notAfter := now.Add(-time.Hour), now.Add(24*time.Hour)
	const renewBefore = 6 * time.Hour

	cases := []struct {
		name string
		at   time.Time
		want bool
	}{
		{name: "just issued", at: now, want: false},
		{name: "one second before the renewal window", at: notAfter.Add(-renewBefore - time.Second), want: false},
		{name: "renewal window starts", at: notAfter.Add(-renewBefore), want: true},
		{name: "inside the renewal window", at: notAfter.Add(-time.Hour), want: true},
		{name: "expired", at: notAfter.Add(time.Second), want: true},
		{name: "at NotBefore", at: notBefore, want: false},
		{name: "not valid yet", at: notBefore.Add(-time.Second), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := pki.NeedsRenewal(pair.CertPEM, tc.at, renewBefore)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}

	_, err = pki.NeedsRenewal([]byte("garbage"), now, renewBefore)
	g.Expect(err).To(MatchError(ContainSubstring("no PEM data")))
}

func TestCoversNames(t *testing.T) {
	g := NewWithT(t)
	_, ca := newCA(g, now)
	server := issueServer(g, ca)

	cases := []struct {
		name     string
		dnsNames []string
		ips      []net.IP
		want     bool
		wantErr  string
	}{
		{name: "nothing asked", want: true},
		{name: "the names it was issued for", dnsNames: serverDNSNames, ips: serverIPs, want: true},
		{name: "member under the wildcard", dnsNames: []string{"etcd-3.etcd-peer.ns.svc"}, want: true},
		{name: "case-insensitive", dnsNames: []string{"ETCD-CLIENT.ns.svc", "*.ETCD-PEER.ns.svc"}, want: true},
		{name: "IPv4-mapped loopback", ips: []net.IP{net.ParseIP("::ffff:127.0.0.1")}, want: true},
		{name: "two labels under the wildcard", dnsNames: []string{"a.etcd-3.etcd-peer.ns.svc"}, want: false},
		{name: "the wildcard's own domain", dnsNames: []string{"etcd-peer.ns.svc"}, want: false},
		{name: "a broader wildcard", dnsNames: []string{"*.ns.svc"}, want: false},
		{name: "a renamed namespace", dnsNames: []string{"*.etcd-peer.other.svc"}, want: false},
		{name: "one name missing", dnsNames: []string{"etcd-client.ns.svc", "etcd-client.ns.svc.cluster.local"}, want: false},
		{name: "IP missing", ips: []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")}, want: false},
		{name: "empty DNS name", dnsNames: []string{""}, wantErr: "empty DNS name"},
		{name: "invalid IP", ips: []net.IP{{1, 2, 3}}, wantErr: "invalid IP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := pki.CoversNames(server.CertPEM, tc.dnsNames, tc.ips)
			if tc.wantErr != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.wantErr)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}
}

// handshake runs one TLS connection over loopback between a server presenting server
// and requiring a client certificate from ca, and a client presenting clientCerts and
// trusting ca, as etcd members and clients do. It returns each side's error.
func handshake(g Gomega, ca *pki.CA, server pki.KeyPair, clientCerts []tls.Certificate) (serverErr, clientErr error) {
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(ca.CertPEM())).To(BeTrue())
	serverCert, err := tls.X509KeyPair(server.CertPEM, server.KeyPEM)
	g.Expect(err).NotTo(HaveOccurred())

	ln, err := tls.Listen("tcp", "127.0.0.1:0", &tls.Config{
		Certificates: []tls.Certificate{serverCert},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    roots,
		MinVersion:   tls.VersionTLS12,
	})
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = ln.Close() }()

	// The deadlines only stop a broken handshake from hanging the test.
	deadline := time.Now().Add(10 * time.Second)
	serverDone := make(chan error, 1)
	go func() {
		conn, err := ln.Accept()
		if err != nil {
			serverDone <- err
			return
		}
		defer func() { _ = conn.Close() }()
		_ = conn.SetDeadline(deadline)
		err = conn.(*tls.Conn).Handshake()
		if err == nil {
			_, err = conn.Write([]byte("ok"))
		}
		serverDone <- err
	}()

	dialer := &tls.Dialer{
		NetDialer: &net.Dialer{Deadline: deadline},
		Config: &tls.Config{
			RootCAs:      roots,
			Certificates: clientCerts,
			// A member's name under the peer Service wildcard, not the address dialed.
			ServerName: "etcd-1.etcd-peer.ns.svc",
			MinVersion: tls.VersionTLS12,
		},
	}
	conn, clientErr := dialer.Dial("tcp", ln.Addr().String())
	if clientErr == nil {
		_ = conn.SetDeadline(deadline)
		// With TLS 1.3 the client learns that the server refused its certificate only
		// when it reads, so read the server's greeting.
		buf := make([]byte, 2)
		if _, clientErr = io.ReadFull(conn, buf); clientErr == nil {
			g.Expect(string(buf)).To(Equal("ok"))
		}
		_ = conn.Close()
	}
	return <-serverDone, clientErr
}

func TestTLSHandshake(t *testing.T) {
	g := NewWithT(t)
	// TLS checks validity against the real clock.
	issuedAt := time.Now()
	_, ca := newCA(g, issuedAt)
	server, err := ca.IssueServer("etcd-server", serverDNSNames, serverIPs, time.Hour, issuedAt)
	g.Expect(err).NotTo(HaveOccurred())
	client, err := ca.IssueClient("root", time.Hour, issuedAt)
	g.Expect(err).NotTo(HaveOccurred())
	_, otherCA := newCA(g, issuedAt)
	foreignClient, err := otherCA.IssueClient("root", time.Hour, issuedAt)
	g.Expect(err).NotTo(HaveOccurred())

	tlsCert := func(pair pki.KeyPair) []tls.Certificate {
		cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
		g.Expect(err).NotTo(HaveOccurred())
		return []tls.Certificate{cert}
	}
	cases := []struct {
		name        string
		clientCerts []tls.Certificate
		wantOK      bool
	}{
		{name: "client certificate", clientCerts: tlsCert(client), wantOK: true},
		{name: "server certificate as client certificate, as peers do", clientCerts: tlsCert(server), wantOK: true},
		{name: "no client certificate", clientCerts: nil, wantOK: false},
		{name: "client certificate from another CA", clientCerts: tlsCert(foreignClient), wantOK: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			serverErr, clientErr := handshake(g, ca, server, tc.clientCerts)
			if tc.wantOK {
				g.Expect(serverErr).NotTo(HaveOccurred())
				g.Expect(clientErr).NotTo(HaveOccurred())
				return
			}
			g.Expect(serverErr).To(HaveOccurred(), "the server must refuse the client")
			g.Expect(clientErr).To(HaveOccurred(), "the client must see the refusal")
		})
	}
}

func BenchmarkIssueServer(b *testing.B) {
	pair, err := pki.NewCA("etcd-ca", caValidity, now)
	if err != nil {
		b.Fatal(err)
	}
	ca, err := pki.LoadCA(pair)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := ca.IssueServer("etcd-server", serverDNSNames, serverIPs, leafValidity, now); err != nil {
			b.Fatal(err)
		}
	}
}

func TestVerifyWithCACert(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)
	pair, err := pki.NewCA("user CA", 24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(pair)
	g.Expect(err).NotTo(HaveOccurred())
	leaf, err := ca.IssueServer("m", []string{"*.p.ns.svc"}, nil, time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	other, err := pki.NewCA("other CA", 24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(pki.VerifyWithCACert(pair.CertPEM, leaf.CertPEM, "a.p.ns.svc", x509.ExtKeyUsageServerAuth, now)).To(Succeed())
	g.Expect(pki.VerifyWithCACert(pair.CertPEM, leaf.CertPEM, "a.q.ns.svc", x509.ExtKeyUsageServerAuth, now)).NotTo(Succeed())
	g.Expect(pki.VerifyWithCACert(other.CertPEM, leaf.CertPEM, "a.p.ns.svc", x509.ExtKeyUsageServerAuth, now)).NotTo(Succeed())
	g.Expect(pki.VerifyWithCACert([]byte("junk"), leaf.CertPEM, "", x509.ExtKeyUsageServerAuth, now)).To(MatchError(ContainSubstring("CA certificate")))
	// A bundle (a CA being rotated) verifies a leaf of either CA.
	bundle := append(append([]byte{}, other.CertPEM...), pair.CertPEM...)
	g.Expect(pki.VerifyWithCACert(bundle, leaf.CertPEM, "a.p.ns.svc", x509.ExtKeyUsageServerAuth, now)).To(Succeed())
}

// outlivingLeaf signs, with the CA of caPair, a leaf certificate valid until notAfter, later
// than the CA if need be: what a CA that does not cut its leaves to its own lifetime issues.
func outlivingLeaf(g Gomega, caPair pki.KeyPair, notAfter time.Time) []byte {
	block, _ := pem.Decode(caPair.KeyPEM)
	caKey, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	g.Expect(err).NotTo(HaveOccurred())
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	g.Expect(err).NotTo(HaveOccurred())
	template := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "long"},
		NotBefore: now.Add(-time.Hour), NotAfter: notAfter, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, template, parseCert(g, caPair.CertPEM), key.Public(), caKey)
	g.Expect(err).NotTo(HaveOccurred())
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func TestChainNotAfter(t *testing.T) {
	g := NewWithT(t)
	caPair, err := pki.NewCA("user CA", 30*24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(caPair)
	g.Expect(err).NotTo(HaveOccurred())
	caEnd := now.Add(30 * 24 * time.Hour)
	leaf, err := ca.IssueClient("me", 10*24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())

	end, err := pki.ChainNotAfter(caPair.CertPEM, leaf.CertPEM)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(end).To(BeTemporally("==", now.Add(10*24*time.Hour)), "the leaf ends first")

	long := outlivingLeaf(g, caPair, now.Add(leafValidity))
	end, err = pki.ChainNotAfter(caPair.CertPEM, long)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(end).To(BeTemporally("==", caEnd), "a leaf that outlives its CA stops being valid with it")

	// In a bundle of two CAs (one being rotated), the CA that signed the leaf counts.
	other, err := pki.NewCA("other CA", caValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	bundle := append(append([]byte{}, other.CertPEM...), caPair.CertPEM...)
	end, err = pki.ChainNotAfter(bundle, long)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(end).To(BeTemporally("==", caEnd))

	// A leaf no CA of the bundle signed counts alone.
	end, err = pki.ChainNotAfter(other.CertPEM, long)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(end).To(BeTemporally("==", now.Add(leafValidity)))

	_, err = pki.ChainNotAfter(caPair.CertPEM, []byte("junk"))
	g.Expect(err).To(HaveOccurred())
}

// The operator keeps a leaf certificate unless ReissueReason names why not.
func TestReissueReason(t *testing.T) {
	g := NewWithT(t)
	_, ca := newCA(g, now)
	_, other := newCA(g, now)
	server := issueServer(g, ca)
	serving := pki.Leaf{Usage: x509.ExtKeyUsageServerAuth, DNSNames: serverDNSNames, IPs: serverIPs}
	renewBefore := 30 * 24 * time.Hour

	g.Expect(ca.ReissueReason(server.CertPEM, serving, now, renewBefore)).To(BeEmpty(), "a fresh certificate of this CA for these names")
	g.Expect(ca.ReissueReason(issueClient(g, ca).CertPEM, pki.Leaf{Usage: x509.ExtKeyUsageClientAuth}, now, renewBefore)).To(BeEmpty())

	for why, tc := range map[string]struct {
		cert []byte
		want pki.Leaf
		at   time.Time
	}{
		"there is none":                 {nil, serving, now},
		"it cannot be read":             {[]byte("not a certificate"), serving, now},
		"it expires within 720h0m0s":    {server.CertPEM, serving, now.Add(leafValidity - 29*24*time.Hour)},
		"or is not valid yet":           {server.CertPEM, serving, now.Add(-2 * time.Hour)},
		"does not verify against":       {issueServer(g, other).CertPEM, serving, now},
		"does not cover the cluster's":  {server.CertPEM, pki.Leaf{Usage: x509.ExtKeyUsageServerAuth, DNSNames: append([]string{"new.example"}, serverDNSNames...)}, now},
		"does not verify against the c": {issueClient(g, ca).CertPEM, serving, now},
	} {
		g.Expect(ca.ReissueReason(tc.cert, tc.want, tc.at, renewBefore)).To(ContainSubstring(why), why)
	}
}
