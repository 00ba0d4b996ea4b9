package etcd_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

func TestAlarmsAreReadByMember(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcd.Alarms(nil)).To(BeNil())
	g.Expect(etcd.Alarms([]string{"raft: not leader"})).To(BeNil(), "an error that is not an alarm")
	g.Expect(etcd.Alarms([]string{
		"memberID:1311986520163737914 alarm:NOSPACE ",
		"memberID:1311986520163737914 alarm:NOSPACE ",
		"memberID:42 alarm:CORRUPT",
		"memberID:1311986520163737914 alarm:CORRUPT ",
	})).To(Equal(map[uint64][]string{
		1311986520163737914: {"NOSPACE", "CORRUPT"},
		42:                  {"CORRUPT"},
	}))
}

func TestIsAlarm(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcd.IsAlarm("memberID:42 alarm:NOSPACE")).To(BeTrue())
	g.Expect(etcd.IsAlarm("raft: not leader")).To(BeFalse())
}

// A member is healthy despite alarms that do not stop it serving: NOSPACE, or another
// member's CORRUPT.
func TestHealthyDespiteAlarms(t *testing.T) {
	g := NewWithT(t)
	g.Expect(etcd.MemberHealthy(7, nil)).To(BeTrue())
	g.Expect(etcd.MemberHealthy(7, []string{"memberID:7 alarm:NOSPACE"})).To(BeTrue(), "NOSPACE must not block its own recovery")
	g.Expect(etcd.MemberHealthy(7, []string{"memberID:8 alarm:CORRUPT"})).To(BeTrue(), "another member's CORRUPT alarm")
	g.Expect(etcd.MemberHealthy(7, []string{"memberID:7 alarm:CORRUPT"})).To(BeFalse(), "its own CORRUPT alarm")
	g.Expect(etcd.MemberHealthy(7, []string{"raft: stopped"})).To(BeFalse(), "an error that is not an alarm")
}
