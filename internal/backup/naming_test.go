package backup_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/etcdpilot/etcdpilot/internal/backup"
)

// at is a UTC time on 2025-06-<day>.
func at(day, hour, minute, second int) time.Time {
	return time.Date(2025, time.June, day, hour, minute, second, 0, time.UTC)
}

func TestNameForRun(t *testing.T) {
	g := NewWithT(t)
	run := at(10, 12, 0, 0) // 1749556800

	g.Expect(backup.NameForRun("nightly", run)).To(Equal("nightly-1749556800"))
	// The name depends on the run only, not on when it is computed.
	g.Expect(backup.NameForRun("nightly", run.In(time.FixedZone("X", 3600)))).To(Equal("nightly-1749556800"))

	fits := strings.Repeat("a", 52) // 52 + "-1749556800" = 63
	g.Expect(backup.NameForRun(fits, run)).To(Equal(fits + "-1749556800"))

	long := strings.Repeat("b", 60)
	name := backup.NameForRun(long, run)
	g.Expect(name).To(HaveLen(backup.MaxNameLength))
	g.Expect(name).To(MatchRegexp(`^b{43}-[0-9a-f]{8}-1749556800$`))
	g.Expect(backup.NameForRun(long, run)).To(Equal(name), "stable")
	g.Expect(backup.NameForRun(long+"x", run)).NotTo(Equal(name), "a different schedule gets a different name")
	g.Expect(backup.NameForRun(long, run.Add(time.Hour))).NotTo(Equal(name), "a different run gets a different name")
}

func TestNameForRunIsAValidName(t *testing.T) {
	run := at(10, 12, 0, 0)
	for _, schedule := range []string{
		"s",
		strings.Repeat("x", 253), // the longest object name
		strings.Repeat("a", 42) + "-b" + strings.Repeat("c", 30), // "-" at the cut
		strings.Repeat("a", 42) + ".b" + strings.Repeat("c", 30), // "." at the cut
		strings.Repeat("a", 40) + "-.-" + strings.Repeat("c", 30),
	} {
		g := NewWithT(t)
		name := backup.NameForRun(schedule, run)
		g.Expect(len(name)).To(BeNumerically("<=", backup.MaxNameLength), schedule)
		g.Expect(validation.IsDNS1123Subdomain(name)).To(BeEmpty(), name)
		if !strings.Contains(name, ".") {
			g.Expect(validation.IsDNS1123Label(name)).To(BeEmpty(), name)
		}
	}
}
