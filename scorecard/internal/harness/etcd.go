package harness

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// ClientEndpoint is the URL of the cluster's client Service, as status.clientService names
// it: https://<service>.<namespace>.svc:2379, or http when TLS is disabled (no client
// Secret). The member certificate covers this name.
func ClientEndpoint(c *etcdv1alpha1.EtcdCluster) (string, error) {
	if c.Status.ClientService == "" {
		return "", fmt.Errorf("EtcdCluster %s has no status.clientService", c.Name)
	}
	scheme := "https"
	if c.Status.ClientSecret == "" {
		scheme = "http"
	}
	return fmt.Sprintf("%s://%s.%s.svc:%d", scheme, c.Status.ClientService, c.Namespace, cluster.ClientPort), nil
}

// TLSConfig is the client configuration from a client Secret's data: the certificate and
// key in tls.crt and tls.key, the cluster's CA in ca.crt.
func TLSConfig(data map[string][]byte) (*tls.Config, error) {
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey, "ca.crt"} {
		if len(data[key]) == 0 {
			return nil, fmt.Errorf("no %s", key)
		}
	}
	cert, err := tls.X509KeyPair(data[corev1.TLSCertKey], data[corev1.TLSPrivateKeyKey])
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data["ca.crt"]) {
		return nil, errors.New("no certificate in ca.crt")
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, RootCAs: pool, MinVersion: tls.VersionTLS12}, nil
}

// Connect returns an etcd client of c's client Service, authenticated with the client
// certificate of status.clientSecret. The Service sends each connection to a ready member.
func (e *Env) Connect(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (etcd.Client, error) {
	endpoint, err := ClientEndpoint(c)
	if err != nil {
		return nil, err
	}
	cfg := etcd.Config{Endpoints: []string{endpoint}}
	if c.Status.ClientSecret != "" {
		secret := &corev1.Secret{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: c.Status.ClientSecret}, secret); err != nil {
			return nil, fmt.Errorf("reading the client Secret %s: %w", c.Status.ClientSecret, err)
		}
		if cfg.TLS, err = TLSConfig(secret.Data); err != nil {
			return nil, fmt.Errorf("client Secret %s: %w", c.Status.ClientSecret, err)
		}
	}
	return e.newEtcdClient(cfg)
}

// WriteKeys writes n keys under prefix and returns them with their values.
func WriteKeys(ctx context.Context, cli etcd.Client, prefix string, n int) (map[string]string, error) {
	kv := make(map[string]string, n)
	for i := range n {
		k, v := fmt.Sprintf("%s/%03d", prefix, i), fmt.Sprintf("value-%03d", i)
		if err := cli.Put(ctx, k, v); err != nil {
			return kv, err
		}
		kv[k] = v
	}
	return kv, nil
}

// ReadKeys reads every key of want; a key that does not exist is left out of the result.
func ReadKeys(ctx context.Context, cli etcd.Client, want map[string]string) (map[string]string, error) {
	got := make(map[string]string, len(want))
	for k := range want {
		v, found, err := cli.Get(ctx, k)
		if err != nil {
			return got, err
		}
		if found {
			got[k] = v
		}
	}
	return got, nil
}

// Lost returns, sorted, the keys of want that got lacks or holds with another value.
func Lost(want, got map[string]string) []string {
	var lost []string
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			lost = append(lost, k)
		}
	}
	sort.Strings(lost)
	return lost
}

// CheckKeys reads every key of want back and fails when one is missing or different.
func CheckKeys(ctx context.Context, cli etcd.Client, want map[string]string) error {
	got, err := ReadKeys(ctx, cli, want)
	if err != nil {
		return err
	}
	if lost := Lost(want, got); len(lost) > 0 {
		return fmt.Errorf("%d of %d keys lost or changed, first %q", len(lost), len(want), lost[0])
	}
	return nil
}
