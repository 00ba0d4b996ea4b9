package e2e

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/status"
)

// spec.maintenance on real members: automatic defragmentation, and recovery from the
// NOSPACE alarm, each with a client writing throughout.
var _ = Describe("maintenance", longestSpec(55), func() {
	It("defragments a fragmented cluster one member at a time, the leader last, every file shrinking, no write failing", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-defrag-")
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "frag", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				// A small threshold, so that a few MiB of garbage is enough.
				Maintenance: etcdv1alpha1.MaintenanceSpec{Defragmentation: etcdv1alpha1.DefragmentationSpec{
					MinReclaimable: ptr.To(resource.MustParse("8Mi"))}}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		waitReady(ctx, c)
		cli := etcdV3Client(ctx, ns, "frag")

		// 24 MiB written and deleted, then compacted: free pages in every member's file.
		value := strings.Repeat("x", 512<<10)
		for i := range 48 {
			_, err := cli.Put(ctx, fmt.Sprintf("/garbage/%02d", i), value)
			Expect(err).NotTo(HaveOccurred())
		}
		_, err := cli.Delete(ctx, "/garbage/", clientv3.WithPrefix())
		Expect(err).NotTo(HaveOccurred())

		w := startWriter(ctx, ns, "frag")
		resp, err := cli.Get(ctx, "/garbage/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		Expect(err).NotTo(HaveOccurred())
		_, err = cli.Compact(ctx, resp.Header.Revision, clientv3.WithCompactPhysical())
		Expect(err).NotTo(HaveOccurred())
		before := fileSizes(ctx, cli)

		var got *etcdv1alpha1.EtcdCluster
		Eventually(func(g Gomega) {
			got = get(ctx, ns, "frag", &etcdv1alpha1.EtcdCluster{})
			for _, m := range got.Status.Members {
				g.Expect(m.LastDefragmentation).NotTo(BeNil(), "member %s not defragmented yet", m.Name)
				g.Expect(m.LastDefragmentation.SizeAfter).To(BeNumerically("<", m.LastDefragmentation.SizeBefore-(8<<20)), "member %s", m.Name)
			}
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(time.Second).Should(Succeed())
		written, failed := w.stop()
		Expect(failed).To(BeZero(), "writes failed while members were defragmented")
		// What the status says, seen by etcd itself: every member's file is smaller by more
		// than the garbage threshold.
		after := fileSizes(ctx, cli)
		Expect(after).To(HaveLen(3))
		for ep, size := range after {
			Expect(size).To(BeNumerically("<", before[ep]-(8<<20)), "member %s's file, as it reports it: %d bytes before, %d after", ep, before[ep], size)
		}

		// The leader went last: its event is the latest (events carry microseconds, the
		// status only seconds). Which member was the leader is what its event says, as the
		// operator observed it before defragmenting it: the defragmentation of the leader
		// may well move leadership, so the status read now may name another.
		var order, leaders []string
		Eventually(func(g Gomega) {
			order, leaders = defragmentationOrder(ctx, g, ns)
			g.Expect(order).To(HaveLen(3))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(leaders).To(Equal([]string{order[2]}), "defragmented in the order %v, the leaders at the time %v", order, leaders)
		expectKeys(ctx, ns, "frag", written)
	})

	It("gets a cluster out of the NOSPACE alarm without a human, losing no key and keeping the history it is configured to keep", func(ctx SpecContext) {
		ns := newTestNamespace(ctx, "e2e-nospace-")
		// The last 10 revisions, 10 values of 256 KiB, fit well under the quota: the recovery
		// keeps them, and watchers of this history need not relist.
		const history = 10
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "full", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 3, DeletionPolicy: etcdv1alpha1.DeletionPolicyDelete,
				Etcd: etcdv1alpha1.EtcdOptions{QuotaBackendBytes: ptr.To(resource.MustParse("16Mi")),
					AutoCompactionMode: etcdv1alpha1.AutoCompactionRevision, AutoCompactionRetention: strconv.Itoa(history)}}}
		Expect(k8sClient.Create(ctx, c)).To(Succeed())
		waitReady(ctx, c)
		cli := etcdV3Client(ctx, ns, "full")

		keep := map[string]string{}
		for i := range 20 {
			k, v := fmt.Sprintf("/keep/%02d", i), fmt.Sprintf("value %d", i)
			_, err := cli.Put(ctx, k, v)
			Expect(err).NotTo(HaveOccurred())
			keep[k] = v
		}
		// One key rewritten until the quota is reached: the history, not the data, fills it.
		// On the way, at 67 % of the quota (the autoscaler's and the pressure
		// defragmentation's 75 % not reached), the writes pause until etcd's own alert on the
		// quota is seen: the cluster's rule group reaches Prometheus a minute or more after
		// the cluster is made.
		value := strings.Repeat("y", 256<<10)
		lowSpaceSeen := false
		lowSpace := func() {
			if lowSpaceSeen || largestDB(ctx, cli) < (16<<20)*67/100 {
				return
			}
			GinkgoWriter.Printf("database sizes at 67 %% of the quota: %s\n", dbSizes(ctx, cli))
			Eventually(func(g Gomega) {
				g.Expect(promAlertStates(ctx, g, "etcdDatabaseQuotaLowSpace", fmt.Sprintf(`namespace=%q, etcd_cluster="full"`, ns))).
					NotTo(BeEmpty(), "etcd's alert on a database past 65 %% of its quota")
			}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
			lowSpaceSeen = true
		}
		// The write that crosses the quota is applied and still answered with NOSPACE
		// (etcd checks the quota again after applying it), so its outcome is unknown to the
		// client: the key holds either it or the last acknowledged value.
		last, unknown := "", ""
		var lastRevision int64
		var err error
		for i := 0; i < 200; i++ {
			lowSpace()
			v := fmt.Sprintf("%04d%s", i, value)
			var put *clientv3.PutResponse
			if put, err = cli.Put(ctx, "/churn", v); err != nil {
				unknown = v
				break
			}
			last, lastRevision = v, put.Header.Revision
		}
		Expect(errors.Is(err, rpctypes.ErrNoSpace) || (err != nil && strings.Contains(err.Error(), "database space exceeded"))).To(BeTrue(),
			"the writes end with NOSPACE: %v", err)
		Expect(lowSpaceSeen).To(BeTrue(), "the writes paused at 67 %% of the quota for etcd's alert")

		Eventually(func(g Gomega) {
			degraded := meta.FindStatusCondition(get(ctx, ns, "full", &etcdv1alpha1.EtcdCluster{}).Status.Conditions, etcdv1alpha1.ConditionDegraded)
			g.Expect(degraded).NotTo(BeNil())
			g.Expect(eventCount(ctx, g, ns, etcdv1alpha1.ReasonNoSpace)).To(BeNumerically(">=", 1))
		}).WithContext(ctx).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed())

		// Writes work again, with no one but the operator acting.
		Eventually(func() error {
			_, err := cli.Put(ctx, "/after", "writes work again")
			return err
		}).WithContext(ctx).WithTimeout(3 * time.Minute).WithPolling(2 * time.Second).Should(Succeed())
		Expect(keysUnder(ctx, cli, "/keep/")).To(Equal(keep), "every key is intact")
		churn := keysUnder(ctx, cli, "/churn")
		Expect(churn).To(HaveKey("/churn"))
		Expect(churn["/churn"] == last || churn["/churn"] == unknown).To(BeTrue(),
			"the key holds its last acknowledged value (%.4s) or the one refused with NOSPACE (%.4s), not %.4s", last, unknown, churn["/churn"])
		got := waitReady(ctx, c)
		for _, m := range got.Status.Members {
			Expect(m.Alarms).To(BeEmpty(), "member %s", m.Name)
		}
		// The refused write may have been applied: the history kept ends one revision later.
		kept, err := cli.Get(ctx, "/churn", clientv3.WithRev(lastRevision-history/2))
		Expect(err).NotTo(HaveOccurred(), "a revision within the configured history is still readable")
		Expect(kept.Kvs).To(HaveLen(1))
		_, err = cli.Get(ctx, "/churn", clientv3.WithRev(lastRevision-2*history))
		Expect(err).To(MatchError(rpctypes.ErrCompacted), "revisions before the configured history are compacted")
		Eventually(func(g Gomega) {
			g.Expect(eventCount(ctx, g, ns, "NoSpaceDisarmed")).To(Equal(1))
			g.Expect(eventCount(ctx, g, ns, "NoSpaceRecovered")).To(Equal(1))
		}).WithContext(ctx).WithTimeout(30 * time.Second).Should(Succeed())
	})
})

// defragmentationOrder names the members of the MemberDefragmented events of ns, oldest
// first, and those whose event says they were the leader at the time.
func defragmentationOrder(ctx context.Context, g Gomega, ns string) (order, leaders []string) {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	var defrags []eventsv1.Event
	for _, e := range evs.Items {
		if e.Reason == "MemberDefragmented" {
			defrags = append(defrags, e)
		}
	}
	sort.Slice(defrags, func(i, j int) bool { return defrags[i].EventTime.Before(&defrags[j].EventTime) })
	for _, e := range defrags {
		// "Defragmented member <name>: ...[; it was the leader]"
		member := strings.TrimSuffix(strings.Fields(e.Note)[2], ":")
		order = append(order, member)
		if strings.HasSuffix(e.Note, status.DefragmentedLeaderNote) {
			leaders = append(leaders, member)
		}
	}
	return order, leaders
}

// eventCount is how many events of the namespace have reason.
func eventCount(ctx context.Context, g Gomega, ns, reason string) int {
	var evs eventsv1.EventList
	g.Expect(k8sClient.List(ctx, &evs, client.InNamespace(ns))).To(Succeed())
	n := 0
	for _, e := range evs.Items {
		if e.Reason == reason {
			n++
		}
	}
	return n
}

// fileSizes is each member's database file size as the member reports it (etcd's Status on
// its own endpoint), by endpoint.
func fileSizes(ctx context.Context, cli *clientv3.Client) map[string]int64 {
	out := map[string]int64{}
	for _, ep := range cli.Endpoints() {
		sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		st, err := cli.Status(sctx, ep)
		cancel()
		ExpectWithOffset(1, err).NotTo(HaveOccurred(), "status of %s", ep)
		out[ep] = st.DbSize
	}
	return out
}

// makeFreePages writes mib MiB under prefix, in values of 512 KiB, deletes them and compacts
// the history to then: free pages in every member's file, for a defragmentation to give
// back. Each call has a minute.
func makeFreePages(ctx context.Context, cli *clientv3.Client, prefix string, mib int) {
	wctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	value := strings.Repeat("x", 512<<10)
	for i := range 2 * mib {
		_, err := cli.Put(wctx, fmt.Sprintf("%s%03d", prefix, i), value)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
	}
	resp, err := cli.Delete(wctx, prefix, clientv3.WithPrefix())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	_, err = cli.Compact(wctx, resp.Header.Revision, clientv3.WithCompactPhysical())
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
}
