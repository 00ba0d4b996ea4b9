package framework

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"sort"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"

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
	return fmt.Sprintf("%s://%s.%s.svc:%d", clientScheme(c), c.Status.ClientService, c.Namespace, cluster.ClientPort), nil
}

// MemberEndpoint is the URL of one member of c on its own, through the headless peer
// Service: https://<member>.<peer service>.<namespace>.svc:2379, or http as ClientEndpoint.
// The member certificate covers it (a wildcard under the peer Service).
func MemberEndpoint(c *etcdv1alpha1.EtcdCluster, member string) string {
	return fmt.Sprintf("%s://%s:%d", clientScheme(c), cluster.For(c).MemberHost(member), cluster.ClientPort)
}

// clientScheme is https, or http when TLS is disabled (no client Secret).
func clientScheme(c *etcdv1alpha1.EtcdCluster) string {
	if c.Status.ClientSecret == "" {
		return "http"
	}
	return "https"
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

// Connect returns an etcd client of c (clientAddresses: the client Service from a pod,
// which sends each connection to a ready member; every member from the machine),
// authenticated with the client certificate of status.clientSecret.
func (e *Env) Connect(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (etcd.Client, error) {
	addresses, err := e.clientAddresses(ctx, c)
	if err != nil {
		return nil, err
	}
	cfg, err := e.clientConfig(ctx, c, addresses...)
	if err != nil {
		return nil, err
	}
	return e.newEtcdClient(cfg)
}

// clientConfig is the configuration of a client of addresses, host:port of c's members or
// Service, with the client certificate of status.clientSecret (ClientTLS).
func (e *Env) clientConfig(ctx context.Context, c *etcdv1alpha1.EtcdCluster, addresses ...string) (etcd.Config, error) {
	cfg := etcd.Config{Endpoints: urls(c, addresses)}
	var err error
	cfg.TLS, err = e.ClientTLS(ctx, c)
	return cfg, err
}

// ReadFromMember reads key from member's own data: a serializable read on that member
// alone, which answers from what the member holds, without asking the leader. A member
// whose data differs from the others' serves its own value; a linearizable read (Get, through
// the client Service) serves the majority's.
func (e *Env) ReadFromMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member, key string) MemberRead {
	address, err := e.memberAddress(ctx, c, member)
	if err != nil {
		return MemberRead{Err: err}
	}
	cfg, err := e.clientConfig(ctx, c, address)
	if err != nil {
		return MemberRead{Err: err}
	}
	read := e.ReadLocal
	if read == nil {
		read = readLocal
	}
	got, err := read(ctx, cfg, key)
	if err != nil {
		return MemberRead{Err: fmt.Errorf("reading %s from member %s alone: %w", key, member, err)}
	}
	return got
}

// readLocal is the serializable read of ReadFromMember, with clientv3: internal/etcd's
// Client reads linearizably only, as the operator needs.
func readLocal(ctx context.Context, cfg etcd.Config, key string) (MemberRead, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: cfg.Endpoints, TLS: cfg.TLS,
		DialTimeout: etcd.DefaultDialTimeout, Logger: zap.NewNop()})
	if err != nil {
		return MemberRead{}, err
	}
	defer func() { _ = cli.Close() }() // the read is done by then
	ctx, cancel := context.WithTimeout(ctx, etcd.CallTimeout)
	defer cancel()
	resp, err := cli.Get(ctx, key, clientv3.WithSerializable())
	if err != nil {
		return MemberRead{}, err
	}
	got := MemberRead{MemberID: resp.Header.GetMemberId()}
	if len(resp.Kvs) > 0 {
		got.Value, got.Found = string(resp.Kvs[0].Value), true
	}
	return got, nil
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
