package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// backupDBBytes is the least database size the backup benchmark fills before it measures.
const backupDBBytes = 512 << 20

// BenchmarkBackup512MiBToS3 fills a 1-member TLS cluster with at least 512 MiB of
// incompressible values, then reports:
//
//   - s-floor, MiB/s-floor: `etcdctl snapshot save` to the member's own disk, run in its pod
//     (the fastest a snapshot leaves etcd on this node, with no network and no compression);
//   - for each compression c (zstd, gzip, none), one EtcdBackup to the in-cluster S3 server:
//     s-backup-c, MiB/s-backup-c from its creation to Succeeded (Job and pod start, member
//     choice, stream, compression, SHA-256, multipart upload), and backup/floor-c the ratio
//     of the two times; MiB/s-stream-c the stream alone, as the agent timed it (its
//     result's streamSeconds), without the pod's start;
//   - agent-maxrss-MiB-c: the backup pod's peak resident memory, as the agent reports it;
//   - operator-rss-before-MiB, operator-rss-peak-MiB: the operator pod's resident memory
//     (its cgroup's RSS, sampled every 100 ms) before and during the backups. The snapshot
//     never passes through the operator, so the two must stay close whatever the size.
func BenchmarkBackup512MiBToS3(b *testing.B) {
	ctx := context.Background()
	c := newClient(b)
	s3 := s3FromEnv(b)
	compressions := []etcdv1alpha1.BackupCompression{
		etcdv1alpha1.BackupCompressionZstd, etcdv1alpha1.BackupCompressionGzip, etcdv1alpha1.BackupCompressionNone,
	}
	var floor time.Duration
	backup := map[etcdv1alpha1.BackupCompression]time.Duration{}
	stream := map[etcdv1alpha1.BackupCompression]float64{}
	agentRSS := map[etcdv1alpha1.BackupCompression]float64{}
	var snapshotBytes int64
	var opBefore, opPeak float64
	for i := 0; i < b.N; i++ {
		ns := namespace(ctx, b, c, "bench-backup-")
		copyS3Secret(ctx, b, c, s3, ns)
		ec := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: ns},
			Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}}
		if err := c.Create(ctx, ec); err != nil {
			b.Fatal(err)
		}
		waitCondition(ctx, b, c, ec, etcdv1alpha1.ConditionReady, time.Now())
		fill(ctx, b, c, ns, ec.Name)

		start := time.Now()
		kubectl(b, "-n", ns, "exec", "big-0", "-c", "etcd", "--", "etcdctl", "snapshot", "save", "/var/lib/etcd/floor.db")
		floor += time.Since(start)

		rss := operatorRSS(ctx, b, c)
		before := rss()
		var peak uint64
		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				case <-time.After(100 * time.Millisecond):
					peak = max(peak, rss())
				}
			}
		})
		for _, comp := range compressions {
			took, done, res := backupOnce(ctx, b, c, s3, ns, comp)
			backup[comp] += took
			stream[comp] += res.StreamSeconds
			agentRSS[comp] += float64(res.MaxRSSBytes)
			if comp == compressions[0] {
				snapshotBytes += done.Status.Artifact.SnapshotSize
			}
		}
		close(stop)
		wg.Wait()
		opBefore += float64(before)
		opPeak += float64(max(peak, before))
		b.Logf("floor %s, operator RSS %d -> peak %d MiB", floor.Round(time.Millisecond), before>>20, max(peak, before)>>20)
	}
	n := float64(b.N)
	mib := float64(snapshotBytes) / n / (1 << 20)
	b.ReportMetric(mib, "snapshot-MiB")
	b.ReportMetric(floor.Seconds()/n, "s-floor")
	b.ReportMetric(mib/(floor.Seconds()/n), "MiB/s-floor")
	for _, comp := range compressions {
		b.ReportMetric(backup[comp].Seconds()/n, "s-backup-"+string(comp))
		b.ReportMetric(mib/(backup[comp].Seconds()/n), "MiB/s-backup-"+string(comp))
		b.ReportMetric(backup[comp].Seconds()/floor.Seconds(), "backup/floor-"+string(comp))
		b.ReportMetric(mib/(stream[comp]/n), "MiB/s-stream-"+string(comp))
		b.ReportMetric(agentRSS[comp]/n/(1<<20), "agent-maxrss-MiB-"+string(comp))
	}
	b.ReportMetric(opBefore/n/(1<<20), "operator-rss-before-MiB")
	b.ReportMetric(opPeak/n/(1<<20), "operator-rss-peak-MiB")
	b.ReportMetric(0, "ns/op")
}

