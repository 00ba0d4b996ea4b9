package levels

import (
	"fmt"
	"time"
)

// Environment variables of a test pod.
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
)

const (
	defaultBundleDir = "/bundle"
	defaultTimeout   = 10 * time.Minute
	// minTimeout leaves room for one cluster to start and be deleted.
	minTimeout = time.Minute
	// printMargin is kept free at the end of the timeout for writing the result.
	printMargin = 5 * time.Second
)

// Config is a test's settings, from its environment.
type Config struct {
	Namespace string
	BundleDir string
	Timeout   time.Duration
}

// ConfigFromEnv reads the settings through lookup (os.LookupEnv in the image).
func ConfigFromEnv(lookup func(string) (string, bool)) (Config, error) {
	cfg := Config{BundleDir: defaultBundleDir, Timeout: defaultTimeout}
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
	return cfg, nil
}

// Budget splits a test's timeout into the time the test itself may take and the time
// reserved for deleting what it created: a fifth of the timeout, between 30s and 3m.
// printMargin is left over for writing the result.
func Budget(timeout time.Duration) (test, cleanup time.Duration) {
	cleanup = min(max(timeout/5, 30*time.Second), 3*time.Minute)
	return timeout - cleanup - printMargin, cleanup
}
