package e2e

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/anishathalye/porcupine"
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/chaos"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// The chaos suite (make test-chaos; the short profile also runs in every e2e run): a 3-member
// TLS cluster serves a mixed workload of clients that record every operation, while faults
// happen one after the other in a random order (internal/chaos.Plan), each with spec changes
// the operator carries out at the same time, and each followed by recovery. The verdict: the
// history is linearizable (porcupine, internal/chaos.Model), every acknowledged write of the
// append-only client is there, the cluster is Ready at its size with each member once, the
// operator logged no panic, and no member went down by the operator's doing while fewer
// than a quorum of the others were healthy.
//
// CHAOS_PROFILE=long runs the 30-minute profile; CHAOS_SEED replays a plan. A failed run
// keeps its history (history.json, history.html) under _output/chaos/.
//
// Serial, like the specs that take the operator away: its operator faults (a kill, the loss
// of its API access) hit every spec running beside it; one failed for an event the cut-off
// operator could not deliver.
var _ = Describe("chaos", Label("chaos"), Serial, func() {
	It("keeps a linearizable history and every acknowledged write through random faults and spec changes, and never takes quorum away", func(ctx SpecContext) {
		profile := chaos.Short
		if os.Getenv("CHAOS_PROFILE") == "long" {
			profile = chaos.Long
		}
		seed := uint64(time.Now().UnixNano())
		if s := os.Getenv("CHAOS_SEED"); s != "" {
			var err error
			seed, err = strconv.ParseUint(s, 10, 64)
			Expect(err).NotTo(HaveOccurred(), "CHAOS_SEED")
		}
		plan := chaos.Plan(seed, profile)
		GinkgoWriter.Printf("chaos: profile %s, seed %d (CHAOS_SEED=%d replays it), %d faults\n", profile.Name, seed, seed, len(plan))

		var ns string
		var c *etcdv1alpha1.EtcdCluster
		if profile.Name == "long" {
			ns = newTestNamespace(ctx, "e2e-chaos-")
			c = createCluster(ctx, ns, "chaos", 3, upgradePath[0])
		} else {
			ns, c = earlyCluster(ctx, "chaos") // early_test.go
		}
		c = waitReady(ctx, c)
		run := &chaosRun{ns: ns, name: c.Name, rec: chaos.NewRecorder(), start: time.Now()}
		run.client = serviceClient(ctx, ns, c.Name)

		wctx, stopWorkers := context.WithCancel(ctx)
		var workers sync.WaitGroup
		for i := range 2 {
			workers.Add(1)
			go func() {
				defer GinkgoRecover()
				defer workers.Done()
				run.kvWorker(wctx, i)
			}()
		}
		acked, unanswered := map[string]string{}, map[string]string{}
		workers.Add(1)
		go func() {
			defer GinkgoRecover()
			defer workers.Done()
			run.appender(wctx, acked, unanswered)
		}()
		sctx, stopSampler := context.WithCancel(ctx)
		sampled := make(chan []chaos.Sample, 1)
		go func() {
			defer GinkgoRecover()
			sampled <- run.sample(sctx)
		}()

		upgrades := 0
		for i, step := range plan {
			if step.Change != "" {
				run.startChange(ctx, step.Change, &upgrades)
			}
			run.inject(ctx, i, step)
		}
		time.Sleep(3 * time.Second) // writes after the last recovery
		stopWorkers()
		workers.Wait()
		stopSampler()
		samples := <-sampled

		By("the verdict")
		run.finalReads(ctx)
		ops := run.rec.Ops()
		verdict := chaos.Check(ops, 3*time.Minute)
		violations := chaos.QuorumViolations(samples, run.windows)
		minHealthy, voters := chaos.MinHealthy(samples)
		GinkgoWriter.Printf("chaos: fault timeline:\n%s", strings.Join(run.timeline, ""))
		GinkgoWriter.Printf("chaos: %d operations in %s (%s); appends: %d acknowledged, %d without an answer\n",
			len(ops), time.Since(run.start).Round(time.Second), chaos.Count(ops), len(acked), len(unanswered))
		GinkgoWriter.Printf("chaos: %d health samples, fewest healthy voters %d of %d, %d operator-made quorum violations\n",
			len(samples), minHealthy, voters, len(violations))
		GinkgoWriter.Printf("chaos: checker: %s\n", verdict)
		if verdict.Result != porcupine.Ok {
			dir := filepath.Join(repoRoot(), "_output", "chaos", fmt.Sprintf("%s-%d", profile.Name, seed))
			Expect(verdict.Save(dir, ops)).To(Succeed())
			GinkgoWriter.Printf("chaos: history kept in %s (history.json replays the check, history.html shows it)\n", dir)
		}
		// Every part of the verdict is established before the first assertion, so that a
		// failed run says all of what went wrong.
		cli := etcdV3Client(ctx, ns, c.Name)
		appended := keysUnder(ctx, cli, chaosLogPrefix)
		var lost, unexplained []string
		for k, v := range acked {
			if appended[k] != v {
				lost = append(lost, fmt.Sprintf("%s=%q (found %q)", k, v, appended[k]))
			}
		}
		for k, v := range appended {
			if _, ok := acked[k]; !ok && unanswered[k] != v {
				unexplained = append(unexplained, fmt.Sprintf("%s=%q", k, v))
			}
		}
		GinkgoWriter.Printf("chaos: appends: %d of %d acknowledged missing or changed, %d present that nobody wrote\n",
			len(lost), len(acked), len(unexplained))
		if verdict.Result != porcupine.Ok {
			GinkgoWriter.Printf("chaos: where the check stopped:\n%s", verdict.Explain(10))
		}
		// Each message carries the fault timeline: with it, the message alone (all that a CI
		// log's tail may keep) says what happened when.
		timeline := "\nfault timeline (seconds since the start):\n" + strings.Join(run.timeline, "")
		Expect(verdict.Result).To(Equal(porcupine.Ok), "the history is linearizable: %s%s", verdict, timeline)
		Expect(lost).To(BeEmpty(), "every acknowledged append is there with its value%s", timeline)
		Expect(unexplained).To(BeEmpty(), "an append that is there was acknowledged, or tried without an answer%s", timeline)
		explained := run.explain(ctx, violations, samples)
		Expect(explained).To(BeEmpty(), "no member taken down by the operator while the others were short of a quorum:\n%s%s", strings.Join(explained, "\n"), timeline)
		declared := run.quorumLossEvents(ctx)
		unconfirmed := chaos.UnconfirmedLosses(declared, samples, status.QuorumLossConfirmAfter)
		Expect(unconfirmed).To(BeEmpty(), "every QuorumLost the operator reported (%d in all) was seen by the suite's client too (a sample short of a quorum, or its member list failing) in the %s before it%s",
			len(declared), status.QuorumLossConfirmAfter, timeline)

		got := waitReadyWithin(ctx, c, chaosRecovery)
		members, err := cli.MemberList(ctx)
		Expect(err).NotTo(HaveOccurred())
		names := map[string]bool{}
		for _, m := range members.Members {
			Expect(m.IsLearner).To(BeFalse(), "member %s is still a learner", m.Name)
			Expect(m.Name).NotTo(BeEmpty(), "member %x never started", m.ID)
			Expect(names).NotTo(HaveKey(m.Name), "member %s is in the cluster twice", m.Name)
			names[m.Name] = true
		}
		Expect(members.Members).To(HaveLen(int(got.Spec.Size)), "the cluster has its size")
		Expect(run.operatorLogs(ctx)).NotTo(ContainSubstring("Observed a panic"), "the operator never panicked")
		Expect(run.operatorLogs(ctx)).NotTo(ContainSubstring("panic: "), "the operator never panicked")
	})
})

