package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/plugin"
)

// The plugin is run as a user runs it: `kubectl etcdpilot ...`, kubectl finding
// kubectl-etcdpilot on PATH (make test-e2e-deploy builds it into bin/). What it shows is
// checked against what etcd, the members' certificates and the API server say.
var _ = Describe("the kubectl plugin", longestSpec(180), func() {
	It("shows status and certificates as etcd and the members have them, runs etcdctl in a member, defragments every member, backs up, restores into a new cluster, refuses an approval nothing awaits, hibernates and wakes the cluster", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-plugin-")
		c := createCluster(ctx, ns, "cli", 3)
		createClaim(ctx, ns, "cli-backups")
		waitReady(ctx, c)

		By("status -o json: the members etcd lists, the leader etcd names, and the nodes their pods run on")
		var st plugin.Status
		Expect(json.Unmarshal([]byte(kubectlEtcdpilot(ctx, "status", "cli", "-n", ns, "-o", "json")), &st)).To(Succeed())
		cli := etcdV3Client(ctx, ns, "cli")
		members, err := cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		var names []string
		for _, m := range members.Members {
			names = append(names, m.Name)
		}
		Expect(st.Members).To(HaveLen(3))
		leaders := 0
		for _, m := range st.Members {
			Expect(names).To(ContainElement(m.Name), "a member etcd lists")
			Expect(m.Healthy).To(BeTrue())
			Expect(m.Node).NotTo(BeEmpty(), "the node of %s", m.Name)
			Expect(m.DBSize).To(BeNumerically(">", 0))
			if m.Role == "leader" {
				leaders++
				ip := netip.MustParseAddr(get(ctx, ns, m.Name, &corev1.Pod{}).Status.PodIP)
				Expect(podNetwork.Contains(ip)).To(BeTrue(), "%s is on the local cluster's pod network", ip)
				status, err := cli.Status(ctx, "https://"+net.JoinHostPort(ip.String(), "2379"))
				Expect(err).NotTo(HaveOccurred())
				Expect(status.Leader).To(Equal(status.Header.MemberId), "etcd says %s leads", m.Name)
			}
		}
		Expect(leaders).To(Equal(1))
		Expect(st.Conditions[0].Type).To(Equal(etcdv1alpha1.ConditionReady))
		Expect(st.Conditions[0].Status).To(Equal("True"))
		Expect(st.Doing).To(BeEmpty())

		By("status for a terminal: 80 columns, the members' table, nothing running")
		human := kubectlEtcdpilot(ctx, "status", "cli", "-n", ns)
		for _, line := range strings.Split(human, "\n") {
			Expect(len([]rune(line))).To(BeNumerically("<=", 80), "%q", line)
		}
		Expect(human).To(ContainSubstring("MEMBER  ROLE"))
		Expect(human).To(ContainSubstring("Now: nothing: the cluster runs as its spec asks"))

		By("certificates: the member certificate's expiry is at most that of the certificate the members serve")
		var certs []plugin.Certificate
		Expect(json.Unmarshal([]byte(kubectlEtcdpilot(ctx, "certificates", "cli", "-n", ns, "-o", "json")), &certs)).To(Succeed())
		served, err := servedCertificate(ctx, podEndpoints(ctx, ns, "cli")[0], clusterTLS(ctx, ns, "cli").Certificates)
		Expect(err).NotTo(HaveOccurred())
		whats := map[string]plugin.Certificate{}
		for _, c := range certs {
			whats[strings.Fields(c.What)[0]] = c
		}
		Expect(whats).To(HaveKey("member"))
		Expect(whats).To(HaveKey("client"))
		Expect(whats).To(HaveKey("CA"))
		Expect(whats["member"].NotAfter).NotTo(BeTemporally(">", served.NotAfter), "the plugin shows no later expiry than served")
		Expect(whats["member"].NotAfter).To(BeTemporally(">", time.Now().Add(300*24*time.Hour)))

		By("etcdctl in a member: a key put there is read from outside")
		kubectlEtcdpilot(ctx, "etcdctl", "cli", "-n", ns, "--", "put", "/plugin/key", "from-the-plugin")
		expectKeys(ctx, ns, "cli", map[string]string{"/plugin/key": "from-the-plugin"})
		Expect(kubectlEtcdpilot(ctx, "etcdctl", "cli", "-n", ns, "--", "get", "/plugin/key", "--print-value-only")).To(Equal("from-the-plugin\n"))

		By("defragment --wait: every member's file shrinks, as etcd reports it")
		makeFreePages(ctx, cli, "/plugin/garbage/", 8)
		before := fileSizes(ctx, cli)
		out := kubectlEtcdpilot(ctx, "defragment", "cli", "-n", ns, "--wait", "--timeout", "3m")
		Expect(out).To(ContainSubstring("requested the defragmentation of cli-0, cli-1, cli-2 of EtcdCluster cli at "))
		Expect(out).To(ContainSubstring("defragmented cli-2: "))
		for ep, size := range fileSizes(ctx, cli) {
			Expect(size).To(BeNumerically("<", before[ep]-(4<<20)), "the file of %s, %d bytes before", ep, before[ep])
		}

		By("backup --wait: an EtcdBackup that succeeded, then shown as the last backup")
		out = kubectlEtcdpilot(ctx, "backup", "cli", "-n", ns, "--pvc", "cli-backups", "--name", "cli-now", "--wait", "--timeout", "3m")
		Expect(out).To(ContainSubstring("succeeded: pvc://cli-backups/"))
		backup := get(ctx, ns, "cli-now", &etcdv1alpha1.EtcdBackup{})
		Expect(meta.IsStatusConditionTrue(backup.Status.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue())
		Expect(json.Unmarshal([]byte(kubectlEtcdpilot(ctx, "status", "cli", "-n", ns, "-o", "json")), &st)).To(Succeed())
		Expect(st.LastBackup).NotTo(BeNil())
		Expect(st.LastBackup.Name).To(Equal("cli-now"))
		Expect(st.LastBackup.Succeeded).To(BeTrue())

		By("restore --into --wait: a new cluster Ready with the key, a cluster of its own")
		kubectlEtcdpilot(ctx, "restore", "cli-now", "-n", ns, "--into", "cli-restored", "--size", "1", "--wait", "--timeout", "4m")
		restored := get(ctx, ns, "cli-restored", &etcdv1alpha1.EtcdCluster{})
		Expect(restored.Spec.Bootstrap.Restore.BackupName).To(Equal("cli-now"))
		expectKeys(ctx, ns, "cli-restored", map[string]string{"/plugin/key": "from-the-plugin"})
		Expect(clusterID(ctx, etcdV3Client(ctx, ns, "cli-restored"))).NotTo(Equal(clusterID(ctx, cli)))

		By("approve-recovery on a healthy cluster: refused, nothing annotated")
		_, err = runKubectlEtcdpilot(ctx, "approve-recovery", "cli", "-n", ns)
		Expect(err).To(MatchError(ContainSubstring("no recovery awaiting approval")))
		Expect(get(ctx, ns, "cli", &etcdv1alpha1.EtcdCluster{}).Annotations).NotTo(HaveKey(etcdv1alpha1.AnnotationApproveRecovery))

		hibernateAndWake(ctx, ns, cli)
	})
})

