package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// etcdImage is pushed to the local registry by `make images`; the client pods use its etcdctl.
const etcdImage = "localhost:5000/etcd-development/etcd:v3.7.3"

var _ = Describe("EtcdCluster", func() {
	Describe("a 3-member TLS cluster", Ordered, func() {
		var (
			ns      string
			cluster *etcdv1alpha1.EtcdCluster
			keys    = map[string]string{}
		)

		BeforeAll(func(ctx SpecContext) {
			ns = newTestNamespace(ctx, "e2e-three-")
			cluster = createCluster(ctx, ns, "main", 3)
		})

		It("becomes Ready with every member healthy and voting", func(ctx SpecContext) {
			c := waitReady(ctx, cluster)
			Expect(c.Status.ReadyMembers).To(Equal(int32(3)))
			Expect(c.Status.CurrentVersion).To(Equal("3.7.3"))
			Expect(c.Status.Members).To(HaveLen(3))
			leaders := 0
			for _, m := range c.Status.Members {
				Expect(m.Healthy).To(BeTrue(), m.Name)
				Expect(m.Learner).To(BeFalse(), m.Name)
				Expect(m.ClientURL).To(HavePrefix("https://"))
				if m.Leader {
					leaders++
				}
			}
			Expect(leaders).To(Equal(1))
		})

		It("serves a client with the client Secret through the client Service", func(ctx SpecContext) {
			c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			endpoint := fmt.Sprintf("https://%s.%s.svc:2379", c.Status.ClientService, ns)
			etcdctl(ctx, ns, c.Status.ClientSecret, "put-", "--endpoints="+endpoint, "put", "/e2e/through-service", "hello")
			out := etcdctl(ctx, ns, c.Status.ClientSecret, "get-", "--endpoints="+endpoint, "get", "--print-value-only", "/e2e/through-service")
			Expect(out).To(Equal("hello\n"))
		})

		It("refuses a client without a certificate", func(ctx SpecContext) {
			endpoint, cfg := memberTLS(ctx, ns, cluster.Name)
			Expect(tlsRead(endpoint, cfg)).To(MatchError(ContainSubstring("certificate required")))

			withCert := cfg.Clone()
			withCert.Certificates = clientCertificate(ctx, ns, cluster.Name)
			err := tlsRead(endpoint, withCert)
			Expect(err).To(HaveOccurred()) // the server says nothing before the client does...
			Expect(err.Error()).To(ContainSubstring("i/o timeout"), "...but accepts the certificate")
		})

		It("brings a deleted member pod back with the same identity and every key", func(ctx SpecContext) {
			cli := etcdClient(ctx, ns, cluster.Name)
			defer func() { _ = cli.Close() }()
			for i := range 200 {
				k, v := fmt.Sprintf("/e2e/key-%03d", i), fmt.Sprintf("value-%d", i)
				Expect(cli.Put(ctx, k, v)).To(Succeed())
				keys[k] = v
			}
			before := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			victim := before.Status.Members[1]
			oldPod := get(ctx, ns, victim.Name, &corev1.Pod{})

			Expect(clientset.CoreV1().Pods(ns).Delete(ctx, victim.Name, metav1.DeleteOptions{})).To(Succeed())

			Eventually(func(g Gomega) {
				pod := &corev1.Pod{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(oldPod), pod)).To(Succeed())
				g.Expect(pod.UID).NotTo(Equal(oldPod.UID), "a new pod")
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
			after := waitReady(ctx, cluster)
			Expect(memberIDs(after)).To(Equal(memberIDs(before)), "no membership change")
			Expect(after.Status.Members).To(ContainElement(SatisfyAll(
				HaveField("Name", victim.Name), HaveField("ID", victim.ID), HaveField("Healthy", true))))
			for k, v := range keys {
				got, found, err := cli.Get(ctx, k)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), k)
				Expect(got).To(Equal(v), k)
			}
		})

		It("scales down to 1 member and back up to 3, keeping every key", func(ctx SpecContext) {
			for _, size := range []int32{1, 3} {
				By(fmt.Sprintf("scaling to %d", size))
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				patch := client.MergeFrom(c.DeepCopy())
				c.Spec.Size = size
				Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
				c = waitReady(ctx, cluster)
				Expect(c.Status.Members).To(HaveLen(int(size)))
				Expect(c.Status.ReadyMembers).To(Equal(size))

				var pods corev1.PodList
				Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": cluster.Name})).To(Succeed())
				Expect(pods.Items).To(HaveLen(int(size)), "removed members' pods are gone")
				var pvcs corev1.PersistentVolumeClaimList
				Expect(k8sClient.List(ctx, &pvcs, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": cluster.Name})).To(Succeed())
				live := 0
				for _, p := range pvcs.Items {
					if p.DeletionTimestamp == nil {
						live++
					}
				}
				Expect(live).To(Equal(int(size)), "deletionPolicy Delete: removed members' claims are deleted")

				cli := etcdClient(ctx, ns, cluster.Name)
				for k, v := range keys {
					got, found, err := cli.Get(ctx, k)
					Expect(err).NotTo(HaveOccurred())
					Expect(found).To(BeTrue(), k)
					Expect(got).To(Equal(v), k)
				}
				Expect(cli.Close()).To(Succeed())
			}
		})

		It("replaces a member whose volume is deleted with a fresh one, keeping every key", func(ctx SpecContext) {
			before := waitReady(ctx, cluster)
			victim := before.Status.Members[len(before.Status.Members)-1]
			pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: victim.Name + "-data", Namespace: ns}}
			Expect(k8sClient.Delete(ctx, pvc)).To(Succeed())
			Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: ns}})).To(Succeed())

			Eventually(func(g Gomega) {
				c := &etcdv1alpha1.EtcdCluster{}
				g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(cluster), c)).To(Succeed())
				g.Expect(c.Status.Members).NotTo(ContainElement(HaveField("ID", victim.ID)), "the lost member is removed")
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
			after := waitReady(ctx, cluster)
			Expect(after.Status.Members).To(HaveLen(3))
			cli := etcdClient(ctx, ns, cluster.Name)
			defer func() { _ = cli.Close() }()
			for k, v := range keys {
				got, found, err := cli.Get(ctx, k)
				Expect(err).NotTo(HaveOccurred())
				Expect(found).To(BeTrue(), k)
				Expect(got).To(Equal(v), k)
			}
		})

		It("runs member pods under the restricted Pod Security Standard", func(ctx SpecContext) {
			pod := get(ctx, ns, cluster.Name+"-0", &corev1.Pod{})
			Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
			Expect(pod.Spec.SecurityContext.SeccompProfile.Type).To(Equal(corev1.SeccompProfileTypeRuntimeDefault))
			sc := pod.Spec.Containers[0].SecurityContext
			Expect(sc.AllowPrivilegeEscalation).To(Equal(ptr.To(false)))
			Expect(sc.ReadOnlyRootFilesystem).To(Equal(ptr.To(true)))
			Expect(sc.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
		})
	})

	// The 3-member cluster above runs the default (newest) release; these cover the others,
	// whose flags differ.
	DescribeTable("reaches Ready",
		func(ctx SpecContext, size int, version string) {
			ns := newTestNamespace(ctx, fmt.Sprintf("e2e-size%d-", size))
			c := createCluster(ctx, ns, "s", int32(size), version)
			c = waitReady(ctx, c)
			Expect(c.Status.ReadyMembers).To(Equal(int32(size)))
			Expect(c.Status.CurrentVersion).To(Equal(version))
			cli := etcdClient(ctx, ns, "s")
			defer func() { _ = cli.Close() }()
			Expect(cli.Put(ctx, "/e2e/size", strconv.Itoa(size))).To(Succeed())
		},
		Entry("with 1 member of etcd 3.6", 1, "3.6.16"),
		Entry("with 5 members of etcd 3.5", 5, "3.5.35"),
	)

	It("refuses invalid specs with a message saying what is allowed", func(ctx SpecContext) {
		c := &etcdv1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "even", Namespace: "default"},
			Spec:       etcdv1alpha1.EtcdClusterSpec{Size: 4},
		}
		err := k8sClient.Create(ctx, c)
		Expect(err).To(MatchError(ContainSubstring(`spec.size: Unsupported value: 4: supported values: "1", "3", "5", "7"`)))
	})
})

