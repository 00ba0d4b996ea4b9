package controllers_test

import (
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// pemCerts counts the certificates of a PEM bundle.
func pemCerts(b []byte) int {
	n := 0
	for {
		var block *pem.Block
		if block, b = pem.Decode(b); block == nil {
			return n
		}
		n++
	}
}

// Rotating the operator's CA on request: three phases, in order, each rolled out to every
// member (one restart per member per phase); at every moment the certificate members serve
// is trusted by clients of the client Secret and the client certificate by the members; at
// the end only the new CA is trusted and both certificates are its.
func TestTheCAIsRotatedInThreePhasesEachRolledOut(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "rot", nil)
	oldCA := get(g, ns, "rot-ca", &corev1.Secret{}).Data["ca.crt"]
	got := get(g, ns, "rot", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.CARotation).NotTo(BeNil())
	g.Expect(got.Status.CARotation.Phase).To(BeEmpty())
	g.Expect(got.Status.CARotation.CANotAfter.Time).To(BeTemporally(">", time.Now().Add(9*365*24*time.Hour)))
	g.Eventually(func(g Gomega) {
		expectCertificatesReported(g, ns, "rot", "rot-member-tls", "rot-client-tls")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	got = get(g, ns, "rot", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.TLS.Certificates[0].NotAfter.Time).To(BeTemporally("~", time.Now().Add(365*24*time.Hour), time.Hour),
		"the operator's member certificate is valid a year")
	before := podUIDs(g, ns)
	f.ResetCalls()

	updateCluster(g, ns, "rot", func(c *etcdv1alpha1.EtcdCluster) {
		c.Annotations = map[string]string{etcdv1alpha1.AnnotationRotateCA: "2026-11-25"}
	})

	var phases []string
	uids := map[string]map[types.UID]bool{}
	broken := ""
	g.Eventually(func(g Gomega) {
		snapshot := podUIDs(g, ns)
		for name, uid := range snapshot {
			if uids[name] == nil {
				uids[name] = map[types.UID]bool{before[name]: true}
			}
			uids[name][uid] = true
		}
		ca := get(g, ns, "rot-ca", &corev1.Secret{})
		if p := ca.Annotations["etcd.etcdpilot.io/ca-rotation-phase"]; p != "" && (len(phases) == 0 || phases[len(phases)-1] != p) {
			phases = append(phases, p)
		}
		member, client := get(g, ns, "rot-member-tls", &corev1.Secret{}), get(g, ns, "rot-client-tls", &corev1.Secret{})
		now := time.Now()
		if err := pki.VerifyWithCACert(client.Data["ca.crt"], member.Data["tls.crt"], "", x509.ExtKeyUsageServerAuth, now); err != nil && broken == "" {
			broken = "clients of the client Secret do not trust the member certificate: " + err.Error()
		}
		if err := pki.VerifyWithCACert(member.Data["ca.crt"], client.Data["tls.crt"], "", x509.ExtKeyUsageClientAuth, now); err != nil && broken == "" {
			broken = "members do not trust the client certificate: " + err.Error()
		}
		podsReadyOf(g, ns, snapshot)
		c := get(g, ns, "rot", &etcdv1alpha1.EtcdCluster{})
		g.Expect(c.Status.CARotation).NotTo(BeNil())
		g.Expect(c.Status.CARotation.Request).To(Equal("2026-11-25"))
		g.Expect(c.Status.CARotation.Phase).To(BeEmpty(), "rotation complete")
		g.Expect(condition(c, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(2 * timeout).WithPolling(50 * time.Millisecond).Should(Succeed())

	g.Expect(broken).To(BeEmpty())
	g.Expect(phases).To(Equal([]string{"TrustingNew", "ServingNew", "DroppingOld"}))
	for name, seen := range uids {
		g.Expect(seen).To(HaveLen(4), "%s restarted once per phase", name)
	}
	g.Expect(f.MembershipChanges()).To(BeEmpty(), "a rotation keeps every member's identity")
	ca := get(g, ns, "rot-ca", &corev1.Secret{})
	g.Expect(ca.Data["ca.crt"]).NotTo(Equal(oldCA))
	g.Expect(ca.Data).NotTo(HaveKey("next-ca.crt"))
	g.Expect(ca.Data).NotTo(HaveKey("previous-ca.crt"))
	for _, s := range []string{"rot-member-tls", "rot-client-tls"} {
		secret := get(g, ns, s, &corev1.Secret{})
		g.Expect(secret.Data["ca.crt"]).To(Equal(ca.Data["ca.crt"]), "%s trusts the new CA only", s)
		g.Expect(pemCerts(secret.Data["ca.crt"])).To(Equal(1))
		g.Expect(pki.VerifyWithCACert(oldCA, secret.Data["tls.crt"], "", x509.ExtKeyUsageClientAuth, time.Now())).NotTo(Succeed(), "%s is issued by the new CA", s)
	}
	g.Expect(get(g, ns, "rot-0", &corev1.Pod{}).Annotations).To(HaveKey("etcd.etcdpilot.io/trust-hash"))
	g.Eventually(func(g Gomega) {
		expectCertificatesReported(g, ns, "rot", "rot-member-tls", "rot-client-tls")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "the certificates of the new CA")

	// The same request does not rotate again.
	restarted := podUIDs(g, ns)
	g.Consistently(func(g Gomega) {
		g.Expect(get(g, ns, "rot-ca", &corev1.Secret{}).Annotations).NotTo(HaveKey("etcd.etcdpilot.io/ca-rotation-phase"))
		g.Expect(podUIDs(g, ns)).To(Equal(restarted))
	}).WithTimeout(3 * time.Second).WithPolling(interval).Should(Succeed())
}
