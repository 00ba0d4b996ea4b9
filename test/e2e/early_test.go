package e2e

import (
	"context"
	"encoding/json"
	"os"
	"time"

	. "github.com/onsi/ginkgo/v2"
	"github.com/onsi/ginkgo/v2/types"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Early clusters: the Serial specs run alone at the end of the suite, and a spec that begins
// with a bootstrap makes the whole run wait for it. The clusters of those that take any
// cluster of the default spec are made by the first process as the suite starts, so that they
// bootstrap while the parallel specs run, and the Serial spec finds its cluster Ready. What
// the spec checks starts with the spec: what it changes, it changes then (the raft timing
// spec turns timingProfile Auto on as it starts). A run with a focus or a skip makes none,
// and one with a label filter only those of the specs it admits; the chaos spec's long
// profile (CHAOS_PROFILE=long) starts from an older release and takes none. Each other spec
// makes its own, as it does when it finds none.
//
// The node-loss spec makes its own cluster: it needs one member on each node, and a spec
// of the parallel part may cordon a node while an early cluster schedules. It runs last of
// the Serial specs (its priority), so that no early cluster is left when it stops nodes.

// earlySpecs are the early clusters, by key: what each is made as, and the labels of the
// spec that takes it (a run's label filter must admit them).
var earlySpecs = map[string]struct {
	prefix string
	labels []string
	spec   func(ns string) *etcdv1alpha1.EtcdCluster
}{
	"timing": {"e2e-timing-", nil, func(ns string) *etcdv1alpha1.EtcdCluster { return newCluster(ns, "rtt", 3) }},
	"chaos":  {"e2e-chaos-", []string{"chaos"}, func(ns string) *etcdv1alpha1.EtcdCluster { return newCluster(ns, "chaos", 3) }},
}

// earlyNamespaces holds the namespace of each early cluster the first process made, by key;
// empty when it made none. A spec that takes one removes it.
var earlyNamespaces = map[string]string{}

// makeEarlyClusters makes with c the early clusters whose specs the run's label filter admits
// (make test-e2e-deploy's is !olm), none when the run has a focus or a skip, and returns their
// namespaces by key, encoded for every process.
func makeEarlyClusters(ctx context.Context, c client.Client, cs corev1Namespaces) []byte {
	suite, _ := GinkgoConfiguration()
	if len(suite.FocusStrings)+len(suite.SkipStrings)+len(suite.FocusFiles)+len(suite.SkipFiles) > 0 {
		return nil
	}
	admits, err := types.ParseLabelFilter(suite.LabelFilter)
	Expect(err).NotTo(HaveOccurred())
	made := map[string]string{}
	for key, e := range earlySpecs {
		if !admits(e.labels) || key == "chaos" && os.Getenv("CHAOS_PROFILE") == "long" {
			continue
		}
		ns, err := cs.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: e.prefix, Labels: restrictedNamespace}}, metav1.CreateOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, e.spec(ns.Name))).To(Succeed())
		made[key] = ns.Name
	}
	out, err := json.Marshal(made)
	Expect(err).NotTo(HaveOccurred())
	return out
}

// corev1Namespaces is what makeEarlyClusters needs of the namespaces' client.
type corev1Namespaces interface {
	Create(ctx context.Context, ns *corev1.Namespace, opts metav1.CreateOptions) (*corev1.Namespace, error)
}

// readEarlyClusters records, in every process, the namespaces makeEarlyClusters returned.
func readEarlyClusters(data []byte) {
	if len(data) > 0 {
		Expect(json.Unmarshal(data, &earlyNamespaces)).To(Succeed())
	}
}

// earlyCluster returns the namespace and the cluster of key: the early one, or, when there is
// none, one made now as it would have been. Either way the namespace is removed when the spec
// ends, as newTestNamespace's.
func earlyCluster(ctx context.Context, key string) (string, *etcdv1alpha1.EtcdCluster) {
	e := earlySpecs[key]
	ns, early := earlyNamespaces[key]
	if !early {
		ns = newTestNamespace(ctx, e.prefix)
		c := e.spec(ns)
		ExpectWithOffset(1, k8sClient.Create(ctx, c)).To(Succeed())
		return ns, c
	}
	delete(earlyNamespaces, key)
	cleanUpNamespace(ns)
	return ns, get(ctx, ns, e.spec(ns).Name, &etcdv1alpha1.EtcdCluster{})
}

// removeEarlyClusters removes the early clusters no spec took (a run cut short), while the
// operator is there to remove their finalizers.
func removeEarlyClusters() {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, ns := range earlyNamespaces {
		_ = k8sClient.DeleteAllOf(ctx, &etcdv1alpha1.EtcdCluster{}, client.InNamespace(ns))
		if err := clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			GinkgoWriter.Printf("removing the namespace %s of an early cluster: %v\n", ns, err)
		}
	}
}
