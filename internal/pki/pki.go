package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"time"
)

// clockSkew is how far NotBefore is back-dated, so that a host whose clock lags the
// operator's still accepts a certificate issued a moment ago.
const clockSkew = time.Hour

// serialLimit bounds serial numbers to 128 bits: unpredictable enough that nobody can
// pre-compute a colliding certificate, and well within the 20 octets RFC 5280 allows.
var serialLimit = new(big.Int).Lsh(big.NewInt(1), 128)

// KeyPair is a PEM-encoded certificate and its private key, as stored in a Secret's
// tls.crt and tls.key.
type KeyPair struct {
	// CertPEM is the certificate, a PEM "CERTIFICATE" block.
	CertPEM []byte
	// KeyPEM is the private key, PEM-encoded. This package writes PKCS#8 ("PRIVATE KEY").
	KeyPEM []byte
}

// CA is a loaded certificate authority that can issue and verify certificates. Create
// one with [NewCA] and load it with [LoadCA].
type CA struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// NewCA creates a self-signed CA certificate and key valid from now - 1h until
// now + validity. The CA may sign leaf certificates only (MaxPathLen 0): the operator
// never needs intermediates, and forbidding them limits what a leaked leaf key could
// be turned into.
func NewCA(commonName string, validity time.Duration, now time.Time) (KeyPair, error) {
	template, err := newTemplate(commonName, validity, now)
	if err != nil {
		return KeyPair{}, err
	}
	template.IsCA = true
	template.BasicConstraintsValid = true
	template.MaxPathLen = 0
	template.MaxPathLenZero = true
	template.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature
	return createKeyPair(template, nil)
}

// LoadCA parses a CA key pair, as created by [NewCA] and read back from its Secret. It
// fails unless the certificate is a CA allowed to sign certificates and the key belongs
// to it, so that a Secret edited by hand or mixed up with a leaf's is caught here
// rather than producing certificates nobody trusts. Keys may be PKCS#8, PKCS#1 or SEC 1
// PEM. Validity is not checked here; use [NeedsRenewal] on pair.CertPEM for that.
func LoadCA(pair KeyPair) (*CA, error) {
	// X509KeyPair parses both halves and checks that the key matches the certificate.
	tlsCert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("loading CA key pair: %w", err)
	}
	cert, err := x509.ParseCertificate(tlsCert.Certificate[0])
	if err != nil {
		return nil, fmt.Errorf("loading CA key pair: parsing certificate: %w", err)
	}
	if !cert.BasicConstraintsValid || !cert.IsCA {
		return nil, fmt.Errorf("loading CA key pair: certificate %q is not a CA certificate (basic constraints CA:TRUE missing)", cert.Subject)
	}
	if cert.KeyUsage&x509.KeyUsageCertSign == 0 {
		return nil, fmt.Errorf("loading CA key pair: CA certificate %q lacks the certSign key usage, so TLS clients would reject the certificates it signs", cert.Subject)
	}
	key, ok := tlsCert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("loading CA key pair: private key of type %T cannot sign", tlsCert.PrivateKey)
	}
	return &CA{cert: cert, key: key}, nil
}

// CertPEM returns the CA certificate, PEM-encoded, for the ca.crt entry of the Secrets
// holding the certificates it issues.
func (ca *CA) CertPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.cert.Raw})
}

// IssueServer issues a certificate for an etcd endpoint: the server certificate shared
// by all members, or the peer certificate shared by all members. dnsNames and ips
// become its SANs and must not all be empty, since TLS clients ignore the common name.
// DNS names may be wildcards (*.peer.ns.svc).
//
// The certificate is good for both ServerAuth and ClientAuth: a peer certificate is
// presented as client certificate when a member dials another, and etcd's gRPC gateway
// presents the server certificate when it dials its own member. The key usages are
// DigitalSignature and KeyEncipherment; the latter means nothing for an ECDSA key but
// is what cert-manager sets by default, so certificates from either source look alike.
func (ca *CA) IssueServer(commonName string, dnsNames []string, ips []net.IP, validity time.Duration, now time.Time) (KeyPair, error) {
	if len(dnsNames) == 0 && len(ips) == 0 {
		return KeyPair{}, fmt.Errorf("server certificate %q: no DNS names or IP addresses", commonName)
	}
	if err := validateNames(dnsNames, ips); err != nil {
		return KeyPair{}, fmt.Errorf("server certificate %q: %w", commonName, err)
	}
	template, err := newTemplate(commonName, validity, now)
	if err != nil {
		return KeyPair{}, err
	}
	template.DNSNames = dnsNames
	template.IPAddresses = ips
	template.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	return ca.issue(template, now)
}