// quorumLossEvents are the times of the operator's QuorumLost events about the run's cluster.
func (r *chaosRun) quorumLossEvents(ctx context.Context) []time.Time {
	var evs eventsv1.EventList
	Expect(k8sClient.List(ctx, &evs, client.InNamespace(r.ns))).To(Succeed())
	var out []time.Time
	for _, e := range evs.Items {
		if e.Reason == etcdv1alpha1.ReasonQuorumLost && e.Regarding.Name == r.name {
			out = append(out, e.EventTime.Time)
		}
	}
	return out
}

// explain says, for each violation, when it happened and what the health samples and the
// operator's events around it saw, in seconds since the start like the fault timeline.
func (r *chaosRun) explain(ctx context.Context, violations []chaos.Violation, samples []chaos.Sample) []string {
	if len(violations) == 0 {
		return nil
	}
	var evs eventsv1.EventList
	if err := k8sClient.List(ctx, &evs, client.InNamespace(r.ns)); err != nil {
		GinkgoWriter.Printf("chaos: listing the events: %v\n", err)
	}
	sort.Slice(evs.Items, func(i, j int) bool { return evs.Items[i].EventTime.Before(&evs.Items[j].EventTime) })
	near := func(at, v time.Time) bool { d := at.Sub(v); return d >= -5*time.Second && d <= 3*time.Second }
	var out []string
	for _, v := range violations {
		out = append(out, fmt.Sprintf("%.1fs: %s went down, not by a fault, while %d other voters were healthy (quorum %d); the samples and events around it:",
			v.At.Sub(r.start).Seconds(), v.Member, v.HealthyOthers, v.Quorum))
		for _, e := range evs.Items {
			if at := e.EventTime.Time; near(at, v.At) {
				out = append(out, fmt.Sprintf("  %.1fs: event %s: %.140s", at.Sub(r.start).Seconds(), e.Reason, e.Note))
			}
		}
		for _, s := range samples {
			if !near(s.At, v.At) {
				continue
			}
			var healthy []string
			for _, m := range s.Voters {
				if s.Healthy[m] {
					healthy = append(healthy, m)
				}
			}
			out = append(out, fmt.Sprintf("  %.1fs: voters %v, healthy %v", s.At.Sub(r.start).Seconds(), s.Voters, healthy))
		}
	}
	return out
}

