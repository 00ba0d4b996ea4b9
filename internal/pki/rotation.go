package pki

import (
	"bytes"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"sort"
	"time"
)

// RotationPhase is where the rotation of a cluster's CA stands. A rotation replaces the
// trust root of a live cluster in three phases, each rolled out to every member (a restart
// each, one member at a time) before the next begins, so that at no moment does a member or
// a client meet a certificate it does not trust:
//
//  1. TrustingNew: members and clients trust the old and the new CA; certificates are still
//     issued by the old one.
//  2. ServingNew: certificates are issued by the new CA; the old one is still trusted, for
//     the members and clients that still present a certificate it issued.
//  3. DroppingOld: only the new CA is trusted.
//
// The empty phase is a cluster not rotating its CA.
type RotationPhase string

// The phases of a CA rotation, in order.
const (
	RotationNone        RotationPhase = ""
	RotationTrustingNew RotationPhase = "TrustingNew"
	RotationServingNew  RotationPhase = "ServingNew"
	RotationDroppingOld RotationPhase = "DroppingOld"
)

// CAStore is what the Secret of a cluster's CA holds.
type CAStore struct {
	// Signer is the CA that issues the member and client certificates.
	Signer KeyPair
	// Next is the new CA during phase TrustingNew: trusted, not issuing yet.
	Next *KeyPair
	// PreviousCertPEM is the old CA's certificate during phase ServingNew: still trusted.
	PreviousCertPEM []byte
	// Phase is the rotation phase, and PhaseSince when it began.
	Phase      RotationPhase
	PhaseSince time.Time
	// Request is the last rotation request (the value of the EtcdCluster's rotate-ca
	// annotation) that started a rotation.
	Request string
}

// Bundle is the CA certificates members and clients trust, PEM-encoded: the signer and,
// during a rotation, the other CA (the next one, or the previous one).
func (s CAStore) Bundle() []byte {
	out := bytes.TrimSpace(s.Signer.CertPEM)
	var other []byte
	switch {
	case s.Phase == RotationTrustingNew && s.Next != nil:
		other = s.Next.CertPEM
	case s.Phase == RotationServingNew:
		other = s.PreviousCertPEM
	}
	if len(other) > 0 {
		out = append(append(append([]byte{}, out...), '\n'), bytes.TrimSpace(other)...)
	}
	return append(append([]byte{}, out...), '\n')
}

// Check refuses a store whose phase lacks the CA it needs, as a Secret edited by hand might.
func (s CAStore) Check() error {
	switch s.Phase {
	case RotationNone, RotationDroppingOld:
	case RotationTrustingNew:
		if s.Next == nil || len(s.Next.CertPEM) == 0 || len(s.Next.KeyPEM) == 0 {
			return errors.New("the CA rotation is in phase TrustingNew but the new CA is missing")
		}
	case RotationServingNew:
		if len(s.PreviousCertPEM) == 0 {
			return errors.New("the CA rotation is in phase ServingNew but the previous CA certificate is missing")
		}
	default:
		return fmt.Errorf("unknown CA rotation phase %q", s.Phase)
	}
	return nil
}

// RotationInput is what decides the next step of a CA rotation.
type RotationInput struct {
	// Request is the value of the EtcdCluster's rotate-ca annotation ("" when absent): a
	// value other than the store's Request starts a rotation.
	Request string
	// RenewBefore starts a rotation by itself when the CA expires within it.
	RenewBefore time.Duration
	// Settled says that nothing else is under way and the current phase is in force: every
	// member runs a pod built with the current trust bundle and certificates, and is healthy
	// and Ready.
	Settled bool
	// MinPhase is how long phases TrustingNew and ServingNew last at least, so that clients
	// that mount the client Secret see its new content (the kubelet refreshes mounted
	// Secrets about once a minute) before the next phase needs it.
	MinPhase time.Duration
	// Now is the time; CommonName and Validity make the new CA.
	Now        time.Time
	CommonName string
	Validity   time.Duration
}

// RotationStep is a change of phase: the store to write, and what to tell the user.
type RotationStep struct {
	Store CAStore
	// Event is the reason of the event to emit (CARotationStarted, CARotationProgressed,
	// CARotationCompleted), Message its note.
	Event, Message string
}

