package controllers_test

import (
	"context"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// A pass that waits on members that do not answer (a member list can take etcd.CallTimeout)
// holds back no other cluster: while it waits, a new cluster in another namespace is
// reconciled up to its first member's pod. With one worker the new cluster would wait
// behind it.
func TestAPassWaitingOnMembersHoldsNoOtherClusterBack(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	slowNS := newNamespace(t)
	slow := &unansweredList{Client: fake.New(), waiting: make(chan struct{}), release: make(chan struct{})}
	fakeEtcd.registerClient(slowNS, slow)
	t.Cleanup(slow.answer)
	g.Expect(k8sClient.Create(ctx, &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "slow", Namespace: slowNS},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}})).To(Succeed())
	g.Eventually(slow.waiting).WithTimeout(timeout).Should(BeClosed(), "a pass of the first cluster asks for its member list")

	otherNS := newNamespace(t)
	g.Expect(k8sClient.Create(ctx, &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: otherNS},
		Spec: etcdv1alpha1.EtcdClusterSpec{Size: 1}})).To(Succeed())
	g.Eventually(func(g Gomega) {
		get(g, otherNS, "other-0", &corev1.Pod{})
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed(), "the second cluster's first member is created while the first cluster's pass waits")
	g.Expect(slow.stillWaiting()).To(BeTrue(), "the first cluster's pass was still waiting on its members")
}

// unansweredList is a cluster whose member list does not answer until the test lets it:
// a pass that asks for it waits, as one waits up to etcd.CallTimeout on members that do not
// answer. It waits past its context's deadline, so that the test does not depend on how
// short that deadline is; at most a minute.
type unansweredList struct {
	*fake.Client
	waiting, release chan struct{}
	once, freed      sync.Once
	mu               sync.Mutex
	inside           int
}

var _ etcd.Client = (*unansweredList)(nil)

func (u *unansweredList) MemberList(ctx context.Context) ([]etcd.Member, error) {
	u.mu.Lock()
	u.inside++
	u.mu.Unlock()
	defer func() {
		u.mu.Lock()
		u.inside--
		u.mu.Unlock()
	}()
	u.once.Do(func() { close(u.waiting) })
	select {
	case <-u.release:
	case <-time.After(time.Minute):
	}
	return nil, context.DeadlineExceeded
}

func (u *unansweredList) stillWaiting() bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.inside > 0
}

func (u *unansweredList) answer() { u.freed.Do(func() { close(u.release) }) }