// upgradePath is the long profile's etcd releases: it starts at the first, and each
// Upgrade moves to the next.
var upgradePath = []string{"3.5.35", "3.6.16", "3.7.3"}

const (
	// chaosKeys is the key space of the linearizability clients: small, so that they
	// contend.
	chaosKeys = 8
	// chaosLogPrefix holds the append-only client's keys.
	chaosLogPrefix = "/chaos-log/"
	// chaosOpTimeout bounds each client operation.
	chaosOpTimeout = 2 * time.Second
	// chaosRecovery bounds the wait for Ready after a fault, with the changes under way.
	chaosRecovery = 8 * time.Minute
)

// chaosRun is the state of one run: the recorder, the fault windows and the timeline.
type chaosRun struct {
	ns, name string
	client   *clientv3.Client
	rec      *chaos.Recorder
	start    time.Time

	mu       sync.Mutex
	windows  []chaos.Window
	timeline []string
	logs     strings.Builder
	nextID   int
}

func (r *chaosRun) logf(format string, args ...any) {
	line := fmt.Sprintf("  %6.1fs  ", time.Since(r.start).Seconds()) + fmt.Sprintf(format, args...) + "\n"
	r.mu.Lock()
	r.timeline = append(r.timeline, line)
	r.mu.Unlock()
	GinkgoWriter.Print("chaos:" + line)
}

// clientID hands out porcupine client IDs: a client whose operation ended unknown takes a
// new one, since that operation stays open.
func (r *chaosRun) clientID() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.nextID++
	return r.nextID - 1
}

