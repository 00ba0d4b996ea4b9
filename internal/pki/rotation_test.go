package pki_test

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/pki"
)

const minPhase = 90 * time.Second

func rotationInput(at time.Time, request string, settled bool) pki.RotationInput {
	return pki.RotationInput{Request: request, RenewBefore: 365 * 24 * time.Hour, Settled: settled, MinPhase: minPhase,
		Now: at, CommonName: "e etcd CA", Validity: caValidity}
}

// certCount counts the certificates of a PEM bundle.
func certCount(b []byte) int {
	n := 0
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return n
		}
		n++
	}
}

// A rotation walks through its three phases, each only once it is in force on every member
// and, for the first two, has lasted MinPhase; members trust both CAs until every one serves
// a certificate of the new one.
func TestCARotationPhases(t *testing.T) {
	g := NewWithT(t)
	old, oldCA := newCA(g, now)
	store := pki.CAStore{Signer: old}

	_, ok, err := pki.NextRotation(store, rotationInput(now, "", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse(), "a CA far from expiry, nobody asked: nothing happens")
	_, ok, _ = pki.NextRotation(store, rotationInput(now, "2026-03-01", false))
	g.Expect(ok).To(BeFalse(), "asked, but the cluster is busy with something else: later")

	step, ok, err := pki.NextRotation(store, rotationInput(now, "2026-03-01", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(step.Event).To(Equal("CARotationStarted"))
	g.Expect(step.Message).To(ContainSubstring("requested (annotation 2026-03-01)"))
	s := step.Store
	g.Expect(s.Phase).To(Equal(pki.RotationTrustingNew))
	g.Expect(s.Signer).To(Equal(old), "the old CA still issues")
	g.Expect(s.Next).NotTo(BeNil())
	g.Expect(certCount(s.Bundle())).To(Equal(2))
	newCA, err := pki.LoadCA(*s.Next)
	g.Expect(err).NotTo(HaveOccurred())
	leafOld, err := oldCA.IssueClient("c", leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	leafNew, err := newCA.IssueClient("c", leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pki.VerifyWithCACert(s.Bundle(), leafOld.CertPEM, "", x509.ExtKeyUsageClientAuth, now)).To(Succeed())
	g.Expect(pki.VerifyWithCACert(s.Bundle(), leafNew.CertPEM, "", x509.ExtKeyUsageClientAuth, now)).To(Succeed())

	_, ok, _ = pki.NextRotation(s, rotationInput(now.Add(time.Hour), "2026-03-01", false))
	g.Expect(ok).To(BeFalse(), "not in force on every member yet")
	_, ok, _ = pki.NextRotation(s, rotationInput(now.Add(minPhase-time.Second), "2026-03-01", true))
	g.Expect(ok).To(BeFalse(), "in force, but clients may not have seen the new bundle yet")

	step, ok, err = pki.NextRotation(s, rotationInput(now.Add(minPhase), "2026-03-01", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	s = step.Store
	g.Expect(s.Phase).To(Equal(pki.RotationServingNew))
	g.Expect(s.Signer.CertPEM).NotTo(Equal(old.CertPEM), "the new CA issues")
	g.Expect(s.Next).To(BeNil())
	g.Expect(s.PreviousCertPEM).To(Equal(old.CertPEM))
	g.Expect(pki.VerifyWithCACert(s.Bundle(), leafOld.CertPEM, "", x509.ExtKeyUsageClientAuth, now)).To(Succeed(), "the old CA still trusted")
	g.Expect(pki.VerifyWithCACert(s.Bundle(), leafNew.CertPEM, "", x509.ExtKeyUsageClientAuth, now)).To(Succeed())

	since := s.PhaseSince
	_, ok, _ = pki.NextRotation(s, rotationInput(since.Add(minPhase/2), "2026-03-01", true))
	g.Expect(ok).To(BeFalse())
	step, ok, _ = pki.NextRotation(s, rotationInput(since.Add(minPhase), "2026-03-01", true))
	g.Expect(ok).To(BeTrue())
	s = step.Store
	g.Expect(s.Phase).To(Equal(pki.RotationDroppingOld))
	g.Expect(certCount(s.Bundle())).To(Equal(1))
	g.Expect(pki.VerifyWithCACert(s.Bundle(), leafOld.CertPEM, "", x509.ExtKeyUsageClientAuth, now)).NotTo(Succeed(), "the old CA dropped")

	_, ok, _ = pki.NextRotation(s, rotationInput(s.PhaseSince.Add(time.Hour), "2026-03-01", false))
	g.Expect(ok).To(BeFalse())
	step, ok, _ = pki.NextRotation(s, rotationInput(s.PhaseSince, "2026-03-01", true))
	g.Expect(ok).To(BeTrue(), "the last phase needs no wait: nothing more depends on it")
	g.Expect(step.Event).To(Equal("CARotationCompleted"))
	g.Expect(step.Store.Phase).To(Equal(pki.RotationNone))

	_, ok, _ = pki.NextRotation(step.Store, rotationInput(now.Add(2*time.Hour), "2026-03-01", true))
	g.Expect(ok).To(BeFalse(), "the same request does not start a second rotation")
}

// A CA within RenewBefore of its expiry is rotated without being asked.
func TestCARotationStartsBeforeTheCAExpires(t *testing.T) {
	g := NewWithT(t)
	old, err := pki.NewCA("e etcd CA", 400*24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	_, ok, err := pki.NextRotation(pki.CAStore{Signer: old}, rotationInput(now, "", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeFalse())
	step, ok, err := pki.NextRotation(pki.CAStore{Signer: old}, rotationInput(now.Add(40*24*time.Hour), "", true))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ok).To(BeTrue())
	g.Expect(step.Message).To(ContainSubstring("the CA expires within"))
}

// A Secret edited by hand into a phase without the CA it needs stops the rotation with a
// message, changing nothing.
func TestCARotationRefusesAnIncompleteStore(t *testing.T) {
	g := NewWithT(t)
	old, _ := newCA(g, now)
	for _, s := range []pki.CAStore{
		{Signer: old, Phase: pki.RotationTrustingNew},
		{Signer: old, Phase: pki.RotationServingNew},
		{Signer: old, Phase: "Sideways"},
	} {
		_, ok, err := pki.NextRotation(s, rotationInput(now, "x", true))
		g.Expect(ok).To(BeFalse())
		g.Expect(err).To(HaveOccurred(), string(s.Phase))
	}
}

// The trust hash changes with the trusted CAs and with the CA that issued the member's
// certificate, not with a renewed leaf, nor with the order of the bundle.
func TestTrustHash(t *testing.T) {
	g := NewWithT(t)
	a, caA := newCA(g, now)
	b, caB := newCA(g, now)
	leafA, err := caA.IssueServer("m", serverDNSNames, nil, leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	renewed, err := caA.IssueServer("m", serverDNSNames, nil, leafValidity, now.Add(time.Hour))
	g.Expect(err).NotTo(HaveOccurred())
	leafB, err := caB.IssueServer("m", serverDNSNames, nil, leafValidity, now)
	g.Expect(err).NotTo(HaveOccurred())
	ab := append(append([]byte{}, a.CertPEM...), b.CertPEM...)
	ba := append(append([]byte{}, b.CertPEM...), a.CertPEM...)

	only := pki.TrustHash(a.CertPEM, leafA.CertPEM)
	g.Expect(only).NotTo(BeEmpty())
	g.Expect(pki.TrustHash(a.CertPEM, renewed.CertPEM)).To(Equal(only), "a renewed leaf needs no restart")
	both := pki.TrustHash(ab, leafA.CertPEM)
	g.Expect(both).NotTo(Equal(only), "a CA added to the trust")
	g.Expect(pki.TrustHash(ba, leafA.CertPEM)).To(Equal(both), "the order of the bundle does not matter")
	g.Expect(pki.TrustHash(ab, leafB.CertPEM)).NotTo(Equal(both), "the other CA issues the certificate")
	g.Expect(pki.TrustHash([]byte("junk"), leafA.CertPEM)).To(BeEmpty())
}
