package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"sort"
	"strconv"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// How a test reaches a cluster's members depends on where it runs. The scorecard tests run
// in a pod: they dial the Services' DNS names, which the member certificates cover, and
// verify them as any client does. The e2e suite runs on the cluster's machine, which routes
// the pod and Service networks but cannot resolve the cluster's names: with Env.PodNetwork
// set, it dials the member pods' IPs (only those inside PodNetwork: an address outside it
// may not be this machine's) or the client Service's ClusterIP, and checks the member's
// certificate against the client Service's name instead of the address dialed.

// fromHost reports whether the test runs on the cluster's machine (PodNetwork is set).
func (e *Env) fromHost() bool { return e.PodNetwork.IsValid() }

// MemberAddresses are host:port of the client listener of every member of c that can be
// reached now, sorted: the pods' IPs inside PodNetwork from the machine, the members'
// names under the peer Service (status.members) from a pod.
func (e *Env) MemberAddresses(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]string, error) {
	port := strconv.Itoa(cluster.ClientPort)
	if !e.fromHost() {
		var out []string
		for _, m := range c.Status.Members {
			out = append(out, net.JoinHostPort(cluster.For(c).MemberHost(m.Name), port))
		}
		return out, nil
	}
	pods, err := e.listMemberPods(ctx, c)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, p := range pods {
		if ip, err := netip.ParseAddr(p.Status.PodIP); err == nil && e.PodNetwork.Contains(ip) {
			out = append(out, net.JoinHostPort(ip.String(), port))
		}
	}
	sort.Strings(out)
	return out, nil
}

// memberAddress is host:port of member's client listener (MemberAddresses).
func (e *Env) memberAddress(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string) (string, error) {
	if !e.fromHost() {
		return net.JoinHostPort(cluster.For(c).MemberHost(member), strconv.Itoa(cluster.ClientPort)), nil
	}
	pod := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: member}, pod); err != nil {
		return "", fmt.Errorf("reading member pod %s: %w", member, err)
	}
	ip, err := netip.ParseAddr(pod.Status.PodIP)
	if err != nil || !e.PodNetwork.Contains(ip) {
		return "", fmt.Errorf("member pod %s has no IP in %s (%q)", member, e.PodNetwork, pod.Status.PodIP)
	}
	return net.JoinHostPort(ip.String(), strconv.Itoa(cluster.ClientPort)), nil
}

// ServiceAddress is host:port of c's client Service, which sends each connection to a
// ready member: its DNS name from a pod, its ClusterIP from the machine.
func (e *Env) ServiceAddress(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (string, error) {
	if c.Status.ClientService == "" {
		return "", fmt.Errorf("EtcdCluster %s has no status.clientService", c.Name)
	}
	port := strconv.Itoa(cluster.ClientPort)
	if !e.fromHost() {
		return net.JoinHostPort(c.Status.ClientService+"."+c.Namespace+".svc", port), nil
	}
	svc := &corev1.Service{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientService}, svc); err != nil {
		return "", fmt.Errorf("reading the client Service: %w", err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return "", fmt.Errorf("client Service %s has no ClusterIP", svc.Name)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, port), nil
}

// ClientTLS is the TLS configuration of a client of c: the client certificate of
// status.clientSecret, trusting the cluster's CA in it. From the machine, the member's
// certificate is checked against the client Service's name, which it covers, not against
// the IP dialed. Nil when c serves plain TCP (no client Secret).
func (e *Env) ClientTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*tls.Config, error) {
	if c.Status.ClientSecret == "" {
		return nil, nil
	}
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientSecret}, secret); err != nil {
		return nil, fmt.Errorf("reading the client Secret %s: %w", c.Status.ClientSecret, err)
	}
	cfg, err := TLSConfig(secret.Data)
	if err != nil {
		return nil, fmt.Errorf("client Secret %s: %w", c.Status.ClientSecret, err)
	}
	if e.fromHost() {
		verifyAs(cfg, c.Status.ClientService)
	}
	return cfg, nil
}

// verifyAs makes cfg check the server's chain against cfg.RootCAs and its name against
// name, whatever address was dialed.
func verifyAs(cfg *tls.Config, name string) {
	roots := cfg.RootCAs
	verifyWith(cfg, name, func() *x509.CertPool { return roots })
}