// The operator restarts while a cluster bootstraps: it must pick up where it left off. Serial,
// so that no other spec sees the operator go away.
var _ = Describe("operator restart during bootstrap", Serial, func() {
	It("still ends with a Ready cluster", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-restart-")
		cluster := createCluster(ctx, ns, "boot", 3)

		By("waiting until the second member has been added")
		Eventually(func() error {
			return k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: "boot-1"}, &corev1.Pod{})
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(200 * time.Millisecond).Should(Succeed())

		By("deleting the operator pod")
		pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
		Expect(err).NotTo(HaveOccurred())
		for _, p := range pods.Items {
			Expect(clientset.CoreV1().Pods(operatorNamespace).Delete(ctx, p.Name, metav1.DeleteOptions{})).To(Succeed())
		}

		c := waitReady(ctx, cluster)
		Expect(c.Status.ReadyMembers).To(Equal(int32(3)))
	})
})

func newTestNamespace(ctx context.Context, prefix string) string {
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		// Delete the clusters first, so their finalizer runs while the operator is there.
		_ = k8sClient.DeleteAllOf(ctx, &etcdv1alpha1.EtcdCluster{}, client.InNamespace(ns.Name))
		_ = clientset.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	return ns.Name
}

// createCluster creates a TLS cluster; version is optional (the default is the newest).
func createCluster(ctx context.Context, ns, name string, size int32, version ...string) *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: etcdv1alpha1.EtcdClusterSpec{
			Size:           size,
			DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
		},
	}
	if len(version) > 0 {
		c.Spec.Version = version[0]
	}
	ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
	return c
}

func get[T client.Object](ctx context.Context, ns, name string, obj T) T {
	ExpectWithOffset(1, k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj)).To(Succeed())
	return obj
}

