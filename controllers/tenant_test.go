package controllers_test

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// tenantClock is the tenant controller's clock: TestTenantKeysGoOnlyOnceQuiet moves it
// forward past the quiet period, and only forward, so the other tests see time pass faster.
var tenantClock = &settableClock{}

func newTenant(ns, name, cluster, prefix string) *etcdv1alpha1.EtcdTenant {
	return &etcdv1alpha1.EtcdTenant{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdTenantSpec{ClusterName: cluster, Prefix: prefix}}
}

func tenantReady(t *etcdv1alpha1.EtcdTenant) metav1.Condition {
	if c := meta.FindStatusCondition(t.Status.Conditions, etcdv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// authCluster is readyCluster with etcd's authentication on, as its status reports it.
func authCluster(g Gomega, ns, name string) *fake.Client {
	f := readyCluster(g, ns, name, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, name, &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Auth).NotTo(BeNil())
		g.Expect(got.Status.Auth.Enabled).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	return f
}

// A tenant on a cluster with auth: its user holds exactly its prefix's range, its Secret a
// certificate for that user from the cluster's CA, and its keys are counted. readOnly is
// applied in place. A younger tenant overlapping it gets nothing until it is deleted.
func TestTenantIsProvisionedAndOverlapsRefused(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	f := authCluster(g, ns, "shared")
	ctx := context.Background()
	g.Expect(f.Put(ctx, "/tenants/a/registry/pods/x", "1")).To(Succeed())
	g.Expect(f.Put(ctx, "/tenants/ab/y", "1")).To(Succeed())

	g.Expect(k8sClient.Create(ctx, newTenant(ns, "a", "shared", "/tenants/a/"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "a", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonTenantProvisioned), "%+v", got.Status.Conditions)
		g.Expect(got.Status.User).To(Equal("tenant:a"))
		g.Expect(got.Status.SecretName).To(Equal("a-etcd-client"))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(got.Status.Usage).NotTo(BeNil())
		g.Expect(got.Status.Usage.Keys).To(Equal(int64(1)), "the key under /tenants/ab/ is not the tenant's")
		g.Expect(got.Status.Usage.Bytes).To(Equal(ptr.To(int64(len("/tenants/a/registry/pods/x")+len("1")))), "measured at the first count")
		g.Expect(got.Status.Usage.BytesObservedAt).NotTo(BeNil())
		g.Expect(got.Finalizers).To(ContainElement("etcd.etcdpilot.io/tenant"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(permission(f, "tenant:a")).To(Equal(etcd.Range{Key: "/tenants/a/", End: "/tenants/a0"}))
	g.Expect(f.Roles("tenant:a")).To(Equal([]string{"tenant:a"}))

	secret := get(g, ns, "a-etcd-client", &corev1.Secret{})
	g.Expect(string(secret.Data["endpoints"])).To(Equal("https://shared-client." + ns + ".svc:2379"))
	g.Expect(string(secret.Data["prefix"])).To(Equal("/tenants/a/"))
	cert := parseCert(g, secret.Data["tls.crt"])
	g.Expect(cert.Subject.CommonName).To(Equal("tenant:a"))
	g.Expect(cert.ExtKeyUsage).To(Equal([]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}))
	roots := x509.NewCertPool()
	g.Expect(roots.AppendCertsFromPEM(get(g, ns, "shared-ca", &corev1.Secret{}).Data["ca.crt"])).To(BeTrue())
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	g.Expect(err).NotTo(HaveOccurred(), "signed by the cluster's CA")
	got := get(g, ns, "a", &etcdv1alpha1.EtcdTenant{})
	g.Expect(got.Status.CertificateNotAfter.Time).To(BeTemporally("==", cert.NotAfter))

	g.Eventually(func() error {
		t := get(g, ns, "a", &etcdv1alpha1.EtcdTenant{})
		t.Spec.ReadOnly = true
		return k8sClient.Update(ctx, t)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "a", &etcdv1alpha1.EtcdTenant{})
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(permission(f, "tenant:a")).To(Equal(etcd.Range{Key: "/tenants/a/", End: "/tenants/a0", ReadOnly: true}))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(string(get(g, ns, "a-etcd-client", &corev1.Secret{}).Data["tls.crt"])).To(Equal(string(secret.Data["tls.crt"])),
		"the certificate is kept across passes")

	g.Expect(k8sClient.Create(ctx, newTenant(ns, "b", "shared", "/tenants/a/b/"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "b", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonPrefixConflict))
		g.Expect(tenantReady(got).Message).To(ContainSubstring("older tenant a"))
		g.Expect(eventReasons(g, ns)).To(ContainElement(etcdv1alpha1.ReasonPrefixConflict))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	_, granted := f.Permission("tenant:b")
	g.Expect(granted).To(BeFalse(), "nothing is created for the younger tenant")
	g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "b-etcd-client"}, &corev1.Secret{}))).To(BeTrue())

	// A younger tenant with deletionPolicy Delete, forced, over a's keys: deleted, it never
	// held its prefix, so a's keys stay.
	d := newTenant(ns, "d", "shared", "/tenants/a/registry/")
	d.Spec.DeletionPolicy = etcdv1alpha1.TenantDeletionPolicyDelete
	d.Annotations = map[string]string{etcdv1alpha1.AnnotationForceDelete: "true"}
	g.Expect(k8sClient.Create(ctx, d)).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(tenantReady(get(g, ns, "d", &etcdv1alpha1.EtcdTenant{})).Reason).To(Equal(etcdv1alpha1.ReasonPrefixConflict))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(k8sClient.Delete(ctx, get(g, ns, "d", &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "d"}, &etcdv1alpha1.EtcdTenant{}))).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.Keys()).To(ContainElement("/tenants/a/registry/pods/x"), "the keys under d's prefix are a's")
	g.Expect(calls(f, fake.DeleteRange)).To(BeEmpty())

	// Retain: the user goes, the keys stay; the prefix passes to b.
	g.Expect(k8sClient.Delete(ctx, get(g, ns, "a", &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "a"}, &etcdv1alpha1.EtcdTenant{}))).To(BeTrue())
		got := get(g, ns, "b", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonTenantProvisioned))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.Roles("tenant:a")).To(BeEmpty())
	_, granted = f.Permission("tenant:a")
	g.Expect(granted).To(BeFalse())
	g.Expect(f.Keys()).To(ContainElement("/tenants/a/registry/pods/x"), "deletionPolicy Retain keeps the keys")
	g.Expect(calls(f, fake.DeleteRange)).To(BeEmpty())
}

