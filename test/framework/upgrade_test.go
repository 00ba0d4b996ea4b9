package framework_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

var (
	members = []string{"c-0", "c-1", "c-2"}
	t0      = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
)

// series makes samples a second apart from rows, one per sample, each giving the answers
// of c-0, c-1 and c-2 in turn: o the old release (3.6.16), n the new one (3.7.3), x another
// (3.6.15), - no answer.
func series(rows ...string) []framework.VersionSample {
	release := map[rune]string{'o': "3.6.16", 'n': "3.7.3", 'x': "3.6.15", '-': ""}
	out := make([]framework.VersionSample, len(rows))
	for i, row := range rows {
		s := framework.VersionSample{At: t0.Add(time.Duration(i) * time.Second), Versions: map[string]string{}}
		for j, r := range strings.ReplaceAll(row, " ", "") {
			s.Versions[members[j]] = release[r]
		}
		out[i] = s
	}
	return out
}

func TestCheckRollingUpgrade(t *testing.T) {
	cases := []struct {
		name    string
		samples []framework.VersionSample
		want    string // the error; "" when the samples show a rolling upgrade
	}{
		{name: "followers one at a time, then the leader, each once the one before is back",
			samples: series("ooo", "o-o", "o-o", "ono", "ono", "on-", "onn", "-nn", "nnn")},
		{name: "the last sample alone at the new release: every restart seen",
			samples: series("ooo", "o-o", "ono", "on-", "onn", "-nn", "nnn")},
		{name: "a restart between two samples that no sample saw, alone",
			samples: series("ooo", "ono", "onn", "nnn")},
		{name: "no sample",
			want: "no sample of the members' versions"},
		{name: "two members silent at once",
			samples: series("ooo", "o-o", "o--", "onn", "nnn"),
			want:    "at 2.0 s members c-1 and c-2 did not answer at the same time: more than one member was down or restarting"},
		{name: "the next member stops in the interval the one before comes back (the samples cannot order them: no breach)",
			samples: series("ooo", "o-o", "on-", "onn", "-nn", "nnn")},
		{name: "the next member stops in the interval the one before comes back at the old release",
			samples: series("ooo", "o-o", "oo-", "oon", "-on", "non"),
			want: "member c-2 stopped answering between 1.0 s and 2.0 s while member c-1, silent at 1.0 s, came back at etcd 3.6.16, not 3.7.3: " +
				"the next member was restarted before the one before ran the new version"},
		{name: "the next member stops while the one restarted before runs the old release",
			samples: series("ooo", "o-o", "ooo", "oo-", "oon", "-on", "non"),
			want: "member c-2 stopped answering between 2.0 s and 3.0 s while member c-1, restarted before, answered etcd 3.6.16, not 3.7.3: " +
				"the next member was restarted before the one before ran the new version"},
		{name: "two members at the new release between two samples, none seen silent",
			samples: series("ooo", "onn", "-nn", "nnn"),
			want: "member c-1 went from etcd 3.6.16 to 3.7.3 between 0.0 s and 1.0 s, a restart no sample saw, while member c-2 went from 3.6.16 to 3.7.3: " +
				"more than one member changed at once"},
		{name: "a member at the new release, unseen, while another is silent",
			samples: series("ooo", "-oo", "-no", "nno", "nn-", "nnn"),
			want: "member c-1 went from etcd 3.6.16 to 3.7.3 between 1.0 s and 2.0 s, a restart no sample saw, while member c-0 did not answer: " +
				"more than one member changed at once"},
		{name: "a member at the new release, unseen, while another comes back",
			samples: series("ooo", "o-o", "nno", "nn-", "nnn"),
			want: "member c-0 went from etcd 3.6.16 to 3.7.3 between 1.0 s and 2.0 s, a restart no sample saw, while member c-1 came back at 3.7.3: " +
				"more than one member changed at once"},
		{name: "a member goes back",
			samples: series("ooo", "o-o", "ono", "ooo"),
			want:    "at 3.0 s member c-1 answered etcd 3.6.16 after it had answered 3.7.3: it went back"},
		{name: "another release",
			samples: series("ooo", "o-o", "oxo"),
			want:    "at 2.0 s member c-1 answered etcd 3.6.15, neither 3.6.16 nor 3.7.3"},
		{name: "not every member at the new release at the end",
			samples: series("ooo", "o-o", "ono", "on-"),
			want:    "once the upgrade was over (3.0 s), not every member answered etcd 3.7.3: c-0 (3.6.16), c-2 (no answer)"},
		{name: "a cluster that upgrades every member at once between two samples",
			samples: series("ooo", "nnn"),
			want: "member c-0 went from etcd 3.6.16 to 3.7.3 between 0.0 s and 1.0 s, a restart no sample saw, while member c-1 went from 3.6.16 to 3.7.3: " +
				"more than one member changed at once"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			err := framework.CheckRollingUpgrade(members, "3.6.16", "3.7.3", tc.samples)
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(tc.want))
		})
	}
}

