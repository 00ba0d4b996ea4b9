package controllers

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// Certificate lifetimes. Leaves are renewed a month before they expire; the members read
// their certificate files on every handshake, so a renewal needs no restart. The CA is
// rotated a year before it expires (a change of trust is rolled out: etcd reads its trusted
// CAs when it starts), each of the rotation's first two phases lasting at least caMinPhase,
// so that clients mounting the client Secret see its new content (the kubelet refreshes
// mounted Secrets about once a minute) before the next phase needs it.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	caRenewBefore  = 365 * 24 * time.Hour
	caMinPhase     = 90 * time.Second
	leafValidity   = 365 * 24 * time.Hour
	renewBefore    = 30 * 24 * time.Hour
	clientCertName = "etcdpilot"

	secretCACert = "ca.crt"
	secretCAKey  = "ca.key"
	// During a CA rotation the CA Secret also holds the new CA (phase TrustingNew) or the
	// old CA's certificate (phase ServingNew).
	secretNextCACert     = "next-ca.crt"
	secretNextCAKey      = "next-ca.key"
	secretPreviousCACert = "previous-ca.crt"
	// The CA Secret records the rotation's phase, since when, and the request that started
	// the last one.
	annotationCAPhase      = "etcd.etcdpilot.io/ca-rotation-phase"
	annotationCAPhaseSince = "etcd.etcdpilot.io/ca-rotation-phase-since"
	annotationCARequest    = "etcd.etcdpilot.io/ca-rotation-request"
)

// tlsState is what ensureTLS found and made.
type tlsState struct {
	// config is the operator's etcd client configuration; nil when TLS is disabled.
	config *tls.Config
	// trustHash identifies the trusted CAs and the member certificate's issuer the member
	// pods must start with (resources.MemberConfig.TrustHash).
	trustHash string
	// ca is the operator's CA (tls.mode OperatorCA), nil otherwise.
	ca *caSecret
	// certificates are the member and the client certificate as their Secrets hold them
	// after this pass: status.tls.certificates.
	certificates []etcdv1alpha1.CertificateStatus
	// clientCN and memberCN are the common names of the client and the member certificate:
	// the etcd users they are when etcd's authentication is on.
	clientCN, memberCN string
}

// withNames sets the common names of st from the client and the member certificate.
func (st *tlsState) withNames(clientCert, memberCert []byte) (*tlsState, error) {
	var err error
	if st.clientCN, err = pki.CommonName(clientCert); err != nil {
		return nil, fmt.Errorf("the client certificate: %w", err)
	}
	if st.memberCN, err = pki.CommonName(memberCert); err != nil {
		return nil, fmt.Errorf("the member certificate: %w", err)
	}
	return st, nil
}

// tlsStatus is status.tls: nil when TLS is disabled.
func (st *tlsState) tlsStatus() *etcdv1alpha1.TLSStatus {
	if st == nil || len(st.certificates) == 0 {
		return nil
	}
	return &etcdv1alpha1.TLSStatus{Certificates: st.certificates}
}

// secretCert is the certificate (tls.crt) a Secret holds.
type secretCert struct {
	secret string
	cert   []byte
}

// certificateStatuses says when each certificate stops being valid for the members, who
// trust the CAs in trust (pki.ChainNotAfter). A Secret named twice (mode Secrets allows one
// Secret for both) counts once.
func certificateStatuses(trust []byte, certs ...secretCert) ([]etcdv1alpha1.CertificateStatus, error) {
	var out []etcdv1alpha1.CertificateStatus
	for _, c := range certs {
		if slices.ContainsFunc(out, func(s etcdv1alpha1.CertificateStatus) bool { return s.Secret == c.secret }) {
			continue
		}
		notAfter, err := pki.ChainNotAfter(trust, c.cert)
		if err != nil {
			return nil, fmt.Errorf("TLS secret %s: %w", c.secret, err)
		}
		out = append(out, etcdv1alpha1.CertificateStatus{Secret: c.secret, NotAfter: metav1.Time{Time: notAfter}})
	}
	return out, nil
}

// caStatus is status.caRotation: the operator's CA as its Secret says; nil for the other
// TLS modes.
func (st *tlsState) caStatus() *etcdv1alpha1.CARotationStatus {
	if st == nil || st.ca == nil {
		return nil
	}
	s := st.ca.store
	out := &etcdv1alpha1.CARotationStatus{Phase: string(s.Phase), Request: s.Request}
	if !s.PhaseSince.IsZero() {
		out.PhaseSince = &metav1.Time{Time: s.PhaseSince}
	}
	if notAfter, err := pki.NotAfter(s.Signer.CertPEM); err == nil {
		out.CANotAfter = &metav1.Time{Time: notAfter}
	}
	return out
}

