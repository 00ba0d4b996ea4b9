package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

const (
	// olmNamespace is OLM's global catalog namespace: a CatalogSource there serves every
	// namespace, as OperatorHub's do.
	olmNamespace   = "olm"
	catalogName    = "etcdpilot-e2e"
	packageName    = "etcdpilot"
	defaultChannel = "stable"
	// operatorDeployment is the Deployment the CSV installs.
	operatorDeployment = "etcdpilot-controller-manager"
)

// olmEnv returns a setting `make test-e2e` passes to the OLM run.
func olmEnv(key string) string {
	v := os.Getenv(key)
	Expect(v).NotTo(BeEmpty(), "%s is not set: run the OLM specs through make test-e2e", key)
	return v
}

// The OLM specs share one CatalogSource and run one after another: each installs the
// operator, and two installs whose namespaces overlap would fight over the same clusters.
var _ = Describe("installed through OLM", Label("olm"), Ordered, func() {
	var headCSV, previousCSV string

	BeforeAll(func(ctx SpecContext) {
		headCSV, previousCSV = olmEnv("E2E_OLM_HEAD_CSV"), olmEnv("E2E_OLM_PREVIOUS_CSV")
		createCatalogSource(ctx, olmEnv("E2E_OLM_CATALOG_IMAGE"))
	})

	It("lists the package as OperatorHub shows it: channels, default channel, icon", func(ctx SpecContext) {
		pm := &unstructured.Unstructured{}
		pm.SetAPIVersion("packages.operators.coreos.com/v1")
		pm.SetKind("PackageManifest")
		Eventually(func(g Gomega) {
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: olmNamespace, Name: packageName}, pm)).To(Succeed())
			g.Expect(nestedString(pm.Object, "status", "catalogSource")).To(Equal(catalogName))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())

		Expect(nestedString(pm.Object, "status", "defaultChannel")).To(Equal(defaultChannel))
		channels, _, err := unstructured.NestedSlice(pm.Object, "status", "channels")
		Expect(err).NotTo(HaveOccurred())
		heads := map[string]string{}
		for _, c := range channels {
			ch := c.(map[string]any)
			heads[nestedString(ch, "name")] = nestedString(ch, "currentCSV")
		}
		Expect(heads).To(Equal(map[string]string{"stable": headCSV, "fast": headCSV}))

		By("fetching the icon the way a console does, through the icon subresource")
		want, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "icon.svg"))
		Expect(err).NotTo(HaveOccurred())
		// OLM's packageserver runs two replicas behind its APIService, each reading the
		// catalog on its own: the read above may have reached one that has the package
		// while this one reaches the other before it does (a 404). A console retries too.
		Eventually(func(g Gomega) {
			icon, err := clientset.RESTClient().Get().AbsPath("/apis/packages.operators.coreos.com/v1/namespaces",
				olmNamespace, "packagemanifests", packageName, "icon").DoRaw(ctx)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(string(icon)).To(Equal(string(want)))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	It("installs into its own namespace after the InstallPlan is approved, runs the sample, leaves other namespaces alone and keeps the clusters serving once uninstalled", func(ctx SpecContext) {
		ns := newOLMNamespace(ctx, "e2e-olm-own-", restrictedNamespace)
		other := newOLMNamespace(ctx, "e2e-olm-other-", restrictedNamespace)
		sub := subscribe(ctx, ns, []string{ns}, "")

		By("approving the InstallPlan OLM proposes")
		approveInstallPlan(ctx, ns, headCSV)
		csv := waitCSVSucceeded(ctx, ns, headCSV)

		By("creating the sample from the CSV's alm-examples")
		sample := almExample(csv)
		sample.Namespace = ns
		Expect(k8sClient.Create(ctx, sample)).To(Succeed())
		waitReady(ctx, sample)
		cli := etcdClient(ctx, ns, sample.Name)
		defer func() { _ = cli.Close() }()
		Expect(cli.Put(ctx, "/e2e/olm", "installed")).To(Succeed())

		By("checking a cluster outside the target namespace is left alone")
		outside := createCluster(ctx, other, "outside", 1)
		Consistently(func(g Gomega) {
			c := get(ctx, other, outside.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(c.Status.Conditions).To(BeEmpty())
			g.Expect(c.Finalizers).To(BeEmpty())
			g.Expect(clusterPods(ctx, other, outside.Name)).To(BeEmpty())
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())

		By("uninstalling through OLM: deleting the Subscription and the CSV")
		before := podStates(ctx, ns, sample.Name)
		Expect(k8sClient.Delete(ctx, sub)).To(Succeed())
		Expect(k8sClient.Delete(ctx, csv)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorDeployment}, &appsv1.Deployment{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the operator is removed")

		By("checking the cluster keeps serving without the operator")
		Consistently(func(g Gomega) {
			g.Expect(podStates(ctx, ns, sample.Name)).To(Equal(before), "no member pod restarted or went away")
		}).WithContext(ctx).WithTimeout(10 * time.Second).WithPolling(time.Second).Should(Succeed())
		got, found, err := cli.Get(ctx, "/e2e/olm")
		Expect(err).NotTo(HaveOccurred())
		Expect(found).To(BeTrue())
		Expect(got).To(Equal("installed"))
		Expect(cli.Put(ctx, "/e2e/olm-after", "still-writable")).To(Succeed())
	})

	It("upgrades the previous release to the head through the graph without touching etcd", func(ctx SpecContext) {
		opNs := newOLMNamespace(ctx, "e2e-olm-op-", restrictedNamespace)
		data := newOLMNamespace(ctx, "e2e-olm-data-", restrictedNamespace)
		small := newOLMNamespace(ctx, "e2e-olm-small-", restrictedNamespace)
		// MultiNamespace: the operator watches two namespaces other than its own.
		sub := subscribe(ctx, opNs, []string{data, small}, previousCSV)

		By("installing the previous release " + previousCSV)
		approveInstallPlan(ctx, opNs, previousCSV)
		waitCSVSucceeded(ctx, opNs, previousCSV)

		By("OLM says the previous release is retired, with the catalog's message (olm.deprecations)")
		expectBundleDeprecated(ctx, sub, true)

		By("creating clusters in both target namespaces and writing keys")
		cluster := createCluster(ctx, data, "main", 3)
		second := createCluster(ctx, small, "second", 1)
		waitReady(ctx, cluster)
		waitReady(ctx, second)
		cli := etcdClient(ctx, data, cluster.Name)
		defer func() { _ = cli.Close() }()
		keys := map[string]string{}
		for i := range 100 {
			k, v := fmt.Sprintf("/e2e/upgrade-%03d", i), fmt.Sprintf("v%d", i)
			Expect(cli.Put(ctx, k, v)).To(Succeed())
			keys[k] = v
		}
		before := podStates(ctx, data, cluster.Name)
		beforeSecond := podStates(ctx, small, second.Name)

		By("sampling the cluster's availability while OLM upgrades the operator")
		stop := sampleAvailability(ctx, data, cluster.Name, cli)

		By("approving the upgrade to " + headCSV + " that OLM offers through the graph")
		approveInstallPlan(ctx, opNs, headCSV)
		csv := waitCSVSucceeded(ctx, opNs, headCSV)
		Expect(csv.Spec.Replaces).To(Equal(previousCSV), "OLM followed the graph's replaces edge")
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKey{Namespace: opNs, Name: previousCSV}, &operatorsv1alpha1.ClusterServiceVersion{}))
		}).WithContext(ctx).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(BeTrue(), "the previous CSV is gone")
		waitOperatorImage(ctx, opNs, csv)
		expectBundleDeprecated(ctx, sub, false)

		By("letting the new operator reconcile, then checking nothing was restarted")
		Consistently(func(g Gomega) {
			g.Expect(podStates(ctx, data, cluster.Name)).To(Equal(before))
			g.Expect(podStates(ctx, small, second.Name)).To(Equal(beforeSecond))
		}).WithContext(ctx).WithTimeout(15 * time.Second).WithPolling(time.Second).Should(Succeed())
		failures := stop()
		Expect(failures).To(BeEmpty(), "the cluster stayed Available and answered reads throughout")
		waitReady(ctx, cluster)

		for k, v := range keys {
			got, found, err := cli.Get(ctx, k)
			Expect(err).NotTo(HaveOccurred())
			Expect(found).To(BeTrue(), k)
			Expect(got).To(Equal(v), k)
		}

		By("the new CRD accepts the previous release's clusters as they are; a pod template label reaches their pods in place")
		c := get(ctx, data, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		c.Spec.PodTemplate.Labels = map[string]string{"e2e.etcdpilot.io/after-upgrade": "yes"}
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed(), "spec.version %s of the previous release is still accepted", c.Spec.Version)
		Eventually(func(g Gomega) {
			for _, p := range clusterPods(ctx, data, cluster.Name) {
				g.Expect(p.Labels).To(HaveKeyWithValue("e2e.etcdpilot.io/after-upgrade", "yes"), p.Name)
			}
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		Expect(podStates(ctx, data, cluster.Name)).To(Equal(before), "no restart for a label")
		waitReady(ctx, cluster)

		By("deleting the clusters while the operator runs, then the operator")
		Expect(k8sClient.Delete(ctx, cluster)).To(Succeed())
		Expect(k8sClient.Delete(ctx, second)).To(Succeed())
		for _, c := range []*etcdv1alpha1.EtcdCluster{cluster, second} {
			Eventually(func() bool {
				return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), &etcdv1alpha1.EtcdCluster{}))
			}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
		}
	})

	It("installs with operator-sdk run bundle and upgrades with run bundle-upgrade", func(ctx SpecContext) {
		// Deleting the namespace afterwards removes all run bundle made there (catalog, its
		// pod, Subscription, CSV); the CRD stays, as it does after any OLM uninstall.
		// Not restricted: the registry pod operator-sdk run bundle starts for the bundle's
		// catalog breaks the restricted standard (it sets no allowPrivilegeEscalation, whatever
		// --security-context-config says); it is operator-sdk's pod, not one of ours.
		ns := newOLMNamespace(ctx, "e2e-sdk-", nil)
		sdk := func(args ...string) {
			cmd := exec.CommandContext(ctx, olmEnv("OPERATOR_SDK"), args...)
			cmd.Env = os.Environ()
			out, err := cmd.CombinedOutput()
			Expect(err).NotTo(HaveOccurred(), "operator-sdk %s:\n%s", strings.Join(args, " "), out)
		}
		By("run bundle " + previousCSV)
		sdk("run", "bundle", olmEnv("E2E_OLM_PREVIOUS_BUNDLE"), "-n", ns, "--timeout=4m",
			"--index-image="+olmEnv("E2E_OLM_INDEX_IMAGE"), "--decompression-image="+olmEnv("E2E_OLM_DECOMPRESSION_IMAGE"),
			"--install-mode=OwnNamespace", "--security-context-config=restricted")
		waitCSVSucceeded(ctx, ns, previousCSV)

		By("run bundle-upgrade to " + headCSV)
		sdk("run", "bundle-upgrade", olmEnv("E2E_OLM_HEAD_BUNDLE"), "-n", ns, "--timeout=4m",
			"--security-context-config=restricted")
		csv := waitCSVSucceeded(ctx, ns, headCSV)
		waitOperatorImage(ctx, ns, csv)

		By("running a cluster with the upgraded operator")
		c := createCluster(ctx, ns, "sdk", 1)
		waitReady(ctx, c)
		Expect(k8sClient.Delete(ctx, c)).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(k8sClient.Get(ctx, client.ObjectKeyFromObject(c), &etcdv1alpha1.EtcdCluster{}))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(BeTrue())
	})
})

