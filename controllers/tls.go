package controllers

import (
	"context"
	"crypto/tls"
	"crypto/x509"
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
	now := r.now()
	ca, err := r.ensureCA(ctx, c, names, now)
	if err != nil {
		return nil, fmt.Errorf("ensuring the CA secret %s: %w", names.CASecret(), err)
	}
	dnsNames := names.ServingDNSNames(r.ClusterDomain)
	ips := []net.IP{net.IPv4(127, 0, 0, 1)}
	if _, err := r.ensureLeaf(ctx, c, ca, names.MemberTLSSecret(), now, func(l []byte) error {
		if err := ca.Verify(l, "", x509.ExtKeyUsageServerAuth, now); err != nil {
			return err
		}
		covers, err := pki.CoversNames(l, dnsNames, ips)
		if err == nil && !covers {
			err = fmt.Errorf("does not cover the cluster's names")
		}
		return err
	}, func() (pki.KeyPair, error) {
		return ca.IssueServer(names.MemberCommonName(), dnsNames, ips, leafValidity, now)
	}); err != nil {
		return nil, fmt.Errorf("ensuring the member certificate secret %s: %w", names.MemberTLSSecret(), err)
	}
	clientPair, err := r.ensureLeaf(ctx, c, ca, names.ClientTLSSecret(), now, func(l []byte) error {
		return ca.Verify(l, "", x509.ExtKeyUsageClientAuth, now)
	}, func() (pki.KeyPair, error) {
		return ca.IssueClient(clientCertName, leafValidity, now)
	})
	if err != nil {
		return nil, fmt.Errorf("ensuring the client certificate secret %s: %w", names.ClientTLSSecret(), err)
	}
	cert, err := tls.X509KeyPair(clientPair.CertPEM, clientPair.KeyPEM)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca.CertPEM())
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
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

// ensureLeaf returns the key pair in Secret name, re-issuing it with issue when it is
// missing, fails check, or is due for renewal.
func (r *EtcdClusterReconciler) ensureLeaf(ctx context.Context, c *etcdv1alpha1.EtcdCluster, ca *pki.CA, name string, now time.Time,
	check func(leaf []byte) error, issue func() (pki.KeyPair, error)) (pki.KeyPair, error) {
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: name}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return pki.KeyPair{}, err
	}
	exists := err == nil
	if exists {
		leaf := secret.Data[corev1.TLSCertKey]
		renew, rerr := pki.NeedsRenewal(leaf, now, renewBefore)
		if rerr == nil && !renew && check(leaf) == nil {
			return pki.KeyPair{CertPEM: leaf, KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}, nil
		}
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
	r.event(c, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Issued a certificate in secret %s", name)
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
