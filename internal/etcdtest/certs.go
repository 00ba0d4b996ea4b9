package etcdtest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// CertOptions name the certificates WriteCerts creates.
type CertOptions struct {
	// CAName, ServerName and ClientName are the certificates' common names.
	CAName, ServerName, ClientName string
	// ServerClientAuth lets the server certificate authenticate clients too, as etcd's gRPC
	// gateway needs when it dials the member with its serving certificate.
	ServerClientAuth bool
	// OtherClients are the common names of more client certificates (Certs.TLSAs): with
	// etcd's authentication on, each is another user.
	OtherClients []string
}

// Certs are the PEM files of a throwaway CA, a server certificate for 127.0.0.1 and a
// client certificate.
type Certs struct {
	CA                    string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	// Others are OtherClients' certificate and key files, by common name.
	Others map[string][2]string
}

// WriteCerts creates the certificates in dir, valid for an hour either side of now.
func WriteCerts(t testing.TB, dir string, opts CertOptions) *Certs {
	t.Helper()
	now := time.Now()
	caKey := newKey(t)
	caTemplate := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: opts.CAName},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(time.Hour),
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign,
	}
	caDER := sign(t, caTemplate, caTemplate, caKey, caKey)
	ca, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := func(serial int64, cn string, usage x509.ExtKeyUsage) *x509.Certificate {
		return &x509.Certificate{
			SerialNumber: big.NewInt(serial),
			Subject:      pkix.Name{CommonName: cn},
			NotBefore:    now.Add(-time.Hour),
			NotAfter:     now.Add(time.Hour),
			KeyUsage:     x509.KeyUsageDigitalSignature,
			ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		}
	}
	serverKey := newKey(t)
	serverTemplate := leaf(2, opts.ServerName, x509.ExtKeyUsageServerAuth)
	if opts.ServerClientAuth {
		serverTemplate.ExtKeyUsage = append(serverTemplate.ExtKeyUsage, x509.ExtKeyUsageClientAuth)
	}
	serverTemplate.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
	clientKey := newKey(t)
	others := map[string][2]string{}
	for i, cn := range opts.OtherClients {
		key := newKey(t)
		name := fmt.Sprintf("other-%d", i)
		others[cn] = [2]string{
			writePEM(t, filepath.Join(dir, name+".crt"), "CERTIFICATE", sign(t, leaf(int64(10+i), cn, x509.ExtKeyUsageClientAuth), ca, key, caKey)),
			writePEM(t, filepath.Join(dir, name+".key"), "EC PRIVATE KEY", marshalKey(t, key)),
		}
	}

	return &Certs{
		Others:     others,
		CA:         writePEM(t, filepath.Join(dir, "ca.crt"), "CERTIFICATE", caDER),
		ServerCert: writePEM(t, filepath.Join(dir, "server.crt"), "CERTIFICATE", sign(t, serverTemplate, ca, serverKey, caKey)),
		ServerKey:  writePEM(t, filepath.Join(dir, "server.key"), "EC PRIVATE KEY", marshalKey(t, serverKey)),
		ClientCert: writePEM(t, filepath.Join(dir, "client.crt"), "CERTIFICATE",
			sign(t, leaf(3, opts.ClientName, x509.ExtKeyUsageClientAuth), ca, clientKey, caKey)),
		ClientKey: writePEM(t, filepath.Join(dir, "client.key"), "EC PRIVATE KEY", marshalKey(t, clientKey)),
	}
}

// CABundle returns the CA certificate's PEM.
func (c *Certs) CABundle(t testing.TB) []byte {
	t.Helper()
	caPEM, err := os.ReadFile(c.CA)
	if err != nil {
		t.Fatal(err)
	}
	return caPEM
}

// ClientTLS is a TLS configuration that trusts the CA and carries the client certificate.
func (c *Certs) ClientTLS(t testing.TB) *tls.Config {
	t.Helper()
	return c.tlsWith(t, c.ClientCert, c.ClientKey)
}

// TLSAs is ClientTLS with the certificate of OtherClients named cn.
func (c *Certs) TLSAs(t testing.TB, cn string) *tls.Config {
	t.Helper()
	files, ok := c.Others[cn]
	if !ok {
		t.Fatalf("no client certificate for %q: name it in CertOptions.OtherClients", cn)
	}
	return c.tlsWith(t, files[0], files[1])
}

func (c *Certs) tlsWith(t testing.TB, certFile, keyFile string) *tls.Config {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(c.CABundle(t))
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func marshalKey(t testing.TB, key *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func sign(t testing.TB, template, parent *x509.Certificate, key, parentKey *ecdsa.PrivateKey) []byte {
	t.Helper()
	der, err := x509.CreateCertificate(rand.Reader, template, parent, &key.PublicKey, parentKey)
	if err != nil {
		t.Fatal(err)
	}
	return der
}

func writePEM(t testing.TB, path, blockType string, der []byte) string {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: blockType, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
