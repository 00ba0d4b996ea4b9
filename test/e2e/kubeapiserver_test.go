package e2e

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

// Real kube-apiservers (the local cluster's release, as pods) on tenants of one EtcdCluster,
// made from docs/examples/kube-apiserver.yaml as docs/kube-apiserver.md tells a user to:
// what each API server sees, what its certificate opens in etcd, what it keeps through the
// cluster's disruptions, and what a restore with bumpRevision does to its clients.
var _ = Describe("kube-apiservers on tenants", Ordered, longestSpec(330), func() {
	const (
		clusterName = "control-planes"
		// The patch upgrade goes from the release before the default to the default.
		fromVersion = "3.7.2"
		// readyzBudget bounds the time, in all, an API server's /readyz fails (or takes over
		// 2 s) while its etcd goes through the disruptions of the second spec: a member of
		// three lost at a time leaves a quorum, and a new leader is elected within seconds.
		// Measured: 0 s, alone on the local cluster and beside the other specs in CI.
		readyzBudget = 15 * time.Second
	)
	var (
		ns       string
		red      *kubeAPIServer
		blue     *kubeAPIServer
		acked    []string // the load's creates answered 201, through red
		beforeRV string   // a resourceVersion of red's, before the restore
	)

	BeforeAll(func(ctx SpecContext) {
		ns = newTestNamespace(ctx, "e2e-kas-")
		m := readKubeAPIServerManifest(ns, "team-a")
		c := m.cluster
		c.Spec.Version = fromVersion
		c.Spec.DeletionPolicy = etcdv1alpha1.DeletionPolicyDelete
		// A defragmentation within the spec: a member's file is defragmented once 8 MiB of
		// it is free (the default waits for far more).
		c.Spec.Maintenance.Defragmentation.MinReclaimable = ptr.To(resource.MustParse("8Mi"))
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		for _, t := range []struct {
			name   string
			policy etcdv1alpha1.TenantDeletionPolicy
		}{{"red", etcdv1alpha1.TenantDeletionPolicyDelete}, {"blue", etcdv1alpha1.TenantDeletionPolicyRetain}} {
			tenant := readKubeAPIServerManifest(ns, t.name).tenant
			tenant.Spec.DeletionPolicy = t.policy
			Expect(k8sClient.Create(ctx, tenant)).To(Succeed())
		}
		waitReady(ctx, c)
		waitTenant(ctx, ns, "red", etcdv1alpha1.ReasonTenantProvisioned)
		waitTenant(ctx, ns, "blue", etcdv1alpha1.ReasonTenantProvisioned)
		red, blue = deployKubeAPIServer(ctx, ns, "red"), deployKubeAPIServer(ctx, ns, "blue")
		red.waitReady(ctx)
		blue.waitReady(ctx)
	})

	It("each kube-apiserver lists what it created and nothing of the other's, under its own prefix in etcd; its certificate opens nothing else of etcd", func(ctx SpecContext) {
		for _, s := range []*kubeAPIServer{red, blue} {
			_, err := s.client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: "owned-by-" + s.tenant}, Data: map[string]string{"tenant": s.tenant}}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred(), s.tenant)
		}
		for _, s := range []*kubeAPIServer{red, blue} {
			list, err := s.client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred(), s.tenant)
			var names []string
			for _, cm := range list.Items {
				if strings.HasPrefix(cm.Name, "owned-by-") {
					names = append(names, cm.Name)
				}
			}
			Expect(names).To(Equal([]string{"owned-by-" + s.tenant}), s.tenant)
		}

		By("in etcd: every key the API servers wrote is under their tenants' prefixes")
		admin := etcdV3Client(ctx, ns, clusterName)
		for _, s := range []*kubeAPIServer{red, blue} {
			resp, err := admin.Get(ctx, "/"+s.tenant+"/configmaps/default/owned-by-"+s.tenant, clientv3.WithCountOnly())
			Expect(err).NotTo(HaveOccurred())
			Expect(resp.Count).To(Equal(int64(1)), s.tenant)
		}
		all, err := admin.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		Expect(err).NotTo(HaveOccurred())
		outside := []string{}
		for _, kv := range all.Kvs {
			if k := string(kv.Key); !strings.HasPrefix(k, "/red/") && !strings.HasPrefix(k, "/blue/") {
				outside = append(outside, k)
			}
		}
		Expect(outside).To(BeEmpty(), "keys outside the tenants' prefixes")

		By("red's certificate, the one its API server holds: nothing of blue's, of the root range, of the membership")
		cert := tenantClient(ctx, ns, clusterName, "red")
		denied := MatchError(rpctypes.ErrPermissionDenied)
		_, err = cert.Get(ctx, "/red/configmaps/default/owned-by-red")
		Expect(err).NotTo(HaveOccurred())
		_, err = cert.Get(ctx, "/blue/configmaps/default/owned-by-blue")
		Expect(err).To(denied, "blue's keys")
		_, err = cert.Put(ctx, "/blue/configmaps/default/planted", "by red")
		Expect(err).To(denied, "a write under blue's prefix")
		_, err = cert.Get(ctx, "/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		Expect(err).To(denied, "the root range")
		_, err = cert.MemberAddAsLearner(ctx, []string{"https://192.0.2.1:2380"})
		Expect(err).To(denied, "adding a member (refused before any connection)")
		_, err = cert.MemberRemove(ctx, 1)
		Expect(err).To(denied, "removing a member")
	})

	It("keeps every create it acknowledged, and delivers it to a watch, through a member's and the leader's deletion, a patch upgrade with an operator crash, a rollout of a changed option and a defragmentation", func(ctx SpecContext) {
		load := red.startLoad(ctx)

		By("a member pod deleted, then the leader's")
		for _, leader := range []bool{false, true} {
			c := get(ctx, ns, clusterName, &etcdv1alpha1.EtcdCluster{})
			victim := leaderOf(c)
			if !leader {
				victim = fmt.Sprintf("%s-%d", clusterName, 0)
				if victim == leaderOf(c) {
					victim = fmt.Sprintf("%s-%d", clusterName, 1)
				}
			}
			pod := get(ctx, ns, victim, &corev1.Pod{})
			Expect(k8sClient.Delete(ctx, pod)).To(Succeed())
			waitPodBack(ctx, ns, clusterName, victim, false, restartedSince(pod))
			waitReady(ctx, c)
		}

		By("a patch upgrade to the default release, the operator crashing right after its first step")
		// A crash rather than a deleted pod: the operator's pod keeps its address, which the
		// parallel specs read its metrics from.
		restartsBefore := operatorRestarts(ctx)
		c := get(ctx, ns, clusterName, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.Version = ""
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations["test.etcdpilot.io/crash-after"] = "RestartMember"
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(operatorRestarts(ctx)).To(BeNumerically(">", restartsBefore), "the operator crashed")
			g.Expect(get(ctx, ns, clusterName, &etcdv1alpha1.EtcdCluster{}).Annotations).NotTo(HaveKey("test.etcdpilot.io/crash-after"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		c = waitReady(ctx, c)
		Expect(c.Spec.Version).NotTo(Equal(fromVersion), "the default release")
		Eventually(func() map[string]string { return memberVersions(ctx, ns, clusterName) }).WithContext(ctx).WithTimeout(time.Minute).
			WithPolling(2*time.Second).Should(HaveEach(Equal(c.Spec.Version)), "every member runs %s", c.Spec.Version)

		By("a rollout of a changed etcd option")
		before := podUIDs(ctx, ns, clusterName)
		patch = client.MergeFrom(c.DeepCopy())
		c.Spec.Etcd.SnapshotCount = 5000
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
		waitReady(ctx, c)
		Expect(changedPods(before, podUIDs(ctx, ns, clusterName))).To(Equal(3), "every member restarted")

		By("a defragmentation of every member: 24 MiB written, deleted and compacted by root")
		admin := etcdV3Client(ctx, ns, clusterName) // the members' addresses of now
		since := time.Now()
		makeFreePages(ctx, admin, "/garbage/", 24)
		Eventually(func(g Gomega) {
			for _, m := range get(ctx, ns, clusterName, &etcdv1alpha1.EtcdCluster{}).Status.Members {
				g.Expect(m.LastDefragmentation).NotTo(BeNil(), m.Name)
				g.Expect(m.LastDefragmentation.Time.Time).To(BeTemporally(">", since), m.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		By("after it all: every acknowledged create listed by the API server, in etcd, and seen by the watch")
		acked = load.stop()
		Expect(len(acked)).To(BeNumerically(">", 100), "creates acknowledged")
		listed, rv := red.listLoad(ctx)
		Expect(missing(acked, listed)).To(BeEmpty(), "acknowledged but not listed")
		keys, err := admin.Get(ctx, "/red/configmaps/default/load-", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		Expect(err).NotTo(HaveOccurred())
		inEtcd := map[string]bool{}
		for _, kv := range keys.Kvs {
			inEtcd[strings.TrimPrefix(string(kv.Key), "/red/configmaps/default/")] = true
		}
		Expect(missing(acked, inEtcd)).To(BeEmpty(), "acknowledged but not in etcd")
		Eventually(func() []string { return missing(acked, load.watched()) }).WithContext(ctx).WithTimeout(30*time.Second).
			WithPolling(time.Second).Should(BeEmpty(), "acknowledged but neither delivered by the watch nor found by its relists")
		AddReportEntry("kube-apiserver under disruptions", load.report())
		Expect(load.readyzFailing()).To(BeNumerically("<=", readyzBudget), "time /readyz failed, in all")
		beforeRV = rv
	})

	It("restored into a new cluster with bumpRevision and markCompacted: a new kube-apiserver lists every object, and a watch from before the restore is told 410 Gone; the tenants deleted, Delete leaves no key and Retain every one", func(ctx SpecContext) {
		By("the API servers stopped, their tenants deleted: red's with its keys, blue's without")
		red.remove(ctx)
		blue.remove(ctx)
		admin := etcdV3Client(ctx, ns, clusterName)
		blueKeys, err := admin.Get(ctx, "/blue/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		Expect(err).NotTo(HaveOccurred())
		Expect(blueKeys.Kvs).NotTo(BeEmpty())

		By("a backup, restored into a new cluster with bumpRevision and markCompacted")
		createClaim(ctx, ns, "backups")
		createBackup(ctx, ns, "before-restore", clusterName,
			etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "etcd"}}, etcdv1alpha1.BackupDeletionPolicyRetain)
		expectBackupSucceeded(waitBackupFinished(ctx, ns, "before-restore", 2*time.Minute))
		for _, t := range []string{"red", "blue"} {
			Expect(k8sClient.Delete(ctx, get(ctx, ns, t, &etcdv1alpha1.EtcdTenant{}))).To(Succeed())
		}
		m := readKubeAPIServerManifest(ns, "restored")
		restored := m.cluster
		restored.Name, restored.Spec.Size = "restored", 1
		restored.Spec.DeletionPolicy = etcdv1alpha1.DeletionPolicyDelete
		restored.Spec.Bootstrap = &etcdv1alpha1.BootstrapSpec{Restore: &etcdv1alpha1.RestoreSpec{
			BackupName: "before-restore", BumpRevision: ptr.To[int64](1_000_000), MarkCompacted: true}}
		Expect(k8sClient.Create(ctx, restored)).To(Succeed())
		tenant := m.tenant
		tenant.Spec.ClusterName, tenant.Spec.Prefix = "restored", "/red/"
		Expect(k8sClient.Create(ctx, tenant)).To(Succeed())
		waitReady(ctx, restored)
		waitTenant(ctx, ns, "restored", etcdv1alpha1.ReasonTenantProvisioned)
		s := deployKubeAPIServer(ctx, ns, "restored")
		s.waitReady(ctx)

		listed, _ := s.listLoad(ctx)
		Expect(missing(acked, listed)).To(BeEmpty(), "acknowledged before the backup, not listed after the restore")
		_, err = s.client.CoreV1().ConfigMaps("default").Get(ctx, "owned-by-red", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())

		By(fmt.Sprintf("a watch from resourceVersion %s, of before the restore", beforeRV))
		Expect(watchFrom(ctx, s.client, beforeRV)).To(Satisfy(apierrors.IsResourceExpired), "410 Gone: the client relists")

		By("red's keys gone with red, blue's all kept")
		for _, gone := range []string{"red", "blue"} {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: gone}, &etcdv1alpha1.EtcdTenant{}))
			}).WithContext(ctx).WithTimeout(3*time.Minute).WithPolling(2*time.Second).Should(BeTrue(), gone)
		}
		redLeft, err := admin.Get(ctx, "/red/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		Expect(err).NotTo(HaveOccurred())
		Expect(redLeft.Count).To(BeZero(), "keys under red's prefix")
		blueLeft, err := admin.Get(ctx, "/blue/", clientv3.WithPrefix(), clientv3.WithKeysOnly())
		Expect(err).NotTo(HaveOccurred())
		Expect(keyNames(blueLeft.Kvs)).To(Equal(keyNames(blueKeys.Kvs)), "blue's keys")
	})
})

// kubeAPIServerManifest is docs/examples/kube-apiserver.yaml for one tenant: the file with
// "team-a" replaced by the tenant's name, in namespace ns.
type kubeAPIServerManifest struct {
	cluster    *etcdv1alpha1.EtcdCluster
	tenant     *etcdv1alpha1.EtcdTenant
	deployment *appsv1.Deployment
	service    *corev1.Service
}

func readKubeAPIServerManifest(ns, tenant string) kubeAPIServerManifest {
	raw, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "examples", "kube-apiserver.yaml"))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(bytes.ReplaceAll(raw, []byte("team-a"), []byte(tenant))), 4096)
	m := kubeAPIServerManifest{cluster: &etcdv1alpha1.EtcdCluster{}, tenant: &etcdv1alpha1.EtcdTenant{},
		deployment: &appsv1.Deployment{}, service: &corev1.Service{}}
	for _, obj := range []client.Object{m.cluster, m.tenant, m.deployment, m.service} {
		ExpectWithOffset(1, dec.Decode(obj)).To(Succeed())
		obj.SetNamespace(ns)
	}
	var rest map[string]any
	ExpectWithOffset(1, dec.Decode(&rest)).To(MatchError(io.EOF), "the manifest has four objects")
	return m
}

