// Command versions writes what the supported etcd releases decide into the files that cannot
// import internal/versions: the markers of spec.version (enum, default, the console's
// choices) and the root upgrade rule in api/v1alpha1/etcdcluster_types.go, and the pinned
// operand images of config/manager/manager.yaml (the bundle's relatedImages). The table in
// internal/versions is the one source; `make generate` runs this, and `make verify` fails
// when a file is stale.
//
//	go run ./hack/versions [repo root]
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/etcdpilot/etcdpilot/internal/versions"
)

func main() {
	root := "."
	if len(os.Args) > 1 {
		root = os.Args[1]
	}
	for path, rewrite := range map[string]func(string) (string, error){
		filepath.Join(root, "api", "v1alpha1", "etcdcluster_types.go"): rewriteTypes,
		filepath.Join(root, "config", "manager", "manager.yaml"):       rewriteManager,
	} {
		if err := rewriteFile(path, rewrite); err != nil {
			fmt.Fprintln(os.Stderr, "versions:", err)
			os.Exit(1)
		}
	}
}

func rewriteFile(path string, rewrite func(string) (string, error)) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	out, err := rewrite(string(raw))
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if out == string(raw) {
		return nil
	}
	return os.WriteFile(path, []byte(out), 0o644)
}

// replaceOne replaces the single match of re in s with repl, or fails.
func replaceOne(s string, re *regexp.Regexp, repl string) (string, error) {
	if n := len(re.FindAllStringIndex(s, -1)); n != 1 {
		return "", fmt.Errorf("expected one line matching %s, found %d", re, n)
	}
	return re.ReplaceAllLiteralString(s, repl), nil
}

var (
	versionDefault = regexp.MustCompile(`(?m)^\t// \+kubebuilder:default="\d+\.\d+\.\d+"$`)
	versionEnum    = regexp.MustCompile(`(?m)^\t// \+kubebuilder:validation:Enum="\d+\.\d+\.\d+"(;"\d+\.\d+\.\d+")*$`)
	versionConsole = regexp.MustCompile(`(?m)^\t// \+operator-sdk:csv:customresourcedefinitions:type=spec,displayName="etcd Version",.*$`)
	upgradeRule    = regexp.MustCompile(`(?m)^// \+kubebuilder:validation:XValidation:rule="self\.spec\.version == oldSelf\.spec\.version .*$`)
)

func rewriteTypes(s string) (string, error) {
	quoted := make([]string, 0, len(versions.Supported))
	choices := make([]string, 0, len(versions.Supported))
	for _, v := range versions.Supported {
		quoted = append(quoted, `"`+v+`"`)
		choices = append(choices, `"urn:alm:descriptor:com.tectonic.ui:select:`+v+`"`)
	}
	steps := []struct {
		re   *regexp.Regexp
		line string
	}{
		{versionDefault, `	// +kubebuilder:default="` + versions.Default() + `"`},
		{versionEnum, `	// +kubebuilder:validation:Enum=` + strings.Join(quoted, ";")},
		{versionConsole, `	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="etcd Version",xDescriptors={` + strings.Join(choices, ",") + `}`},
		{upgradeRule, rule()},
	}
	var err error
	for _, st := range steps {
		if s, err = replaceOne(s, st.re, st.line); err != nil {
			return "", err
		}
	}
	return s, nil
}

// rule is the root CEL rule on spec.version: unchanged; or set to status.currentVersion (a
// cancel or a retry); or an allowed step (versions.Upgrades) from the old spec that is also
// allowed from what the members run.
func rule() string {
	pairs := make([]string, 0, len(versions.Upgrades()))
	for _, p := range versions.Upgrades() {
		pairs = append(pairs, "['"+p[0]+"','"+p[1]+"']")
	}
	list := "[" + strings.Join(pairs, ",") + "]"
	cel := "self.spec.version == oldSelf.spec.version || (has(self.status) && has(self.status.currentVersion) && self.spec.version == self.status.currentVersion) || " +
		"(" + list + ".exists(p, p[0] == oldSelf.spec.version && p[1] == self.spec.version) && (!has(self.status) || !has(self.status.currentVersion) || " +
		"self.status.currentVersion == oldSelf.spec.version || " + list + ".exists(p, p[0] == self.status.currentVersion && p[1] == self.spec.version)))"
	msg := "'spec.version cannot change from ' + oldSelf.spec.version + ' to ' + self.spec.version + " +
		"(has(self.status) && has(self.status.currentVersion) ? ' while members run ' + self.status.currentVersion + ':' : ':') + " +
		"' etcd is upgraded one minor release at a time (" + strings.Join(minors(), " -> ") + "), never skipping one and never back to an older minor, " +
		"and moves freely between the patch releases of a minor (supported: " + strings.Join(byMinor(), "; ") + "); " +
		"to cancel or retry an upgrade, set spec.version to status.currentVersion'"
	return `// +kubebuilder:validation:XValidation:rule="` + cel + `",messageExpression="` + msg + `"`
}

// minors lists the supported minor releases, oldest first ("3.5").
func minors() []string {
	var out []string
	for _, v := range versions.Supported {
		m := v[:strings.LastIndex(v, ".")]
		if len(out) == 0 || out[len(out)-1] != m {
			out = append(out, m)
		}
	}
	return out
}

// byMinor lists the supported releases grouped by minor ("3.6.15, 3.6.16").
func byMinor() []string {
	var out []string
	for _, m := range minors() {
		var same []string
		for _, v := range versions.Supported {
			if strings.HasPrefix(v, m+".") {
				same = append(same, v)
			}
		}
		out = append(out, strings.Join(same, ", "))
	}
	return out
}

var relatedImages = regexp.MustCompile(`(?m)^( +)- name: RELATED_IMAGE_ETCD_V\S+\n\s+value: \S+\n(?:\s+- name: RELATED_IMAGE_ETCD_V\S+\n\s+value: \S+\n)*`)

func rewriteManager(s string) (string, error) {
	m := relatedImages.FindStringSubmatch(s)
	if m == nil {
		return "", fmt.Errorf("no RELATED_IMAGE_ETCD_* variables found")
	}
	indent := m[1]
	var b strings.Builder
	for _, v := range versions.Supported {
		fmt.Fprintf(&b, "%s- name: %s\n%s  value: %s\n", indent, versions.RelatedImageEnv(v), indent, versions.Image(versions.DefaultRepository, v))
	}
	return replaceOne(s, relatedImages, b.String())
}
