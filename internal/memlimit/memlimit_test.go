package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestSoftLimit(t *testing.T) {
	for _, tc := range []struct{ limit, want int64 }{
		{256 << 20, 256 << 20 / 100 * 90},
		{1 << 30, 1 << 30 / 100 * 90},
		{minLimit, minLimit / 100 * 90},
		{minLimit - 1, 0},
		{0, 0},
		{9223372036854771712, 0}, // cgroup v1 without a limit
	} {
		if got := SoftLimit(tc.limit); got != tc.want {
			t.Errorf("SoftLimit(%d) = %d, want %d", tc.limit, got, tc.want)
		}
	}
}

// setUp keeps the runtime's limit for after the test, clears GOMEMLIMIT, and returns a
// directory and a function that writes a memory.max there and returns its path.
func setUp(t *testing.T) (string, func(content string) string) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	dir := t.TempDir()
	t.Setenv("GOMEMLIMIT", "")
	return dir, func(content string) string {
		path := filepath.Join(dir, "memory.max")
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
}

func TestApply(t *testing.T) {
	dir, file := setUp(t)

	got, err := Apply(file("268435456\n"))
	if err != nil || got != 256<<20/100*90 || debug.SetMemoryLimit(-1) != got {
		t.Fatalf("a 256 MiB container: set %d (%v), the runtime's limit %d", got, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(math.MaxInt64)
	for name, path := range map[string]string{"no limit": file("max\n"), "no cgroup v2": filepath.Join(dir, "none")} {
		if got, err := Apply(path); err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
			t.Errorf("%s: set %d (%v), the runtime's limit %d", name, got, err, debug.SetMemoryLimit(-1))
		}
	}
	if _, err := Apply(file("lots")); err == nil {
		t.Error("an unreadable limit is not an error")
	}
}

func TestApplyCgroupV1AndGOMEMLIMIT(t *testing.T) {
	dir, file := setUp(t)
	v1 := filepath.Join(dir, "memory.limit_in_bytes")
	if err := os.WriteFile(v1, []byte("268435456\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := Apply(filepath.Join(dir, "none"), v1); err != nil || got != 256<<20/100*90 {
		t.Errorf("cgroup v1: set %d (%v)", got, err)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "100MiB")
	if got, err := Apply(file("268435456")); err != nil || got != 0 || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		t.Errorf("GOMEMLIMIT set: set %d (%v)", got, err)
	}
}
