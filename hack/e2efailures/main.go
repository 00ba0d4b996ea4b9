// Command e2efailures prints what failed in Ginkgo JSON reports, briefly: for each spec that
// did not pass, its full text, where it failed and the first lines of the failure message.
// .ci/run prints it last when a run fails, so that the end of the CI output, which is often
// all that is kept of a run, says why. Reports that do not exist are skipped.
//
// Usage: e2efailures REPORT.json...
package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/onsi/ginkgo/v2/types"
)

// Limits keep the digest short enough to stay in a truncated log's tail.
const (
	linesPerFailure = 24
	totalLines      = 40
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: e2efailures REPORT.json...")
		os.Exit(2)
	}
	var reports []types.Report
	read := 0
	for _, path := range os.Args[1:] {
		data, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		read++
		var rs []types.Report
		if err == nil {
			err = json.Unmarshal(data, &rs)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "e2efailures: %s: %v\n", path, err)
			os.Exit(1)
		}
		reports = append(reports, rs...)
	}
	if read == 0 {
		fmt.Println("no e2e report: the failure came before the e2e runs ended (see above)")
		return
	}
	digest(os.Stdout, reports)
}

// digest writes, for each spec of reports that failed, panicked, timed out or was
// interrupted, its text, the failure's location and the message's first lines; at most
// totalLines lines in all.
func digest(w io.Writer, reports []types.Report) {
	var lines []string
	failed := 0
	for _, r := range reports {
		for _, s := range r.SpecReports {
			if !s.State.Is(types.SpecStateFailureStates) {
				continue
			}
			failed++
			lines = append(lines, fmt.Sprintf("%s: %s", strings.ToUpper(s.State.String()), s.FullText()))
			lines = append(lines, "  at "+s.Failure.Location.String())
			msg := strings.Split(strings.TrimSpace(s.Failure.Message), "\n")
			if len(msg) > linesPerFailure {
				msg = append(msg[:linesPerFailure], fmt.Sprintf("(%d more lines in the spec's output above)", len(msg)-linesPerFailure))
			}
			for _, l := range msg {
				lines = append(lines, "  | "+l)
			}
		}
	}
	if failed == 0 {
		fmt.Fprintln(w, "no spec failed in the e2e reports")
		return
	}
	if len(lines) > totalLines {
		lines = append(lines[:totalLines-1], fmt.Sprintf("(%d more lines; %d specs failed in all)", len(lines)-totalLines+1, failed))
	}
	fmt.Fprintln(w, strings.Join(lines, "\n"))
}
