package framework_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

func TestIsNoSpace(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.IsNoSpace(nil)).To(BeFalse())
	g.Expect(framework.IsNoSpace(fmt.Errorf("writing etcd key %q: %w", "/k", rpctypes.ErrNoSpace))).To(BeTrue(), "as clientv3 returns it")
	g.Expect(framework.IsNoSpace(rpctypes.ErrGRPCNoSpace)).To(BeTrue(), "a raw gRPC status")
	g.Expect(framework.IsNoSpace(errors.New("rpc error: code = ResourceExhausted desc = etcdserver: mvcc: database space exceeded"))).To(BeTrue())
	g.Expect(framework.IsNoSpace(rpctypes.ErrTimeout)).To(BeFalse())
	g.Expect(framework.IsNoSpace(errors.New("context deadline exceeded"))).To(BeFalse())
}

const mib = 1 << 20

// defragmented records a defragmentation from before MiB to 1 MiB.
func defragmented(before int64) *etcdv1alpha1.DefragmentationRecord {
	return &etcdv1alpha1.DefragmentationRecord{Time: metav1.Now(), SizeBefore: before * mib, SizeAfter: mib}
}

func TestDefragmented(t *testing.T) {
	cases := []struct {
		name   string
		change func(c *etcdv1alpha1.EtcdCluster)
		want   bool
		state  string
	}{
		{name: "every member shrank by 8 MiB or more", change: func(*etcdv1alpha1.EtcdCluster) {}, want: true,
			state: "c-0 defragmented from 25.0 MiB to 1.0 MiB; c-1 defragmented from 25.0 MiB to 1.0 MiB; c-2 defragmented from 9.0 MiB to 1.0 MiB"},
		{name: "a member not yet", change: func(c *etcdv1alpha1.EtcdCluster) {
			c.Status.Members[0].LastDefragmentation = nil
			c.Status.Members[0].DBSize, c.Status.Members[0].FragmentationPercent = 25*mib, 96
		}, state: "c-0 not defragmented (file 25.0 MiB, 96% free); c-1 defragmented"},
		{name: "a member shrank too little", change: func(c *etcdv1alpha1.EtcdCluster) {
			c.Status.Members[2].LastDefragmentation = defragmented(8)
		}, state: "c-0 defragmented from 25.0 MiB to 1.0 MiB; c-1 defragmented from 25.0 MiB to 1.0 MiB; " +
			"c-2 defragmented from 8.0 MiB to 1.0 MiB, less than 8.0 MiB smaller"},
		{name: "a member missing from status", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Members = c.Status.Members[:2] },
			state: "c-0 defragmented from 25.0 MiB to 1.0 MiB; c-1 defragmented from 25.0 MiB to 1.0 MiB"},
		{name: "no members", change: func(c *etcdv1alpha1.EtcdCluster) { c.Status.Members = nil }, state: "no members in status yet"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := settled()
			c.Status.Members[0].LastDefragmentation = defragmented(25)
			c.Status.Members[1].LastDefragmentation = defragmented(25)
			c.Status.Members[2].LastDefragmentation = defragmented(9)
			tc.change(c)
			done, state := framework.Defragmented(8 * mib)(c)
			g.Expect(done).To(Equal(tc.want))
			g.Expect(state).To(HavePrefix(tc.state))
		})
	}
}

func TestNoAlarms(t *testing.T) {
	g := NewWithT(t)
	c := settled()
	done, state := framework.NoAlarms()(c)
	g.Expect(done).To(BeTrue())
	g.Expect(state).To(Equal(framework.Describe(c)))

	c.Status.Members[1].Alarms = []string{"NOSPACE"}
	c.Status.Members[2].Alarms = []string{"NOSPACE", "CORRUPT"}
	done, state = framework.NoAlarms()(c)
	g.Expect(done).To(BeFalse())
	g.Expect(state).To(HaveSuffix(", alarms on c-1 NOSPACE, c-2 NOSPACE+CORRUPT"))
}

// defragEvent is a MemberDefragmented event about member at second s of eventTime; c-0
// was the leader.
func defragEvent(member string, s int) corev1.Event {
	msg := fmt.Sprintf("Defragmented member %s: its database file went from 25.0 MiB to 0.1 MiB", member)
	if member == "c-0" {
		msg += framework.LeaderDefragmented
	}
	return corev1.Event{Reason: framework.EventMemberDefragmented, Type: corev1.EventTypeNormal,
		Message: msg, EventTime: metav1.NewMicroTime(time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC))}
}