// waitReady waits for the cluster's Ready condition for its current generation.
func waitReady(ctx context.Context, c *etcdv1alpha1.EtcdCluster) *etcdv1alpha1.EtcdCluster {
	got := &etcdv1alpha1.EtcdCluster{}
	EventuallyWithOffset(1, func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
		ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
		g.Expect(ready).NotTo(BeNil())
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		g.Expect(ready.ObservedGeneration).To(Equal(got.Generation))
	}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return got
}

func memberIDs(c *etcdv1alpha1.EtcdCluster) map[string]string {
	out := map[string]string{}
	for _, m := range c.Status.Members {
		out[m.Name] = m.ID
	}
	return out
}

// memberTLS returns the client endpoint of the first member pod that has an IP (on the
// cluster bridge, owned by this machine), and a TLS configuration that trusts the cluster's
// CA and checks the member certificate against the client Service name: the certificate
// names members by DNS, which this machine cannot resolve, not by pod IP.
func memberTLS(ctx context.Context, ns, name string) (string, *tls.Config) {
	endpoints, cfg := memberEndpoints(ctx, ns, name)
	return endpoints[0], cfg
}

func memberEndpoints(ctx context.Context, ns, name string) ([]string, *tls.Config) {
	c := get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{})
	secret := get(ctx, ns, c.Status.ClientSecret, &corev1.Secret{})
	pool := x509.NewCertPool()
	Expect(pool.AppendCertsFromPEM(secret.Data["ca.crt"])).To(BeTrue())
	serverName := c.Status.ClientService
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The standard check would compare the certificate with the IP dialed; the same
		// chain-and-name check is done below against the client Service name instead.
		InsecureSkipVerify: true, //nolint:gosec // verified in VerifyConnection
		VerifyConnection: func(cs tls.ConnectionState) error {
			if len(cs.PeerCertificates) == 0 {
				return fmt.Errorf("no server certificate")
			}
			inter := x509.NewCertPool()
			for _, ic := range cs.PeerCertificates[1:] {
				inter.AddCert(ic)
			}
			_, err := cs.PeerCertificates[0].Verify(x509.VerifyOptions{Roots: pool, Intermediates: inter, DNSName: serverName})
			return err
		},
	}
	var pods corev1.PodList
	Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name})).To(Succeed())
	var endpoints []string
	for _, p := range pods.Items {
		if strings.HasPrefix(p.Status.PodIP, "198.18.") {
			endpoints = append(endpoints, net.JoinHostPort(p.Status.PodIP, "2379"))
		}
	}
	Expect(endpoints).NotTo(BeEmpty())
	return endpoints, cfg
}

func clientCertificate(ctx context.Context, ns, name string) []tls.Certificate {
	c := get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{})
	secret := get(ctx, ns, c.Status.ClientSecret, &corev1.Secret{})
	cert, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
	Expect(err).NotTo(HaveOccurred())
	return []tls.Certificate{cert}
}

// etcdClient connects from this machine to the member pods with the client certificate.
func etcdClient(ctx context.Context, ns, name string) etcd.Client {
	endpoints, cfg := memberEndpoints(ctx, ns, name)
	cfg.Certificates = clientCertificate(ctx, ns, name)
	for i := range endpoints {
		endpoints[i] = "https://" + endpoints[i]
	}
	cli, err := etcd.New(etcd.Config{Endpoints: endpoints, TLS: cfg})
	Expect(err).NotTo(HaveOccurred())
	return cli
}

// tlsRead completes a TLS handshake with endpoint and reads, for at most two seconds: with
// TLS 1.3 a server refuses a client certificate only after the client's handshake is done,
// and the refusal arrives as an alert on the first read.
func tlsRead(endpoint string, cfg *tls.Config) error {
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", endpoint, cfg)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	_ = conn.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, err = conn.Read(make([]byte, 1))
	return err
}

// etcdctl runs etcdctl in a pod of the etcd image with the client Secret mounted, waits
// for it to succeed and returns its output: the way a workload in the cluster connects.
func etcdctl(ctx context.Context, ns, secret, prefix string, args ...string) string {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Namespace: ns},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{
				Name:    "etcdctl",
				Image:   etcdImage,
				Command: []string{"/usr/local/bin/etcdctl"},
				Args: append([]string{
					"--cacert=/tls/ca.crt", "--cert=/tls/tls.crt", "--key=/tls/tls.key", "--command-timeout=20s",
				}, args...),
				VolumeMounts: []corev1.VolumeMount{{Name: "tls", MountPath: "/tls", ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{Name: "tls", VolumeSource: corev1.VolumeSource{
				Secret: &corev1.SecretVolumeSource{SecretName: secret},
			}}},
		},
	}
	Expect(k8sClient.Create(ctx, pod)).To(Succeed())
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.Status.Phase).NotTo(Equal(corev1.PodFailed), "etcdctl %v failed", args)
		g.Expect(got.Status.Phase).To(Equal(corev1.PodSucceeded))
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	logs, err := clientset.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	Expect(err).NotTo(HaveOccurred())
	return string(logs)
}
