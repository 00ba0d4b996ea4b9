package controllers

import (
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// hangingStatus is a fake cluster whose members at the hanging endpoints never answer their
// status call: it returns only when the caller's context ends.
type hangingStatus struct {
	*fake.Client
	hanging map[string]bool
}

func (h hangingStatus) Status(ctx context.Context, endpoint string) (etcd.MemberStatus, error) {
	if h.hanging[endpoint] {
		<-ctx.Done()
		return etcd.MemberStatus{}, ctx.Err()
	}
	return h.Client.Status(ctx, endpoint)
}

// The members are asked at once, one whose pod is not Ready for at most
// startingStatusTimeout, and one whose pod is being deleted not at all.
func TestAskMembersBoundsEachCallAndSkipsDeletedPods(t *testing.T) {
	g := NewWithT(t)
	names := cluster.For(&etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	var members []membership.Member
	var list []etcd.Member
	for i := range 4 {
		n := names.MemberName(i)
		members = append(members, membership.Member{Name: n, ID: uint64(i + 1), Started: true})
		list = append(list, etcd.Member{ID: uint64(i + 1), Name: n, ClientURLs: []string{names.ClientURL(n)}})
	}
	f := fake.New(list...)
	cli := hangingStatus{Client: f, hanging: map[string]bool{
		names.ClientURL("a-1"): true, names.ClientURL("a-2"): true, // starting, and silent
	}}
	pods := map[string]membership.Pod{
		"a-0": {Ready: true},
		"a-1": {},
		"a-2": {},
		"a-3": {Ready: true, Terminating: true},
	}

	start := time.Now()
	got := askMembers(context.Background(), cli, names, members, pods)
	took := time.Since(start)

	g.Expect(took).To(BeNumerically("<", startingStatusTimeout+time.Second),
		"two silent starting members cost one bound, not two, and not statusTimeout")
	g.Expect(took).To(BeNumerically(">=", startingStatusTimeout))
	g.Expect(got["a-0"].err).NotTo(HaveOccurred())
	g.Expect(got["a-1"].err).To(MatchError(context.DeadlineExceeded))
	g.Expect(got["a-2"].err).To(MatchError(context.DeadlineExceeded))
	g.Expect(got["a-3"].err).To(MatchError(ContainSubstring("being deleted")))
	for _, call := range f.Calls() {
		g.Expect(call).NotTo(ContainSubstring(names.ClientURL("a-3")), "a member whose pod is being deleted is not asked")
	}
	g.Expect(strings.Join(f.Calls(), " ")).To(ContainSubstring(names.ClientURL("a-0")))
}