// kubeAPIServer is a kube-apiserver on a tenant, and a client of it with a token that the
// API server's system:masters group lets do anything.
type kubeAPIServer struct {
	ns, tenant string
	config     *rest.Config
	client     kubernetes.Interface
}

// deployKubeAPIServer creates the Secret of a kube-apiserver's own keys (its serving
// certificate from a CA of the spec's, a service account signing key, a token) and the
// manifest's Deployment and Service for tenant.
func deployKubeAPIServer(ctx context.Context, ns, tenant string) *kubeAPIServer {
	m := readKubeAPIServerManifest(ns, tenant)
	image := m.deployment.Spec.Template.Spec.Containers[0].Image
	ExpectWithOffset(1, image).To(Equal(os.Getenv("KUBE_APISERVER_IMAGE")),
		"docs/examples/kube-apiserver.yaml names the image make kube-apiserver-image builds (make test-e2e-deploy sets KUBE_APISERVER_IMAGE)")
	serverName := m.service.Name + "." + ns + ".svc"
	now := time.Now()
	caPair, err := pki.NewCA(m.service.Name+" CA", 24*time.Hour, now)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ca, err := pki.LoadCA(caPair)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	serving, err := ca.IssueServer(m.service.Name, []string{m.service.Name, serverName}, nil, 24*time.Hour, now)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	saKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	saDER, err := x509.MarshalECPrivateKey(saKey)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	secret := make([]byte, 16)
	_, _ = rand.Read(secret)
	token := hex.EncodeToString(secret)
	ExpectWithOffset(1, k8sClient.Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kube-apiserver-" + tenant},
		Data: map[string][]byte{
			"tls.crt":    serving.CertPEM,
			"tls.key":    serving.KeyPEM,
			"sa.key":     pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: saDER}),
			"tokens.csv": []byte(token + `,admin,admin,"system:masters"` + "\n"),
		},
	})).To(Succeed())
	ExpectWithOffset(1, k8sClient.Create(ctx, m.deployment)).To(Succeed())
	ExpectWithOffset(1, k8sClient.Create(ctx, m.service)).To(Succeed())
	return &kubeAPIServer{ns: ns, tenant: tenant, config: &rest.Config{
		BearerToken:     token,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca.CertPEM(), ServerName: serverName},
	}}
}