// caSecret is the Secret of a cluster's CA and what it holds.
type caSecret struct {
	secret *corev1.Secret
	store  pki.CAStore
}

// ensureTLS makes sure the cluster's CA, member certificate and client certificate exist,
// are signed by the CA, cover the cluster's names and are not about to expire; it issues
// whatever is missing or wrong. Member and client Secrets carry in ca.crt every CA the
// cluster trusts (two during a CA rotation). It returns the TLS configuration the operator's
// etcd client uses (the client certificate, trusting the same CAs), or nil when TLS is
// disabled.
func (r *EtcdClusterReconciler) ensureTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*tlsState, error) {
	names := cluster.For(c)
	if !names.TLS {
		return &tlsState{}, nil
	}
	switch c.Spec.TLS.Mode {
	case etcdv1alpha1.TLSModeSecrets:
		return r.providedTLS(ctx, c, names)
	case etcdv1alpha1.TLSModeCertManager:
		return r.certManagerTLS(ctx, c, names)
	}
	now := r.now()
	caSec, err := r.ensureCA(ctx, c, names, now)
	if err != nil {
		return nil, fmt.Errorf("ensuring the CA secret %s: %w", names.CASecret(), err)
	}
	ca, err := pki.LoadCA(caSec.store.Signer)
	if err != nil {
		return nil, fmt.Errorf("the CA secret %s: %w", names.CASecret(), err)
	}
	trust := caSec.store.Bundle()
	member := pki.Leaf{Usage: x509.ExtKeyUsageServerAuth, DNSNames: names.ServingDNSNames(r.ClusterDomain), IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	memberPair, err := r.ensureLeaf(ctx, c, ca, trust, names.MemberTLSSecret(), now, member, func() (pki.KeyPair, error) {
		return ca.IssueServer(names.MemberCommonName(), member.DNSNames, member.IPs, leafValidity, now)
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring the member certificate secret %s: %w", names.MemberTLSSecret(), err)
	}
	clientPair, err := r.ensureLeaf(ctx, c, ca, trust, names.ClientTLSSecret(), now, pki.Leaf{Usage: x509.ExtKeyUsageClientAuth}, func() (pki.KeyPair, error) {
		return ca.IssueClient(clientCertName, leafValidity, now)
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring the client certificate secret %s: %w", names.ClientTLSSecret(), err)
	}
	cfg, err := clientTLSConfig(trust, clientPair)
	if err != nil {
		return nil, err
	}
	certs, err := certificateStatuses(trust, secretCert{names.MemberTLSSecret(), memberPair.CertPEM}, secretCert{names.ClientTLSSecret(), clientPair.CertPEM})
	if err != nil {
		return nil, err
	}
	st := &tlsState{config: cfg, trustHash: pki.TrustHash(trust, memberPair.CertPEM), ca: caSec, certificates: certs}
	return st.withNames(clientPair.CertPEM, memberPair.CertPEM)
}

func clientTLSConfig(caPEM []byte, pair pki.KeyPair) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, fmt.Errorf("no CA certificate in ca.crt")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// waitingError ends a reconcile early, without failing it: something the operator does not
// control (cert-manager issuing a certificate) has to happen first. The reason and message
// become the Progressing condition.
type waitingError struct{ reason, message string }

func (w *waitingError) Error() string { return w.message }

// incompleteError is a TLS Secret that exists but lacks one of its keys.
type incompleteError struct{ secret, key string }

func (e *incompleteError) Error() string {
	return fmt.Sprintf("TLS secret %s has no %s", e.secret, e.key)
}

func isIncomplete(err error) bool {
	var e *incompleteError
	return errors.As(err, &e)
}

// readTLSSecret reads a Secret the operator did not create (uncached: it is not labelled
// as the operator's) and checks it has ca.crt, tls.crt and tls.key.
func (r *EtcdClusterReconciler) readTLSSecret(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	secret := &corev1.Secret{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, secret); err != nil {
		return nil, fmt.Errorf("reading TLS secret %s: %w", name, err)
	}
	for _, key := range []string{secretCACert, corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[key]) == 0 {
			return nil, &incompleteError{secret: name, key: key}
		}
	}
	return secret.Data, nil
}

// providedTLS checks certificates the operator did not issue (the user's, or cert-manager's)
// and returns the operator's client configuration from them. A Secret that is missing or
// whose certificate would not work is an error that names the Secret and says what is
// wrong, and nothing is created until it is fixed. They are checked on every reconcile. The
// member Secret's ca.crt may hold several CAs (a CA being rotated): a change of them, or of
// the CA that issued the member certificate, is rolled out to the members.
func (r *EtcdClusterReconciler) providedTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names cluster.Names) (*tlsState, error) {
	now := r.now()
	member, err := r.readTLSSecret(ctx, c.Namespace, names.MemberTLSSecret())
	if err != nil {
		return nil, err
	}
	checks := []struct {
		host  string
		usage x509.ExtKeyUsage
	}{
		{names.MemberHost(names.MemberName(0)), x509.ExtKeyUsageServerAuth},
		{names.ClientService() + "." + c.Namespace + ".svc", x509.ExtKeyUsageServerAuth},
		{"", x509.ExtKeyUsageClientAuth},
	}
	for _, chk := range checks {
		if err := pki.VerifyWithCACert(member[secretCACert], member[corev1.TLSCertKey], chk.host, chk.usage, now); err != nil {
			return nil, fmt.Errorf("TLS secret %s cannot serve as the member certificate: %w", names.MemberTLSSecret(), err)
		}
	}
	clientData, err := r.readTLSSecret(ctx, c.Namespace, names.ClientTLSSecret())
	if err != nil {
		return nil, err
	}
	if err := pki.VerifyWithCACert(member[secretCACert], clientData[corev1.TLSCertKey], "", x509.ExtKeyUsageClientAuth, now); err != nil {
		return nil, fmt.Errorf("TLS secret %s is not a client certificate from the CA of %s: %w", names.ClientTLSSecret(), names.MemberTLSSecret(), err)
	}
	cfg, err := clientTLSConfig(member[secretCACert], pki.KeyPair{CertPEM: clientData[corev1.TLSCertKey], KeyPEM: clientData[corev1.TLSPrivateKeyKey]})
	if err != nil {
		return nil, err
	}
	certs, err := certificateStatuses(member[secretCACert],
		secretCert{names.MemberTLSSecret(), member[corev1.TLSCertKey]}, secretCert{names.ClientTLSSecret(), clientData[corev1.TLSCertKey]})
	if err != nil {
		return nil, err
	}
	st := &tlsState{config: cfg, trustHash: pki.TrustHash(member[secretCACert], member[corev1.TLSCertKey]), certificates: certs}
	return st.withNames(clientData[corev1.TLSCertKey], member[corev1.TLSCertKey])
}

// ensureCA loads the cluster's CA, creating it when its Secret does not exist. A CA that
// exists but cannot be loaded is an error, never silently replaced: every member and client
// trusts it. A new CA counts the rotate-ca annotation the cluster has as handled.
func (r *EtcdClusterReconciler) ensureCA(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names cluster.Names, now time.Time) (*caSecret, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.CASecret()}, secret)
	if apierrors.IsNotFound(err) {
		pair, err := pki.NewCA(names.Name+" etcd CA", caValidity, now)
		if err != nil {
			return nil, err
		}
		store := pki.CAStore{Signer: pair, Request: c.Annotations[etcdv1alpha1.AnnotationRotateCA]}
		secret = tlsSecret(c, names.CASecret(), corev1.SecretTypeOpaque, nil)
		writeCAStore(secret, store)
		if err := r.Client.Create(ctx, secret); err != nil {
			return nil, err
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Created the certificate authority in secret %s", names.CASecret())
		return &caSecret{secret: secret, store: store}, nil
	}
	if err != nil {
		return nil, err
	}
	store, err := readCAStore(secret)
	if err != nil {
		return nil, err
	}
	return &caSecret{secret: secret, store: store}, nil
}