// backupOnce takes one EtcdBackup of cluster "big" in ns with compression comp, and
// returns how long it took from its creation to Succeeded, the succeeded backup and the
// agent's result. The artifact goes with the backup (deletionPolicy Delete), before the
// namespace.
func backupOnce(ctx context.Context, b *testing.B, c client.Client, s3 s3Server, ns string, comp etcdv1alpha1.BackupCompression) (time.Duration, *etcdv1alpha1.EtcdBackup, result.Result) {
	bk := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Name: "big-" + string(comp), Namespace: ns},
		Spec: etcdv1alpha1.EtcdBackupSpec{ClusterName: "big", DeletionPolicy: etcdv1alpha1.BackupDeletionPolicyDelete,
			Compression: comp,
			Destination: etcdv1alpha1.BackupDestination{S3: &etcdv1alpha1.S3Destination{S3Bucket: etcdv1alpha1.S3Bucket{
				Endpoint: s3.endpoint, Bucket: s3.bucket, CredentialsSecretName: "s3", ForcePathStyle: true}}}}}
	start := time.Now()
	if err := c.Create(ctx, bk); err != nil {
		b.Fatal(err)
	}
	done := waitBackup(ctx, b, c, bk)
	took := time.Since(start)
	res := agentResult(ctx, b, c, ns, bk.Name+"-backup")
	b.Logf("%s: snapshot %d MiB, artifact %d MiB, backup %s, stream %.1f s, agent RSS %d MiB", comp,
		done.Status.Artifact.SnapshotSize>>20, done.Status.Artifact.Size>>20, took.Round(time.Millisecond), res.StreamSeconds, res.MaxRSSBytes>>20)
	if err := c.Delete(ctx, bk); err != nil {
		b.Fatal(err)
	}
	waitGone(ctx, b, c, bk)
	return took, done, res
}

type s3Server struct{ endpoint, bucket, namespace, secret string }

func s3FromEnv(b *testing.B) s3Server {
	s := s3Server{os.Getenv("BENCH_S3_ENDPOINT"), os.Getenv("BENCH_S3_BUCKET"), os.Getenv("BENCH_S3_NAMESPACE"), os.Getenv("BENCH_S3_CREDENTIALS_SECRET")}
	if s.endpoint == "" || s.bucket == "" || s.namespace == "" || s.secret == "" {
		b.Fatal("BENCH_S3_ENDPOINT, BENCH_S3_BUCKET, BENCH_S3_NAMESPACE and BENCH_S3_CREDENTIALS_SECRET must be set: run `make bench-cluster`, which starts the S3 server")
	}
	return s
}

// copyS3Secret copies the S3 server's credentials into ns as Secret "s3".
func copyS3Secret(ctx context.Context, b *testing.B, c client.Client, s3 s3Server, ns string) {
	src := &corev1.Secret{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: s3.namespace, Name: s3.secret}, src); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3", Namespace: ns}, Data: src.Data}); err != nil {
		b.Fatal(err)
	}
}

// fill writes 1 MiB random values until the member's database holds backupDBBytes.
func fill(ctx context.Context, b *testing.B, c client.Client, ns, name string) {
	cli, err := memberClient(ctx, c, ns, name)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = cli.Close() }()
	// Text shaped like Kubernetes objects, as etcd usually holds, each value a different
	// slice of it: random bytes would measure the worst case of every compression.
	pool := etcdtest.ObjectText(48 << 20)
	for i := 0; i < backupDBBytes>>20+16; i++ {
		off := (i * 7919 * 1024) % (len(pool) - 1<<20)
		wctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		err := cli.Put(wctx, fmt.Sprintf("/bench/backup/%05d", i), pool[off:off+1<<20])
		cancel()
		if err != nil {
			b.Fatalf("filling the database: %v", err)
		}
	}
}