// waitReady waits until the API server's pod is Ready (its /readyz answers), and points the
// client at the pod's address.
func (s *kubeAPIServer) waitReady(ctx context.Context) {
	var ip string
	EventuallyWithOffset(1, func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(s.ns), s.podLabels())).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1))
		p := pods.Items[0]
		g.Expect(podReady(&p)).To(BeTrue(), "pod %s: %+v", p.Name, p.Status.ContainerStatuses)
		ip = p.Status.PodIP
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	addr, err := netip.ParseAddr(ip)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	ExpectWithOffset(1, podNetwork.Contains(addr)).To(BeTrue(), "%s is on the local cluster's pod network", ip)
	s.config.Host = "https://" + net.JoinHostPort(ip, "6443")
	s.client, err = kubernetes.NewForConfig(s.config)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}

// podLabels select the API server's pod, as the manifest labels it.
func (s *kubeAPIServer) podLabels() client.MatchingLabels {
	return client.MatchingLabels{"app.kubernetes.io/name": "kube-apiserver", "app.kubernetes.io/instance": s.tenant}
}

// listLoad lists the load's ConfigMaps: their names and the list's resourceVersion.
func (s *kubeAPIServer) listLoad(ctx context.Context) (map[string]bool, string) {
	list, err := s.client.CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{LabelSelector: "load=true"})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	names := map[string]bool{}
	for _, cm := range list.Items {
		names[cm.Name] = true
	}
	return names, list.ResourceVersion
}

