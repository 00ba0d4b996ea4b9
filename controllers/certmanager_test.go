package controllers_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// In TLS mode CertManager the operator asks cert-manager for certificates through
// Certificate objects (cert-manager's own CRD is installed in this envtest). There is no
// cert-manager controller here: the test issues the Secrets the way it would.
func TestCertManagerIssuesTheCertificates(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	ns := newNamespace(t)
	c := &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{TLS: etcdv1alpha1.TLSSpec{
			Mode:        etcdv1alpha1.TLSModeCertManager,
			CertManager: &etcdv1alpha1.CertManagerTLS{IssuerRef: etcdv1alpha1.IssuerReference{Name: "etcd-ca"}},
		}},
	}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	certificate := func(g Gomega, name string) map[string]any {
		u := &unstructured.Unstructured{}
		u.SetAPIVersion("cert-manager.io/v1")
		u.SetKind("Certificate")
		get(g, ns, name, u)
		spec, _, _ := unstructured.NestedMap(u.Object, "spec")
		return spec
	}
	var member, client map[string]any
	g.Eventually(func(g Gomega) {
		member, client = certificate(g, "cm-member"), certificate(g, "cm-client")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(member).To(HaveKeyWithValue("secretName", "cm-member-tls"))
	g.Expect(member).To(HaveKeyWithValue("commonName", "cm-member"))
	g.Expect(member["dnsNames"]).To(ContainElement("*.cm-peer." + ns + ".svc"))
	g.Expect(member["usages"]).To(ContainElements("server auth", "client auth"))
	g.Expect(member["issuerRef"]).To(Equal(map[string]any{"name": "etcd-ca", "kind": "Issuer", "group": "cert-manager.io"}))
	g.Expect(client).To(HaveKeyWithValue("secretName", "cm-client-tls"))
	g.Expect(client["usages"]).To(ContainElement("client auth"))

	By := func(string) {}
	By("waiting, without members, until the certificates are issued")
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "cm", &etcdv1alpha1.EtcdCluster{})
		progressing := condition(got, etcdv1alpha1.ConditionProgressing)
		g.Expect(progressing.Reason).To(Equal(etcdv1alpha1.ReasonWaitingForCertificates))
		g.Expect(progressing.Message).To(ContainSubstring("cm-member-tls"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	var pods corev1.PodList
	g.Expect(k8sClient.List(ctx, &pods)).To(Succeed())
	for _, p := range pods.Items {
		g.Expect(p.Namespace).NotTo(Equal(ns), "no member before its certificate exists")
	}

	By("issuing them as cert-manager's CA issuer would")
	var dnsNames []string
	for _, n := range member["dnsNames"].([]any) {
		dnsNames = append(dnsNames, n.(string))
	}
	issueSecrets(g, ns, "cm-member-tls", "cm-client-tls", "cm-member", dnsNames)

	g.Eventually(func(g Gomega) {
		pod := get(g, ns, "cm-0", &corev1.Pod{})
		g.Expect(pod.Spec.Containers[0].Args).To(ContainElement("--peer-cert-allowed-cn=cm-member"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	got := get(g, ns, "cm", &etcdv1alpha1.EtcdCluster{})
	g.Expect(got.Status.ClientSecret).To(Equal("cm-client-tls"))
	g.Eventually(func(g Gomega) {
		expectCertificatesReported(g, ns, "cm", "cm-member-tls", "cm-client-tls")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
}