func TestDescribeRestarts(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.DescribeRestarts(members, "3.7.3", nil)).To(Equal("no sample"))
	g.Expect(framework.DescribeRestarts(members, "3.7.3", series("ooo", "o-o", "ono", "on-", "onn", "-nn", "nnn"))).To(Equal(
		"7 samples over 6.0 s; c-1 silent from 1.0 s, answering 3.7.3 from 2.0 s; c-2 silent from 3.0 s, answering 3.7.3 from 4.0 s; " +
			"c-0 silent from 5.0 s, answering 3.7.3 from 6.0 s"))
	g.Expect(framework.DescribeRestarts(members, "3.7.3", series("noo", "nno", "nn-"))).To(Equal(
		"3 samples over 2.0 s; c-0 never seen silent, answering 3.7.3 from 0.0 s; c-1 never seen silent, answering 3.7.3 from 1.0 s; " +
			"c-2 silent from 2.0 s"))
	g.Expect(framework.DescribeRestarts(members, "3.7.3", series("ooo"))).To(Equal(
		"1 samples over 0.0 s; c-0 never seen silent nor answering 3.7.3; c-1 never seen silent nor answering 3.7.3; c-2 never seen silent nor answering 3.7.3"))
}

// attempts makes write attempts from a row: one every 200 ms, each taking 100 ms, + for
// acknowledged and - for failed.
func attempts(row string) []framework.WriteAttempt {
	out := make([]framework.WriteAttempt, len(row))
	for i, r := range row {
		start := t0.Add(time.Duration(i) * 200 * time.Millisecond)
		out[i] = framework.WriteAttempt{Start: start, End: start.Add(100 * time.Millisecond), Acked: r == '+'}
	}
	return out
}

func TestOutages(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.Outages(nil)).To(BeEmpty())
	g.Expect(framework.Outages(attempts("+++++"))).To(BeEmpty())
	// From the start of the first failure to the end of the next acknowledged write.
	g.Expect(framework.Outages(attempts("+--++-+"))).To(Equal([]framework.Outage{
		{From: t0.Add(200 * time.Millisecond), To: t0.Add(700 * time.Millisecond)},
		{From: t0.Add(time.Second), To: t0.Add(1300 * time.Millisecond)},
	}))
	// Failing to the end: until the end of the last attempt.
	g.Expect(framework.Outages(attempts("--+---"))).To(Equal([]framework.Outage{
		{From: t0, To: t0.Add(500 * time.Millisecond)},
		{From: t0.Add(600 * time.Millisecond), To: t0.Add(1100 * time.Millisecond)},
	}))
}

func TestCheckOutages(t *testing.T) {
	g := NewWithT(t)
	outages := framework.Outages(attempts("+--++-+"))
	total, err := framework.CheckOutages(outages, 800*time.Millisecond, t0)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(total).To(Equal(800 * time.Millisecond))
	total, err = framework.CheckOutages(outages, 700*time.Millisecond, t0)
	g.Expect(total).To(Equal(800 * time.Millisecond))
	g.Expect(err).To(MatchError("writes through the client Service went unacknowledged for 0.8 s in all, more than 0.7 s (0.5 s from 0.2 s, 0.3 s from 1.0 s)"))
	total, err = framework.CheckOutages(nil, 0, t0)
	g.Expect(total).To(BeZero())
	g.Expect(err).NotTo(HaveOccurred())
}

func TestMemberEndpoint(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{}
	c.Name, c.Namespace = "c", "ns"
	g.Expect(framework.MemberEndpoint(c, "c-1")).To(Equal("http://c-1.c-peer.ns.svc:2379"), "no client Secret: TLS is disabled")
	c.Status.ClientSecret = "c-client-tls"
	g.Expect(framework.MemberEndpoint(c, "c-1")).To(Equal("https://c-1.c-peer.ns.svc:2379"))
}

