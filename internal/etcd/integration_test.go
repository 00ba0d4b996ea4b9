package etcd_test

import (
	"context"
	"crypto/tls"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
)

// TestAgainstRealEtcd runs the Client against a real single-member etcd listening only on
// 127.0.0.1. The steps share the one server and run in order; the last one leaves the
// cluster without quorum.
func TestAgainstRealEtcd(t *testing.T) {
	srv := startEtcd(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	cli := newClient(t, etcd.Config{Endpoints: []string{srv.httpURL}})
	var self etcd.Member

	t.Run("MemberList", func(t *testing.T) {
		g := NewWithT(t)
		members, err := cli.MemberList(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(members).To(HaveLen(1))
		self = members[0]
		g.Expect(self.ID).NotTo(BeZero())
		g.Expect(self.Name).To(Equal(srv.name))
		g.Expect(self.PeerURLs).To(Equal([]string{srv.peerURL}))
		g.Expect(self.ClientURLs).To(ConsistOf(srv.httpURL, srv.httpsURL))
		g.Expect(self.IsLearner).To(BeFalse())
	})

	t.Run("Status", func(t *testing.T) {
		g := NewWithT(t)
		status, err := cli.Status(ctx, srv.httpURL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status.Endpoint).To(Equal(srv.httpURL))
		g.Expect(status.MemberID).To(Equal(self.ID))
		g.Expect(status.LeaderID).To(Equal(self.ID))
		g.Expect(status.Version).To(MatchRegexp(`^3\.\d+\.\d+`))
		g.Expect(status.DBSize).To(BeNumerically(">", 0))
		g.Expect(status.DBSizeInUse).To(BeNumerically(">", 0))
		g.Expect(status.RaftTerm).To(BeNumerically(">", 0))
		g.Expect(status.RaftIndex).To(BeNumerically(">", 0))
		g.Expect(status.RaftAppliedIndex).To(BeNumerically(">", 0))
		g.Expect(status.IsLearner).To(BeFalse())
		g.Expect(status.Errors).To(BeEmpty())

		// A member that does not answer costs the caller no more than its own deadline.
		shortCtx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		start := time.Now()
		_, err = cli.Status(shortCtx, "http://"+etcdtest.FreeAddr(t))
		g.Expect(err).To(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", 3*time.Second))
	})

	t.Run("Health", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(cli.Health(ctx, srv.httpURL)).To(Succeed())

		// A member that does not answer costs no more than HealthTimeout, even though ctx
		// allows much longer.
		start := time.Now()
		err := cli.Health(ctx, "http://"+etcdtest.FreeAddr(t))
		g.Expect(err).To(HaveOccurred())
		g.Expect(time.Since(start)).To(BeNumerically("<", etcd.HealthTimeout+2*time.Second))
	})

	t.Run("PutGet", func(t *testing.T) {
		g := NewWithT(t)
		_, found, err := cli.Get(ctx, "etcdpilot/canary")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeFalse())
		g.Expect(cli.Put(ctx, "etcdpilot/canary", "alive")).To(Succeed())
		value, found, err := cli.Get(ctx, "etcdpilot/canary")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(value).To(Equal("alive"))
	})

	t.Run("HashKV", func(t *testing.T) {
		g := NewWithT(t)
		st, err := cli.Status(ctx, srv.httpURL)
		g.Expect(err).NotTo(HaveOccurred())
		first, err := cli.HashKV(ctx, srv.httpURL, st.Revision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(first.Revision).To(Equal(st.Revision))
		g.Expect(cli.Put(ctx, "etcdpilot/hashed", "v")).To(Succeed())
		again, err := cli.HashKV(ctx, srv.httpURL, st.Revision)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(again).To(Equal(first), "a revision's hash does not change with later writes")
		after, err := cli.HashKV(ctx, srv.httpURL, st.Revision+1)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(after.Hash).NotTo(Equal(first.Hash), "the write changes the hash of the history up to it")
	})

	t.Run("AppendNoOps", func(t *testing.T) {
		g := NewWithT(t)
		before, err := cli.Status(ctx, srv.httpURL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cli.AppendNoOps(ctx, 200)).To(Succeed())
		after, err := cli.Status(ctx, srv.httpURL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(after.RaftIndex-before.RaftIndex).To(BeNumerically(">=", 200), "200 raft entries")
		value, found, err := cli.Get(ctx, "etcdpilot/canary")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(value).To(Equal("alive"), "the keyspace is untouched")
		_, found, err = cli.Get(ctx, "\x00etcdpilot/no-op")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeFalse(), "the no-op key is never written")
	})

	// The learner is never started: nothing listens on its peer URL.
	var learner etcd.Member
	t.Run("MemberAddAsLearner", func(t *testing.T) {
		g := NewWithT(t)
		peerURL := "http://" + etcdtest.FreeAddr(t)
		var list []etcd.Member
		var err error
		learner, list, err = cli.MemberAddAsLearner(ctx, []string{peerURL})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(learner.ID).NotTo(BeZero())
		g.Expect(learner.Name).To(BeEmpty(), "not started yet")
		g.Expect(learner.PeerURLs).To(Equal([]string{peerURL}))
		g.Expect(learner.IsLearner).To(BeTrue())
		g.Expect(list).To(HaveLen(2))
		g.Expect(list).To(ContainElement(learner))

		members, err := cli.MemberList(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(members).To(ContainElement(learner))

		_, _, err = cli.MemberAddAsLearner(ctx, []string{"http://" + etcdtest.FreeAddr(t)})
		g.Expect(etcd.IsTooManyLearners(err)).To(BeTrue(), "etcd allows one learner by default: %v", err)
	})

	t.Run("MemberPromote", func(t *testing.T) {
		g := NewWithT(t)
		err := cli.MemberPromote(ctx, learner.ID)
		g.Expect(etcd.IsLearnerNotReady(err)).To(BeTrue(), "a learner that never started is not caught up: %v", err)

		// "can only promote a learner member" is a different error, although its text is a
		// prefix of the not-caught-up one.
		err = cli.MemberPromote(ctx, self.ID)
		g.Expect(err).To(HaveOccurred())
		g.Expect(etcd.IsLearnerNotReady(err)).To(BeFalse(), "%v", err)
	})

	t.Run("MoveLeader", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(cli.MoveLeader(ctx, learner.ID)).NotTo(Succeed(), "a learner cannot lead")
		g.Expect(cli.MoveLeader(ctx, self.ID)).To(Succeed(), "moving leadership to the leader changes nothing")
	})

	t.Run("MemberRemove", func(t *testing.T) {
		g := NewWithT(t)
		g.Expect(cli.MemberRemove(ctx, learner.ID)).To(Succeed())
		members, err := cli.MemberList(ctx)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(members).To(Equal([]etcd.Member{self}))

		err = cli.MemberRemove(ctx, learner.ID)
		g.Expect(etcd.IsMemberNotFound(err)).To(BeTrue(), "%v", err)

		err = cli.MemberRemove(ctx, self.ID)
		g.Expect(etcd.IsUnhealthyCluster(err)).To(BeTrue(), "removing the last member would lose quorum: %v", err)
	})

	t.Run("TLS", func(t *testing.T) {
		g := NewWithT(t)
		tlsCli := newClient(t, etcd.Config{Endpoints: []string{srv.httpsURL}, TLS: srv.clientTLS})
		g.Expect(tlsCli.Put(ctx, "etcdpilot/tls", "yes")).To(Succeed())
		value, found, err := tlsCli.Get(ctx, "etcdpilot/tls")
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(found).To(BeTrue())
		g.Expect(value).To(Equal("yes"))
		status, err := tlsCli.Status(ctx, srv.httpsURL)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(status.MemberID).To(Equal(self.ID))
		// Health and MoveLeader dial the member on their own, with the same TLS config.
		g.Expect(tlsCli.Health(ctx, srv.httpsURL)).To(Succeed())
		g.Expect(tlsCli.MoveLeader(ctx, self.ID)).To(Succeed())

		// The server requires a client certificate.
		noCert := srv.clientTLS.Clone()
		noCert.Certificates = nil
		anonymous := newClient(t, etcd.Config{Endpoints: []string{srv.httpsURL}, TLS: noCert})
		shortCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		g.Expect(anonymous.Health(shortCtx, srv.httpsURL)).NotTo(Succeed())
	})

	// Last, because adding a voting member that never starts costs a one-member cluster its
	// quorum: etcd allows this one case (it is how a single member grows), but nothing
	// linearizable works afterwards.
	t.Run("MemberAdd", func(t *testing.T) {
		g := NewWithT(t)
		peerURL := "http://" + etcdtest.FreeAddr(t)
		added, list, err := cli.MemberAdd(ctx, []string{peerURL})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(added.IsLearner).To(BeFalse())
		g.Expect(added.PeerURLs).To(Equal([]string{peerURL}))
		g.Expect(list).To(ConsistOf(self, added))
	})
}

// newClient returns a Client closed when the test ends.
func newClient(t *testing.T, cfg etcd.Config) etcd.Client {
	t.Helper()
	cli, err := etcd.New(cfg)
	if err != nil {
		t.Fatalf("creating etcd client: %v", err)
	}
	t.Cleanup(func() { _ = cli.Close() })
	return cli
}

// testEtcd is a single-member etcd serving clients on 127.0.0.1 over both http and https.
type testEtcd struct {
	name      string
	peerURL   string
	httpURL   string
	httpsURL  string
	clientTLS *tls.Config // trusts the server and carries a client certificate
}

// startEtcd starts etcd with etcdtest.Start in a temporary directory, waits until it is
// healthy and kills it when the test ends. It listens on 127.0.0.1 only: peer and plain
// client URLs over http, and a client URL over https that requires a client certificate.
func startEtcd(t *testing.T) *testEtcd {
	t.Helper()
	certs := etcdtest.WriteCerts(t, t.TempDir(), etcdtest.CertOptions{
		CAName: "etcd-test-ca", ServerName: "etcd-test", ClientName: "etcdpilot",
	})
	srv := &testEtcd{
		name:      "etcd-test",
		peerURL:   "http://" + etcdtest.FreeAddr(t),
		httpURL:   "http://" + etcdtest.FreeAddr(t),
		httpsURL:  "https://" + etcdtest.FreeAddr(t),
		clientTLS: certs.ClientTLS(t),
	}
	e := etcdtest.Start(t, etcdtest.Options{
		Name:       srv.name,
		PeerURL:    srv.peerURL,
		ClientURLs: []string{srv.httpURL, srv.httpsURL},
		Certs:      certs,
	})

	cli := newClient(t, etcd.Config{Endpoints: []string{srv.httpURL}})
	e.WaitReady(t, func(ctx context.Context) error { return cli.Health(ctx, srv.httpURL) })
	return srv
}

// TestNoSpaceRecoveryAgainstRealEtcd raises NOSPACE on a member with a 4 MiB quota and
// clears it the way the operator does: compact to the current revision, defragment, disarm.
// Each step is checked against what etcd then reports.
func TestNoSpaceRecoveryAgainstRealEtcd(t *testing.T) {
	g := NewWithT(t)
	url := "http://" + etcdtest.FreeAddr(t)
	e := etcdtest.Start(t, etcdtest.Options{ClientURLs: []string{url}, Args: []string{"--quota-backend-bytes=4194304"}})
	cli := newClient(t, etcd.Config{Endpoints: []string{url}})
	e.WaitReady(t, func(ctx context.Context) error { return cli.Health(ctx, url) })
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	// Overwrite one key until the quota is exhausted: every version stays in the history.
	value := strings.Repeat("x", 64<<10)
	var putErr error
	for i := 0; i < 1000 && putErr == nil; i++ {
		putErr = cli.Put(ctx, "big", value)
	}
	g.Expect(putErr).To(MatchError(ContainSubstring("database space exceeded")))
	before, err := cli.Status(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(etcd.Alarms(before.Errors)).To(HaveKeyWithValue(before.MemberID, []string{"NOSPACE"}))
	g.Expect(before.Revision).To(BeNumerically(">", 1))
	// Under NOSPACE the member still answers reads: the operator counts it as healthy.
	g.Expect(cli.Health(ctx, url)).To(Succeed())

	g.Expect(cli.Compact(ctx, before.Revision)).To(Succeed())
	g.Expect(etcd.IsCompacted(cli.Compact(ctx, before.Revision))).To(BeTrue(), "a second compaction at the same revision")
	_, err = cli.HashKV(ctx, url, before.Revision-1)
	g.Expect(etcd.IsCompacted(err)).To(BeTrue(), "a hash below the compaction: %v", err)
	g.Expect(cli.Defragment(ctx, url)).To(Succeed())
	after, err := cli.Status(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(after.DBSize).To(BeNumerically("<", before.DBSize/2), "the database file shrinks to what is in use")

	g.Expect(cli.AlarmDisarm(ctx, after.MemberID, "NOSPACE")).To(Succeed())
	g.Expect(cli.AlarmDisarm(ctx, after.MemberID, "NO-SUCH-ALARM")).To(MatchError(ContainSubstring("no such alarm")))
	disarmed, err := cli.Status(ctx, url)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(etcd.Alarms(disarmed.Errors)).To(BeEmpty())
	g.Expect(cli.Put(ctx, "after", "writes work again")).To(Succeed())
	got, found, err := cli.Get(ctx, "big")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(found).To(BeTrue())
	g.Expect(got).To(Equal(value), "compaction keeps the latest version of every key")
}
