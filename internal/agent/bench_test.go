package agent

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/artifact"
	"github.com/etcdpilot/etcdpilot/internal/artifact/s3test"
	backuppkg "github.com/etcdpilot/etcdpilot/internal/backup"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// benchSnapshotBytes is the least database size the backup benchmark fills etcd to.
const benchSnapshotBytes = 540 << 20

// BenchmarkBackup measures, on one etcd member holding at least 512 MiB, in one run:
//
//   - floor: the Go client's snapshot save to a local file, synced, which is what
//     `etcdctl snapshot save` does;
//   - for each compression, the agent's backup command to S3 (versitygw on 127.0.0.1),
//     its throughput in snapshot bytes per second of streaming (the result's
//     streamSeconds), its ratio to the floor, the process's peak heap while it ran and
//     the artifact's size relative to the snapshot;
//   - for each compression, the restore's fetch from S3 and decompression to a local file,
//     synced (the part of a restore the compression changes);
//   - the CPU time the floor and each backup cost per GiB of snapshot, all processes
//     together and each (this one, which runs the agent, etcd and the S3 server), and
//     from the total the most a backup could stream if the machine's cores did nothing
//     else and it kept them all busy (`<c>_cpu_bound_MiB/s`), with that bound's ratio to
//     the floor: below the target 0.8, the cores, not the agent's pipeline, keep the
//     backup from it.
//
// The data is JSON-like text resembling Kubernetes objects (names, labels, random UIDs and
// numbers), which compresses about as well as real etcd data. It is skipped without the
// etcd binary (make test builds it; ETCD_TEST_BINARY overrides) or VERSITYGW; make
// bench-unit gives both.
func BenchmarkBackup(b *testing.B) {
	binary := os.Getenv("ETCD_TEST_BINARY")
	if binary == "" {
		binary = etcdtest.DefaultBinary
	}
	if _, err := os.Stat(binary); err != nil {
		b.Skipf("no etcd binary (%v): make bench-unit builds it, ETCD_TEST_BINARY names another", err)
	}
	gw := s3test.Start(b, s3test.Options{}) // skips without VERSITYGW
	gw.MakeBucket(b, "bench")
	srv := etcdtest.Start(b, etcdtest.Options{})
	cli, err := clientv3.New(clientv3.Config{Endpoints: srv.ClientURLs, DialTimeout: 5 * time.Second, Logger: zap.NewNop(),
		MaxCallSendMsgSize: 2 << 20})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = cli.Close() })
	srv.WaitReady(b, func(ctx context.Context) error { _, err := cli.Get(ctx, "health"); return err })
	fillStart := time.Now()
	dbSize := fillTo(b, cli, srv.ClientURLs[0], benchSnapshotBytes)
	b.Logf("filled etcd to %d MiB in %s", dbSize>>20, time.Since(fillStart).Round(time.Second))
	store, err := artifact.NewS3(gw.Config("bench"))
	if err != nil {
		b.Fatal(err)
	}
	env := &environment{stderr: io.Discard, getenv: func(name string) string {
		return map[string]string{EnvAccessKeyID: gw.AccessKey, EnvSecretAccessKey: gw.SecretKey}[name]
	}}

	// The processes whose CPU is counted: this one (the agent, and the floor's client),
	// etcd and the S3 server.
	procs := []cpuProc{{"agent", os.Getpid()}, {"etcd", srv.Pid()}, {"s3", gw.Pid()}}
	_, cpuOK := cpuOf(procs)
	if !cpuOK {
		b.Logf("no /proc/<pid>/stat: the CPU figures are left out")
	}
	gib := func(bytes int64) float64 { return float64(bytes) / (1 << 30) }
	// reportCPU reports the CPU time from before to after per GiB of snapshot, all
	// processes together and each, and returns the total.
	reportCPU := func(prefix string, before, after []float64, bytes int64) float64 {
		var total float64
		for i, p := range procs {
			used := (after[i] - before[i]) / gib(bytes)
			b.ReportMetric(used, prefix+"_cpu_s/GiB_"+p.name)
			total += used
		}
		b.ReportMetric(total, prefix+"_cpu_s/GiB")
		return total
	}

	b.ResetTimer()
	for i := range b.N {
		cpu0, _ := cpuOf(procs)
		floor, floorBytes := snapshotSave(b, cli, filepath.Join(b.TempDir(), "floor.db"))
		cpu1, _ := cpuOf(procs)
		b.ReportMetric(floor, "floor_MiB/s")
		if cpuOK {
			reportCPU("floor", cpu0, cpu1, floorBytes)
		}
		for _, c := range backuppkg.Compressions {
			key := fmt.Sprintf("run-%d/backup%s", i, backuppkg.Suffix(c))
			var code int
			var cpu0, cpu1 []float64
			peak := peakHeap(func() {
				cpu0, _ = cpuOf(procs)
				code = run(b.Context(), []string{"backup", "--result-file", filepath.Join(b.TempDir(), "result"),
					"--endpoint", srv.ClientURLs[0], "--compression", string(c), "--store", "s3",
					"--s3-endpoint", gw.Endpoint, "--s3-bucket", "bench", "--s3-path-style", "--key", key}, env)
				cpu1, _ = cpuOf(procs)
			})
			res := readResult(b, env.resultFile)
			if code != 0 {
				b.Fatalf("backup %s failed: %+v", c, res)
			}
			mibs := float64(res.SnapshotSize) / (1 << 20) / res.StreamSeconds
			b.ReportMetric(mibs, string(c)+"_MiB/s")
			b.ReportMetric(mibs/floor, string(c)+"/floor")
			b.ReportMetric(float64(peak)/(1<<20), string(c)+"_peak_heap_MiB")
			b.ReportMetric(100*float64(res.Size)/float64(res.SnapshotSize), string(c)+"_size_%")
			if cpuOK {
				bound := float64(runtime.NumCPU()) * 1024 / reportCPU(string(c), cpu0, cpu1, res.SnapshotSize)
				b.ReportMetric(bound, string(c)+"_cpu_bound_MiB/s")
				b.ReportMetric(bound/floor, string(c)+"_cpu_bound/floor")
			}

			got, err := fetch(b.Context(), store, artifactRef{key: key, location: key, sha256: res.SHA256, compression: c},
				filepath.Join(b.TempDir(), "restored.db"))
			if err != nil {
				b.Fatalf("fetching the %s artifact: %v", c, err)
			}
			b.ReportMetric(float64(got.snapshotSize)/(1<<20)/got.seconds, string(c)+"_restore_MiB/s")
		}
	}
}

