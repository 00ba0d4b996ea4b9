// Package memlimit gives the Go runtime a soft memory limit under the container's own, so
// that the garbage collector works harder as the operator nears its limit instead of
// letting the heap grow past it and the kernel end the process.
package memlimit

import (
	"errors"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
)

// CgroupMemoryMax is where a container sees its own memory limit under cgroup v2: a number
// of bytes, or "max" without a limit. CgroupV1MemoryLimit is where it sees it under cgroup
// v1: a number of bytes, a huge one without a limit.
const (
	CgroupMemoryMax     = "/sys/fs/cgroup/memory.max"
	CgroupV1MemoryLimit = "/sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// maxLimit is the largest container limit taken as one: cgroup v1 says "no limit" with a
// number near the largest int64.
const maxLimit = 1 << 50

// Percent of the container's limit that the Go runtime may use: the rest is for what the
// runtime's limit does not count (the binary's mapped pages, memory of the kernel charged to
// the container) and for the collector's lag behind the heap.
const Percent = 90

// minLimit is the least container limit a soft limit is set under: below it, the operator
// could not run anyway, and a limit that small would only make the collector run without
// pause.
const minLimit = 32 << 20

// SoftLimit is the soft limit for a container limit of limit bytes: Percent of it, or 0
// (none) when limit is smaller than minLimit or no limit at all (maxLimit).
func SoftLimit(limit int64) int64 {
	if limit < minLimit || limit >= maxLimit {
		return 0
	}
	return limit / 100 * Percent
}

// Apply sets the runtime's soft limit from the container's limit read at the first of
// paths that exists (CgroupMemoryMax, CgroupV1MemoryLimit), unless GOMEMLIMIT is set, the
// container has no limit, or no path exists (not in a container). It returns the limit
// set, 0 for none.
func Apply(paths ...string) (int64, error) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return 0, nil
	}
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return 0, err
		}
		return apply(path, data)
	}
	return 0, nil
}

// apply sets the soft limit for the container limit in data, read at path.
func apply(path string, data []byte) (int64, error) {
	text := strings.TrimSpace(string(data))
	if text == "max" {
		return 0, nil
	}
	limit, err := strconv.ParseInt(text, 10, 64)
	if err != nil {
		return 0, errors.New("reading the container's memory limit: " + path + " holds " + strconv.Quote(text))
	}
	soft := SoftLimit(limit)
	if soft > 0 {
		debug.SetMemoryLimit(soft)
	}
	return soft, nil
}
