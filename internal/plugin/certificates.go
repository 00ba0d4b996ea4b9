package plugin

import (
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Certificate is one certificate of a cluster and when it stops being valid.
type Certificate struct {
	// What says which certificate: "member", "client" (status.tls.certificates, where the
	// operator reports the earlier of the certificate's and its CA's expiry) or "CA <subject>"
	// (each CA the client Secret's ca.crt trusts).
	What     string    `json:"what"`
	Secret   string    `json:"secret"`
	NotAfter time.Time `json:"notAfter"`
	// ExpiresInSeconds is how long it stays valid from now; negative once expired.
	ExpiresInSeconds int64 `json:"expiresInSeconds"`
}

// CertificatesOf lists the certificates of c: those status.tls.certificates reports, and
// each CA certificate of caPEM (the client Secret's ca.crt, "" when not read), soonest
// expiry first.
func CertificatesOf(c *etcdv1alpha1.EtcdCluster, caPEM []byte, now time.Time) ([]Certificate, error) {
	out := []Certificate{}
	if c.Status.TLS != nil {
		for _, cs := range c.Status.TLS.Certificates {
			what := "member"
			if cs.Secret == c.Status.ClientSecret {
				what = "client"
			}
			out = append(out, Certificate{What: what, Secret: cs.Secret, NotAfter: cs.NotAfter.Time})
		}
	}
	for rest := caPEM; len(rest) > 0; {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if err != nil {
			return nil, fmt.Errorf("a CA certificate of %s: %w", c.Status.ClientSecret, err)
		}
		out = append(out, Certificate{What: "CA " + cert.Subject.CommonName, Secret: c.Status.ClientSecret + " (ca.crt)", NotAfter: cert.NotAfter})
	}
	for i := range out {
		out[i].NotAfter = out[i].NotAfter.UTC()
		out[i].ExpiresInSeconds = int64(out[i].NotAfter.Sub(now).Seconds())
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].NotAfter.Before(out[j].NotAfter) })
	return out, nil
}

// RenderCertificates writes certs as a table.
func RenderCertificates(w io.Writer, certs []Certificate) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "CERTIFICATE\tSECRET\tNOT AFTER\tEXPIRES IN")
	for _, c := range certs {
		in := age(secondsOf(c.ExpiresInSeconds))
		if c.ExpiresInSeconds < 0 {
			in = "expired"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.What, c.Secret, c.NotAfter.Format("2006-01-02 15:04 UTC"), in)
	}
	return tw.Flush()
}
