// Command etcdpilot-scorecard-tests is etcdpilot's custom scorecard test image: one test
// per capability level, run by operator-sdk scorecard (v1alpha3) in a pod of its own.
//
//	etcdpilot-scorecard-tests <test> [NAME=VALUE ...]
//
// where <test> is one of level-1-basic-install, level-2-seamless-upgrades,
// level-3-full-lifecycle, level-4-deep-insights and level-5-auto-pilot. Settings come from
// the environment: SCORECARD_NAMESPACE (set by scorecard), SCORECARD_BUNDLE_DIR (default
// /bundle), SCORECARD_TEST_TIMEOUT (default 10m) and SCORECARD_PROMETHEUS_URL (level 4;
// default http://prometheus.etcdpilot-monitoring.svc:9090). A NAME=VALUE argument sets one
// of them over the environment: the scorecard configuration gives a test its arguments,
// not an environment.
//
// Scorecard reads the whole pod log as one JSON TestStatus, so the command writes exactly
// that to its standard output and nothing anywhere else, then exits 0 whatever the
// result. See scorecard/README.md.
//
//	etcdpilot-scorecard-tests corrupt-member-data <file> <find> <replace>
//
// is not a test: level 5 runs it in a pod of its own, on a member's claim, to make that
// member's data diverge (internal/corrupt).
package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"sigs.k8s.io/controller-runtime/pkg/client/config"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/etcdpilot/etcdpilot/internal/corrupt"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/levels"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
)

// command is the name the image installs the binary under.
const command = "etcdpilot-scorecard-tests"

// corruptCommand is the subcommand the pod that makes a member's data diverge runs
// (harness.CorruptCommand).
const corruptCommand = "corrupt-member-data"

func main() {
	if len(os.Args) > 1 && os.Args[1] == corruptCommand {
		os.Exit(corrupt.Main(os.Args[2:], "/dev/termination-log"))
	}
	out, err := claimStdout()
	if err != nil {
		out = os.Stdout // could not silence the process; the result still goes out
	}
	deps := levels.Deps{NewEnv: levels.EnvFromRESTConfig(config.GetConfig)}
	if err := run(os.Args[1:], out, os.LookupEnv, deps); err != nil {
		os.Exit(1) // the result could not be written: there is no one left to tell
	}
}

// run runs the test args names and writes its result to stdout as one TestStatus.
func run(args []string, stdout io.Writer, lookup func(string) (string, bool), deps levels.Deps) error {
	// controller-runtime's client logs API warnings through its logger; nothing may reach
	// the pod log but the result.
	log.SetLogger(zap.New(zap.WriteTo(io.Discard)))

	var result scapiv1alpha3.TestResult
	var err error
	if len(args) > 0 {
		lookup, err = levels.WithArguments(args[1:], lookup)
	}
	if len(args) == 0 || err != nil {
		r := report.New(command, deps.Now)
		msg := fmt.Sprintf("usage: %s <test> [NAME=VALUE ...], where <test> is one of %s", command, strings.Join(levels.Names(), ", "))
		if err != nil {
			msg = err.Error() + "; " + msg
		}
		r.Broken(errors.New(msg))
		result = r.Result()
	} else {
		result = levels.Run(args[0], lookup, deps)
	}
	return report.Write(stdout, result)
}
