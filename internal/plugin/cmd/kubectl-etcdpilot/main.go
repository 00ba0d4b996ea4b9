// Command kubectl-etcdpilot is etcdpilot's kubectl plugin: put it on PATH and run
// `kubectl etcdpilot help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/etcdpilot/etcdpilot/internal/plugin"
)

func main() {
	// The plugin speaks through its output and its errors; controller-runtime's client
	// would otherwise warn, on a long --wait, that no logger was set.
	ctrllog.SetLogger(logr.Discard())
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := plugin.Run(ctx, os.Args[1:], plugin.Env{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
