package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/consistency"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// etcd's authentication, seen from etcd and its clients: what each certificate may do with
// it on and off, and the operator's own work (membership, backups and their verification,
// the members' etcdctl) going on with it on.
var _ = Describe("etcd authentication", longestSpec(85), func() {
	It("on: the client Secret's certificate and the operator keep full access, another certificate of the cluster's CA only what etcd grants everyone; membership changes, a verified backup, the consistency check and the members' etcdctl work; tenants' certificates reach only their prefixes and leave with their keys or without; off again: that certificate writes", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-auth-")
		c := newCluster(ns, "auth", 1)
		c.Spec.Auth.Enabled = true
		// The shortest interval: the members' hashes (HashKV, root only) are compared under
		// auth within the spec.
		c.Spec.ConsistencyCheck.Interval = &metav1.Duration{Duration: time.Minute}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		got := waitReady(ctx, c)
		names := cluster.For(got)
		Expect(got.Status.Auth).To(Equal(&etcdv1alpha1.AuthStatus{Enabled: true, RootUsers: []string{names.MemberCommonName(), "etcdpilot", "root"}}))

		By("etcd says auth is on, and who holds the root role")
		admin := etcdV3Client(ctx, ns, "auth")
		st, err := admin.AuthStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enabled).To(BeTrue())
		for _, u := range got.Status.Auth.RootUsers {
			user, err := admin.UserGet(ctx, u)
			Expect(err).NotTo(HaveOccurred(), u)
			Expect(user.Roles).To(ContainElement("root"), u)
		}
		_, err = admin.Put(ctx, "/e2e/auth/kept", "written with auth on")
		Expect(err).NotTo(HaveOccurred())

		By("a certificate of the same CA whose name is no etcd user: no reads, no writes")
		stranger := strangerClient(ctx, ns, "auth", "stranger")
		_, err = stranger.Put(ctx, "/e2e/auth/stranger", "refused")
		Expect(err).To(MatchError(rpctypes.ErrPermissionDenied))
		_, err = stranger.Get(ctx, "/e2e/auth/kept")
		Expect(err).To(MatchError(rpctypes.ErrPermissionDenied))

		By("membership changes under auth: 1 -> 3")
		scaled := got.DeepCopy()
		scaled.Spec.Size = 3
		Expect(k8sClient.Patch(ctx, scaled, client.MergeFrom(got))).To(Succeed())
		waitReady(ctx, scaled)
		list, err := admin.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(list.Members).To(HaveLen(3))
		Expect(slices.ContainsFunc(list.Members, func(m *etcdserverpb.Member) bool { return m.IsLearner })).To(BeFalse(), "every member promoted")

		By("a backup, verified, and the members' own etcdctl")
		createClaim(ctx, ns, "backups")
		Expect(k8sClient.Create(ctx, &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "under-auth"},
			Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "auth", Verify: true,
				Destination:    etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "etcd"}},
				DeletionPolicy: etcdv1alpha1.BackupDeletionPolicyRetain}})).To(Succeed())
		expectBackupSucceeded(waitBackupFinished(ctx, ns, "under-auth", 3*time.Minute))
		b := waitVerified(ctx, ns, "under-auth")
		v := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified)
		Expect(v.Status).To(Equal(metav1.ConditionTrue), "%s: %s", v.Reason, v.Message)
		Expect(kubectlEtcdpilot(ctx, "etcdctl", "auth", "-n", ns, "--", "user", "list")).To(ContainSubstring("etcdpilot"))
		Expect(kubectlEtcdpilot(ctx, "status", "auth", "-n", ns)).To(ContainSubstring("Auth: on; root role: auth-member, etcdpilot, root\n"))

		By("the members' hashes compared under auth")
		Eventually(func(g Gomega) {
			cs := get(ctx, ns, "auth", &etcdv1alpha1.EtcdCluster{}).Status.Consistency
			g.Expect(cs).NotTo(BeNil())
			g.Expect(cs.Result).To(Equal(string(consistency.Consistent)), cs.Message)
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())

		expectTenants(ctx, ns, "auth")

		By("auth off: the stranger writes")
		got = get(ctx, ns, "auth", &etcdv1alpha1.EtcdCluster{})
		off := got.DeepCopy()
		off.Spec.Auth.Enabled = false
		Expect(k8sClient.Patch(ctx, off, client.MergeFrom(got))).To(Succeed())
		got = waitReady(ctx, off)
		Expect(got.Status.Auth).To(Equal(&etcdv1alpha1.AuthStatus{Enabled: false}))
		st, err = admin.AuthStatus(ctx)
		Expect(err).NotTo(HaveOccurred())
		Expect(st.Enabled).To(BeFalse())
		Eventually(func() error {
			_, err := stranger.Put(ctx, "/e2e/auth/stranger", "accepted")
			return err
		}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		expectKeys(ctx, ns, "auth", map[string]string{"/e2e/auth/kept": "written with auth on", "/e2e/auth/stranger": "accepted"})
	})
})

