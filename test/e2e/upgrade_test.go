package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

var _ = Describe("etcd version upgrades", longestSpec(150), func() {
	It("upgrade a 3-member TLS cluster 3.5 -> 3.6 -> 3.7 under writes, one member at a time, losing no acknowledged write; a skip and a downgrade are refused", func(ctx SpecContext) {
		store := newS3Store(ctx)
		ns := newBackupNamespace(ctx, "e2e-upgrade-", store)
		cluster := createCluster(ctx, ns, "up", 3, "3.5.35")
		before := waitReady(ctx, cluster)

		By("refusing a skipped minor with a message saying why")
		expectVersionRefused(ctx, cluster, "3.7.3", "spec.version cannot change from 3.5.35 to 3.7.3 while members run 3.5.35: etcd is upgraded one minor release at a time")

		// A member starting a new cluster has nothing to check; it says the checks are on.
		expectMemberLog(ctx, ns, cluster.Name+"-0", `"initial-corrupt-check":true`, "3.5.35 runs with the corruption checks on")
		w := startWriter(ctx, ns, cluster.Name)
		for _, target := range []string{"3.6.16", "3.7.3"} {
			By("upgrading to " + target)
			podsBefore := podUIDs(ctx, ns, cluster.Name)
			if target == "3.7.3" {
				By("the snapshot before this upgrade goes to S3, as an EtcdBackup (spec.upgradeBackupDestination)")
				setUpgradeBackupDestination(ctx, cluster, etcdv1alpha1.BackupDestination{S3: store.destination("e2e-upgrade", s3CredentialsSecret)})
			}
			setVersion(ctx, cluster, target)
			var progress []string
			// What each member answers, asked directly, at the first poll that finds
			// status.currentVersion at target: what `kubectl wait` on it would then rely on.
			var answeredWhenDone map[string]string
			Eventually(func(g Gomega) {
				c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
				if c.Status.CurrentVersion == target && answeredWhenDone == nil {
					answeredWhenDone = memberVersions(ctx, ns, cluster.Name)
				}
				if p := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionProgressing); p != nil && p.Reason == etcdv1alpha1.ReasonUpgrading {
					if len(progress) == 0 || progress[len(progress)-1] != p.Message {
						progress = append(progress, p.Message)
					}
				}
				g.Expect(c.Status.Upgrade).NotTo(BeNil())
				g.Expect(c.Status.Upgrade.ToVersion).To(Equal(target))
				g.Expect(c.Status.Upgrade.CompletedAt).NotTo(BeNil(), "upgrade completed")
				for _, m := range c.Status.Members {
					g.Expect(m.Version).To(Equal(target), m.Name)
				}
			}).WithContext(ctx).WithTimeout(6 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
			Expect(answeredWhenDone).To(HaveLen(3))
			for member, v := range answeredWhenDone {
				Expect(v).To(Equal(target), "when status.currentVersion first said %s, member %s answered %q", target, member, v)
			}
			after := waitReady(ctx, cluster)
			Expect(after.Status.CurrentVersion).To(Equal(target))
			Expect(memberIDs(after)).To(Equal(memberIDs(before)), "the same members, with their data: no membership change")
			podsAfter := podUIDs(ctx, ns, cluster.Name)
			for name, uid := range podsBefore {
				Expect(podsAfter[name]).NotTo(Equal(uid), "member %s was restarted at %s", name, target)
				Expect(get(ctx, ns, name, &corev1.Pod{}).Labels).To(HaveKeyWithValue("etcd.etcdpilot.io/version", target))
			}
			Expect(progress).To(ContainElement(ContainSubstring("members at "+target)), "Progressing/Upgrading said how far it got")
			expectMemberLog(ctx, ns, cluster.Name+"-1", "initial corruption checking passed",
				"restarted with its data at "+target+", the member checked it against its peers before serving")
			if target == "3.7.3" {
				Expect(after.Status.Upgrade.RaftSnapshotsForcedAt).NotTo(BeNil(), "3.7 cannot replay the entries 3.5 wrote: every member took a raft snapshot first")
			}
			snap := after.Status.Upgrade.Snapshot
			Expect(snap).NotTo(BeNil(), "a snapshot was saved before the first restart")
			if target == "3.7.3" {
				Expect(snap.Backup).To(Equal("up-pre-upgrade-3-7-3"))
				b := get(ctx, ns, snap.Backup, &etcdv1alpha1.EtcdBackup{})
				Expect(meta.IsStatusConditionTrue(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)).To(BeTrue(), "the backup succeeded")
				Expect(b.Status.Snapshot.EtcdVersion).To(HavePrefix("3.6."), "taken before any member ran 3.7")
				Expect(b.Status.Snapshot.Revision).To(BeNumerically(">", 1))
				Expect(store.list(ctx, b.Status.Artifact.Key)).To(HaveKeyWithValue(b.Status.Artifact.Key, b.Status.Artifact.Size), "the artifact is in S3")
			} else {
				out, err := exec.CommandContext(ctx, os.Getenv("KUBECTL"), "-n", ns, "exec", snap.Member, "-c", "etcd", "--",
					"/usr/local/bin/etcdutl", "snapshot", "status", snap.Path, "-w", "json").Output()
				Expect(err).NotTo(HaveOccurred(), "etcdutl snapshot status %s on %s", snap.Path, snap.Member)
				Expect(string(out)).To(MatchRegexp(`"revision":[1-9]`), "a valid snapshot with data: %s", out)
			}
			events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			Expect(err).NotTo(HaveOccurred())
			Expect(events.Items).To(ContainElements(
				HaveField("Note", ContainSubstring("to "+target+", one member at a time")),
				HaveField("Note", "Every member runs etcd "+target)))
		}
		acked, failed := w.stop()
		Expect(failed).To(BeZero(), "every write was acknowledged within %s: the cluster kept taking writes through the upgrades", writeWindow)
		Expect(len(acked)).To(BeNumerically(">", 100), "the writer kept writing during the upgrades")
		expectKeys(ctx, ns, cluster.Name, acked)

		By("refusing a downgrade")
		expectVersionRefused(ctx, cluster, "3.6.16", "spec.version cannot change from 3.7.3 to 3.6.16 while members run 3.7.3")
	})

	It("rolls a member back when the new version does not come up, stops the upgrade, and retries when asked", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-rollback-")
		cluster := &etcdv1alpha1.EtcdCluster{
			ObjectMeta: metav1.ObjectMeta{Name: "rb", Namespace: ns,
				Annotations: map[string]string{"test.etcdpilot.io/broken-image-version": "3.7.3"}},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, Version: "3.6.16", DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				MemberUpgradeTimeout: &metav1.Duration{Duration: 30 * time.Second}},
		}
		Expect(k8sClient.Create(ctx, cluster)).To(Succeed())
		before := waitReady(ctx, cluster)

		By("upgrading to 3.7.3, whose image is broken for this cluster")
		setVersion(ctx, cluster, "3.7.3")
		var rolled *etcdv1alpha1.EtcdCluster
		Eventually(func(g Gomega) {
			rolled = get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(rolled.Status.Upgrade).NotTo(BeNil())
			g.Expect(rolled.Status.Upgrade.RolledBack).NotTo(BeNil())
			degraded := meta.FindStatusCondition(rolled.Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(degraded.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeRolledBack))
			g.Expect(degraded.Message).To(ContainSubstring("did not become healthy at 3.7.3 within 30s"))
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		failed := rolled.Status.Upgrade.RolledBack.Member

		By("the failed member runs 3.6.16 again, healthy, and nothing else is upgraded")
		Eventually(func(g Gomega) {
			c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(c.Status.ReadyMembers).To(Equal(int32(3)))
			for _, m := range c.Status.Members {
				g.Expect(m.Version).To(Equal("3.6.16"), m.Name)
				g.Expect(m.Healthy).To(BeTrue(), m.Name)
			}
			pod := get(ctx, ns, failed, &corev1.Pod{})
			g.Expect(pod.Labels).To(HaveKeyWithValue("etcd.etcdpilot.io/version", "3.6.16"))
		}).WithContext(ctx).WithTimeout(2 * time.Minute).WithPolling(time.Second).Should(Succeed())
		stable := podUIDs(ctx, ns, cluster.Name)
		Consistently(func() map[string]string { return podUIDs(ctx, ns, cluster.Name) }).
			WithContext(ctx).WithTimeout(15*time.Second).WithPolling(time.Second).Should(Equal(stable), "the upgrade stopped")
		after := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		Expect(memberIDs(after)).To(Equal(memberIDs(before)))
		events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(events.Items).To(ContainElement(SatisfyAll(HaveField("Reason", "UpgradeRolledBack"), HaveField("Type", corev1.EventTypeWarning))))

		By("retrying: the image is fixed, spec.version goes back to status.currentVersion, then forward again")
		c := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
		patch := client.MergeFrom(c.DeepCopy())
		delete(c.Annotations, "test.etcdpilot.io/broken-image-version")
		c.Spec.Version = "3.6.16"
		Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
		Eventually(func(g Gomega) {
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.Upgrade).To(BeNil(), "the rolled-back upgrade is cleared")
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())
		waitReady(ctx, cluster)
		setVersion(ctx, cluster, "3.7.3")
		Eventually(func(g Gomega) {
			got := get(ctx, ns, cluster.Name, &etcdv1alpha1.EtcdCluster{})
			g.Expect(got.Status.Upgrade).NotTo(BeNil())
			g.Expect(got.Status.Upgrade.CompletedAt).NotTo(BeNil())
			g.Expect(got.Status.CurrentVersion).To(Equal("3.7.3"))
		}).WithContext(ctx).WithTimeout(5 * time.Minute).WithPolling(time.Second).Should(Succeed())
		waitReady(ctx, cluster)
	})
})

