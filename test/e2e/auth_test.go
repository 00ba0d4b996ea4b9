package e2e

import (
	"context"
	"crypto/tls"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
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
var _ = Describe("etcd authentication", func() {
	It("on: the client Secret's certificate and the operator keep full access, another certificate of the cluster's CA only what etcd grants everyone; membership changes, a verified backup, the consistency check and the members' etcdctl work; off again: that certificate writes", func(ctx SpecContext) {
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
	cert, err := tls.X509KeyPair(pair.CertPEM, pair.KeyPEM)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	cfg := clusterTLS(ctx, ns, name).Clone()
	cfg.Certificates = []tls.Certificate{cert}
	cli, err := clientv3.New(clientv3.Config{Endpoints: podEndpoints(ctx, ns, name), TLS: cfg, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	DeferCleanup(cli.Close)
	return cli
}
