package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
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
// their certificate files on every handshake, so a renewal needs no restart.
const (
	caValidity     = 10 * 365 * 24 * time.Hour
	leafValidity   = 365 * 24 * time.Hour
	renewBefore    = 30 * 24 * time.Hour
	clientCertName = "etcdpilot"

	secretCACert = "ca.crt"
	secretCAKey  = "ca.key"
)

// ensureTLS makes sure the cluster's CA, member certificate and client certificate exist,
// are signed by the CA, cover the cluster's names and are not about to expire; it issues
// whatever is missing or wrong. It returns the TLS configuration the operator's etcd client
// uses (the client certificate), or nil when TLS is disabled.
func (r *EtcdClusterReconciler) ensureTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*tls.Config, error) {
	names := cluster.For(c)
	if !names.TLS {
		return nil, nil
	}
	switch c.Spec.TLS.Mode {
	case etcdv1alpha1.TLSModeSecrets:
		return r.providedTLS(ctx, c, names)
	case etcdv1alpha1.TLSModeCertManager:
		return r.certManagerTLS(ctx, c, names)
	}
	now := r.now()
	ca, err := r.ensureCA(ctx, c, names, now)
	if err != nil {
		return nil, fmt.Errorf("ensuring the CA secret %s: %w", names.CASecret(), err)
	}
	member := pki.Leaf{Usage: x509.ExtKeyUsageServerAuth, DNSNames: names.ServingDNSNames(r.ClusterDomain), IPs: []net.IP{net.IPv4(127, 0, 0, 1)}}
	if _, err := r.ensureLeaf(ctx, c, ca, names.MemberTLSSecret(), now, member, func() (pki.KeyPair, error) {
		return ca.IssueServer(names.MemberCommonName(), member.DNSNames, member.IPs, leafValidity, now)
	}); err != nil {
		return nil, fmt.Errorf("ensuring the member certificate secret %s: %w", names.MemberTLSSecret(), err)
	}
	clientPair, err := r.ensureLeaf(ctx, c, ca, names.ClientTLSSecret(), now, pki.Leaf{Usage: x509.ExtKeyUsageClientAuth}, func() (pki.KeyPair, error) {
		return ca.IssueClient(clientCertName, leafValidity, now)
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring the client certificate secret %s: %w", names.ClientTLSSecret(), err)
	}
	return clientTLSConfig(ca.CertPEM(), clientPair)
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
// wrong, and nothing is created until it is fixed. They are checked on every reconcile.
func (r *EtcdClusterReconciler) providedTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names cluster.Cluster) (*tls.Config, error) {
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
	return clientTLSConfig(member[secretCACert], pki.KeyPair{CertPEM: clientData[corev1.TLSCertKey], KeyPEM: clientData[corev1.TLSPrivateKeyKey]})
}

// ensureCA loads the cluster's CA, creating it when its Secret does not exist. A CA that
// exists but cannot be loaded is an error, never silently replaced: every member and client
// trusts it.
func (r *EtcdClusterReconciler) ensureCA(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names cluster.Cluster, now time.Time) (*pki.CA, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.CASecret()}, secret)
	if apierrors.IsNotFound(err) {
		pair, err := pki.NewCA(names.Name+" etcd CA", caValidity, now)
		if err != nil {
			return nil, err
		}
		secret = tlsSecret(c, names.CASecret(), corev1.SecretTypeOpaque, map[string][]byte{
			secretCACert: pair.CertPEM, secretCAKey: pair.KeyPEM,
		})
		if err := r.Client.Create(ctx, secret); err != nil {
			return nil, err
		}
		r.event(c, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Created the certificate authority in secret %s", names.CASecret())
		return pki.LoadCA(pair)
	}
	if err != nil {
		return nil, err
	}
	return pki.LoadCA(pki.KeyPair{CertPEM: secret.Data[secretCACert], KeyPEM: secret.Data[secretCAKey]})
}

// ensureLeaf returns the key pair in Secret name, issuing it again with issue when the CA
// says it must be (pki.ReissueReason: missing, not the CA's, not covering the names, due
// for renewal); the event says why.
func (r *EtcdClusterReconciler) ensureLeaf(ctx context.Context, c *etcdv1alpha1.EtcdCluster, ca *pki.CA, name string, now time.Time,
	want pki.Leaf, issue func() (pki.KeyPair, error)) (pki.KeyPair, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return pki.KeyPair{}, err
	}
	exists := err == nil
	why := ca.ReissueReason(secret.Data[corev1.TLSCertKey], want, now, renewBefore)
	if exists && why == "" {
		return pki.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}, nil
	}
	pair, err := issue()
	if err != nil {
		return pki.KeyPair{}, err
	}
	desired := tlsSecret(c, name, corev1.SecretTypeTLS, map[string][]byte{
		secretCACert: ca.CertPEM(), corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM,
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
	r.event(c, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Issued a certificate in secret %s (the previous: %s)", name, why)
	return pair, nil
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