// setVersion sets spec.version, retrying on conflicts with the operator's writes.
func setVersion(ctx context.Context, c *etcdv1alpha1.EtcdCluster, version string) {
	EventuallyWithOffset(1, func() error {
		got := get(ctx, c.Namespace, c.Name, &etcdv1alpha1.EtcdCluster{})
		got.Spec.Version = version
		return k8sClient.Update(ctx, got)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}

func expectVersionRefused(ctx context.Context, c *etcdv1alpha1.EtcdCluster, version, message string) {
	got := get(ctx, c.Namespace, c.Name, &etcdv1alpha1.EtcdCluster{})
	got.Spec.Version = version
	err := k8sClient.Update(ctx, got)
	ExpectWithOffset(1, apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
	ExpectWithOffset(1, err.Error()).To(ContainSubstring(message))
}

func podUIDs(ctx context.Context, ns, name string) map[string]string {
	var pods corev1.PodList
	ExpectWithOffset(1, k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": name})).To(Succeed())
	out := map[string]string{}
	for _, p := range pods.Items {
		out[p.Name] = string(p.UID)
	}
	return out
}

// expectMemberLog checks that the log of the member's etcd has text: the corruption-check
// flags of its release took effect.
func expectMemberLog(ctx context.Context, ns, pod, text, why string) {
	out, err := exec.CommandContext(ctx, os.Getenv("KUBECTL"), "-n", ns, "logs", pod, "-c", "etcd").Output()
	ExpectWithOffset(1, err).NotTo(HaveOccurred(), "kubectl logs %s", pod)
	ExpectWithOffset(1, strings.Contains(string(out), text)).To(BeTrue(), "%s: %s (no %q in its log)", pod, why, text)
}

// reloadingTLS is a client's TLS configuration that follows the cluster's client Secret
// when reloaded (framework.ReloadingTLS), as a client watching its mounted Secret does.
func reloadingTLS(ctx context.Context, ns, name string) *framework.ReloadingTLS {
	t, err := fw.ReloadingTLS(ctx, get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{}))
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	return t
}

// writeWindow is how long the writer keeps trying one write, as a client with retries
// would: longer than a leadership transfer (etcd drops proposals while one runs) or an
// election, shorter than a cluster without quorum takes to come back. A write that etcd
// has not acknowledged in that window counts as failed.
const writeWindow = 8 * time.Second

// writer writes unique keys, 10 a second, through every member pod that has an address
// (refreshed as pods are restarted), and records what etcd acknowledged. A write that
// fails is tried again (same key, same value) until acknowledged or writeWindow has
// passed. It stops by itself after 15 minutes.
type writer struct {
	cancel  context.CancelFunc
	done    chan struct{}
	mu      sync.Mutex
	acked   map[string]string
	retries int // attempts that failed and were tried again
	failed  int // writes not acknowledged within writeWindow
}

// write is one key the writer puts, and when it first tried.
type write struct {
	key, value string
	since      time.Time
}

func startWriter(ctx context.Context, ns, name string) *writer {
	// The pod addresses change as members restart, and the client Secret during a CA
	// rotation: both are read again as they would by a client. Nothing in the goroutine may
	// assert: it outlives the spec's checks until stop.
	cfg := reloadingTLS(ctx, ns, name)
	wctx, cancel := context.WithTimeout(ctx, 15*time.Minute)
	w := &writer{cancel: cancel, done: make(chan struct{}), acked: map[string]string{}}
	go func() {
		defer GinkgoRecover()
		defer close(w.done)
		var cli etcd.Client
		var current string
		var pending *write // not acknowledged yet: tried again, as a client would
		tick := time.NewTicker(100 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-wctx.Done():
				if cli != nil {
					_ = cli.Close()
				}
				return
			case <-tick.C:
			}
			if i%10 == 0 {
				_ = cfg.Reload(wctx)
			}
			endpoints := podEndpoints(wctx, ns, name)
			if len(endpoints) == 0 {
				continue
			}
			if key := strings.Join(endpoints, ","); key != current || cli == nil {
				if cli != nil {
					_ = cli.Close()
				}
				for j := range endpoints {
					endpoints[j] = "https://" + endpoints[j]
				}
				var err error
				if cli, err = etcd.New(etcd.Config{Endpoints: endpoints, TLS: cfg.Config, DialTimeout: 2 * time.Second}); err != nil {
					cli = nil
					continue
				}
				current = key
			}
			pending = w.try(wctx, cli, pending, i)
		}
	}()
	// The change under test starts only once writes flow: a spec that checks what a change
	// did to the data (a snapshot's revision, every acknowledged write) needs data.
	EventuallyWithOffset(1, w.count).WithContext(ctx).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).
		Should(BeNumerically(">=", 3), "the writer's first writes are acknowledged")
	return w
}

// memberVersions asks each member pod of a cluster (not its backup Jobs' pods), on its own
// address, for its status, and
// returns the etcd version each answered, by pod name ("" for a member that did not answer
// within 2 s or has no address yet). It asserts nothing.
func memberVersions(ctx context.Context, ns, name string) map[string]string {
	cfg := reloadingTLS(ctx, ns, name)
	var pods corev1.PodList
	out := map[string]string{}
	if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"app.kubernetes.io/name": "etcd", "etcd.etcdpilot.io/cluster": name}); err != nil {
		return out
	}
	for _, p := range pods.Items {
		out[p.Name] = ""
		if p.Status.PodIP == "" {
			continue
		}
		endpoint := "https://" + net.JoinHostPort(p.Status.PodIP, "2379")
		cli, err := etcd.New(etcd.Config{Endpoints: []string{endpoint}, TLS: cfg.Config, DialTimeout: 2 * time.Second})
		if err != nil {
			continue
		}
		sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		if st, err := cli.Status(sctx, endpoint); err == nil {
			out[p.Name] = st.Version
		}
		cancel()
		_ = cli.Close()
	}
	return out
}