// readCAStore reads what the CA Secret holds; a rotation phase without the CA it needs is an
// error (pki.CAStore.Check).
func readCAStore(secret *corev1.Secret) (pki.CAStore, error) {
	d, a := secret.Data, secret.Annotations
	s := pki.CAStore{
		Signer:          pki.KeyPair{CertPEM: d[secretCACert], KeyPEM: d[secretCAKey]},
		PreviousCertPEM: d[secretPreviousCACert],
		Phase:           pki.RotationPhase(a[annotationCAPhase]),
		Request:         a[annotationCARequest],
	}
	if len(d[secretNextCACert]) > 0 || len(d[secretNextCAKey]) > 0 {
		s.Next = &pki.KeyPair{CertPEM: d[secretNextCACert], KeyPEM: d[secretNextCAKey]}
	}
	if since := a[annotationCAPhaseSince]; since != "" {
		t, err := time.Parse(time.RFC3339, since)
		if err != nil {
			return pki.CAStore{}, fmt.Errorf("annotation %s: %w", annotationCAPhaseSince, err)
		}
		s.PhaseSince = t
	}
	return s, s.Check()
}

// writeCAStore puts a CA store into its Secret: the CAs in its data, the rotation in its
// annotations.
func writeCAStore(secret *corev1.Secret, s pki.CAStore) {
	secret.Data = map[string][]byte{secretCACert: s.Signer.CertPEM, secretCAKey: s.Signer.KeyPEM}
	if s.Next != nil {
		secret.Data[secretNextCACert], secret.Data[secretNextCAKey] = s.Next.CertPEM, s.Next.KeyPEM
	}
	if len(s.PreviousCertPEM) > 0 {
		secret.Data[secretPreviousCACert] = s.PreviousCertPEM
	}
	if secret.Annotations == nil {
		secret.Annotations = map[string]string{}
	}
	set := func(k, v string) {
		if v == "" {
			delete(secret.Annotations, k)
		} else {
			secret.Annotations[k] = v
		}
	}
	set(annotationCAPhase, string(s.Phase))
	set(annotationCARequest, s.Request)
	set(annotationCAPhaseSince, "")
	if !s.PhaseSince.IsZero() {
		set(annotationCAPhaseSince, s.PhaseSince.UTC().Format(time.RFC3339))
	}
}

