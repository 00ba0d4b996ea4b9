package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

var _ = Describe("CA rotation", longestSpec(95), func() {
	It("rotates the CA of a 3-member cluster under writes from a client that reloads the client Secret: three phases, each member restarted once per phase, no write lost; then the members serve the new CA's certificate and refuse the old CA's client certificate", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-ca-")
		cluster := createCluster(ctx, ns, "rot", 3)
		before := waitReady(ctx, cluster)
		oldCA := get(ctx, ns, "rot-ca", &corev1.Secret{}).Data["ca.crt"]
		oldClient := get(ctx, ns, before.Status.ClientSecret, &corev1.Secret{})
		podsBefore := podUIDs(ctx, ns, cluster.Name)
		w := startWriter(ctx, ns, cluster.Name)
		writing := time.Now()
		time.Sleep(2 * time.Second) // some writes before the rotation

		By("asking for a rotation with the rotate-ca annotation")
		c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Annotations = map[string]string{etcdv1alpha1.AnnotationRotateCA: "e2e-1"}
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())

		By("following the phases: each rolled out to every member before the next")
		var phases []string
		seen := map[string]map[string]bool{}
		restartsIn := map[string]int{}
		Eventually(func(g Gomega) {
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			phase := ""
			if got.Status.CARotation != nil {
				phase = got.Status.CARotation.Phase
			}
			if phase != "" && (len(phases) == 0 || phases[len(phases)-1] != phase) {
				phases = append(phases, phase)
			}
			for name, uid := range podUIDs(ctx, ns, cluster.Name) {
				if seen[name] == nil {
					seen[name] = map[string]bool{podsBefore[name]: true}
				}
				if !seen[name][uid] {
					seen[name][uid] = true
					restartsIn[phase]++
				}
			}
			g.Expect(got.Status.CARotation).NotTo(BeNil())
			g.Expect(got.Status.CARotation.Request).To(Equal("e2e-1"))
			g.Expect(got.Status.CARotation.Phase).To(BeEmpty(), "the rotation is complete")
			ready := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionReady)
			g.Expect(ready).NotTo(BeNil())
			g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), "%s: %s", ready.Reason, ready.Message)
		}).WithContext(ctx).WithTimeout(10 * time.Minute).WithPolling(250 * time.Millisecond).Should(Succeed())
		GinkgoWriter.Printf("phases %v, restarts seen per phase %v\n", phases, restartsIn)
		Expect(phases).To(Equal([]string{"TrustingNew", "ServingNew", "DroppingOld"}))
		for name, uids := range seen {
			Expect(uids).To(HaveLen(4), "member %s restarted once per phase", name)
		}
		after := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		Expect(memberIDs(after)).To(Equal(memberIDs(before)), "the same members, with their data")

		By("writing on after the old CA is dropped: the client follows the Secret")
		ackedBefore := w.count()
		Eventually(w.count).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(BeNumerically(">", ackedBefore+20))
		acked, failed := w.stop()
		wrote := time.Since(writing)
		Expect(failed).To(BeZero(), "every write was acknowledged within %s: the cluster kept taking writes through the rotation", writeWindow)
		// The writer tries 10 writes a second, fewer while it retries one: 3 a second over the
		// whole rotation means it never stood still for long (a count of 500 assumed a slower
		// rotation: it took 5 minutes before the probes asked every 1 and 2 s).
		Expect(float64(len(acked))).To(BeNumerically(">=", wrote.Seconds()*3),
			"the writer kept writing during the rotation: %d writes acknowledged in %s", len(acked), wrote.Round(time.Second))
		expectKeys(ctx, ns, cluster.Name, acked)

		By("the members serve a certificate of the new CA and refuse a client certificate of the old")
		newCA := get(ctx, ns, "rot-ca", &corev1.Secret{}).Data["ca.crt"]
		Expect(newCA).NotTo(Equal(oldCA))
		Expect(get(ctx, ns, after.Status.ClientSecret, &corev1.Secret{}).Data["ca.crt"]).To(Equal(newCA), "clients trust the new CA only")
		current := clusterTLS(ctx, ns, cluster.Name).Certificates
		for _, endpoint := range podEndpoints(ctx, ns, cluster.Name) {
			Expect(servedBy(ctx, endpoint, current, newCA, after.Status.ClientService)).To(Succeed(), endpoint)
			Expect(servedBy(ctx, endpoint, current, oldCA, after.Status.ClientService)).NotTo(Succeed(), "%s serves the old CA's certificate", endpoint)
		}
		oldCert, err := tls.X509KeyPair(oldClient.Data["tls.crt"], oldClient.Data["tls.key"])
		Expect(err).NotTo(HaveOccurred())
		stale := reloadingTLS(ctx, ns, cluster.Name)
		stale.SetCertificate(&oldCert)
		endpoints := podEndpoints(ctx, ns, cluster.Name)
		for i := range endpoints {
			endpoints[i] = "https://" + endpoints[i]
		}
		cli, err := etcd.New(etcd.Config{Endpoints: endpoints, TLS: stale.Config, DialTimeout: 2 * time.Second})
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
			err = cli.Put(pctx, "/e2e/old-client", "x")
			cancel()
			_ = cli.Close()
		}
		Expect(err).To(HaveOccurred(), "a client certificate of the old CA is refused")

		events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(events.Items).To(ContainElements(HaveField("Reason", "CARotationStarted"), HaveField("Reason", "CARotationCompleted")))
	})
})

// servedBy says whether the member at endpoint (ip:port), dialed with the client
// certificate cert, serves a certificate that chains to caPEM and names serverName.
func servedBy(ctx context.Context, endpoint string, cert []tls.Certificate, caPEM []byte, serverName string) error {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		return fmt.Errorf("no CA certificate")
	}
	d := tls.Dialer{Config: &tls.Config{MinVersion: tls.VersionTLS12, Certificates: cert, InsecureSkipVerify: true}} //nolint:gosec // verified below
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := d.DialContext(dctx, "tcp", endpoint)
	if err != nil {
		return err
	}
	defer func() { _ = conn.Close() }()
	certs := conn.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return fmt.Errorf("no certificate served")
	}
	_, err = certs[0].Verify(x509.VerifyOptions{Roots: roots, DNSName: serverName})
	return err
}