// strangerClient is a client of cluster name's members with a certificate of the cluster's
// own CA for common name cn (the etcd user it is, under auth), closed when the spec ends.
func strangerClient(ctx context.Context, ns, name, cn string) *clientv3.Client {
	caSecret := get(ctx, ns, cluster.For(get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{})).CASecret(), &corev1.Secret{})
	ca, err := pki.LoadCA(pki.KeyPair{CertPEM: caSecret.Data["ca.crt"], KeyPEM: caSecret.Data["ca.key"]})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	pair, err := ca.IssueClient(cn, time.Hour, time.Now())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return clientWithCert(ctx, ns, name, pair.CertPEM, pair.KeyPEM, nil)
}

// clientWithCert is a client of cluster name's members with the certificate certPEM and its
// key, trusting caPEM (the operator's client Secret's CAs when nil), closed when the spec
// ends.
func clientWithCert(ctx context.Context, ns, name string, certPEM, keyPEM, caPEM []byte) *clientv3.Client {
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	cfg := clusterTLS(ctx, ns, name).Clone()
	cfg.Certificates = []tls.Certificate{cert}
	if caPEM != nil {
		cfg.RootCAs = x509.NewCertPool()
		ExpectWithOffset(2, cfg.RootCAs.AppendCertsFromPEM(caPEM)).To(BeTrue())
	}
	cli, err := clientv3.New(clientv3.Config{Endpoints: podEndpoints(ctx, ns, name), TLS: cfg, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	DeferCleanup(cli.Close)
	return cli
}

// expectTenants makes tenants of cluster name (auth on) and checks, with their Secrets'
// certificates, what etcd lets each do; then deletes them, one keeping its keys and one
// taking them, held while written.
func expectTenants(ctx context.Context, ns, name string) {
	By("tenants: each certificate reaches its own prefix only")
	admin := etcdV3Client(ctx, ns, name)
	_, err := admin.Put(ctx, "/e2e/tenants/b/seeded", "by root")
	Expect(err).NotTo(HaveOccurred())
	for _, tn := range []struct {
		name, prefix string
		policy       etcdv1alpha1.TenantDeletionPolicy
	}{{"a", "/e2e/tenants/a/", etcdv1alpha1.TenantDeletionPolicyRetain}, {"b", "/e2e/tenants/b/", etcdv1alpha1.TenantDeletionPolicyDelete}, {"c", "/e2e/tenants/a/c/", ""}} {
		Expect(k8sClient.Create(ctx, &etcdv1alpha1.EtcdTenant{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: tn.name},
			Spec: etcdv1alpha1.EtcdTenantSpec{ClusterName: name, Prefix: tn.prefix, DeletionPolicy: tn.policy}})).To(Succeed())
		if tn.name == "a" {
			waitTenant(ctx, ns, "a", etcdv1alpha1.ReasonTenantProvisioned) // older than c
		}
	}
	waitTenant(ctx, ns, "b", etcdv1alpha1.ReasonTenantProvisioned)
	Expect(tenantReadyCondition(waitTenant(ctx, ns, "c", etcdv1alpha1.ReasonPrefixConflict)).Message).To(ContainSubstring("older tenant a"))
	token, endpoint := metricsReaderToken(ctx, ns), metricsEndpoint(ctx)
	quota := memberQuota(ctx, ns, name)
	Eventually(func(g Gomega) {
		code, body := getMetrics(ctx, endpoint, token)
		g.Expect(code).To(Equal(http.StatusOK), body)
		labels := fmt.Sprintf(`name="%s",namespace="%s"`, name, ns)
		g.Expect(body).To(ContainSubstring(`etcdpilot_tenant_ready{` + labels + `,tenant="a"} 1`))
		g.Expect(body).To(ContainSubstring(`etcdpilot_tenant_ready{` + labels + `,tenant="c"} 0`))
		g.Expect(body).To(ContainSubstring(`etcdpilot_tenant_keys{`+labels+`,tenant="b"} 1`), "the key root seeded under b's prefix")
		g.Expect(body).To(ContainSubstring(fmt.Sprintf(`etcdpilot_tenant_bytes{%s,tenant="b"} %d`, labels, len("/e2e/tenants/b/seeded")+len("by root"))),
			"the seeded key and its value")
		g.Expect(body).To(MatchRegexp(`etcdpilot_tenant_certificate_not_after_timestamp_seconds\{%s,tenant="a"\} [1-9]`, labels))
		g.Expect(body).To(ContainSubstring(fmt.Sprintf(`etcdpilot_cluster_quota_backend_bytes{%s} %s`, labels, quota)),
			"the quota the members report (etcd_server_quota_backend_bytes)")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	a, b := tenantClient(ctx, ns, name, "a"), tenantClient(ctx, ns, name, "b")
	denied := MatchError(rpctypes.ErrPermissionDenied)

	_, err = a.Put(ctx, "/e2e/tenants/a/registry/pods/p", "a's")
	Expect(err).NotTo(HaveOccurred())
	_, err = b.Put(ctx, "/e2e/tenants/b/registry/pods/p", "b's")
	Expect(err).NotTo(HaveOccurred())
	_, err = a.Get(ctx, "/e2e/tenants/b/seeded")
	Expect(err).To(denied, "a reads nothing of b")
	_, err = a.Put(ctx, "/e2e/tenants/b/x", "a's")
	Expect(err).To(denied, "a writes nothing of b")
	_, err = a.Get(ctx, "/e2e/auth/kept")
	Expect(err).To(denied, "nor outside its prefix")
	_, err = a.Compact(ctx, 1)
	Expect(err).To(denied, "nor compacts")
	_, err = a.MemberRemove(ctx, 1)
	Expect(err).To(denied, "nor changes the membership")
	resp, err := b.Get(ctx, "/e2e/tenants/b/", clientv3.WithPrefix())
	Expect(err).NotTo(HaveOccurred())
	Expect(resp.Count).To(Equal(int64(2)), "b reads its own keys, the seeded one too")

	By("tenant b deleted with Delete while it writes: held; forced: its keys go. Tenant a deleted with Retain: its keys stay")
	Expect(k8sClient.Delete(ctx, get(ctx, ns, "b", &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
	Eventually(func(g Gomega) {
		_, err := b.Put(ctx, "/e2e/tenants/b/registry/leases/l", time.Now().String())
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(tenantReadyCondition(get(ctx, ns, "b", &etcdv1alpha1.EtcdTenant{})).Reason).To(Equal(etcdv1alpha1.ReasonPrefixInUse))
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	forced := get(ctx, ns, "b", &etcdv1alpha1.EtcdTenant{})
	forced.Annotations = map[string]string{etcdv1alpha1.AnnotationForceDelete: "true"}
	Expect(k8sClient.Update(ctx, forced)).To(Succeed())
	Expect(k8sClient.Delete(ctx, get(ctx, ns, "a", &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
	for _, gone := range []string{"a", "b"} {
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: gone}, &etcdv1alpha1.EtcdTenant{}))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(BeTrue(), gone)
	}
	left, err := admin.Get(ctx, "/e2e/tenants/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
	Expect(err).NotTo(HaveOccurred())
	var keys []string
	for _, kv := range left.Kvs {
		keys = append(keys, string(kv.Key))
	}
	Expect(keys).To(Equal([]string{"/e2e/tenants/a/registry/pods/p"}), "b's keys are gone, a's stay")
	_, err = a.Get(ctx, "/e2e/tenants/a/registry/pods/p")
	Expect(err).To(HaveOccurred(), "a's certificate opens nothing once its user is gone")
	waitTenant(ctx, ns, "c", etcdv1alpha1.ReasonTenantProvisioned) // a's prefix is free
}

// tenantClient is a client of cluster name with everything from tenant's Secret: its
// certificate and the CAs to trust.
func tenantClient(ctx context.Context, ns, name, tenant string) *clientv3.Client {
	t := get(ctx, ns, tenant, &etcdv1alpha1.EtcdTenant{})
	s := get(ctx, ns, t.Status.SecretName, &corev1.Secret{})
	return clientWithCert(ctx, ns, name, s.Data["tls.crt"], s.Data["tls.key"], s.Data["ca.crt"])
}

// waitTenant waits until tenant's Ready condition has reason, and returns the tenant.
func waitTenant(ctx context.Context, ns, tenant, reason string) *etcdv1alpha1.EtcdTenant {
	var t *etcdv1alpha1.EtcdTenant
	EventuallyWithOffset(1, func(g Gomega) {
		t = get(ctx, ns, tenant, &etcdv1alpha1.EtcdTenant{})
		g.Expect(tenantReadyCondition(t).Reason).To(Equal(reason), "%+v", t.Status.Conditions)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	return t
}

func tenantReadyCondition(t *etcdv1alpha1.EtcdTenant) metav1.Condition {
	if c := meta.FindStatusCondition(t.Status.Conditions, etcdv1alpha1.ConditionReady); c != nil {
		return *c
	}
	return metav1.Condition{}
}

// memberQuota is the quota a member of cluster name reports in its own metrics
// (etcd_server_quota_backend_bytes, plain HTTP on port 2381 of its pod), as written there.
func memberQuota(ctx context.Context, ns, name string) string {
	pod := get(ctx, ns, name+"-0", &corev1.Pod{})
	addr, err := netip.ParseAddr(pod.Status.PodIP)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, podNetwork.Contains(addr)).To(BeTrue(), "%s is on the local cluster's pod network", addr)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+net.JoinHostPort(addr.String(), "2381")+"/metrics", nil)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	m := regexp.MustCompile(`(?m)^etcd_server_quota_backend_bytes (\S+)$`).FindSubmatch(body)
	ExpectWithOffset(1, m).NotTo(BeNil(), "etcd_server_quota_backend_bytes in %s's metrics", pod.Name)
	return string(m[1])
}