// hibernateAndWake hibernates the 3-member cluster "cli" with the plugin, a final backup to
// its claim cli-backups, right after writes etcd acknowledged, and wakes it: while it
// sleeps no member pod runs and every claim is there; awake, the same members (etcd's IDs,
// the same cluster) hold every write.
func hibernateAndWake(ctx context.Context, ns string, cli *clientv3.Client) {
	By("hibernate --pvc --wait: writes acknowledged, then a final backup and no member pod left; the claims stay")
	ids := etcdMemberIDs(ctx, Default, ns, "cli")
	id := clusterID(ctx, cli)
	written := map[string]string{"/plugin/key": "from-the-plugin"}
	var last int64
	for i := range 100 {
		k, v := fmt.Sprintf("/plugin/before-sleep/%03d", i), fmt.Sprintf("acknowledged-%d", i)
		resp, err := cli.Put(ctx, k, v)
		Expect(err).NotTo(HaveOccurred())
		written[k], last = v, resp.Header.Revision
	}
	out := kubectlEtcdpilot(ctx, "hibernate", "cli", "-n", ns, "--pvc", "cli-backups", "--path", "final", "--wait", "--timeout", "4m")
	Expect(out).To(ContainSubstring("EtcdCluster cli is hibernated: every member is stopped"))
	c := get(ctx, ns, "cli", &etcdv1alpha1.EtcdCluster{})
	final := get(ctx, ns, cluster.For(c).FinalBackup(c.Generation), &etcdv1alpha1.EtcdBackup{})
	Expect(meta.IsStatusConditionTrue(final.Status.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue())
	Expect(final.Status.Snapshot).NotTo(BeNil())
	Expect(final.Status.Snapshot.Revision).To(BeNumerically(">=", last), "the final backup holds the last write")
	var pods corev1.PodList
	Expect(k8sClient.List(ctx, &pods, client.InNamespace(ns), client.HasLabels{cluster.LabelMember}, client.MatchingLabels{cluster.LabelCluster: "cli"})).To(Succeed())
	Expect(pods.Items).To(BeEmpty(), "no member pod runs")
	var claims corev1.PersistentVolumeClaimList
	Expect(k8sClient.List(ctx, &claims, client.InNamespace(ns), client.HasLabels{cluster.LabelMember}, client.MatchingLabels{cluster.LabelCluster: "cli"})).To(Succeed())
	Expect(claims.Items).To(HaveLen(3), "every member's claim keeps its data")
	err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster.For(c).PodDisruptionBudget()}, &policyv1.PodDisruptionBudget{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "no disruption budget for members stopped on purpose: %v", err)
	human := kubectlEtcdpilot(ctx, "status", "cli", "-n", ns)
	Expect(human).To(MatchRegexp(`(?m)^Hibernated +True +Hibernated$`))
	Expect(human).To(ContainSubstring("Now: every member is stopped"))
	token, endpoint := metricsReaderToken(ctx, ns), metricsEndpoint(ctx)
	Eventually(func(g Gomega) {
		code, body := getMetrics(ctx, endpoint, token)
		g.Expect(code).To(Equal(http.StatusOK), body)
		g.Expect(body).To(ContainSubstring(fmt.Sprintf(`etcdpilot_cluster_condition{condition="Hibernated",name="cli",namespace="%s"} 1`, ns)),
			"what the availability alerts leave a hibernated cluster out by")
	}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(2 * time.Second).Should(Succeed())

	By("wake --wait: the same members of the same cluster, with every acknowledged write")
	kubectlEtcdpilot(ctx, "wake", "cli", "-n", ns, "--wait", "--timeout", "4m")
	Expect(etcdMemberIDs(ctx, Default, ns, "cli")).To(ConsistOf(ids), "the members came back with their identity")
	Expect(clusterID(ctx, etcdV3Client(ctx, ns, "cli"))).To(Equal(id))
	get(ctx, ns, cluster.For(c).PodDisruptionBudget(), &policyv1.PodDisruptionBudget{})
	expectKeys(ctx, ns, "cli", written)
}

// kubectlEtcdpilot runs `kubectl etcdpilot args...` and expects it to succeed.
func kubectlEtcdpilot(ctx context.Context, args ...string) string {
	out, err := runKubectlEtcdpilot(ctx, args...)
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return out
}

// runKubectlEtcdpilot runs `kubectl etcdpilot args...` with the plugin's directory first on
// PATH, as a user who installed it does, and returns its output; the error carries what it
// wrote to stderr.
func runKubectlEtcdpilot(ctx context.Context, args ...string) (string, error) {
	pluginBin := os.Getenv("PLUGIN")
	ExpectWithOffset(2, pluginBin).NotTo(BeEmpty(), "PLUGIN names the kubectl-etcdpilot make test-e2e-deploy built")
	cctx, cancel := context.WithTimeout(ctx, 6*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(cctx, os.Getenv("KUBECTL"), append([]string{"etcdpilot"}, args...)...)
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(pluginBin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), &pluginError{err: err, stderr: stderr.String()}
	}
	return stdout.String(), nil
}

type pluginError struct {
	err    error
	stderr string
}

func (e *pluginError) Error() string { return e.err.Error() + ": " + e.stderr }