// fillTo writes values of almost 1 MiB (etcd's request limit is 1.5 MiB) from four
// writers until the member's database holds at least size bytes, and returns its size.
func fillTo(b *testing.B, cli *clientv3.Client, endpoint string, size int64) int64 {
	b.Helper()
	pool := etcdtest.ObjectText(48 << 20)
	const valueSize = 1000 << 10
	var next, dbSize atomic.Int64
	errs := make(chan error, 4)
	var wg sync.WaitGroup
	for w := range 4 {
		rng := rand.New(rand.NewPCG(uint64(w), 7))
		wg.Go(func() {
			for dbSize.Load() < size {
				n := next.Add(1)
				off := rng.IntN(len(pool) - valueSize)
				if _, err := cli.Put(b.Context(), fmt.Sprintf("/registry/bench/%08d", n), pool[off:off+valueSize]); err != nil {
					errs <- err
					return
				}
				if n%32 == 0 {
					st, err := cli.Status(b.Context(), endpoint)
					if err != nil {
						errs <- err
						return
					}
					dbSize.Store(st.DbSize)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatalf("filling etcd: %v", err)
	}
	return dbSize.Load()
}

// snapshotSave saves the member's snapshot to path as etcdctl does (stream, write, sync)
// and returns its throughput in MiB/s and its size.
func snapshotSave(b *testing.B, cli *clientv3.Client, path string) (float64, int64) {
	b.Helper()
	start := time.Now()
	rc, err := cli.Snapshot(b.Context())
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = rc.Close() }()
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	n, err := io.Copy(f, rc)
	if err == nil {
		err = f.Sync()
	}
	if err != nil {
		b.Fatalf("saving the snapshot: %v", err)
	}
	return float64(n) / (1 << 20) / time.Since(start).Seconds(), n
}

// cpuProc is a process whose CPU time a benchmark counts.
type cpuProc struct {
	name string
	pid  int
}

// cpuOf is the CPU time each of procs has used so far (cpuSeconds); ok is false when one
// cannot be read.
func cpuOf(procs []cpuProc) ([]float64, bool) {
	out := make([]float64, len(procs))
	for i, p := range procs {
		s, ok := cpuSeconds(p.pid)
		if !ok {
			return nil, false
		}
		out[i] = s
	}
	return out, true
}

// cpuSeconds is the CPU time, user and system, that process pid has used so far, read
// from /proc/<pid>/stat; ok is false without it (not Linux, or the process gone).
func cpuSeconds(pid int) (seconds float64, ok bool) {
	const userHZ = 100 // the clock ticks of /proc on Linux, whatever the kernel's HZ
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Field 2, the command, is in parentheses and may hold spaces: count from after it.
	// Fields 14 and 15 (utime, stime) are the 12th and 13th after it.
	rest := string(data)
	fields := strings.Fields(rest[strings.LastIndexByte(rest, ')')+1:])
	if len(fields) < 13 {
		return 0, false
	}
	var ticks int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return 0, false
		}
		ticks += n
	}
	return float64(ticks) / userHZ, true
}

// peakHeap runs f and returns the most heap memory in use (live and not yet collected
// objects, and free space in spans in use) while it ran, sampled every 10 ms.
func peakHeap(f func()) uint64 {
	samples := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}, {Name: "/memory/classes/heap/unused:bytes"}}
	var peak uint64
	sample := func() {
		metrics.Read(samples)
		peak = max(peak, samples[0].Value.Uint64()+samples[1].Value.Uint64())
	}
	runtime.GC() // start from what is live
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			sample()
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	})
	f()
	close(done)
	wg.Wait()
	return peak
}

// readResult reads the result the agent wrote to path.
func readResult(b *testing.B, path string) Result {
	b.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	res, ok := result.Parse(string(data))
	if !ok {
		b.Fatalf("no result in %q", data)
	}
	return res
}
