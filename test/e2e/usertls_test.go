package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// A cluster of the largest size, on certificates the test issues from a CA of its own as a
// user would (TLS mode Secrets): it bootstraps, loses a member with its data and grows back,
// and takes a member certificate renewed in its Secret. Each step is checked against etcd and
// the members' TLS listeners, not only the operator's status.
var _ = Describe("user-provided TLS", longestSpec(130), func() {
	It("bootstraps 7 members on the user's Secrets, replaces one whose volume is lost with a fresh member keeping every key, and serves a member certificate renewed in its Secret without restarting a member; Prometheus warns of the old one's expiry until then", func(ctx SpecContext) {
		const (
			name         = "utls"
			memberSecret = "my-member-cert"
			clientSecret = "my-client-cert"
		)
		ns := newTestNamespace(ctx, "e2e-usertls-")
		c := newCluster(ns, name, 7)
		c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeSecrets,
			Secrets: &etcdv1alpha1.TLSSecrets{MemberSecretName: memberSecret, ClientSecretName: clientSecret}}
		names := cluster.For(c)

		By("issuing a CA, a member certificate and a client certificate, and storing them as the user would")
		// The member certificate covers what the operator's own CA mode issues for: every
		// member through the peer Service, the client Service, and localhost for the member
		// itself. The CA outlives both leaves, so the NotAfter status reports is the leaf's.
		// The member certificate ends in 5 days, inside both of EtcdCertificateExpiring's
		// windows (21 and 7 days); the client certificate is far from them.
		now := time.Now()
		caPair, err := pki.NewCA("e2e user CA", 2*365*24*time.Hour, now)
		Expect(err).NotTo(HaveOccurred())
		ca, err := pki.LoadCA(caPair)
		Expect(err).NotTo(HaveOccurred())
		memberDNS, memberIPs := names.ServingDNSNames("cluster.local"), []net.IP{net.IPv4(127, 0, 0, 1)}
		memberPair, err := ca.IssueServer("e2e user member", memberDNS, memberIPs, 5*24*time.Hour, now)
		Expect(err).NotTo(HaveOccurred())
		clientPair, err := ca.IssueClient("e2e-user", 90*24*time.Hour, now)
		Expect(err).NotTo(HaveOccurred())
		for secret, pair := range map[string]pki.KeyPair{memberSecret: memberPair, clientSecret: clientPair} {
			Expect(k8sClient.Create(ctx, &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{Name: secret, Namespace: ns},
				Type:       corev1.SecretTypeTLS,
				Data:       map[string][]byte{"ca.crt": caPair.CertPEM, "tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM},
			})).To(Succeed())
		}
		memberCert, clientCert := parseCertificate(memberPair.CertPEM), parseCertificate(clientPair.CertPEM)

		By("creating a 7-member cluster on them and waiting for it to be Ready")
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		ready := waitReadyWithin(ctx, c, 5*time.Minute)
		Expect(ready.Status.ClientSecret).To(Equal(clientSecret), "clients are pointed at the user's client Secret")
		Expect(ready.Status.TLS).NotTo(BeNil())
		Expect(ready.Status.TLS.Certificates).To(ConsistOf(
			certificateStatus(memberSecret, memberCert.NotAfter), certificateStatus(clientSecret, clientCert.NotAfter)))

		By("etcd lists 7 voting members, each answers on its own endpoint and all follow one leader")
		// etcdV3Client trusts ca.crt of status.clientSecret and presents its certificate:
		// the user's CA and client certificate, checked above.
		cli := etcdV3Client(ctx, ns, name)
		Expect(cli.Endpoints()).To(HaveLen(7))
		list, err := cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Members).To(HaveLen(7))
		for _, m := range list.Members {
			Expect(m.IsLearner).To(BeFalse(), m.Name)
		}
		var leader uint64
		Eventually(func(g Gomega) {
			leader = expectOneLeader(ctx, g, cli, list.Members)
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		keys := map[string]string{}
		for i := range 50 {
			k, v := fmt.Sprintf("/e2e/usertls/%02d", i), fmt.Sprintf("value-%d", i)
			_, err := cli.Put(ctx, k, v)
			Expect(err).NotTo(HaveOccurred())
			keys[k] = v
		}

		By("Prometheus raises EtcdCertificateExpiring, warning and critical, for the member Secret alone")
		memberAlert := fmt.Sprintf(`namespace=%q, name=%q, secret=%q`, ns, name, memberSecret)
		Eventually(func(g Gomega) {
			severities := map[string]string{}
			for _, a := range allAlerts(ctx, g) {
				if a.Labels["alertname"] == "EtcdCertificateExpiring" && a.Labels["namespace"] == ns {
					g.Expect(a.Labels["secret"]).To(Equal(memberSecret), "the client certificate ends in 90 days")
					severities[a.Labels["severity"]] = a.State
				}
			}
			g.Expect(severities).To(Equal(map[string]string{"warning": "firing", "critical": "firing"}))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(5 * time.Second).Should(Succeed())

		By("every member serves the user's member certificate, on its client and its peer port")
		userClient := clusterTLS(ctx, ns, name).Certificates
		expectServedSerial(ctx, podEndpoints(ctx, ns, name), userClient, caPair.CertPEM, ready.Status.ClientService, memberCert)

		By("losing a member that is not the leader: its pod and its volume claim are deleted")
		var victim *etcdserverpb.Member
		for _, m := range list.Members {
			if m.ID != leader {
				victim = m
				break
			}
		}
		Expect(victim).NotTo(BeNil())
		oldIDs := map[uint64]bool{}
		for _, m := range list.Members {
			oldIDs[m.ID] = true
		}
		Expect(k8sClient.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: names.PVCName(victim.Name), Namespace: ns}})).To(Succeed())
		Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})).To(Succeed())

		By("etcd lists 7 voting members again: the lost one replaced by a fresh member, the other six as they were")
		// Through the client made before the loss: its endpoint of the lost member's pod fails,
		// the other six answer.
		var replacement uint64
		Eventually(func(g Gomega) {
			lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			defer cancel()
			current, err := cli.MemberList(lctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(current.Members).To(HaveLen(7))
			replacement = 0
			for _, m := range current.Members {
				g.Expect(m.ID).NotTo(Equal(victim.ID), "the lost member is removed")
				g.Expect(m.IsLearner).To(BeFalse(), "member %s (%x) is still a learner", m.Name, m.ID)
				g.Expect(m.Name).NotTo(BeEmpty(), "member %x has not started", m.ID)
				if !oldIDs[m.ID] {
					g.Expect(replacement).To(BeZero(), "one new member, not two")
					replacement = m.ID
				}
			}
			g.Expect(replacement).NotTo(BeZero())
		}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		replaced := waitReady(ctx, c)

		By("every member, the fresh one included, answers on its own endpoint, follows one leader and holds every key")
		cli = etcdV3Client(ctx, ns, name) // the endpoints of the pods as they are now
		Expect(cli.Endpoints()).To(HaveLen(7))
		list, err = cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Members).To(ContainElement(HaveField("ID", replacement)))
		Eventually(func(g Gomega) {
			expectOneLeader(ctx, g, cli, list.Members)
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		Expect(keysUnder(ctx, cli, "/e2e/usertls/")).To(Equal(keys), "a linearizable read has every key")
		// A serializable read is answered from the member's own data: each member, the fresh
		// one included, holds every key itself.
		members := map[string]*clientv3.Client{}
		for _, ep := range podEndpoints(ctx, ns, name) {
			members[ep] = etcdV3Client(ctx, ns, name, ep)
		}
		Eventually(func(g Gomega) {
			for ep, mc := range members {
				gctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				resp, err := mc.Get(gctx, "/e2e/usertls/", clientv3.WithPrefix(), clientv3.WithSerializable())
				cancel()
				g.Expect(err).NotTo(HaveOccurred(), ep)
				got := map[string]string{}
				for _, kv := range resp.Kvs {
					got[string(kv.Key)] = string(kv.Value)
				}
				g.Expect(got).To(Equal(keys), "the keys member %s holds", ep)
			}
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
		expectServedSerial(ctx, podEndpoints(ctx, ns, name), userClient, caPair.CertPEM, replaced.Status.ClientService, memberCert)

		By("renewing the member certificate in its Secret, from the same CA")
		// The same CA, so the trust the members started with (pki.TrustHash: the CAs and the
		// member certificate's issuer) is unchanged and the operator has nothing to roll
		// out; etcd reads its certificate files on every handshake, and the kubelet updates
		// the mounted Secret in place.
		renewedPair, err := ca.IssueServer("e2e user member", memberDNS, memberIPs, 365*24*time.Hour, time.Now())
		Expect(err).NotTo(HaveOccurred())
		renewed := parseCertificate(renewedPair.CertPEM)
		Expect(renewed.SerialNumber.String()).NotTo(Equal(memberCert.SerialNumber.String()))
		Expect(renewed.NotAfter).To(BeTemporally(">", memberCert.NotAfter))
		podsBefore := memberPods(ctx, ns, name)
		secret := get(ctx, ns, memberSecret, &corev1.Secret{})
		secret.Data["tls.crt"], secret.Data["tls.key"] = renewedPair.CertPEM, renewedPair.KeyPEM
		Expect(k8sClient.Update(ctx, secret)).To(Succeed())

		By("every member serves the renewed certificate once the kubelet has updated its files")
		Eventually(func(g Gomega) {
			for _, ep := range podEndpoints(ctx, ns, name) {
				for _, port := range []string{"2379", "2380"} {
					at := withPort(ep, port)
					leaf, err := servedCertificate(ctx, at, userClient)
					g.Expect(err).NotTo(HaveOccurred(), at)
					g.Expect(leaf.SerialNumber.String()).To(Equal(renewed.SerialNumber.String()), "the serial of the certificate %s serves", at)
				}
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		expectServedSerial(ctx, podEndpoints(ctx, ns, name), userClient, caPair.CertPEM, replaced.Status.ClientService, renewed)

		By("the operator reports the renewed certificate's expiry, and restarts no member for it")
		Eventually(func(g Gomega) {
			got := get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.TLS).NotTo(BeNil())
			g.Expect(got.Status.TLS.Certificates).To(ConsistOf(
				certificateStatus(memberSecret, renewed.NotAfter), certificateStatus(clientSecret, clientCert.NotAfter)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(promAlertStates(ctx, g, "EtcdCertificateExpiring", memberAlert)).To(BeEmpty(), "the renewed certificate lasts a year")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(5 * time.Second).Should(Succeed())
		// The operator has read the renewed Secret: a restart it decided on would have begun.
		Consistently(func() map[string]string { return memberPods(ctx, ns, name) }).
			WithContext(ctx).WithTimeout(15*time.Second).WithPolling(time.Second).Should(Equal(podsBefore), "same pods (UIDs), no restarts")
		after := waitReady(ctx, c)
		Expect(memberIDs(after)).To(Equal(memberIDs(replaced)), "the same members")

		By("the cluster takes a write over new connections with the user's client certificate")
		cli = etcdV3Client(ctx, ns, name)
		_, err = cli.Put(ctx, "/e2e/usertls/after-renewal", "written")
		Expect(err).NotTo(HaveOccurred())
		keys["/e2e/usertls/after-renewal"] = "written"
		Expect(keysUnder(ctx, cli, "/e2e/usertls/")).To(Equal(keys))
		list, err = cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		Eventually(func(g Gomega) {
			expectOneLeader(ctx, g, cli, list.Members)
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(2 * time.Second).Should(Succeed())
	})
})

// certificateStatus matches the entry of status.tls.certificates for Secret secret that
// reports notAfter.
func certificateStatus(secret string, notAfter time.Time) OmegaMatcher {
	return SatisfyAll(HaveField("Secret", secret), HaveField("NotAfter.Time", BeTemporally("==", notAfter)))
}

// expectOneLeader asks each endpoint of cli for etcd's status of that one member: every
// member of members answers, on its own endpoint, as a voter, and all name the same leader,
// one of them. It returns that leader's ID.
func expectOneLeader(ctx context.Context, g Gomega, cli *clientv3.Client, members []*etcdserverpb.Member) uint64 {
	listed := map[uint64]bool{}
	for _, m := range members {
		listed[m.ID] = true
	}
	answered := map[uint64]bool{}
	leaders := map[uint64]bool{}
	for _, ep := range cli.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		g.Expect(err).NotTo(HaveOccurred(), "status of %s", ep)
		g.Expect(st.IsLearner).To(BeFalse(), "%s is a learner", ep)
		answered[st.Header.MemberId] = true
		leaders[st.Leader] = true
	}
	g.Expect(answered).To(Equal(listed), "each listed member answers on its own endpoint")
	g.Expect(leaders).To(HaveLen(1), "the leader each member follows: %v", leaders)
	var leader uint64
	for id := range leaders {
		leader = id
	}
	g.Expect(listed).To(HaveKey(leader), "the leader is a listed member")
	return leader
}

// expectServedSerial expects every member at endpoints (ip:2379) to serve, on its client
// and its peer port, the certificate want: the same serial number, chaining to caPEM and
// naming serverName.
func expectServedSerial(ctx context.Context, endpoints []string, cert []tls.Certificate, caPEM []byte, serverName string, want *x509.Certificate) {
	ExpectWithOffset(1, endpoints).To(HaveLen(7))
	for _, ep := range endpoints {
		for _, port := range []string{"2379", "2380"} {
			at := withPort(ep, port)
			ExpectWithOffset(1, servedBy(ctx, at, cert, caPEM, serverName)).To(Succeed(), at)
			leaf, err := servedCertificate(ctx, at, cert)
			ExpectWithOffset(1, err).NotTo(HaveOccurred(), at)
			ExpectWithOffset(1, leaf.SerialNumber.String()).To(Equal(want.SerialNumber.String()), "the serial of the certificate %s serves", at)
		}
	}
}

// servedCertificate is the leaf certificate the member at endpoint (ip:port) serves when
// dialed with the client certificate cert. It is only read here; servedBy checks its chain.
func servedCertificate(ctx context.Context, endpoint string, cert []tls.Certificate) (*x509.Certificate, error) {
	d := tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS13, Certificates: cert, InsecureSkipVerify: true}} //nolint:gosec // read, not trusted
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", endpoint)
	if err != nil {
		return nil, err
	}
	defer func() { _ = conn.Close() }()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return nil, fmt.Errorf("no certificate served")
	}
	return certs[0], nil
}

// withPort is endpoint (host:port) with port instead.
func withPort(endpoint, port string) string {
	host, _, err := net.SplitHostPort(endpoint)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return net.JoinHostPort(host, port)
}

// parseCertificate parses a PEM certificate the test issued.
func parseCertificate(certPEM []byte) *x509.Certificate {
	block, _ := pem.Decode(certPEM)
	ExpectWithOffset(1, block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cert
}
