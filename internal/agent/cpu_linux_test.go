package agent

import (
	"os"
	"syscall"
	"testing"
	"time"
)

// TestCPUSeconds: the CPU figures of BenchmarkBackup count what the kernel charged a
// process, and say when they cannot.
func TestCPUSeconds(t *testing.T) {
	rusage := func() float64 {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	before, ok := cpuSeconds(os.Getpid())
	if !ok {
		t.Fatal("no CPU time for this process")
	}
	ruBefore := rusage()
	for deadline := time.Now().Add(300 * time.Millisecond); time.Now().Before(deadline); {
		// burn CPU, as much as the machine gives
	}
	ruUsed := rusage() - ruBefore
	after, _ := cpuSeconds(os.Getpid())
	used := after - before
	// /proc counts in ticks of 10 ms; getrusage in microseconds.
	if ruUsed < 0.05 || used < ruUsed-0.03 || used > ruUsed+0.03 {
		t.Errorf("/proc counted %.3f s of CPU where getrusage counted %.3f s", used, ruUsed)
	}
	if _, ok := cpuSeconds(1 << 30); ok {
		t.Error("a process that does not exist is counted")
	}
}
