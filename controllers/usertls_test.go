package controllers_test

import (
	"context"
	"net"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// userSecrets stores a member and a client certificate from a CA of the test's own, as a
// user would, with the member certificate covering dnsNames.
func userSecrets(g Gomega, ns string, dnsNames ...string) {
	issueSecrets(g, ns, "mine-member", "mine-client", "my-etcd", dnsNames)
}

// issueSecrets stores, in Secrets memberSecret and clientSecret, a member certificate with
// common name memberCN covering dnsNames and a client certificate, both from a new CA: what
// a user, or cert-manager with a CA issuer, would provide.
func issueSecrets(g Gomega, ns, memberSecret, clientSecret, memberCN string, dnsNames []string) {
	now := time.Now()
	caPair, err := pki.NewCA("user CA", time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(caPair)
	g.Expect(err).NotTo(HaveOccurred())
	member, err := ca.IssueServer(memberCN, dnsNames, []net.IP{net.IPv4(127, 0, 0, 1)}, time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	clientPair, err := ca.IssueClient("me", time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	for name, pair := range map[string]pki.KeyPair{memberSecret: member, clientSecret: clientPair} {
		g.Expect(k8sClient.Create(context.Background(), &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Type:       corev1.SecretTypeTLS,
			Data:       map[string][]byte{"ca.crt": caPair.CertPEM, "tls.crt": pair.CertPEM, "tls.key": pair.KeyPEM},
		})).To(Succeed())
	}
}

// expectCertificatesReported checks that status.tls.certificates and the certificate metric
// of cluster ns/name carry, for each of secrets in order, the NotAfter of the certificate
// (tls.crt) the Secret holds.
func expectCertificatesReported(g Gomega, ns, name string, secrets ...string) {
	c := get(g, ns, name, &etcdv1alpha1.EtcdCluster{})
	g.Expect(c.Status.TLS).NotTo(BeNil())
	g.Expect(c.Status.TLS.Certificates).To(HaveLen(len(secrets)))
	for i, s := range secrets {
		notAfter, err := pki.NotAfter(get(g, ns, s, &corev1.Secret{}).Data["tls.crt"])
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(c.Status.TLS.Certificates[i].Secret).To(Equal(s))
		g.Expect(c.Status.TLS.Certificates[i].NotAfter.Time).To(BeTemporally("==", notAfter), s)
		g.Expect(metricValue(g, "etcdpilot_cluster_certificate_not_after_timestamp_seconds", clusterSeries(ns, name, "secret", s))).
			To(Equal(float64(notAfter.Unix())), s)
	}
}

func userTLSCluster(ns string) *etcdv1alpha1.EtcdCluster {
	return &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "byo", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{TLS: etcdv1alpha1.TLSSpec{
			Mode:    etcdv1alpha1.TLSModeSecrets,
			Secrets: &etcdv1alpha1.TLSSecrets{MemberSecretName: "mine-member", ClientSecretName: "mine-client"},
		}},
	}
}

func TestUserProvidedCertificatesAreUsedAsGiven(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	userSecrets(g, ns, "*.byo-peer."+ns+".svc", "byo-client."+ns+".svc")
	g.Expect(k8sClient.Create(ctx, userTLSCluster(ns))).To(Succeed())

	g.Eventually(func(g Gomega) {
		pod := get(g, ns, "byo-0", &corev1.Pod{})
		var secretName string
		for _, v := range pod.Spec.Volumes {
			if v.Secret != nil {
				secretName = v.Secret.SecretName
			}
		}
		g.Expect(secretName).To(Equal("mine-member"))
		g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--peer-client-cert-auth=true"))
		g.Expect(pod.Spec.Containers[0].Args).NotTo(ContainElement(HavePrefix("--peer-cert-allowed-cn")),
			"the user's certificate names are not the operator's to pin")
		c := get(g, ns, "byo", &etcdv1alpha1.EtcdCluster{})
		g.Expect(c.Status.ClientSecret).To(Equal("mine-client"))
		// The operator cannot renew the user's certificates: it says when they expire.
		expectCertificatesReported(g, ns, "byo", "mine-member", "mine-client")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	for _, own := range []string{"byo-ca", "byo-member-tls", "byo-client-tls"} {
		err := k8sClient.Get(ctx, keyOf(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: own, Namespace: ns}}), &corev1.Secret{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "the operator must not issue %s when the user brings certificates", own)
	}
}

func TestUserCertificateThatDoesNotCoverTheMembersIsRefused(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	userSecrets(g, ns, "byo-client."+ns+".svc") // no wildcard over the peer Service
	g.Expect(k8sClient.Create(ctx, userTLSCluster(ns))).To(Succeed())

	g.Eventually(func(g Gomega) {
		c := get(g, ns, "byo", &etcdv1alpha1.EtcdCluster{})
		degraded := condition(c, etcdv1alpha1.ConditionDegraded)
		g.Expect(degraded.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonReconcileFailed))
		g.Expect(degraded.Message).To(ContainSubstring("TLS secret mine-member cannot serve as the member certificate"))
		g.Expect(degraded.Message).To(ContainSubstring("byo-0.byo-peer." + ns + ".svc"))
		g.Expect(c.Status.TLS).To(BeNil(), "a refused certificate is not reported")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	err := k8sClient.Get(ctx, keyOf(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "byo-0", Namespace: ns}}), &corev1.Pod{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no member starts with a certificate that cannot work")
}