// nestedString is the string at path in obj, or "" when there is none.
func nestedString(obj map[string]any, path ...string) string {
	s, _, _ := unstructured.NestedString(obj, path...)
	return s
}

// createCatalogSource serves the catalog image from OLM's namespace and waits until OLM
// reports its registry READY.
func createCatalogSource(ctx context.Context, image string) {
	cs := &operatorsv1alpha1.CatalogSource{
		ObjectMeta: metav1.ObjectMeta{Name: catalogName, Namespace: olmNamespace},
		Spec: operatorsv1alpha1.CatalogSourceSpec{
			SourceType:    operatorsv1alpha1.SourceTypeGrpc,
			Image:         image,
			DisplayName:   "etcdpilot (e2e)",
			Publisher:     "etcdpilot",
			GrpcPodConfig: &operatorsv1alpha1.GrpcPodConfig{SecurityContextConfig: operatorsv1alpha1.Restricted},
		},
	}
	_ = k8sClient.Delete(ctx, cs) // a leftover of an interrupted run
	Eventually(func() error { return k8sClient.Create(ctx, cs.DeepCopy()) }).
		WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
	DeferCleanup(func(ctx SpecContext) { _ = k8sClient.Delete(ctx, cs) })
	Eventually(func(g Gomega) {
		got := get(ctx, olmNamespace, catalogName, &operatorsv1alpha1.CatalogSource{})
		g.Expect(got.Status.GRPCConnectionState).NotTo(BeNil())
		g.Expect(got.Status.GRPCConnectionState.LastObservedState).To(Equal("READY"))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}

// newOLMNamespace makes a namespace with labels that is deleted after the spec. An
// EtcdCluster left in it once the operator is gone keeps its finalizer, so the cleanup
// removes finalizers first.
func newOLMNamespace(ctx context.Context, prefix string, labels map[string]string) string {
	ns, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{GenerateName: prefix, Labels: labels},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		var clusters etcdv1alpha1.EtcdClusterList
		if k8sClient.List(ctx, &clusters, client.InNamespace(ns.Name)) == nil {
			for i := range clusters.Items {
				c := &clusters.Items[i]
				_ = k8sClient.Patch(ctx, c, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`)))
			}
		}
		_ = clientset.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{})
	})
	// Cleanups run last registered first: the search sees the namespace as the spec left it,
	// and the deletion above runs even when the search fails.
	DeferCleanup(expectNoSecretsShown, ns.Name)
	return ns.Name
}

// subscribe creates an OperatorGroup targeting targets and a Subscription to the default
// channel with manual approval, starting at startingCSV (the channel head when empty).
func subscribe(ctx context.Context, ns string, targets []string, startingCSV string) *operatorsv1alpha1.Subscription {
	og := &operatorsv1.OperatorGroup{
		ObjectMeta: metav1.ObjectMeta{Name: "etcdpilot", Namespace: ns},
		Spec:       operatorsv1.OperatorGroupSpec{TargetNamespaces: targets},
	}
	Expect(k8sClient.Create(ctx, og)).To(Succeed())
	sub := &operatorsv1alpha1.Subscription{
		ObjectMeta: metav1.ObjectMeta{Name: packageName, Namespace: ns},
		Spec: &operatorsv1alpha1.SubscriptionSpec{
			CatalogSource:          catalogName,
			CatalogSourceNamespace: olmNamespace,
			Package:                packageName,
			Channel:                defaultChannel,
			InstallPlanApproval:    operatorsv1alpha1.ApprovalManual,
			StartingCSV:            startingCSV,
		},
	}
	Expect(k8sClient.Create(ctx, sub)).To(Succeed())
	return sub
}

// approveInstallPlan waits for the InstallPlan that installs csv to ask for approval, and
// approves it.
func approveInstallPlan(ctx context.Context, ns, csv string) {
	var plan *operatorsv1alpha1.InstallPlan
	Eventually(func(g Gomega) {
		var plans operatorsv1alpha1.InstallPlanList
		g.Expect(k8sClient.List(ctx, &plans, client.InNamespace(ns))).To(Succeed())
		plan = nil
		for i := range plans.Items {
			p := &plans.Items[i]
			if slices.Contains(p.Spec.ClusterServiceVersionNames, csv) {
				plan = p
			}
		}
		g.Expect(plan).NotTo(BeNil(), "an InstallPlan for %s", csv)
		g.Expect(plan.Spec.Approval).To(Equal(operatorsv1alpha1.ApprovalManual))
		g.Expect(plan.Status.Phase).To(Equal(operatorsv1alpha1.InstallPlanPhaseRequiresApproval))
	}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
	Expect(plan.Spec.Approved).To(BeFalse(), "nothing is installed before approval")
	patch := client.MergeFrom(plan.DeepCopy())
	plan.Spec.Approved = true
	Expect(k8sClient.Patch(ctx, plan, patch)).To(Succeed())
}

// waitCSVSucceeded waits for CSV name to reach phase Succeeded and returns it.
func waitCSVSucceeded(ctx context.Context, ns, name string) *operatorsv1alpha1.ClusterServiceVersion {
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	Eventually(func(g Gomega) {
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, csv)).To(Succeed())
		g.Expect(csv.Status.Phase).To(Equal(operatorsv1alpha1.CSVPhaseSucceeded), "%s: %s", csv.Status.Reason, csv.Status.Message)
	}).WithContext(ctx).WithTimeout(4 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return csv
}

// waitOperatorImage waits until the operator Deployment runs the image the CSV names and
// is available: the upgraded operator is the one running.
func waitOperatorImage(ctx context.Context, ns string, csv *operatorsv1alpha1.ClusterServiceVersion) {
	want := csv.Annotations["containerImage"]
	Expect(want).NotTo(BeEmpty())
	Eventually(func(g Gomega) {
		d := &appsv1.Deployment{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: operatorDeployment}, d)).To(Succeed())
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(want))
		g.Expect(d.Status.UpdatedReplicas).To(Equal(int32(1)))
		g.Expect(d.Status.AvailableReplicas).To(Equal(int32(1)))
		g.Expect(d.Status.Replicas).To(Equal(int32(1)), "the old operator pod is gone")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
}

// almExample returns the CSV's EtcdCluster example, checking the CSV has one example of
// each kind it owns.
func almExample(csv *operatorsv1alpha1.ClusterServiceVersion) *etcdv1alpha1.EtcdCluster {
	var raw []json.RawMessage
	Expect(json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &raw)).To(Succeed())
	var kinds []string
	var cluster *etcdv1alpha1.EtcdCluster
	for _, r := range raw {
		var meta metav1.TypeMeta
		Expect(json.Unmarshal(r, &meta)).To(Succeed())
		kinds = append(kinds, meta.Kind)
		if meta.Kind == "EtcdCluster" {
			cluster = &etcdv1alpha1.EtcdCluster{}
			Expect(json.Unmarshal(r, cluster)).To(Succeed())
		}
	}
	Expect(kinds).To(ConsistOf("EtcdCluster", "EtcdBackup", "EtcdBackupSchedule", "EtcdTenant"))
	return cluster
}

func clusterPods(ctx context.Context, ns, name string) []corev1.Pod {
	var pods corev1.PodList
	Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name})).To(Succeed())
	return pods.Items
}

// podStates names each member pod with its UID and the restarts of its containers: equal
// states mean no pod was recreated or restarted.
func podStates(ctx context.Context, ns, name string) map[string]string {
	out := map[string]string{}
	for _, p := range clusterPods(ctx, ns, name) {
		restarts := int32(0)
		for _, s := range p.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
		out[p.Name] = fmt.Sprintf("uid=%s restarts=%d ready=%t", p.UID, restarts, podReady(&p))
	}
	return out
}

// sampleAvailability checks the cluster twice a second until the returned stop is called:
// its Available condition is True and a read through cli answers. stop returns every
// failed sample.
func sampleAvailability(ctx context.Context, ns, name string, cli interface {
	Get(ctx context.Context, key string) (string, bool, error)
}) (stop func() []string) {
	var (
		mu       sync.Mutex
		failures []string
		done     = make(chan struct{})
		finished = make(chan struct{})
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		failures = append(failures, time.Now().Format(time.StampMilli)+" "+fmt.Sprintf(format, args...))
	}
	go func() {
		defer GinkgoRecover()
		defer close(finished)
		tick := time.NewTicker(500 * time.Millisecond)
		defer tick.Stop()
		samples := 0
		for {
			select {
			case <-done:
				if samples == 0 {
					fail("no sample was taken")
				}
				return
			case <-tick.C:
			}
			samples++
			c := &etcdv1alpha1.EtcdCluster{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, c); err != nil {
				fail("get: %v", err)
				continue
			}
			if !meta.IsStatusConditionTrue(c.Status.Conditions, etcdv1alpha1.ConditionAvailable) {
				fail("Available is not True: %+v", meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionAvailable))
			}
			rctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			if _, _, err := cli.Get(rctx, "/e2e/upgrade-000"); err != nil {
				fail("read: %v", err)
			}
			cancel()
		}
	}()
	return func() []string {
		close(done)
		<-finished
		mu.Lock()
		defer mu.Unlock()
		return failures
	}
}

// expectBundleDeprecated waits until the Subscription's BundleDeprecated condition says
// whether the installed bundle is one the catalog retired (with its message), or is gone.
func expectBundleDeprecated(ctx context.Context, sub *operatorsv1alpha1.Subscription, deprecated bool) {
	EventuallyWithOffset(1, func(g Gomega) {
		got := &operatorsv1alpha1.Subscription{}
		g.Expect(k8sClient.Get(ctx, client.ObjectKeyFromObject(sub), got)).To(Succeed())
		cond := got.Status.GetCondition(operatorsv1alpha1.SubscriptionBundleDeprecated)
		if deprecated {
			g.Expect(cond.Status).To(Equal(corev1.ConditionTrue), "installed %s", got.Status.InstalledCSV)
			g.Expect(cond.Message).To(ContainSubstring("etcdpilot 0.1.0 is retired"))
			return
		}
		g.Expect(cond.Status).NotTo(Equal(corev1.ConditionTrue), "installed %s: %s", got.Status.InstalledCSV, cond.Message)
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
}
