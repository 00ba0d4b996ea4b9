package levels

import (
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
)

// The settings of a test: environment variables of its pod, or NAME=VALUE arguments after
// the test's name (WithArguments), which the scorecard configuration can give each test.
const (
	// EnvNamespace is the namespace the test pod runs in; scorecard sets it. The tests
	// create their EtcdClusters there.
	EnvNamespace = "SCORECARD_NAMESPACE"
	// EnvBundleDir is where the bundle is mounted; /bundle by default, as scorecard
	// mounts it.
	EnvBundleDir = "SCORECARD_BUNDLE_DIR"
	// EnvTimeout is how long a test may take, as a Go duration: it finishes, cleans up and
	// returns its result within it. Scorecard's --wait-time must be longer.
	EnvTimeout = "SCORECARD_TEST_TIMEOUT"
	// EnvPrometheusURL is where level 4 reads Prometheus's HTTP API: the Prometheus that
	// scrapes the test's cluster and evaluates its rules.
	EnvPrometheusURL = "SCORECARD_PROMETHEUS_URL"
)

const (
	defaultBundleDir = "/bundle"
	defaultTimeout   = 10 * time.Minute
	// DefaultPrometheusURL is the Prometheus of `make monitoring-up` (hack/monitoring):
	// Service prometheus, port 9090, in namespace etcdpilot-monitoring.
	DefaultPrometheusURL = "http://prometheus.etcdpilot-monitoring.svc:9090"
	// minTimeout leaves room for one cluster to start and be deleted.
	minTimeout = time.Minute
	// printMargin is kept free at the end of the timeout for writing the result.
	printMargin = 5 * time.Second
)

// Config is a test's settings, from its environment.
type Config struct {
	Namespace     string
	BundleDir     string
	Timeout       time.Duration
	PrometheusURL string
}

// ConfigFromEnv reads the settings through lookup (os.LookupEnv in the image).
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	cfg := Config{BundleDir: defaultBundleDir, Timeout: defaultTimeout, PrometheusURL: DefaultPrometheusURL}
	cfg.Namespace, _ = lookup(EnvNamespace)
	if dir, ok := lookup(EnvBundleDir); ok && dir != "" {
		cfg.BundleDir = dir
	}
	if raw, ok := lookup(EnvTimeout); ok && raw != "" {
		d, err := time.ParseDuration(raw)
		if err != nil {
			return cfg, fmt.Errorf("%s=%q is not a duration such as 10m: %w", EnvTimeout, raw, err)
		}
		if d < minTimeout {
			return cfg, fmt.Errorf("%s=%s is too short: a test needs at least %s", EnvTimeout, raw, minTimeout)
		}
		cfg.Timeout = d
	}
	if raw, ok := lookup(EnvPrometheusURL); ok && raw != "" {
		if err := checkPrometheusURL(raw); err != nil {
			return cfg, fmt.Errorf("%s=%q %w", EnvPrometheusURL, raw, err)
		}
		cfg.PrometheusURL = raw
	}
	return cfg, nil
}

// checkPrometheusURL says what is wrong with raw as the address of Prometheus's API: it
// must be an http or https URL with a host, such as DefaultPrometheusURL.
func checkPrometheusURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("is not a URL: %w", err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("is not an http or https URL with a host, such as %s", DefaultPrometheusURL)
	}
	return nil
}

// settings are the names WithArguments accepts.
var settings = []string{EnvNamespace, EnvBundleDir, EnvTimeout, EnvPrometheusURL}

// WithArguments returns lookup with the settings args give put first. Each argument is
// NAME=VALUE, NAME one of the settings: the scorecard configuration (v1alpha3) gives a test
// its command line but no environment of its own, so a setting that must differ from its
// default in a test pod is given there.
func WithArguments(args []string, lookup func(string) (string, bool)) (func(string) (string, bool), error) {
	given := map[string]string{}
	for _, a := range args {
		name, value, ok := strings.Cut(a, "=")
		if !ok || !slices.Contains(settings, name) {
			return nil, fmt.Errorf("argument %q is not NAME=VALUE with NAME one of %s", a, strings.Join(settings, ", "))
		}
		given[name] = value
	}
	return func(name string) (string, bool) {
		if v, ok := given[name]; ok {
			return v, true
		}
		return lookup(name)
	}, nil
}

// Budget splits a test's timeout into the time the test itself may take and the time
// reserved for deleting what it created: a fifth of the timeout, between 30s and 3m.
// printMargin is left over for writing the result.
func Budget(timeout time.Duration) (test, cleanup time.Duration) {
	cleanup = min(max(timeout/5, 30*time.Second), 3*time.Minute)
	return timeout - cleanup - printMargin, cleanup
}