// IssueClient issues a client certificate, good for ClientAuth only, so that it cannot
// be used to impersonate a member. When etcd authentication is enabled, etcd takes the
// common name as the user name.
func (ca *CA) IssueClient(commonName string, validity time.Duration, now time.Time) (KeyPair, error) {
	template, err := newTemplate(commonName, validity, now)
	if err != nil {
		return KeyPair{}, err
	}
	template.KeyUsage = x509.KeyUsageDigitalSignature
	template.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}
	return ca.issue(template, now)
}

// Verify checks that leafPEM chains to this CA, is valid at now, allows usage, and, if
// dnsName is not empty, is valid for dnsName (with TLS wildcard matching). An error
// means the certificate must be re-issued; in particular, a certificate signed by
// another CA (because the CA was rotated) fails here even if both CAs have the same
// name.
func (ca *CA) Verify(leafPEM []byte, dnsName string, usage x509.ExtKeyUsage, now time.Time) error {
	return verify([]*x509.Certificate{ca.cert}, leafPEM, dnsName, usage, now)
}

// VerifyWithCACert is Verify for a CA known only by its certificate, as when a user brings
// their own certificates: the leaf must chain to one of the CA certificates in caCertPEM (a
// bundle of several while a CA is rotated), be valid at now for usage and, when dnsName is
// not empty, for dnsName.
func VerifyWithCACert(caCertPEM, leafPEM []byte, dnsName string, usage x509.ExtKeyUsage, now time.Time) error {
	cas := certsOf(caCertPEM)
	if len(cas) == 0 {
		return errors.New("CA certificate: no certificate in the PEM data")
	}
	return verify(cas, leafPEM, dnsName, usage, now)
}

func verify(cas []*x509.Certificate, leafPEM []byte, dnsName string, usage x509.ExtKeyUsage, now time.Time) error {
	leaf, err := parseCertPEM(leafPEM)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	for _, ca := range cas {
		roots.AddCert(ca)
	}
	_, err = leaf.Verify(x509.VerifyOptions{
		DNSName:     dnsName,
		Roots:       roots,
		CurrentTime: now,
		KeyUsages:   []x509.ExtKeyUsage{usage},
	})
	if err != nil {
		return fmt.Errorf("certificate %q: %w", leaf.Subject, err)
	}
	return nil
}

// NeedsRenewal reports whether the certificate should be replaced at now: it is
// expired, expires within renewBefore, or is not valid yet (the operator's clock was
// wrong when it was issued, so members would reject it).
func NeedsRenewal(certPEM []byte, now time.Time, renewBefore time.Duration) (bool, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return false, err
	}
	return now.Before(cert.NotBefore) || !now.Add(renewBefore).Before(cert.NotAfter), nil
}

// NotAfter is when the certificate expires.
func NotAfter(certPEM []byte) (time.Time, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return time.Time{}, err
	}
	return cert.NotAfter, nil
}

// ChainNotAfter is when the leaf certificate leafPEM stops being valid for whoever trusts
// the CA certificates in caCertPEM: the earlier of its own NotAfter and that of the CA
// among them that signed it. A user's or cert-manager's CA may expire before its leaves
// (the operator's leaves end with their CA). When several of them signed it (the same key
// in a renewed CA certificate), the one that lasts longest counts; when none did (it is
// refused elsewhere), its own NotAfter does.
func ChainNotAfter(caCertPEM, leafPEM []byte) (time.Time, error) {
	leaf, err := parseCertPEM(leafPEM)
	if err != nil {
		return time.Time{}, err
	}
	var issuer time.Time
	for _, ca := range certsOf(caCertPEM) {
		if leaf.CheckSignatureFrom(ca) == nil && ca.NotAfter.After(issuer) {
			issuer = ca.NotAfter
		}
	}
	if !issuer.IsZero() && issuer.Before(leaf.NotAfter) {
		return issuer, nil
	}
	return leaf.NotAfter, nil
}

// Leaf is what a leaf certificate the operator issued must be: its usage, and for a serving
// certificate the names it must cover.
type Leaf struct {
	Usage    x509.ExtKeyUsage
	DNSNames []string
	IPs      []net.IP
}

// ReissueReason says why the leaf certificate certPEM (nil when its Secret does not exist)
// must be issued again at now, or "" when it is fine as it is: missing or unreadable, not
// signed by ca for its usage, not covering the names it must (the cluster's names changed),
// or within renewBefore of its expiry (or not valid yet). The operator keeps a certificate
// that passes, so members and clients keep theirs across reconciles.
func (ca *CA) ReissueReason(certPEM []byte, want Leaf, now time.Time, renewBefore time.Duration) string {
	if len(certPEM) == 0 {
		return "there is none"
	}
	renew, err := NeedsRenewal(certPEM, now, renewBefore)
	switch {
	case err != nil:
		return "it cannot be read: " + err.Error()
	case renew:
		return "it expires within " + renewBefore.String() + " or is not valid yet"
	}
	if err := ca.Verify(certPEM, "", want.Usage, now); err != nil {
		return "it does not verify against the cluster's CA: " + err.Error()
	}
	if len(want.DNSNames) > 0 || len(want.IPs) > 0 {
		covers, err := CoversNames(certPEM, want.DNSNames, want.IPs)
		if err != nil {
			return "its names cannot be checked: " + err.Error()
		}
		if !covers {
			return "it does not cover the cluster's names"
		}
	}
	return ""
}