// remove deletes the API server's Deployment and waits until its pod is gone: nothing
// writes under its prefix afterwards.
func (s *kubeAPIServer) remove(ctx context.Context) {
	ExpectWithOffset(1, k8sClient.Delete(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: "kube-apiserver-" + s.tenant}},
		client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
	EventuallyWithOffset(1, func(g Gomega) {
		var pods corev1.PodList
		g.Expect(k8sClient.List(ctx, &pods, client.InNamespace(s.ns), s.podLabels())).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
}

// apiLoad creates ConfigMaps through a kube-apiserver at a steady rate, watches them, and
// polls the API server's /readyz, until stop. Nothing in its goroutines asserts.
type apiLoad struct {
	stopCreates context.CancelFunc
	creating    sync.WaitGroup
	cancel      context.CancelFunc
	wg          sync.WaitGroup

	mu        sync.Mutex
	acked     []string
	failed    int
	errs      map[string]int
	delivered map[string]bool // ADDED events of the watch
	relisted  map[string]bool // found by a relist after the watch was told its version expired
	rewatches int
	notReady  time.Duration
}

// startLoad starts the load, from a list's resourceVersion, and returns once the first
// creates are acknowledged.
func (s *kubeAPIServer) startLoad(ctx context.Context) *apiLoad {
	lctx, cancel := context.WithTimeout(ctx, 20*time.Minute)
	cctx, stopCreates := context.WithCancel(lctx)
	l := &apiLoad{cancel: cancel, stopCreates: stopCreates, errs: map[string]int{}, delivered: map[string]bool{}, relisted: map[string]bool{}}
	DeferCleanup(func() { l.cancel(); l.wg.Wait() })
	cms := s.client.CoreV1().ConfigMaps("default")
	list, err := cms.List(ctx, metav1.ListOptions{LabelSelector: "load=true"})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	l.creating.Add(2)
	l.wg.Add(1)
	go func() {
		defer GinkgoRecover()
		defer l.creating.Done()
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-cctx.Done():
				return
			case <-tick.C:
			}
			name := fmt.Sprintf("load-%05d", i)
			rctx, cancel := context.WithTimeout(cctx, 10*time.Second)
			_, err := cms.Create(rctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"load": "true"}}}, metav1.CreateOptions{})
			cancel()
			l.mu.Lock()
			if err == nil {
				l.acked = append(l.acked, name)
			} else if cctx.Err() == nil {
				l.failed++
				l.errs[firstLine(err.Error())]++
			}
			l.mu.Unlock()
		}
	}()
	go func() {
		defer GinkgoRecover()
		defer l.wg.Done()
		l.watch(lctx, s.client, list.ResourceVersion)
	}()
	go func() {
		defer GinkgoRecover()
		defer l.creating.Done()
		last := time.Now()
		for cctx.Err() == nil {
			rctx, cancel := context.WithTimeout(cctx, 2*time.Second)
			err := s.client.CoreV1().RESTClient().Get().AbsPath("/readyz").Do(rctx).Error()
			cancel()
			now := time.Now()
			if err != nil && cctx.Err() == nil {
				l.mu.Lock()
				l.notReady += now.Sub(last)
				l.errs["readyz: "+firstLine(err.Error())]++
				l.mu.Unlock()
			}
			last = now
			select {
			case <-cctx.Done():
			case <-time.After(500 * time.Millisecond):
			}
		}
	}()
	EventuallyWithOffset(1, func() int {
		l.mu.Lock()
		defer l.mu.Unlock()
		return len(l.acked)
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(BeNumerically(">=", 3), "the first creates are acknowledged")
	return l
}

// watch follows the load's ConfigMaps from resourceVersion rv as a client-go informer
// would: again from the last version seen when the watch ends, and from a relist when the
// API server says that version expired.
func (l *apiLoad) watch(ctx context.Context, cs kubernetes.Interface, rv string) {
	cms := cs.CoreV1().ConfigMaps("default")
	for ctx.Err() == nil {
		w, err := cms.Watch(ctx, metav1.ListOptions{LabelSelector: "load=true", ResourceVersion: rv, AllowWatchBookmarks: true})
		if err == nil {
			rv, err = l.follow(w, rv)
		}
		l.mu.Lock()
		l.rewatches++
		l.mu.Unlock()
		if apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
			if list, lerr := cms.List(ctx, metav1.ListOptions{LabelSelector: "load=true"}); lerr == nil {
				l.mu.Lock()
				for _, cm := range list.Items {
					l.relisted[cm.Name] = true
				}
				l.mu.Unlock()
				rv = list.ResourceVersion
			}
		}
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// follow records w's ADDED events until it ends, and returns the last resourceVersion seen
// and the error an ERROR event carried.
func (l *apiLoad) follow(w watch.Interface, rv string) (string, error) {
	defer w.Stop()
	for ev := range w.ResultChan() {
		switch ev.Type {
		case watch.Error:
			return rv, apierrors.FromObject(ev.Object)
		case watch.Added, watch.Modified, watch.Bookmark:
			if o, ok := ev.Object.(metav1.Object); ok {
				rv = o.GetResourceVersion()
				if ev.Type == watch.Added {
					l.mu.Lock()
					l.delivered[o.GetName()] = true
					l.mu.Unlock()
				}
			}
		}
	}
	return rv, nil
}

// stop ends the creates and the /readyz polls, and returns the acknowledged creates; the
// watch goes on until the spec ends.
func (l *apiLoad) stop() []string {
	l.stopCreates()
	l.creating.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.acked...)
}

// watched is every name the watch delivered or a relist found.
func (l *apiLoad) watched() map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := map[string]bool{}
	for n := range l.delivered {
		out[n] = true
	}
	for n := range l.relisted {
		out[n] = true
	}
	return out
}

