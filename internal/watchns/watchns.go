// Package watchns turns the WATCH_NAMESPACE setting that OLM gives an operator into the set of
// namespaces the manager's cache watches.
//
// OLM sets WATCH_NAMESPACE from the OperatorGroup's target namespaces:
//   - AllNamespaces:  "" (watch everything)
//   - OwnNamespace and SingleNamespace: "ns"
//   - MultiNamespace: "ns1,ns2,..."
package watchns

import (
	"fmt"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// EnvVar is the environment variable OLM uses to tell an operator which namespaces to watch.
const EnvVar = "WATCH_NAMESPACE"

// Parse returns the namespaces named by a WATCH_NAMESPACE value, sorted and without
// duplicates. An empty (or blank) value means all namespaces and yields nil. Every name must be
// a valid namespace name; empty list items (as in "a,,b") are refused, since they usually
// mean a templating mistake.
func Parse(value string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	seen := map[string]bool{}
	var out []string
	for _, raw := range strings.Split(value, ",") {
		ns := strings.TrimSpace(raw)
		if ns == "" {
			return nil, fmt.Errorf("%s=%q: empty namespace in list; use a comma-separated list of namespaces, or leave it empty to watch all namespaces", EnvVar, value)
		}
		if errs := validation.IsDNS1123Label(ns); len(errs) > 0 {
			return nil, fmt.Errorf("%s=%q: %q is not a valid namespace name: %s", EnvVar, value, ns, strings.Join(errs, "; "))
		}
		if !seen[ns] {
			seen[ns] = true
			out = append(out, ns)
		}
	}
	sort.Strings(out)
	return out, nil
}
