package resources

import (
	"fmt"
	"strconv"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Paths inside the etcd container.
const (
	// DataMountPath is where the member's data volume is mounted.
	DataMountPath = "/var/lib/etcd"
	// DataDir is etcd's --data-dir: a directory inside the volume rather than its root,
	// so etcd can create it with the 0700 mode it insists on, whatever the volume's root
	// looks like (lost+found, a root-owned mount point).
	DataDir = DataMountPath + "/data"
	// PreUpgradeSnapshotPath is where the snapshot taken before an upgrade is saved, on the
	// member's volume next to its data directory (one file, replaced by the next upgrade).
	PreUpgradeSnapshotPath = DataMountPath + "/pre-upgrade-snapshot.db"
	// TLSMountPath is where the member certificate Secret is mounted.
	TLSMountPath = "/etc/etcd/tls"
	// TLSCertFile is the member certificate (kubernetes.io/tls layout).
	TLSCertFile = TLSMountPath + "/tls.crt"
	// TLSKeyFile is the member certificate's private key.
	TLSKeyFile = TLSMountPath + "/tls.key"
	// TLSCAFile is the cluster CA certificate, trusted for both clients and peers.
	TLSCAFile = TLSMountPath + "/ca.crt"
)

// MemberConfig is what a member needs to know, besides the EtcdCluster, on its first
// start: its name and the cluster it bootstraps or joins. etcd reads the --initial-*
// flags only when its data directory is empty, so a restarted member ignores them.
type MemberConfig struct {
	// Name is the member's name: also its pod's name and the host in its URLs.
	Name string
	// InitialCluster lists "name=peerURL" for every member of the cluster the member
	// starts into, itself included, in the order given. For a new cluster that is every
	// initial member; for a member joining with `member add` it is the members etcd
	// returned plus the new one.
	InitialCluster []string
	// InitialClusterState is "new" when bootstrapping a cluster and "existing" when the
	// member joins a running one.
	InitialClusterState string
	// Version is the etcd release the member runs; empty means spec.version. It differs
	// while an upgrade is rolled back: the member goes back to the previous release.
	Version string
	// Image, when set, replaces the image of Version (crash tests only: a broken image).
	Image string
	// TrustHash identifies the trusted CAs and the issuer of the member certificate the pod
	// starts with (pki.TrustHash); empty without TLS. etcd reads its trusted CAs only when it
	// starts, so a change of them is rolled out: it is part of the spec hash.
	TrustHash string
}

// EtcdArgs returns the etcd command-line flags of member m, one "--flag=value" per
// element, in a fixed order so the pod spec (and the golden files) are stable.
//
// etcd listens on all addresses but advertises the member's stable DNS name through the
// headless peer Service, which survives pod rescheduling where a pod IP would not. The
// metrics listener is always plain HTTP: it serves /metrics, /livez and /readyz, which
// the kubelet probes and Prometheus scrape without a client certificate. With TLS, the
// one member certificate serves both client and peer traffic, and client certificates
// signed by the cluster CA are required on both. etcd's corruption checks are on (the flags
// of the member's release: versions.CorruptionCheckFlags): a member whose data differs from
// its peers' refuses to start, and a divergence found at a compaction raises the CORRUPT
// alarm.
func EtcdArgs(c *etcdv1alpha1.EtcdCluster, m MemberConfig) []string {
	spec := clusterspec.Effective(c)
	cl := cluster.For(c)
	s := scheme(cl)
	args := []string{
		"--name=" + m.Name,
		"--data-dir=" + DataDir,
		fmt.Sprintf("--listen-peer-urls=%s://0.0.0.0:%d", s, cluster.PeerPort),
		fmt.Sprintf("--listen-client-urls=%s://0.0.0.0:%d", s, cluster.ClientPort),
		fmt.Sprintf("--listen-metrics-urls=http://0.0.0.0:%d", cluster.MetricsPort),
		// The gRPC latency histograms (grpc_server_handling_seconds), which the alert
		// etcdGRPCRequestsSlow and the dashboard's gRPC latency panel read.
		"--metrics=extensive",
		"--advertise-client-urls=" + cl.ClientURL(m.Name),
		"--initial-advertise-peer-urls=" + cl.PeerURL(m.Name),
		"--initial-cluster=" + strings.Join(m.InitialCluster, ","),
		"--initial-cluster-state=" + m.InitialClusterState,
		"--initial-cluster-token=" + cluster.Token(c),
		"--auto-compaction-mode=" + string(spec.Etcd.AutoCompactionMode),
		"--auto-compaction-retention=" + spec.Etcd.AutoCompactionRetention,
		"--quota-backend-bytes=" + strconv.FormatInt(spec.Etcd.QuotaBackendBytes.Value(), 10),
		"--snapshot-count=" + strconv.FormatInt(spec.Etcd.SnapshotCount, 10),
		"--heartbeat-interval=" + strconv.Itoa(int(spec.Etcd.HeartbeatIntervalMillis)),
		"--election-timeout=" + strconv.Itoa(int(spec.Etcd.ElectionTimeoutMillis)),
	}
	args = append(args, versions.CorruptionCheckFlags(spec.Version)...)
	if cl.TLS {
		args = append(args, tlsArgs(cl, spec.Version)...)
	}
	return args
}

// tlsArgs are the flags that turn on TLS, with client certificates required, for both
// client and peer traffic.
//
// With the operator's CA, peers must present the member certificate (its common name), not
// merely any certificate of the cluster's CA such as the client one. With the user's
// certificates (TLS mode Secrets) the operator cannot know their names in advance, so any
// certificate of the user's CA is accepted; the API documents that the CA should be
// dedicated to the cluster. etcd would also check that a peer's certificate
// names the address it connects from, by a reverse DNS lookup of the pod IP; a new member's
// pod record is not always published when it first dials, which failed its first start, and
// the one member certificate covers every member anyway. So that check is skipped: the CA is
// the cluster's own and the common name is pinned.
//
// Both listeners accept TLS 1.3 only, which every supported release allows: its cipher
// suites are fixed by the protocol (AES-128-GCM, AES-256-GCM, ChaCha20-Poly1305, all with
// forward secrecy), so no cipher list is set (etcd refuses one with TLS 1.3 only).
func tlsArgs(cl cluster.Names, version string) []string {
	args := []string{
		"--tls-min-version=TLS1.3",
		"--cert-file=" + TLSCertFile,
		"--key-file=" + TLSKeyFile,
		"--trusted-ca-file=" + TLSCAFile,
		"--client-cert-auth=true",
		"--peer-cert-file=" + TLSCertFile,
		"--peer-key-file=" + TLSKeyFile,
		"--peer-trusted-ca-file=" + TLSCAFile,
		"--peer-client-cert-auth=true",
	}
	if cl.UserSecrets == nil {
		args = append(args, "--peer-cert-allowed-cn="+cl.MemberCommonName())
	}
	return append(args, "--"+versions.PeerSkipClientSANVerificationFlag(version)+"=true")
}

// scheme is the URL scheme of the client and peer listeners.
func scheme(cl cluster.Names) string {
	if cl.TLS {
		return "https"
	}
	return "http"
}
