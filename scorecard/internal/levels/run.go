package levels

import (
	"context"
	"fmt"
	"strings"
	"time"

	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"
	"k8s.io/client-go/rest"

	"github.com/etcdpilot/etcdpilot/scorecard/internal/bundle"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// Input is what a test gets: its settings, the bundle (when it reads it) and its cluster
// access (when it uses the cluster).
type Input struct {
	Config Config
	Bundle *bundle.Bundle
	Env    *framework.Env
}

// test is one scorecard test.
type test struct {
	name         string
	needsBundle  bool
	needsCluster bool
	run          func(ctx context.Context, in Input, r *report.Report)
}

// tests are the five tests, in level order. Their names are the second word of the
// entrypoints in the scorecard configuration.
var tests = []test{
	{name: "level-1-basic-install", needsBundle: true, needsCluster: true, run: basicInstall},
	{name: "level-2-seamless-upgrades", needsBundle: true, needsCluster: true, run: seamlessUpgrades},
	{name: "level-3-full-lifecycle", needsBundle: true, needsCluster: true, run: fullLifecycle},
	{name: "level-4-deep-insights", needsBundle: true, needsCluster: true, run: deepInsights},
	{name: "level-5-auto-pilot", needsBundle: true, needsCluster: true, run: autoPilot},
}

// Names returns the test names, in level order.
func Names() []string {
	out := make([]string, 0, len(tests))
	for _, t := range tests {
		out = append(out, t.name)
	}
	return out
}

// Deps are what Run takes from the process: the clock and the way to the cluster.
type Deps struct {
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// NewEnv connects to the cluster: in the image, the API server of the in-cluster
	// configuration or of KUBECONFIG. Tests hand in fakes.
	NewEnv func(namespace string, r *report.Report) (*framework.Env, error)
}

// EnvFromRESTConfig is the Deps.NewEnv of the image: it connects to the API server restConfig
// finds.
func EnvFromRESTConfig(restConfig func() (*rest.Config, error)) func(string, *report.Report) (*framework.Env, error) {
	return func(namespace string, r *report.Report) (*framework.Env, error) {
		cfg, err := restConfig()
		if err != nil {
			return nil, fmt.Errorf("finding the API server: %w", err)
		}
		return framework.NewEnv(cfg, namespace, r)
	}
}

// Run runs test name with the settings lookup finds and returns its result. It always
// returns a result: an unknown name, bad settings or a panicking test give state error.
// Whatever the test created in the cluster is deleted first, within the cleanup budget.
func Run(name string, lookup func(string) (string, bool), deps Deps) scapiv1alpha3.TestResult {
	r := report.New(name, deps.Now)
	t, ok := find(name)
	if !ok {
		r.Broken(fmt.Errorf("unknown test %q; the tests are %s", name, strings.Join(Names(), ", ")))
		return r.Result()
	}
	execute(t, lookup, deps, r)
	return r.Result()
}

// execute prepares t's input and runs t; the cleanup it defers is done when it returns, so
// that its log and failures make it into the result.
func execute(t test, lookup func(string) (string, bool), deps Deps, r *report.Report) {
	cfg, err := ConfigFromEnv(lookup)
	if err != nil {
		r.Broken(err)
		return
	}
	budget, cleanupBudget := Budget(cfg.Timeout)
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()

	in := Input{Config: cfg}
	if t.needsBundle {
		if in.Bundle, err = bundle.Load(cfg.BundleDir); err != nil {
			r.Broken(err)
			return
		}
	}
	if t.needsCluster {
		if in.Env, err = newEnv(cfg, r, deps); err != nil {
			r.Broken(err)
			return
		}
		r.Logf("namespace %s, bundle %s, %s for the test and %s for cleaning up", cfg.Namespace, cfg.BundleDir, budget, cleanupBudget)
		defer cleanup(in.Env, r, cleanupBudget)
	}
	runGuarded(ctx, t, in, r)
}

func find(name string) (test, bool) {
	for _, t := range tests {
		if t.name == name {
			return t, true
		}
	}
	return test{}, false
}

func newEnv(cfg Config, r *report.Report, deps Deps) (*framework.Env, error) {
	if cfg.Namespace == "" {
		return nil, fmt.Errorf("%s is not set: the test needs a namespace to create its EtcdClusters in", EnvNamespace)
	}
	return deps.NewEnv(cfg.Namespace, r)
}

// runGuarded runs t, turning a panic into an error result, so that the cleanup still runs
// and a result is still printed.
func runGuarded(ctx context.Context, t test, in Input, r *report.Report) {
	defer func() {
		if p := recover(); p != nil {
			r.Broken(fmt.Errorf("the test panicked: %v", p))
		}
	}()
	t.run(ctx, in, r)
}

// cleanup deletes what the test created, with a budget of its own: the test's context may
// have run out already. A failed cleanup fails the test, since it leaves objects behind.
func cleanup(env *framework.Env, r *report.Report, budget time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), budget)
	defer cancel()
	if err := r.Step("clean up", func() error { return env.Cleanup(ctx) }); err != nil {
		r.Fail(fmt.Sprintf("cleaning up (objects labelled %s=%s may be left): %v", framework.PartOfLabel, framework.PartOfValue, err))
	}
}
