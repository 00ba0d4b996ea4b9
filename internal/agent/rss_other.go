//go:build !linux

package agent

// maxRSSBytes returns 0: the agent runs on Linux, where the unit of ru_maxrss is known.
func maxRSSBytes() int64 {
	return 0
}