// serviceClient connects to the cluster through its client Service's ClusterIP, which this
// machine routes (kube-proxy) to the members that are ready, as an application in the
// cluster would. It is closed when the spec ends.
func serviceClient(ctx context.Context, ns, name string) *clientv3.Client {
	c := get(ctx, ns, name, &etcdv1alpha1.EtcdCluster{})
	service, err := fw.ServiceAddress(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	return etcdV3Client(ctx, ns, name, service)
}

// kvWorker runs puts, gets and compare-and-swaps on the small key space until ctx ends.
func (r *chaosRun) kvWorker(ctx context.Context, n int) {
	rng := rand.New(rand.NewPCG(uint64(n), uint64(time.Now().UnixNano())))
	id := r.clientID()
	last := map[string]string{}
	for seq := 0; ctx.Err() == nil; seq++ {
		key := fmt.Sprintf("/chaos/k%d", rng.IntN(chaosKeys))
		value := fmt.Sprintf("w%d-%d", n, seq)
		var in chaos.Input
		switch p := rng.IntN(10); {
		case p < 4:
			in = chaos.Input{Kind: chaos.Put, Key: key, Value: value}
		case p < 8:
			in = chaos.Input{Kind: chaos.Get, Key: key}
		default:
			in = chaos.Input{Kind: chaos.CAS, Key: key, Expect: last[key], Value: value}
		}
		out := r.do(ctx, id, in)
		switch {
		case out.Outcome == chaos.Unknown:
			id = r.clientID()
		case in.Kind == chaos.Get && out.Outcome == chaos.OK:
			last[key] = out.Value
		}
		time.Sleep(40 * time.Millisecond)
	}
}

// do runs one operation and records it.
func (r *chaosRun) do(ctx context.Context, id int, in chaos.Input) chaos.Output {
	h := r.rec.Call(id, in)
	octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chaosOpTimeout)
	defer cancel()
	var out chaos.Output
	var err error
	switch in.Kind {
	case chaos.Put:
		_, err = r.client.Put(octx, in.Key, in.Value)
	case chaos.Get:
		var resp *clientv3.GetResponse
		if resp, err = r.client.Get(octx, in.Key); err == nil && len(resp.Kvs) > 0 {
			out.Value = string(resp.Kvs[0].Value)
		}
	case chaos.CAS:
		cmp := clientv3.Compare(clientv3.Value(in.Key), "=", in.Expect)
		if in.Expect == "" {
			cmp = clientv3.Compare(clientv3.CreateRevision(in.Key), "=", 0)
		}
		var resp *clientv3.TxnResponse
		if resp, err = r.client.Txn(octx).If(cmp).Then(clientv3.OpPut(in.Key, in.Value)).Commit(); err == nil {
			out.Succeeded = resp.Succeeded
		}
	}
	switch {
	case err == nil:
		out.Outcome = chaos.OK
	case in.Kind == chaos.Get:
		out = chaos.Output{Outcome: chaos.Failed, Error: err.Error()}
	default:
		out = chaos.Output{Outcome: chaos.Unknown, Error: err.Error()}
	}
	r.rec.End(h, out)
	return out
}

// appender writes new keys only, and keeps those etcd acknowledged, and those it tried
// without an answer (which may or may not be there).
func (r *chaosRun) appender(ctx context.Context, acked, unanswered map[string]string) {
	for i := 0; ctx.Err() == nil; i++ {
		k, v := fmt.Sprintf("%s%06d", chaosLogPrefix, i), fmt.Sprintf("append-%d-%d", i, time.Now().UnixNano())
		octx, cancel := context.WithTimeout(context.WithoutCancel(ctx), chaosOpTimeout)
		if _, err := r.client.Put(octx, k, v); err == nil {
			acked[k] = v
		} else {
			unanswered[k] = v
		}
		cancel()
		time.Sleep(100 * time.Millisecond)
	}
}

// finalReads reads every key of the key space once more, into the history.
func (r *chaosRun) finalReads(ctx context.Context) {
	id := r.clientID()
	for k := range chaosKeys {
		in := chaos.Input{Kind: chaos.Get, Key: fmt.Sprintf("/chaos/k%d", k)}
		Eventually(func() chaos.Outcome { return r.do(ctx, id, in).Outcome }).WithContext(ctx).
			WithTimeout(time.Minute).WithPolling(time.Second).Should(Equal(chaos.OK), "final read of %s", in.Key)
	}
}

