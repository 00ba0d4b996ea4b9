// Package cluster names the objects that make up one etcd cluster and the URLs its members
// use. Every name is derived from the EtcdCluster, so the operator can find everything again
// after a restart without remembering anything.
package cluster

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Ports every member listens on.
const (
	ClientPort  = 2379
	PeerPort    = 2380
	MetricsPort = 2381
)

// Labels the operator puts on everything it creates for a cluster.
const (
	LabelName      = "app.kubernetes.io/name"
	LabelInstance  = "app.kubernetes.io/instance"
	LabelManagedBy = "app.kubernetes.io/managed-by"
	LabelComponent = "app.kubernetes.io/component"
	// LabelCluster names the EtcdCluster an object belongs to.
	LabelCluster = "etcd.etcdpilot.io/cluster"
	// LabelMember names the member a pod or PVC belongs to.
	LabelMember = "etcd.etcdpilot.io/member"
	// LabelVersion is the etcd release a member pod runs (on pods only).
	LabelVersion = "etcd.etcdpilot.io/version"

	// AppName is the value of LabelName on every object.
	AppName = "etcd"
	// ManagedBy is the value of LabelManagedBy on every object.
	ManagedBy = "etcdpilot"
)

// Names is the naming view of one EtcdCluster.
type Names struct {
	Name      string
	Namespace string
	TLS       bool
	// UserSecrets are the user's TLS Secrets (TLS mode Secrets), nil otherwise.
	UserSecrets *etcdv1alpha1.TLSSecrets
}

// For returns the naming view of an EtcdCluster.
func For(c *etcdv1alpha1.EtcdCluster) Names {
	out := Names{Name: c.Name, Namespace: c.Namespace, TLS: c.Spec.TLS.Mode != etcdv1alpha1.TLSModeDisabled}
	if c.Spec.TLS.Mode == etcdv1alpha1.TLSModeSecrets && c.Spec.TLS.Secrets != nil {
		out.UserSecrets = c.Spec.TLS.Secrets.DeepCopy()
	}
	return out
}

// Labels returns the labels shared by every object of the cluster. They never change, so an
// operator upgrade does not touch running pods.
func (c Names) Labels() map[string]string {
	return map[string]string{
		LabelName:      AppName,
		LabelInstance:  c.Name,
		LabelManagedBy: ManagedBy,
		LabelCluster:   c.Name,
	}
}

// SelectorLabels select the member pods of the cluster.
func (c Names) SelectorLabels() map[string]string {
	return map[string]string{LabelCluster: c.Name, LabelName: AppName}
}

// MemberLabels returns the labels of one member's pod and PVC.
func (c Names) MemberLabels(member string) map[string]string {
	l := c.Labels()
	l[LabelComponent] = "member"
	l[LabelMember] = member
	return l
}

// PeerService is the headless Service that gives every member a stable DNS name.
func (c Names) PeerService() string { return c.Name + "-peer" }

// ClientService is the Service clients connect to.
func (c Names) ClientService() string { return c.Name + "-client" }

// PreUpgradeBackup is the EtcdBackup that holds the snapshot taken before the upgrade to
// version (spec.upgradeBackupDestination), for example main-pre-upgrade-3-7-3.
func (c Names) PreUpgradeBackup(version string) string {
	return c.Name + "-pre-upgrade-" + strings.ReplaceAll(version, ".", "-")
}

// FinalBackup is the EtcdBackup that holds the final backup before the cluster hibernates
// at the given generation (spec.hibernation.backupDestination), for example
// main-hibernation-7: each hibernation has its own.
func (c Names) FinalBackup(generation int64) string {
	return c.Name + "-hibernation-" + strconv.FormatInt(generation, 10)
}

// NetworkPolicy admits to the member pods only who needs them (spec.networkPolicy).
func (c Names) NetworkPolicy() string { return c.Name + "-members" }

// JobSelectorLabels select the pods of the cluster's backup Jobs: not its member pods
// (their name label is the operator's, not "etcd").
func (c Names) JobSelectorLabels() map[string]string {
	return map[string]string{LabelName: ManagedBy, LabelManagedBy: ManagedBy, LabelComponent: "backup", LabelCluster: c.Name}
}