// verifyWith makes cfg check the server's chain against the roots of the moment and its
// name against name, whatever address was dialed.
func verifyWith(cfg *tls.Config, name string, roots func() *x509.CertPool) {
	// The standard check compares the certificate with the address dialed; the same chain
	// and name check is made in VerifyConnection against name instead.
	cfg.InsecureSkipVerify = true //nolint:gosec // verified in VerifyConnection
	cfg.VerifyConnection = func(cs tls.ConnectionState) error {
		if len(cs.PeerCertificates) == 0 {
			return errors.New("no server certificate")
		}
		inter := x509.NewCertPool()
		for _, ic := range cs.PeerCertificates[1:] {
			inter.AddCert(ic)
		}
		_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: roots(), Intermediates: inter, DNSName: name})
		return err
	}
}

// ReloadingTLS is the TLS configuration of a client of c that reads c's client Secret
// again when told (Reload), as a client that watches its mounted Secret does: through a CA
// rotation or a certificate's renewal, its next connection uses what the Secret holds then.
// It is safe for concurrent use.
type ReloadingTLS struct {
	// Config is the configuration to dial with: it presents the certificate and trusts the
	// CA of the last Reload.
	Config *tls.Config

	env    *Env
	secret client.ObjectKey

	mu    sync.Mutex
	roots *x509.CertPool
	cert  *tls.Certificate
}

// ReloadingTLS reads c's client Secret a first time. From the machine, the member's
// certificate is checked against the client Service's name (ClientTLS).
func (e *Env) ReloadingTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (*ReloadingTLS, error) {
	if c.Status.ClientSecret == "" {
		return nil, fmt.Errorf("EtcdCluster %s has no status.clientSecret", c.Name)
	}
	t := &ReloadingTLS{env: e, secret: client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientSecret}}
	if err := t.Reload(ctx); err != nil {
		return nil, err
	}
	t.Config = &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
			t.mu.Lock()
			defer t.mu.Unlock()
			return t.cert, nil
		},
	}
	name := c.Status.ClientService
	if !e.fromHost() {
		name = c.Status.ClientService + "." + c.Namespace + ".svc"
	}
	verifyWith(t.Config, name, func() *x509.CertPool {
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.roots
	})
	return t, nil
}

// Reload reads the client Secret again.
func (t *ReloadingTLS) Reload(ctx context.Context) error {
	secret := &corev1.Secret{}
	if err := t.env.Client.Get(ctx, t.secret, secret); err != nil {
		return fmt.Errorf("reading the client Secret %s: %w", t.secret.Name, err)
	}
	cfg, err := TLSConfig(secret.Data)
	if err != nil {
		return fmt.Errorf("client Secret %s: %w", t.secret.Name, err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	t.roots, t.cert = cfg.RootCAs, &cfg.Certificates[0]
	return nil
}

// SetCertificate makes the client present cert until the next Reload: a client that
// missed a renewal.
func (t *ReloadingTLS) SetCertificate(cert *tls.Certificate) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cert = cert
}

// urls are the client URLs of addresses, host:port of c's members or Service.
func urls(c *etcdv1alpha1.EtcdCluster, addresses []string) []string {
	out := make([]string, len(addresses))
	for i, a := range addresses {
		out[i] = clientScheme(c) + "://" + a
	}
	return out
}

// clientAddresses are where Connect and ClientV3 dial by default: the client Service from
// a pod, every member that can be reached from the machine (the machine has no name for
// the Service, and a client given every member fails over between them as it would).
func (e *Env) clientAddresses(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]string, error) {
	if !e.fromHost() {
		a, err := e.ServiceAddress(ctx, c)
		return []string{a}, err
	}
	addrs, err := e.MemberAddresses(ctx, c)
	if err == nil && len(addrs) == 0 {
		err = fmt.Errorf("no member pod of %s has an IP in %s yet", c.Name, e.PodNetwork)
	}
	return addrs, err
}

// ClientV3 is an etcd client (etcd's own, for what internal/etcd's narrow client does not
// offer: revisions, the cluster ID, statuses, transactions) of addresses, host:port of c's
// members or Service; of clientAddresses when none are given. The caller closes it.
func (e *Env) ClientV3(ctx context.Context, c *etcdv1alpha1.EtcdCluster, addresses ...string) (*clientv3.Client, error) {
	if len(addresses) == 0 {
		var err error
		if addresses, err = e.clientAddresses(ctx, c); err != nil {
			return nil, err
		}
	}
	cfg, err := e.ClientTLS(ctx, c)
	if err != nil {
		return nil, err
	}
	return clientv3.New(clientv3.Config{Endpoints: urls(c, addresses), TLS: cfg, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
}