// sample records, every second until ctx ends, the voters of the member list and which of
// them answer with a leader, each asked directly at its pod address.
func (r *chaosRun) sample(ctx context.Context) []chaos.Sample {
	c := get(ctx, r.ns, r.name, &etcdv1alpha1.EtcdCluster{})
	service, err := fw.ServiceAddress(ctx, c)
	Expect(err).NotTo(HaveOccurred())
	cli, err := fw.ClientV3(ctx, c, service)
	Expect(err).NotTo(HaveOccurred())
	defer func() { _ = cli.Close() }()
	var out []chaos.Sample
	for ctx.Err() == nil {
		if s, ok := r.sampleOnce(ctx, cli); ok {
			out = append(out, s)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return out
}

func (r *chaosRun) sampleOnce(ctx context.Context, cli *clientv3.Client) (chaos.Sample, bool) {
	var pods corev1.PodList
	if err := k8sClient.List(ctx, &pods, client.InNamespace(r.ns), client.MatchingLabels{"etcd.etcdpilot.io/cluster": r.name}); err != nil {
		return chaos.Sample{}, false
	}
	ips := map[string]string{}
	for _, p := range pods.Items {
		if p.Status.PodIP != "" && p.DeletionTimestamp == nil {
			ips[p.Name] = p.Status.PodIP
		}
	}
	lctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	list, err := cli.MemberList(lctx)
	if err != nil {
		return chaos.Sample{}, false
	}
	// Every member is asked at once, each with its own bound, like the operator asks them:
	// a slow member list or a slow member does not make the others look down.
	s := chaos.Sample{At: time.Now(), Healthy: map[string]bool{}}
	var mu sync.Mutex
	var asked sync.WaitGroup
	for _, m := range list.Members {
		if m.IsLearner || m.Name == "" {
			continue
		}
		s.Voters = append(s.Voters, m.Name)
		ip, ok := ips[m.Name]
		if !ok {
			continue
		}
		asked.Go(func() {
			sctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			st, err := cli.Status(sctx, "https://"+ip+":2379")
			mu.Lock()
			s.Healthy[m.Name] = err == nil && st.Leader != 0
			mu.Unlock()
		})
	}
	asked.Wait()
	sort.Strings(s.Voters)
	return s, true
}

// startChange changes the spec; the operator carries the change out during the faults.
func (r *chaosRun) startChange(ctx context.Context, change chaos.Change, upgrades *int) {
	c := get(ctx, r.ns, r.name, &etcdv1alpha1.EtcdCluster{})
	patch := client.MergeFrom(c.DeepCopy())
	if c.Annotations == nil {
		c.Annotations = map[string]string{}
	}
	switch change {
	case chaos.Rollout:
		c.Spec.Etcd.SnapshotCount = 5000 + int64(len(r.timeline))
		r.logf("change: rollout (snapshotCount %d)", c.Spec.Etcd.SnapshotCount)
	case chaos.Upgrade:
		*upgrades++
		c.Spec.Version = upgradePath[*upgrades]
		r.logf("change: upgrade to %s", c.Spec.Version)
	case chaos.ScaleUp:
		c.Spec.Size = 5
		c.Annotations["test.etcdpilot.io/crash-after"] = "AddLearner"
		r.logf("change: scale to 5, the operator crashing right after its first member add")
	case chaos.ScaleDown:
		c.Spec.Size = 3
		c.Annotations["test.etcdpilot.io/crash-after"] = "RemoveMember"
		r.logf("change: scale to 3, the operator crashing right after its first member removal")
	}
	Expect(k8sClient.Patch(ctx, c, patch)).To(Succeed())
}

// inject makes one fault, takes it away after its hold, and waits for the cluster to
// recover; the window of a fault on a member runs from just before the fault until 10 s
// after the recovery.
func (r *chaosRun) inject(ctx context.Context, i int, step chaos.Step) {
	var member string
	// During a scale-down the operator removes an unhealthy member first: the member a
	// fault hits may then go for good, which is recovery too (the cluster's readiness at
	// its size is checked after every fault all the same).
	mayGo := false
	if step.Fault != chaos.KillOperator && step.Fault != chaos.CutAPIAccess {
		names := r.memberNames(ctx)
		member = names[step.Member%len(names)]
		mayGo = len(names) > int(get(ctx, r.ns, r.name, &etcdv1alpha1.EtcdCluster{}).Spec.Size)
	}
	if step.Fault == chaos.StopNode {
		member = "" // stopNode picks among the members whose node may stop
	}
	from := time.Now().Add(-time.Second)
	r.logf("fault %d (round %d): %s %s", i+1, step.Round, step.Fault, member)
	switch step.Fault {
	case chaos.DeletePod:
		uid := get(ctx, r.ns, member, &corev1.Pod{}).UID
		Expect(k8sClient.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: member, Namespace: r.ns}})).To(Succeed())
		waitPodBack(ctx, r.ns, r.name, member, mayGo, func(p *corev1.Pod) bool { return p.UID != uid })
	case chaos.KillProcess:
		pod := get(ctx, r.ns, member, &corev1.Pod{})
		kill(podProcess(pod, "etcd"))
		waitPodBack(ctx, r.ns, r.name, member, mayGo, restartedSince(pod))
	case chaos.KillOperator:
		r.keepOperatorLogs(ctx)
		pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
		Expect(err).NotTo(HaveOccurred())
		for i := range pods.Items {
			kill(podProcess(&pods.Items[i], "manager"))
			waitPodBack(ctx, operatorNamespace, "", pods.Items[i].Name, false, restartedSince(&pods.Items[i]))
		}
	case chaos.Partition:
		heal := partition(ctx, r.ns, r.name, member)
		DeferCleanup(heal)
		time.Sleep(step.Hold)
		heal()
		r.logf("fault %d: partition of %s healed", i+1, member)
	case chaos.CutAPIAccess:
		restore := cutOperatorAccess(ctx)
		DeferCleanup(restore)
		time.Sleep(step.Hold)
		restore()
		r.logf("fault %d: the operator's API access restored", i+1)
	case chaos.StopNode:
		member = r.stopNode(ctx, i, step, mayGo)
	}
	waitReadyWithin(ctx, &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: r.ns, Name: r.name}}, chaosRecovery)
	r.logf("fault %d: recovered", i+1)
	if member != "" {
		r.mu.Lock()
		r.windows = append(r.windows, chaos.Window{Member: member, From: from, To: time.Now().Add(10 * time.Second)})
		r.mu.Unlock()
	}
}