// versionOf is a VersionProbe that answers version, or, when it is empty, waits for the
// caller's deadline, like a member that does not serve.
type versionOf string

func (v versionOf) Version(ctx context.Context) (string, error) {
	if v == "" {
		<-ctx.Done()
		return "", ctx.Err()
	}
	return string(v), nil
}

func (versionOf) Close() error { return nil }

func (versionOf) Connection() (uint64, bool) { return 1, false }

// slowMember is a VersionProbe of a member that answers version after delay, on connection
// conn unless redial is set, when the answer comes on a new one; answered says whether a call
// was answered on conn before.
type slowMember struct {
	version  string
	delay    time.Duration
	answered bool
	redial   bool
	conn     atomic.Uint64
}

func newSlowMember(version string, delay time.Duration, answered, redial bool) *slowMember {
	m := &slowMember{version: version, delay: delay, answered: answered, redial: redial}
	m.conn.Store(1)
	return m
}

func (m *slowMember) Version(ctx context.Context) (string, error) {
	select {
	case <-ctx.Done():
		return "", ctx.Err()
	case <-time.After(m.delay):
	}
	if m.redial {
		m.conn.Store(2)
	}
	return m.version, nil
}

func (m *slowMember) Connection() (uint64, bool) { return m.conn.Load(), m.answered }

func (*slowMember) Close() error { return nil }

// A member slower than the bound, on the connection it answered on before the sample, served
// throughout: it answers, marked slow. One that has not answered on its connection, or that
// answers only on a new one (it restarted), is silent.
func TestSampleVersionsWaitsForASlowMemberOnItsConnection(t *testing.T) {
	g := NewWithT(t)
	probes := map[string]framework.VersionProbe{
		"c-0": versionOf("3.6.16"),
		"c-1": newSlowMember("3.7.3", 300*time.Millisecond, true, false),
		"c-2": newSlowMember("3.7.3", 300*time.Millisecond, false, false),
		"c-3": newSlowMember("3.7.3", 300*time.Millisecond, true, true),
	}
	s := framework.SampleVersions(context.Background(), probes, 100*time.Millisecond)
	g.Expect(s.Versions).To(Equal(map[string]string{"c-0": "3.6.16", "c-1": "3.7.3", "c-2": "", "c-3": ""}))
	g.Expect(s.Slow).To(HaveLen(1))
	g.Expect(s.Slow["c-1"]).To(BeNumerically(">=", 300*time.Millisecond))
	g.Expect(s.Why).To(Equal(map[string]string{"c-2": "context deadline exceeded", "c-3": "context deadline exceeded"}))
	g.Expect(framework.DescribeRestarts([]string{"c-0", "c-1", "c-2", "c-3"}, "3.7.3", []framework.VersionSample{s})).
		To(MatchRegexp(`; 1 answers slower than the samples' bound, each on the connection that had answered before, the slowest in 0\.[34] s$`))
}

func TestSampleVersions(t *testing.T) {
	g := NewWithT(t)
	probes := map[string]framework.VersionProbe{"c-0": versionOf("3.6.16"), "c-1": versionOf(""), "c-2": versionOf("3.7.3")}
	start := time.Now()
	s := framework.SampleVersions(context.Background(), probes, 100*time.Millisecond)
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second), "a silent member holds the sample for its bound only")
	g.Expect(s.Versions).To(Equal(map[string]string{"c-0": "3.6.16", "c-1": "", "c-2": "3.7.3"}))
	g.Expect(s.Silent()).To(Equal([]string{"c-1"}))
	g.Expect(s.Why).To(Equal(map[string]string{"c-1": "context deadline exceeded"}))
	g.Expect(s.Slow).To(BeEmpty())
	g.Expect(s.At).NotTo(BeZero())
}

// A breach names why each silent member did not answer, as the sample recorded it.
func TestCheckRollingUpgradeSaysWhyMembersWereSilent(t *testing.T) {
	samples := series("ooo", "o-o", "o--", "onn", "nnn")
	samples[2].Why = map[string]string{"c-1": "connection refused", "c-2": "context deadline exceeded"}
	err := framework.CheckRollingUpgrade(members, "3.6.16", "3.7.3", samples)
	NewWithT(t).Expect(err).To(MatchError("at 2.0 s members c-1 (connection refused) and c-2 (context deadline exceeded) did not answer at the same time: " +
		"more than one member was down or restarting"))
}