// NextRotation decides whether the rotation moves on: it starts when asked or when the CA
// nears its expiry, on a settled cluster, and each phase ends once it is in force on every member (and, for the
// first two, has lasted MinPhase). ok is false when nothing changes.
func NextRotation(s CAStore, in RotationInput) (step RotationStep, ok bool, err error) {
	if err := s.Check(); err != nil {
		return RotationStep{}, false, err
	}
	next := s
	next.PhaseSince = in.Now
	due := in.Settled && !in.Now.Before(s.PhaseSince.Add(in.MinPhase))
	switch s.Phase {
	case RotationNone:
		why, err := startReason(s, in)
		if err != nil || why == "" {
			return RotationStep{}, false, err
		}
		pair, err := NewCA(in.CommonName, in.Validity, in.Now)
		if err != nil {
			return RotationStep{}, false, err
		}
		next.Next, next.Phase, next.Request = &pair, RotationTrustingNew, in.Request
		return RotationStep{Store: next, Event: "CARotationStarted",
			Message: "Rotating the cluster's CA (" + why + "): phase 1 of 3, members and clients trust the old and the new CA"}, true, nil
	case RotationTrustingNew:
		if !due {
			return RotationStep{}, false, nil
		}
		next.PreviousCertPEM, next.Signer, next.Next, next.Phase = s.Signer.CertPEM, *s.Next, nil, RotationServingNew
		return RotationStep{Store: next, Event: "CARotationProgressed",
			Message: "Every member trusts the new CA: phase 2 of 3, certificates are issued by the new CA, the old one is still trusted"}, true, nil
	case RotationServingNew:
		if !due {
			return RotationStep{}, false, nil
		}
		next.PreviousCertPEM, next.Phase = nil, RotationDroppingOld
		return RotationStep{Store: next, Event: "CARotationProgressed",
			Message: "Every member serves a certificate of the new CA: phase 3 of 3, the old CA is no longer trusted"}, true, nil
	default: // RotationDroppingOld
		if !in.Settled {
			return RotationStep{}, false, nil
		}
		next.Phase, next.PhaseSince = RotationNone, time.Time{}
		return RotationStep{Store: next, Event: "CARotationCompleted",
			Message: "The CA rotation is complete: every member trusts and serves the new CA only"}, true, nil
	}
}

// startReason says why a rotation starts now, or "" when it does not: only on a settled
// cluster, when asked with a new request or when the CA expires within RenewBefore.
func startReason(s CAStore, in RotationInput) (string, error) {
	if !in.Settled {
		return "", nil
	}
	if in.Request != "" && in.Request != s.Request {
		return "requested (annotation " + in.Request + ")", nil
	}
	renew, err := NeedsRenewal(s.Signer.CertPEM, in.Now, in.RenewBefore)
	if err != nil {
		return "", fmt.Errorf("the CA certificate: %w", err)
	}
	if renew {
		return "the CA expires within " + in.RenewBefore.String(), nil
	}
	return "", nil
}

// TrustHash identifies the TLS material a member pod must be restarted to take up: the CA
// certificates in trustPEM (etcd reads its trusted CA files when it starts) and the CA among
// them that issued leafPEM. A renewed leaf from the same CA keeps the hash: etcd reads its
// certificate and key on every handshake. "" when trustPEM holds no certificate.
func TrustHash(trustPEM, leafPEM []byte) string {
	cas := certsOf(trustPEM)
	if len(cas) == 0 {
		return ""
	}
	sort.Slice(cas, func(i, j int) bool { return bytes.Compare(cas[i].Raw, cas[j].Raw) < 0 })
	h := sha256.New()
	for _, ca := range cas {
		h.Write(ca.Raw)
	}
	h.Write([]byte("issuer:"))
	if leaf, err := parseCertPEM(leafPEM); err == nil {
		for _, ca := range cas {
			if leaf.CheckSignatureFrom(ca) == nil {
				h.Write(ca.Raw)
				break
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// certsOf parses every CERTIFICATE block of pemBytes, skipping what does not parse.
func certsOf(pemBytes []byte) []*x509.Certificate {
	var out []*x509.Certificate
	for {
		var block *pem.Block
		block, pemBytes = pem.Decode(pemBytes)
		if block == nil {
			return out
		}
		if block.Type != "CERTIFICATE" {
			continue
		}
		if cert, err := x509.ParseCertificate(block.Bytes); err == nil {
			out = append(out, cert)
		}
	}
}