// A tenant gets nothing while its cluster is missing or has no auth, and says so; it is
// provisioned when auth comes on.
func TestTenantWaitsForItsClusterAndAuth(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	ctx := context.Background()
	g.Expect(k8sClient.Create(ctx, newTenant(ns, "early", "plain", "/early/"))).To(Succeed())
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "early", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonClusterNotFound))
		g.Expect(got.Status.ObservedGeneration).To(BeZero(), "the spec is not in force")
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	f := readyCluster(g, ns, "plain", nil)
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "early", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonAuthNotEnabled))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.GrantRange)).To(BeEmpty())
	g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "early-etcd-client"}, &corev1.Secret{}))).To(BeTrue())

	updateCluster(g, ns, "plain", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "early", &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonTenantProvisioned))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(permission(f, "tenant:early")).To(Equal(etcd.Range{Key: "/early/", End: "/early0"}))
}

// deletionPolicy Delete: the keys stay while they are written, go once they were not for
// the quiet period, or at once with the force annotation; the user goes first.
func TestTenantKeysGoOnlyOnceQuiet(t *testing.T) {
	g := NewWithT(t)
	ns := newNamespace(t)
	f := authCluster(g, ns, "del")
	ctx := context.Background()
	for _, name := range []string{"quiet", "forced"} {
		tn := newTenant(ns, name, "del", "/"+name+"/")
		tn.Spec.DeletionPolicy = etcdv1alpha1.TenantDeletionPolicyDelete
		g.Expect(k8sClient.Create(ctx, tn)).To(Succeed())
		g.Expect(f.Put(ctx, "/"+name+"/k", "v")).To(Succeed())
	}
	g.Expect(f.Put(ctx, "/quietly/k", "v")).To(Succeed())
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"quiet", "forced"} {
			g.Expect(tenantReady(get(g, ns, name, &etcdv1alpha1.EtcdTenant{})).Reason).To(Equal(etcdv1alpha1.ReasonTenantProvisioned))
		}
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())

	// Written after their keys were last counted, then deleted: held, and said.
	for _, name := range []string{"quiet", "forced"} {
		g.Expect(f.Put(ctx, "/"+name+"/k", "again")).To(Succeed())
		g.Expect(k8sClient.Delete(ctx, get(g, ns, name, &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
	}
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"quiet", "forced"} {
			got := get(g, ns, name, &etcdv1alpha1.EtcdTenant{})
			g.Expect(tenantReady(got).Reason).To(Equal(etcdv1alpha1.ReasonPrefixInUse))
		}
		g.Expect(eventReasons(g, ns)).To(ContainElement(etcdv1alpha1.ReasonPrefixInUse))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.Keys()).To(ContainElements("/quiet/k", "/forced/k"))
	g.Expect(f.Roles("tenant:quiet")).To(Equal([]string{"tenant:quiet"}), "the user stays while the keys do")

	// Forced: at once, written or not.
	g.Eventually(func() error {
		got := get(g, ns, "forced", &etcdv1alpha1.EtcdTenant{})
		got.Annotations = map[string]string{etcdv1alpha1.AnnotationForceDelete: "true"}
		return k8sClient.Update(ctx, got)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "forced"}, &etcdv1alpha1.EtcdTenant{}))).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.Keys()).NotTo(ContainElement("/forced/k"))

	// Quiet for the quiet period (the clock moves past it): the user, then the keys.
	g.Expect(f.Keys()).To(ContainElement("/quiet/k"))
	tenantClock.set(tenantClock.now().Add(31 * time.Second))
	g.Eventually(func() error {
		got := get(g, ns, "quiet", &etcdv1alpha1.EtcdTenant{})
		got.Annotations = map[string]string{"test.etcdpilot.io/poke": time.Now().String()}
		return k8sClient.Update(ctx, got)
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Eventually(func(g Gomega) {
		g.Expect(apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "quiet"}, &etcdv1alpha1.EtcdTenant{}))).To(BeTrue())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(f.Keys()).To(ContainElement("/quietly/k"), "the prefix /quiet/ does not cover /quietly/")
	g.Expect(f.Keys()).NotTo(ContainElement("/quiet/k"))
	g.Expect(calls(f, fake.RevokeUser, fake.DeleteRange)).To(ContainElements("RevokeUser tenant:quiet", "DeleteRange /quiet/"))
	g.Expect(eventReasons(g, ns)).To(ContainElement("TenantReleased"))
}