func (l *apiLoad) readyzFailing() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.notReady
}

func (l *apiLoad) report() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	relistOnly := 0
	for n := range l.relisted {
		if !l.delivered[n] {
			relistOnly++
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "creates acknowledged %d, failed %d; watch: delivered %d, found only by a relist %d, watches restarted %d; /readyz failing %s in all\n",
		len(l.acked), l.failed, len(l.delivered), relistOnly, l.rewatches, l.notReady.Round(100*time.Millisecond))
	for e, n := range l.errs {
		fmt.Fprintf(&b, "  %d× %s\n", n, e)
	}
	return b.String()
}

// watchFrom opens a watch of ConfigMaps from rv and returns the error the API server
// answers with, at once or as the watch's first event; nil when the watch delivers
// something else first or nothing within 10 s.
func watchFrom(ctx context.Context, cs kubernetes.Interface, rv string) error {
	wctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	w, err := cs.CoreV1().ConfigMaps("default").Watch(wctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	defer w.Stop()
	ev, ok := <-w.ResultChan()
	if ok && ev.Type == watch.Error {
		return apierrors.FromObject(ev.Object)
	}
	return nil
}

// changedPods counts the pods of before whose UID is not the same in after.
func changedPods(before, after map[string]string) int {
	n := 0
	for name, uid := range before {
		if after[name] != uid {
			n++
		}
	}
	return n
}

// missing is names not in set, in order.
func missing(names []string, set map[string]bool) []string {
	out := []string{}
	for _, n := range names {
		if !set[n] {
			out = append(out, n)
		}
	}
	return out
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// keyNames are the keys of kvs, in order.
func keyNames(kvs []*mvccpb.KeyValue) []string {
	out := make([]string, 0, len(kvs))
	for _, kv := range kvs {
		out = append(out, string(kv.Key))
	}
	return out
}