// PodDisruptionBudget keeps a quorum of members up during voluntary disruptions.
func (c Names) PodDisruptionBudget() string { return c.Name }

// CASecret holds the cluster's certificate authority (OperatorCA mode).
func (c Names) CASecret() string { return c.Name + "-ca" }

// MemberTLSSecret holds the certificate every member serves clients and peers with: the
// operator's, or the user's in TLS mode Secrets.
func (c Names) MemberTLSSecret() string {
	if c.UserSecrets != nil {
		return c.UserSecrets.MemberSecretName
	}
	return c.Name + "-member-tls"
}

// MemberCommonName is the common name of the member certificate; members accept peers
// only with this name.
func (c Names) MemberCommonName() string { return c.Name + "-member" }

// ClientTLSSecret holds a client certificate and the CA: for users and for the operator. It
// is the user's in TLS mode Secrets.
func (c Names) ClientTLSSecret() string {
	if c.UserSecrets != nil {
		return c.UserSecrets.ClientSecretName
	}
	return c.Name + "-client-tls"
}

// Token is the initial cluster token. It is derived from the EtcdCluster's UID, so two
// clusters, even with the same name, can never join each other by mistake.
func Token(c *etcdv1alpha1.EtcdCluster) string {
	return fmt.Sprintf("%s-%s", c.Name, c.UID)
}

// MemberName is the name of the member with the given ordinal: also its pod's name.
func (c Names) MemberName(ordinal int) string { return fmt.Sprintf("%s-%d", c.Name, ordinal) }

// MemberOrdinal returns the ordinal of a member name of this cluster.
func (c Names) MemberOrdinal(member string) (int, bool) {
	rest, ok := strings.CutPrefix(member, c.Name+"-")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(rest)
	if err != nil || n < 0 || strconv.Itoa(n) != rest {
		return 0, false
	}
	return n, true
}

// PVCName is the name of a member's data volume claim.
func (c Names) PVCName(member string) string { return member + "-data" }

func (c Names) scheme() string {
	if c.TLS {
		return "https"
	}
	return "http"
}

// MemberHost is the stable DNS name of a member, through the headless peer Service.
func (c Names) MemberHost(member string) string {
	return fmt.Sprintf("%s.%s.%s.svc", member, c.PeerService(), c.Namespace)
}

// PeerURL is the URL other members reach a member on.
func (c Names) PeerURL(member string) string {
	return fmt.Sprintf("%s://%s:%d", c.scheme(), c.MemberHost(member), PeerPort)
}

// ClientURL is the URL clients reach one member on.
func (c Names) ClientURL(member string) string {
	return fmt.Sprintf("%s://%s:%d", c.scheme(), c.MemberHost(member), ClientPort)
}

// ClientServiceURL is the URL clients reach the cluster on through its client Service,
// from inside the Kubernetes cluster.
func (c Names) ClientServiceURL() string {
	return fmt.Sprintf("%s://%s.%s.svc:%d", c.scheme(), c.ClientService(), c.Namespace, ClientPort)
}

// MemberFromPeerURL returns the member name a peer URL of this cluster belongs to.
func (c Names) MemberFromPeerURL(peerURL string) (string, bool) {
	u, err := url.Parse(peerURL)
	if err != nil {
		return "", false
	}
	member, rest, ok := strings.Cut(u.Hostname(), ".")
	if !ok || rest != fmt.Sprintf("%s.%s.svc", c.PeerService(), c.Namespace) {
		return "", false
	}
	if _, ok := c.MemberOrdinal(member); !ok {
		return "", false
	}
	return member, true
}

// ServingDNSNames are the names the member certificate must cover: every member through
// the peer Service (a wildcard, so members come and go without re-issuing), the client
// Service, and localhost for etcdctl inside a member pod.
func (c Names) ServingDNSNames(clusterDomain string) []string {
	peer := fmt.Sprintf("%s.%s.svc", c.PeerService(), c.Namespace)
	client := c.ClientService()
	return []string{
		"*." + peer,
		"*." + peer + "." + clusterDomain,
		client,
		client + "." + c.Namespace,
		client + "." + c.Namespace + ".svc",
		client + "." + c.Namespace + ".svc." + clusterDomain,
		"localhost",
	}
}