// permission is the key range of role in f; the zero Range when it has none.
func permission(f *fake.Client, role string) etcd.Range {
	r, _ := f.Permission(role)
	return r
}

func parseCert(g Gomega, pemBytes []byte) *x509.Certificate {
	block, _ := pem.Decode(pemBytes)
	g.ExpectWithOffset(1, block).NotTo(BeNil())
	cert, err := x509.ParseCertificate(block.Bytes)
	g.ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return cert
}

// Every validation rule of EtcdTenant, against the real API server.
func TestTenantValidation(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	cases := []struct {
		name, prefix, policy, refusal string
	}{
		{"valid", "/tenants/a/", "", ""},
		{"no leading slash", "tenants/a/", "", "prefix must start with '/'"},
		{"no trailing slash", "/tenants/a", "", "prefix must end with '/'"},
		{"the root", "/", "", "prefix cannot be '/' alone"},
		{"empty", "", "", "spec.prefix"},
		{"unknown policy", "/p/", "Erase", "spec.deletionPolicy"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			tn := newTenant(ns, "v"+string(rune('a'+i)), "c", tc.prefix)
			tn.Spec.DeletionPolicy = etcdv1alpha1.TenantDeletionPolicy(tc.policy)
			expectVerdict(g, k8sClient.Create(ctx, tn), tc.refusal)
		})
	}
	g := NewWithT(t)
	got := get(g, ns, "va", &etcdv1alpha1.EtcdTenant{})
	g.Expect(got.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.TenantDeletionPolicyRetain))
	got.Spec.Prefix = "/tenants/b/"
	expectVerdict(g, k8sClient.Update(ctx, got), "prefix is immutable")
	got = get(g, ns, "va", &etcdv1alpha1.EtcdTenant{})
	got.Spec.ClusterName = "other"
	expectVerdict(g, k8sClient.Update(ctx, got), "clusterName is immutable")
	long := newTenant(ns, "t0123456789012345678901234567890123456789012345678901234567890123", "c", "/l/")
	expectVerdict(g, k8sClient.Create(ctx, long), "metadata.name must be at most 63 characters")
}
