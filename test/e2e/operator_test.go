package e2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/etcdpilot/etcdpilot/internal/memlimit"
)

const (
	metricsServiceName = "etcdpilot-controller-manager-metrics-service"
	metricsReaderRole  = "etcdpilot-metrics-reader"
)

func operatorPodSelector() metav1.ListOptions {
	return metav1.ListOptions{LabelSelector: "control-plane=controller-manager,app.kubernetes.io/name=etcdpilot"}
}

var _ = Describe("the operator", func() {
	It("runs one Ready manager pod", func(ctx SpecContext) {
		Eventually(func(g Gomega) {
			pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(pods.Items).To(HaveLen(1))
			pod := pods.Items[0]
			g.Expect(pod.Status.Phase).To(Equal(corev1.PodRunning))
			g.Expect(podReady(&pod)).To(BeTrue(), "pod %s is not Ready", pod.Name)
			g.Expect(pod.Spec.SecurityContext.RunAsNonRoot).To(Equal(ptr.To(true)))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	})

	// The roles for people, as the API server's authorizer applies them: a namespace's
	// editors manage every kind of etcdpilot's, its viewers only read them.
	It("aggregates its roles for people into the built-in edit and view roles, for all four kinds", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-roles-")
		for _, role := range []string{"edit", "view"} {
			_, err := clientset.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: role},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "e2e-" + role + "-user"}},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
		}
		allowed := func(g Gomega, user, verb, resource string) bool {
			review, err := clientset.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
				Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
					Namespace: ns, Verb: verb, Group: "etcd.etcdpilot.io", Resource: resource}},
			}, metav1.CreateOptions{})
			g.Expect(err).NotTo(HaveOccurred())
			return review.Status.Allowed
		}
		Eventually(func(g Gomega) {
			for _, resource := range []string{"etcdclusters", "etcdbackups", "etcdbackupschedules", "etcdtenants"} {
				for _, verb := range []string{"create", "delete", "list"} {
					g.Expect(allowed(g, "e2e-edit-user", verb, resource)).To(BeTrue(), "an editor may %s %s", verb, resource)
					g.Expect(allowed(g, "e2e-view-user", verb, resource)).To(Equal(verb == "list"), "a viewer may %s %s: only list", verb, resource)
				}
			}
			g.Expect(allowed(g, "e2e-nobody", "list", "etcdclusters")).To(BeFalse(), "nor anyone without a role")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
	})

	// What the report of a failed spec carries (e2e_suite_test.go): a report without the
	// goroutines would leave a stuck reconcile unexplained.
	It("serves its goroutines to the suite's failure report", func(ctx SpecContext) {
		pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
		Expect(err).NotTo(HaveOccurred())
		Expect(pods.Items).NotTo(BeEmpty())
		stacks, err := operatorGoroutines(ctx, pods.Items[0].Name)
		Expect(err).NotTo(HaveOccurred())
		Expect(stacks).To(ContainSubstring("goroutine "))
		Expect(stacks).To(ContainSubstring("sigs.k8s.io/controller-runtime/pkg/internal/controller.(*Controller"), "a worker's stack")
	})

	Describe("metrics endpoint", Ordered, func() {
		var (
			endpoint string
			ns       string
			// readerToken is the metrics reader's, made by the first spec.
			readerToken string
		)

		BeforeAll(func(ctx SpecContext) {
			endpoint = metricsEndpoint(ctx)
			created, err := clientset.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{
				ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-"},
			}, metav1.CreateOptions{})
			Expect(err).NotTo(HaveOccurred())
			ns = created.Name
			DeferCleanup(func(ctx SpecContext) {
				_ = clientset.CoreV1().Namespaces().Delete(ctx, ns, metav1.DeleteOptions{})
			})
		})

		It("serves metrics to a ServiceAccount bound to the metrics-reader role", func(ctx SpecContext) {
			token := metricsReaderToken(ctx, ns)
			readerToken = token

			// RBAC changes reach the authorizer's cache within a moment; retry briefly.
			Eventually(func(g Gomega) {
				code, body := getMetrics(ctx, endpoint, token)
				g.Expect(code).To(Equal(http.StatusOK), body)
				g.Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
				g.Expect(body).To(ContainSubstring(`controller="etcdcluster"`))
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		// The soft limit the operator gives the Go runtime (internal/memlimit), as the
		// runtime itself reports it: 90 % of the manager container's memory limit.
		It("reports the Go runtime's soft memory limit at 90 % of the container's", func(ctx SpecContext) {
			pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
			Expect(err).NotTo(HaveOccurred())
			Expect(pods.Items).NotTo(BeEmpty())
			limit := pods.Items[0].Spec.Containers[0].Resources.Limits.Memory()
			Expect(limit.IsZero()).To(BeFalse(), "the manager container has a memory limit")
			Eventually(func(g Gomega) {
				code, body := getMetrics(ctx, endpoint, readerToken)
				g.Expect(code).To(Equal(http.StatusOK), body)
				g.Expect(metricSample(body, "go_gc_gomemlimit_bytes")).To(Equal(float64(memlimit.SoftLimit(limit.Value()))), "go_gc_gomemlimit_bytes")
			}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		})

		It("refuses a request without a token", func(ctx SpecContext) {
			code, body := metricsVerdict(ctx, endpoint, "")
			Expect(code).To(Equal(http.StatusUnauthorized), body)
		})

		It("refuses a ServiceAccount that is not bound to the metrics-reader role", func(ctx SpecContext) {
			token := serviceAccountToken(ctx, ns, "stranger")
			code, body := metricsVerdict(ctx, endpoint, token)
			Expect(code).To(Equal(http.StatusForbidden), body)
		})
	})
})

func podReady(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// metricsEndpoint returns host:port of a ready endpoint behind the metrics Service. The test
// connects to the pod IP on the cluster bridge rather than the virtual Service IP, so that
// nothing is ever sent to an address this machine does not own.
func metricsEndpoint(ctx context.Context) string {
	var endpoint string
	Eventually(func(g Gomega) {
		slices, err := clientset.DiscoveryV1().EndpointSlices(operatorNamespace).List(ctx, metav1.ListOptions{
			LabelSelector: discoveryv1.LabelServiceName + "=" + metricsServiceName,
		})
		g.Expect(err).NotTo(HaveOccurred())
		for _, s := range slices.Items {
			for _, p := range s.Ports {
				if p.Port == nil || ptr.Deref(p.Name, "") != "https" {
					continue
				}
				for _, e := range s.Endpoints {
					if ptr.Deref(e.Conditions.Ready, false) && len(e.Addresses) > 0 {
						endpoint = net.JoinHostPort(e.Addresses[0], strconv.Itoa(int(*p.Port)))
					}
				}
			}
		}
		g.Expect(endpoint).NotTo(BeEmpty(), "the metrics Service has no ready endpoint")
	}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
	return endpoint
}

// metricsReaderToken creates a ServiceAccount "scraper" in ns bound to the metrics-reader
// role for the spec, and returns a token for it.
func metricsReaderToken(ctx context.Context, ns string) string {
	token := serviceAccountToken(ctx, ns, "scraper")
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-metrics-reader-"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: "scraper", Namespace: ns}},
	}
	binding, err := clientset.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	DeferCleanup(func(ctx SpecContext) {
		_ = clientset.RbacV1().ClusterRoleBindings().Delete(ctx, binding.Name, metav1.DeleteOptions{})
	})
	return token
}

// serviceAccountToken creates a ServiceAccount and returns a short-lived token for it.
func serviceAccountToken(ctx context.Context, ns, name string) string {
	_, err := clientset.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	tr, err := clientset.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](600)},
	}, metav1.CreateOptions{})
	Expect(err).NotTo(HaveOccurred())
	return tr.Status.Token
}

