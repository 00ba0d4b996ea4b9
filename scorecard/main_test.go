package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	scapiv1alpha3 "github.com/operator-framework/api/pkg/apis/scorecard/v1alpha3"

	"github.com/etcdpilot/etcdpilot/scorecard/internal/levels"
	"github.com/etcdpilot/etcdpilot/scorecard/internal/report"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// decodeOne decodes out as exactly one TestStatus with one result: what scorecard
// requires of the whole pod log.
func decodeOne(g Gomega, out []byte) scapiv1alpha3.TestResult {
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.DisallowUnknownFields()
	var status scapiv1alpha3.TestStatus
	g.Expect(dec.Decode(&status)).To(Succeed(), string(out))
	g.Expect(dec.Decode(&json.RawMessage{})).To(MatchError(io.EOF), "nothing after the TestStatus")
	g.Expect(status.Results).To(HaveLen(1))
	return status.Results[0]
}

func noEnv(string) (string, bool) { return "", false }

func TestRun(t *testing.T) {
	deps := levels.Deps{NewEnv: func(string, *report.Report) (*framework.Env, error) {
		return nil, errors.New("no cluster in this test")
	}}
	cases := []struct {
		args  []string
		name  string
		state scapiv1alpha3.State
		err   string
	}{
		// Reads the bundle first, and there is none at /bundle here.
		{args: []string{"level-5-auto-pilot"}, name: "level-5-auto-pilot", state: scapiv1alpha3.ErrorState, err: "reading the bundle in /bundle"},
		{args: []string{"level-0"}, name: "level-0", state: scapiv1alpha3.ErrorState, err: `unknown test "level-0"`},
		{args: nil, name: command, state: scapiv1alpha3.ErrorState, err: "usage: "},
		{args: []string{"level-5-auto-pilot", "extra"}, name: command, state: scapiv1alpha3.ErrorState,
			err: `argument "extra" is not NAME=VALUE with NAME one of SCORECARD_NAMESPACE, `},
		{args: []string{"level-4-deep-insights", "SCORECARD_PROMETHEUS=http://p:9090"}, name: command, state: scapiv1alpha3.ErrorState,
			err: `argument "SCORECARD_PROMETHEUS=http://p:9090" is not NAME=VALUE`},
		// A setting given as an argument is read, over the environment.
		{args: []string{"level-4-deep-insights", "SCORECARD_BUNDLE_DIR=/elsewhere"}, name: "level-4-deep-insights", state: scapiv1alpha3.ErrorState,
			err: "reading the bundle in /elsewhere"},
		{args: []string{"level-4-deep-insights", "SCORECARD_PROMETHEUS_URL=prometheus:9090"}, name: "level-4-deep-insights", state: scapiv1alpha3.ErrorState,
			err: `SCORECARD_PROMETHEUS_URL="prometheus:9090" is not an http or https URL with a host`},
	}
	for _, tc := range cases {
		g := NewWithT(t)
		var out bytes.Buffer
		g.Expect(run(tc.args, &out, noEnv, deps)).To(Succeed())
		res := decodeOne(g, out.Bytes())
		g.Expect(res.Name).To(Equal(tc.name))
		g.Expect(res.State).To(Equal(tc.state))
		g.Expect(res.Errors).To(ConsistOf(ContainSubstring(tc.err)), tc.args)
	}
}

// The built command, run as scorecard runs it: the result alone on stdout, nothing on
// stderr, exit status 0 whatever the result.
func TestCommand(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	g := NewWithT(t)
	bin := filepath.Join(t.TempDir(), command)
	build := exec.Command("go", "build", "-o", bin, ".")
	build.Stderr = os.Stderr
	g.Expect(build.Run()).To(Succeed())

	cases := []struct {
		args  []string
		env   []string
		state scapiv1alpha3.State
		err   string
	}{
		{args: []string{"level-5-auto-pilot"}, env: []string{"SCORECARD_BUNDLE_DIR=" + filepath.Join(t.TempDir(), "none")},
			state: scapiv1alpha3.ErrorState, err: "reading the bundle in "},
		{args: []string{"nope"}, state: scapiv1alpha3.ErrorState, err: `unknown test "nope"`},
		// Reads the bundle, then stops before reaching for a cluster.
		{args: []string{"level-1-basic-install"}, env: []string{"SCORECARD_BUNDLE_DIR=" + filepath.Join("..", "bundle")},
			state: scapiv1alpha3.ErrorState, err: "SCORECARD_NAMESPACE is not set"},
		// No cluster to be found: the error is in the result, not on stderr.
		{args: []string{"level-4-deep-insights"}, env: []string{"SCORECARD_NAMESPACE=x", "SCORECARD_BUNDLE_DIR=" + filepath.Join("..", "bundle"),
			"KUBECONFIG=" + filepath.Join(t.TempDir(), "missing"), "HOME=" + t.TempDir()},
			state: scapiv1alpha3.ErrorState, err: "finding the API server"},
	}
	for _, tc := range cases {
		cmd := exec.Command(bin, tc.args...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, tc.env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		g.Expect(cmd.Run()).To(Succeed(), "exit status 0")
		g.Expect(stderr.String()).To(BeEmpty())
		res := decodeOne(g, stdout.Bytes())
		g.Expect(res.State).To(Equal(tc.state))
		g.Expect(res.Errors).To(ContainElement(ContainSubstring(tc.err)))
	}
}