// waitPodBack waits until pod name is Ready again after a fault, as done says: a new pod, or
// a restarted container; or, when mayGo (a member of the cluster being scaled down), until the
// member is gone for good: its pod gone and the member no longer in the cluster's status
// (the operator removes the member from etcd before it deletes the pod, so a pod just
// deleted by the fault does not count).
func waitPodBack(ctx context.Context, ns, cluster, name string, mayGo bool, done func(*corev1.Pod) bool) {
	Eventually(func(g Gomega) {
		p := &corev1.Pod{}
		err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p)
		if mayGo && apierrors.IsNotFound(err) {
			c := &etcdv1alpha1.EtcdCluster{}
			g.Expect(k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: cluster}, c)).To(Succeed())
			g.Expect(c.Status.Members).NotTo(ContainElement(HaveField("Name", name)), "member %s has no pod but is still a member", name)
			return
		}
		g.Expect(err).To(Succeed())
		g.Expect(done(p)).To(BeTrue(), "pod %s/%s has not gone through the fault yet", ns, name)
		g.Expect(podReady(p)).To(BeTrue(), "pod %s/%s is not Ready", ns, name)
	}).WithContext(ctx).WithTimeout(chaosRecovery).WithPolling(time.Second).Should(Succeed())
}

// restartedSince says whether a pod of the same name has restarted since before: its
// container restarted, or the pod was replaced (by a rollout of the operator, for one).
func restartedSince(before *corev1.Pod) func(*corev1.Pod) bool {
	restarts := containerRestarts(before)
	return func(p *corev1.Pod) bool { return p.UID != before.UID || containerRestarts(p) > restarts }
}