// CoversNames reports whether the certificate is valid for every one of dnsNames and
// ips, so that the operator re-issues it when the cluster's names change. DNS names
// match as in TLS: case-insensitively, and a wildcard SAN *.peer.ns.svc covers
// a.peer.ns.svc but neither peer.ns.svc nor a.b.peer.ns.svc. A wildcard in dnsNames is
// covered only by the same wildcard SAN.
func CoversNames(certPEM []byte, dnsNames []string, ips []net.IP) (bool, error) {
	if err := validateNames(dnsNames, ips); err != nil {
		return false, err
	}
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return false, err
	}
	for _, name := range dnsNames {
		// VerifyHostname is the matching TLS clients do, wildcards included.
		if cert.VerifyHostname(name) != nil {
			return false, nil
		}
	}
	for _, ip := range ips {
		if cert.VerifyHostname(ip.String()) != nil {
			return false, nil
		}
	}
	return true, nil
}

// newTemplate returns the fields common to all certificates: subject, a random serial,
// and the validity period, back-dated by clockSkew.
func newTemplate(commonName string, validity time.Duration, now time.Time) (*x509.Certificate, error) {
	if commonName == "" {
		return nil, errors.New("certificate common name is empty")
	}
	if validity <= 0 {
		return nil, fmt.Errorf("certificate %q: validity %s is not positive", commonName, validity)
	}
	serial, err := rand.Int(rand.Reader, serialLimit)
	if err != nil {
		return nil, fmt.Errorf("certificate %q: generating serial number: %w", commonName, err)
	}
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName},
		NotBefore:    now.Add(-clockSkew),
		NotAfter:     now.Add(validity),
	}, nil
}

// issue signs a leaf template with the CA. The leaf's lifetime is cut to the CA's,
// because no verifier accepts it once the CA has expired; cutting it makes
// NeedsRenewal on the leaf alone tell the truth.
func (ca *CA) issue(template *x509.Certificate, now time.Time) (KeyPair, error) {
	if !now.Before(ca.cert.NotAfter) {
		return KeyPair{}, fmt.Errorf("certificate %q: CA %q expired at %s; rotate the CA", template.Subject.CommonName, ca.cert.Subject.CommonName, ca.cert.NotAfter.UTC().Format(time.RFC3339))
	}
	if template.NotAfter.After(ca.cert.NotAfter) {
		template.NotAfter = ca.cert.NotAfter
	}
	return createKeyPair(template, ca)
}

// createKeyPair generates a P-256 key and a certificate for it from template, signed
// by issuer, or self-signed when issuer is nil.
func createKeyPair(template *x509.Certificate, issuer *CA) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %q: generating key: %w", template.Subject.CommonName, err)
	}
	parent, signer := template, crypto.Signer(key)
	if issuer != nil {
		parent, signer = issuer.cert, issuer.key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), signer)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %q: signing: %w", template.Subject.CommonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("certificate %q: encoding key: %w", template.Subject.CommonName, err)
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

// validateNames refuses empty DNS names and malformed IPs, which would otherwise be
// written into a certificate (or compared against one) and never match anything.
func validateNames(dnsNames []string, ips []net.IP) error {
	for _, name := range dnsNames {
		if name == "" {
			return errors.New("empty DNS name")
		}
	}
	for _, ip := range ips {
		if ip.To16() == nil {
			return fmt.Errorf("invalid IP address %v", []byte(ip))
		}
	}
	return nil
}

// CommonName is the common name of the first certificate of certPEM: the etcd user a client
// presenting it is, when etcd's authentication is on.
func CommonName(certPEM []byte) (string, error) {
	cert, err := parseCertPEM(certPEM)
	if err != nil {
		return "", err
	}
	return cert.Subject.CommonName, nil
}

// parseCertPEM parses the first PEM block of pemBytes, which must be a certificate.
func parseCertPEM(pemBytes []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("no PEM data in certificate input")
	}
	if block.Type != "CERTIFICATE" {
		return nil, fmt.Errorf("PEM block is %q, want CERTIFICATE", block.Type)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, fmt.Errorf("parsing certificate: %w", err)
	}
	return cert, nil
}