// try puts the pending write, or a new one (number i) when none is pending, and records
// the outcome. It returns the write still pending: nil once acknowledged, or given up
// because writeWindow has passed.
func (w *writer) try(ctx context.Context, cli etcd.Client, pending *write, i int) *write {
	if pending == nil {
		pending = &write{key: fmt.Sprintf("/e2e/upgrade/%05d", i), value: fmt.Sprintf("value-%d", i), since: time.Now()}
	}
	pctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	err := cli.Put(pctx, pending.key, pending.value)
	cancel()
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case err == nil:
		w.acked[pending.key] = pending.value
		return nil
	case ctx.Err() != nil: // stopping
		return pending
	case time.Since(pending.since) < writeWindow:
		w.retries++
		return pending
	default:
		w.failed++
		return nil
	}
}

// count is how many writes etcd has acknowledged so far.
func (w *writer) count() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.acked)
}

// stop stops the writer, prints its figures and returns the acknowledged writes and the
// writes that were not acknowledged within writeWindow.
func (w *writer) stop() (map[string]string, int) {
	w.cancel()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	GinkgoWriter.Printf("writer: %d acknowledged writes, %d attempts tried again, %d writes not acknowledged within %s\n",
		len(w.acked), w.retries, w.failed, writeWindow)
	return w.acked, w.failed
}

func setUpgradeBackupDestination(ctx context.Context, c *etcdv1alpha1.EtcdCluster, dest etcdv1alpha1.BackupDestination) {
	EventuallyWithOffset(1, func() error {
		got := get(ctx, c.Namespace, c.Name, &etcdv1alpha1.EtcdCluster{})
		got.Spec.UpgradeBackupDestination = &dest
		return k8sClient.Update(ctx, got)
	}).WithContext(ctx).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
}