// metricSample is the value of one series (its name and labels as the exposition writes
// them, labels sorted by name) in a /metrics body; -1 when the series is absent.
func metricSample(body, series string) float64 {
	for _, line := range strings.Split(body, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			if f, err := strconv.ParseFloat(v, 64); err == nil {
				return f
			}
		}
	}
	return -1
}

// operatorIncarnation names the operator process of the moment: its pod and the restarts of
// its container. The counters of its metrics start again from zero in a new one, and the
// crash specs and the chaos spec restart it while other specs run: a spec asserts a counter
// only when the operator that counted is still the one answering.
func operatorIncarnation(ctx context.Context) string {
	pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	var out []string
	for _, p := range pods.Items {
		out = append(out, fmt.Sprintf("%s/%d", p.Name, containerRestarts(&p)))
	}
	sort.Strings(out)
	return strings.Join(out, ",")
}

// metricsVerdict is the operator's first answer to a metrics request that is a verdict:
// asked again while nothing answers or the answer is a server error, as when the operator
// restarts or cannot reach the API server to check the token (the chaos spec does both
// while other specs run).
func metricsVerdict(ctx context.Context, endpoint, token string) (int, string) {
	var code int
	var body string
	Eventually(func() int {
		code, body = getMetrics(ctx, endpoint, token)
		return code
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2*time.Second).Should(And(BeNumerically(">", 0), BeNumerically("<", 500)), func() string { return body })
	return code, body
}

// getMetrics GETs /metrics over HTTPS (the operator's certificate is self-signed) with an
// optional bearer token and returns the status code and body; 0 and the error when nothing
// answered.
func getMetrics(ctx context.Context, endpoint, token string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://%s/metrics", endpoint), nil)
	Expect(err).NotTo(HaveOccurred())
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	httpClient := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // self-signed serving cert
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, err.Error() // no answer: callers retry
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	Expect(err).NotTo(HaveOccurred())
	return resp.StatusCode, string(body)
}