// ensureLeaf returns the key pair in Secret name, issuing it again with issue when the CA
// says it must be (pki.ReissueReason: missing, not the CA's, not covering the names, due
// for renewal); the event says why. Its ca.crt is kept equal to trust, the CAs the cluster
// trusts.
func (r *EtcdClusterReconciler) ensureLeaf(ctx context.Context, c *etcdv1alpha1.EtcdCluster, ca *pki.CA, trust []byte, name string, now time.Time,
	want pki.Leaf, issue func() (pki.KeyPair, error)) (pki.KeyPair, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return pki.KeyPair{}, err
	}
	exists := err == nil
	why := ca.ReissueReason(secret.Data[corev1.TLSCertKey], want, now, renewBefore)
	if exists && why == "" {
		pair := pki.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}
		if bytes.Equal(secret.Data[secretCACert], trust) {
			return pair, nil
		}
		secret.Data[secretCACert] = trust
		if err := r.Client.Update(ctx, secret); err != nil {
			return pki.KeyPair{}, err
		}
		eventf(r.Recorder, c, corev1.EventTypeNormal, "TrustUpdated", "IssueCertificate", "Updated the trusted CAs (ca.crt) in secret %s", name)
		return pair, nil
	}
	pair, err := issue()
	if err != nil {
		return pki.KeyPair{}, err
	}
	desired := tlsSecret(c, name, corev1.SecretTypeTLS, map[string][]byte{
		secretCACert: trust, corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM,
	})
	if exists {
		secret.Data = desired.Data
		err = r.Client.Update(ctx, secret)
	} else {
		err = r.Client.Create(ctx, desired)
	}
	if err != nil {
		return pki.KeyPair{}, err
	}
	eventf(r.Recorder, c, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Issued a certificate in secret %s (the previous: %s)", name, why)
	return pair, nil
}

// advanceCARotation moves the rotation of the operator's CA on (pki.NextRotation) when the
// cluster is settled (nothing else to do, every member healthy and on the current spec): it
// starts when the EtcdCluster's rotate-ca annotation has a new value or the CA nears its
// expiry, and each phase ends once it is in force on every member. The next pass issues and
// rolls out what the new phase asks for.
func (r *EtcdClusterReconciler) advanceCARotation(ctx context.Context, c *etcdv1alpha1.EtcdCluster, st *tlsState, settled bool) error {
	if st == nil || st.ca == nil {
		return nil
	}
	minPhase := r.CAMinPhase
	if minPhase == 0 {
		minPhase = caMinPhase
	}
	step, ok, err := pki.NextRotation(st.ca.store, pki.RotationInput{
		Request: c.Annotations[etcdv1alpha1.AnnotationRotateCA], RenewBefore: caRenewBefore, Settled: settled,
		MinPhase: minPhase, Now: r.now(), CommonName: c.Name + " etcd CA", Validity: caValidity,
	})
	if err != nil {
		return fmt.Errorf("rotating the CA in secret %s: %w", st.ca.secret.Name, err)
	}
	if ok {
		secret := st.ca.secret.DeepCopy()
		writeCAStore(secret, step.Store)
		if err := r.Client.Update(ctx, secret); err != nil {
			return fmt.Errorf("rotating the CA in secret %s: %w", secret.Name, err)
		}
		st.ca.secret, st.ca.store = secret, step.Store
		eventf(r.Recorder, c, corev1.EventTypeNormal, step.Event, "RotateCA", "%s", step.Message)
	}
	return nil
}

// rotatingCA says that a rotation of the operator's CA is under way: the cluster is looked
// at again within requeueRotating, to end each phase in time.
func (st *tlsState) rotatingCA() bool {
	return st != nil && st.ca != nil && st.ca.store.Phase != pki.RotationNone
}

func tlsSecret(c *etcdv1alpha1.EtcdCluster, name string, typ corev1.SecretType, data map[string][]byte) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: c.Namespace,
			Labels:          cluster.For(c).Labels(),
			OwnerReferences: []metav1.OwnerReference{resources.OwnerReference(c)},
		},
		Type: typ,
		Data: data,
	}
}
