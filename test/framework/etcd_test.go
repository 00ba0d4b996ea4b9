package framework_test

import (
	"context"
	"errors"
	"os"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcdtest"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

// ReadFromMember reads from the member's own endpoint, with the client certificate of
// status.clientSecret, and says which member a failed read was for.
func TestReadFromMember(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}}
	c.Status.ClientService, c.Status.ClientSecret = "c-client", "c-client-tls"
	env := newEnv(t, clientSecret(t))
	var asked etcd.Config
	env.ReadLocal = func(_ context.Context, cfg etcd.Config, key string) (framework.MemberRead, error) {
		asked = cfg
		if key == "/gone" {
			return framework.MemberRead{}, errors.New("context deadline exceeded")
		}
		return framework.MemberRead{Value: "v", Found: true, MemberID: 7}, nil
	}
	got := env.ReadFromMember(context.Background(), c, "c-1", "/k")
	g.Expect(got).To(Equal(framework.MemberRead{Value: "v", Found: true, MemberID: 7}))
	g.Expect(asked.Endpoints).To(Equal([]string{"https://c-1.c-peer.scorecard.svc:2379"}))
	g.Expect(asked.TLS).NotTo(BeNil())
	g.Expect(asked.TLS.Certificates).To(HaveLen(1))
	got = env.ReadFromMember(context.Background(), c, "c-1", "/gone")
	g.Expect(got.Err).To(MatchError("reading /gone from member c-1 alone: context deadline exceeded"))
}

// The serializable read of a real etcd, as ReadFromMember makes it in the cluster.
func TestReadLocal(t *testing.T) {
	g := NewWithT(t)
	if os.Getenv("ETCD_TEST_BINARY") == "" {
		t.Setenv("ETCD_TEST_BINARY", "../../bin/etcd-v3.6.16/etcd") // from test/framework
	}
	srv := etcdtest.Start(t, etcdtest.Options{})
	cli, err := etcd.New(etcd.Config{Endpoints: srv.ClientURLs})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = cli.Close() })
	srv.WaitReady(t, func(ctx context.Context) error { return cli.Put(ctx, "/canary", "original") })

	cfg := etcd.Config{Endpoints: srv.ClientURLs}
	got, err := framework.ReadLocal(context.Background(), cfg, "/canary")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Found).To(BeTrue())
	g.Expect(got.Value).To(Equal("original"))
	g.Expect(got.MemberID).NotTo(BeZero(), "the member that answered, from the header")
	got, err = framework.ReadLocal(context.Background(), cfg, "/none")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got.Found).To(BeFalse())
}