// containerRestarts sums the restarts of pod's containers.
func containerRestarts(pod *corev1.Pod) int32 {
	var n int32
	for _, cs := range pod.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

// stopNode stops, for step.Hold, the node of a member (step.Member among those whose node
// runs neither the operator nor the volume provisioner, which recovery needs), starts it
// again, and waits for the member's pod to run again. It returns the member, or "" when no
// node can be stopped here (not the local cluster, or every member beside the operator).
func (r *chaosRun) stopNode(ctx context.Context, i int, step chaos.Step, mayGo bool) string {
	ctl := os.Getenv("NODE_CTL")
	keep, err := framework.NodesRunning(ctx, k8sClient, framework.RecoveryNeeds(operatorNamespace)...)
	Expect(err).NotTo(HaveOccurred())
	var candidates []*corev1.Pod
	for _, name := range r.memberNames(ctx) {
		if p := get(ctx, r.ns, name, &corev1.Pod{}); p.Spec.NodeName != "" && !keep[p.Spec.NodeName] {
			candidates = append(candidates, p)
		}
	}
	if ctl == "" || len(candidates) == 0 {
		r.logf("fault %d: no node to stop (NODE_CTL %q, %d members on nodes without the operator or the provisioner)", i+1, ctl, len(candidates))
		return ""
	}
	pod := candidates[step.Member%len(candidates)]
	node := pod.Spec.NodeName
	r.logf("fault %d: stopping %s, the node of %s", i+1, node, pod.Name)
	Expect(framework.NodeCtl(ctx, ctl, "node-stop", node)).To(Succeed())
	started := false
	DeferCleanup(func(ctx SpecContext) {
		if !started {
			Expect(framework.NodeCtl(ctx, ctl, "node-start", node)).To(Succeed())
		}
	})
	time.Sleep(step.Hold)
	Expect(framework.NodeCtl(ctx, ctl, "node-start", node)).To(Succeed())
	started = true
	r.logf("fault %d: %s started again", i+1, node)
	waitPodBack(ctx, r.ns, r.name, pod.Name, mayGo, restartedSince(pod))
	return pod.Name
}

// memberNames lists the cluster's member pods by name.
func (r *chaosRun) memberNames(ctx context.Context) []string {
	var names []string
	for _, p := range clusterPods(ctx, r.ns, r.name) {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	Expect(names).NotTo(BeEmpty())
	return names
}

// keepOperatorLogs adds the operator's current logs to those the verdict searches, before
// a kill loses them.
func (r *chaosRun) keepOperatorLogs(ctx context.Context) {
	logs := r.currentOperatorLogs(ctx)
	r.mu.Lock()
	r.logs.WriteString(logs)
	r.mu.Unlock()
}

// operatorLogs is every operator log kept during the run, with the current and previous
// containers' logs.
func (r *chaosRun) operatorLogs(ctx context.Context) string {
	r.keepOperatorLogs(ctx)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.logs.String()
}

func (r *chaosRun) currentOperatorLogs(ctx context.Context) string {
	pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
	Expect(err).NotTo(HaveOccurred())
	var b strings.Builder
	for _, p := range pods.Items {
		for _, previous := range []bool{false, true} {
			data, err := clientset.CoreV1().Pods(operatorNamespace).GetLogs(p.Name, &corev1.PodLogOptions{Previous: previous}).DoRaw(ctx)
			if err == nil {
				b.Write(data)
			}
		}
	}
	return b.String()
}

// podProcess finds, on this node, the host PID of the process named comm in pod's
// containers (through the pod's cgroup, which holds its UID).
func podProcess(pod *corev1.Pod, comm string) int {
	uid := string(pod.UID)
	marks := []string{"pod" + uid, "pod" + strings.ReplaceAll(uid, "-", "_")}
	var found int
	Eventually(func() int {
		entries, err := os.ReadDir("/proc")
		if err != nil {
			return 0
		}
		for _, e := range entries {
			pid, err := strconv.Atoi(e.Name())
			if err != nil {
				continue
			}
			name, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
			if err != nil || strings.TrimSpace(string(name)) != comm {
				continue
			}
			cg, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cgroup"))
			if err != nil {
				continue
			}
			for _, m := range marks {
				if strings.Contains(string(cg), m) {
					found = pid
					return pid
				}
			}
		}
		return 0
	}).WithTimeout(30*time.Second).WithPolling(time.Second).ShouldNot(BeZero(), "process %s of pod %s/%s on this node", comm, pod.Namespace, pod.Name)
	return found
}

func kill(pid int) {
	ExpectWithOffset(1, syscall.Kill(pid, syscall.SIGKILL)).To(Succeed(), "SIGKILL to %d", pid)
}

// partition drops, inside member's network namespace (entered through its pod's sandbox
// process), every packet to and from the other members' pod addresses; it returns what
// takes the rules away. Only those pod addresses are named; the rules go with the pod.
func partition(ctx context.Context, ns, name, member string) func() {
	pod := get(ctx, ns, member, &corev1.Pod{})
	sandbox := podProcess(pod, "pause")
	var peers []string
	for _, p := range clusterPods(ctx, ns, name) {
		if p.Name != member && p.Status.PodIP != "" {
			peers = append(peers, p.Status.PodIP)
		}
	}
	Expect(peers).NotTo(BeEmpty())
	rules := func(op string) [][]string {
		var out [][]string
		for _, ip := range peers {
			out = append(out,
				[]string{op, "INPUT", "-s", ip + "/32", "-j", "DROP", "-m", "comment", "--comment", "etcdpilot-chaos"},
				[]string{op, "OUTPUT", "-d", ip + "/32", "-j", "DROP", "-m", "comment", "--comment", "etcdpilot-chaos"})
		}
		return out
	}
	iptables := func(args []string) error {
		cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(sandbox), "-n", "--", "iptables", "-w"}, args...)...)
		cmd.Env = append(os.Environ(), "PATH="+os.Getenv("PATH")+":/usr/sbin:/sbin")
		out, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("iptables %v: %w: %s", args, err, out)
		}
		return nil
	}
	for _, r := range rules("-I") {
		Expect(iptables(r)).To(Succeed())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, r := range rules("-D") {
				_ = iptables(r) // gone with the pod when it was deleted meanwhile
			}
		})
	}
}

