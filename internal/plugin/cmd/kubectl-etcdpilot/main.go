// Command kubectl-etcdpilot is etcdpilot's kubectl plugin: put it on PATH and run
// `kubectl etcdpilot help`.
package main

import (
	"context"
	"os"
	"os/signal"

	"github.com/etcdpilot/etcdpilot/internal/plugin"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := plugin.Run(ctx, os.Args[1:], plugin.Env{Out: os.Stdout, Err: os.Stderr})
	stop()
	os.Exit(code)
}