func kubectl(b *testing.B, args ...string) {
	bin := os.Getenv("KUBECTL")
	if bin == "" {
		bin = "kubectl"
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

func waitBackup(ctx context.Context, b *testing.B, c client.Client, bk *etcdv1alpha1.EtcdBackup) *etcdv1alpha1.EtcdBackup {
	deadline := time.Now().Add(15 * time.Minute)
	for time.Now().Before(deadline) {
		got := &etcdv1alpha1.EtcdBackup{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(bk), got); err == nil {
			if cond := meta.FindStatusCondition(got.Status.Conditions, etcdv1alpha1.ConditionSucceeded); cond != nil && cond.Status != metav1.ConditionUnknown {
				if cond.Status != metav1.ConditionTrue {
					b.Fatalf("backup failed: %s: %s", cond.Reason, cond.Message)
				}
				return got
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatal("backup not finished after 15 minutes")
	return nil
}

func waitGone(ctx context.Context, b *testing.B, c client.Client, obj client.Object) {
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	b.Fatalf("%s still there after 5 minutes", obj.GetName())
}

// agentResult is the result the agent reported in its backup pod's termination message.
func agentResult(ctx context.Context, b *testing.B, c client.Client, ns, job string) result.Result {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{"batch.kubernetes.io/job-name": job}); err != nil {
		b.Fatal(err)
	}
	for _, p := range pods.Items {
		for _, s := range p.Status.ContainerStatuses {
			if t := s.State.Terminated; t != nil {
				var res result.Result
				if err := json.Unmarshal([]byte(t.Message), &res); err == nil {
					return res
				}
			}
		}
	}
	b.Fatalf("no result in the pods of job %s", job)
	return result.Result{}
}

// operatorRSS returns a function reading the operator pod's resident memory from its
// memory cgroup on this node (cgroup v1 total_rss, or v2 anon).
func operatorRSS(ctx context.Context, b *testing.B, c client.Client) func() uint64 {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.MatchingLabels{"control-plane": "controller-manager", "app.kubernetes.io/name": "etcdpilot"}); err != nil {
		b.Fatal(err)
	}
	if len(pods.Items) != 1 {
		b.Fatalf("want one operator pod, found %d", len(pods.Items))
	}
	uid := string(pods.Items[0].UID)
	var dir, key string
	for _, pattern := range []string{
		// The local cluster's node1 has its pods at the root of the hierarchy, its other nodes
		// under a root of their own.
		"/sys/fs/cgroup/memory/kubepods/pod" + uid, "/sys/fs/cgroup/memory/kubepods/*/pod" + uid,
		"/sys/fs/cgroup/memory/*/kubepods/pod" + uid, "/sys/fs/cgroup/memory/*/kubepods/*/pod" + uid,
		"/sys/fs/cgroup/kubepods/pod" + uid, "/sys/fs/cgroup/kubepods/*/pod" + uid,
		"/sys/fs/cgroup/kubepods.slice/*/*pod" + strings.ReplaceAll(uid, "-", "_") + ".slice",
	} {
		if m, _ := filepath.Glob(pattern); len(m) == 1 {
			dir = m[0]
		}
	}
	if dir == "" {
		b.Fatalf("no memory cgroup found for the operator pod %s", uid)
	}
	key = "total_rss"
	if !strings.Contains(dir, "/memory/") {
		key = "anon"
	}
	return func() uint64 {
		f, err := os.Open(filepath.Join(dir, "memory.stat"))
		if err != nil {
			return 0
		}
		defer func() { _ = f.Close() }()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if name, v, ok := strings.Cut(sc.Text(), " "); ok && name == key {
				n, _ := strconv.ParseUint(v, 10, 64)
				return n
			}
		}
		return 0
	}
}