// cutOperatorAccess deletes the ClusterRoleBindings that grant the operator's
// ServiceAccount its rights, and returns what puts them back.
func cutOperatorAccess(ctx context.Context) func() {
	pods, err := clientset.CoreV1().Pods(operatorNamespace).List(ctx, operatorPodSelector())
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).NotTo(BeEmpty())
	sa := pods.Items[0].Spec.ServiceAccountName
	var bindings rbacv1.ClusterRoleBindingList
	Expect(k8sClient.List(ctx, &bindings)).To(Succeed())
	var cut []rbacv1.ClusterRoleBinding
	for _, b := range bindings.Items {
		for _, s := range b.Subjects {
			if s.Kind == rbacv1.ServiceAccountKind && s.Namespace == operatorNamespace && s.Name == sa {
				cut = append(cut, b)
				break
			}
		}
	}
	Expect(cut).NotTo(BeEmpty(), "the operator's ClusterRoleBindings")
	for i := range cut {
		Expect(k8sClient.Delete(ctx, &cut[i])).To(Succeed())
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			for _, b := range cut {
				b := rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: b.Name, Labels: b.Labels, Annotations: b.Annotations},
					RoleRef: b.RoleRef, Subjects: b.Subjects}
				Eventually(func() error { return client.IgnoreAlreadyExists(k8sClient.Create(context.Background(), &b)) }).
					WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "restoring ClusterRoleBinding %s", b.Name)
			}
		})
	}
}
