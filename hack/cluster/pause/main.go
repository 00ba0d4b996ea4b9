// Command pause is the pod sandbox ("infra") container of the local cluster: it holds the
// pod's namespaces open, reaps orphaned children when it is PID 1 of a shared process
// namespace, and exits on SIGTERM or SIGINT. It is its own module so that the operator's
// module (go vet ./..., go test ./...) never sees it.
package main

import (
	"os"
	"os/signal"
	"syscall"
)

func main() {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGCHLD)
	for sig := range sigs {
		if sig != syscall.SIGCHLD {
			os.Exit(0)
		}
		for { // reap every exited child; stop when none is left to reap
			pid, err := syscall.Wait4(-1, nil, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}