func TestCheckDefragmentationOrder(t *testing.T) {
	other := corev1.Event{Reason: "ClusterAvailable", Message: "member c-0: ok"}
	coreEvent := defragEvent("c-1", 0)
	coreEvent.EventTime = metav1.MicroTime{}
	coreEvent.LastTimestamp = metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 1, 0, time.UTC))
	cases := []struct {
		name   string
		events []corev1.Event
		order  []string
		err    string
	}{
		{name: "followers first, the leader last", order: []string{"c-2", "c-1", "c-0"},
			events: []corev1.Event{defragEvent("c-0", 3), other, defragEvent("c-1", 2), defragEvent("c-2", 1)}},
		{name: "a core event, in seconds", order: []string{"c-1", "c-2", "c-0"},
			events: []corev1.Event{defragEvent("c-0", 3), coreEvent, defragEvent("c-2", 2)}},
		{name: "a member twice: its first counts", order: []string{"c-1", "c-2", "c-0"},
			events: []corev1.Event{defragEvent("c-1", 1), defragEvent("c-2", 2), defragEvent("c-0", 3), defragEvent("c-1", 4)}},
		{name: "the leader first", order: []string{"c-0", "c-1", "c-2"},
			events: []corev1.Event{defragEvent("c-0", 1), defragEvent("c-1", 2), defragEvent("c-2", 3)},
			err:    "the leader c-0 was not defragmented last: the events tell the order c-0, c-1, c-2"},
		{name: "a member without an event", order: []string{"c-1", "c-0"},
			events: []corev1.Event{defragEvent("c-1", 1), defragEvent("c-0", 2), defragEvent("c-20", 3)},
			err:    "no MemberDefragmented event about member c-2 (events of members c-1, c-0)"},
		{name: "no events", err: "no MemberDefragmented event about member c-0, c-1, c-2 (events of members none)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			order, err := framework.CheckDefragmentationOrder(settled(), tc.events)
			g.Expect(order).To(Equal(tc.order))
			if tc.err == "" {
				g.Expect(err).NotTo(HaveOccurred())
			} else {
				g.Expect(err).To(MatchError(tc.err))
			}
		})
	}
	g := NewWithT(t)
	// Leadership moved to c-1 once the leader c-0 was defragmented: the events tell.
	c := settled()
	c.Status.Members[0].Leader, c.Status.Members[1].Leader = false, true
	order, err := framework.CheckDefragmentationOrder(c, []corev1.Event{defragEvent("c-1", 1), defragEvent("c-2", 2), defragEvent("c-0", 3)})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(order).To(Equal([]string{"c-1", "c-2", "c-0"}))
	// An operator that does not say which member was the leader fails.
	plain := defragEvent("c-0", 3)
	plain.Message = strings.TrimSuffix(plain.Message, framework.LeaderDefragmented)
	_, err = framework.CheckDefragmentationOrder(settled(), []corev1.Event{defragEvent("c-1", 1), defragEvent("c-2", 2), plain})
	g.Expect(err).To(MatchError(`no MemberDefragmented event about EtcdCluster c says its member was the leader ("; it was the leader")`))
}

func TestMissingReasons(t *testing.T) {
	g := NewWithT(t)
	events := []corev1.Event{{Reason: "NoSpace"}, {Reason: framework.EventNoSpaceDisarmed}}
	g.Expect(framework.MissingReasons(events, framework.EventNoSpaceDisarmed, framework.EventNoSpaceRecovered)).To(Equal([]string{framework.EventNoSpaceRecovered}))
	g.Expect(framework.MissingReasons(events, framework.EventNoSpaceDisarmed)).To(BeEmpty())
	g.Expect(framework.MissingReasons(nil, "A", "B")).To(Equal([]string{"A", "B"}))
}

func TestMiB(t *testing.T) {
	g := NewWithT(t)
	g.Expect(framework.MiB(24*mib + mib/2)).To(Equal("24.5 MiB"))
	g.Expect(framework.MiB(0)).To(Equal("0.0 MiB"))
}
