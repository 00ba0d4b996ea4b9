package auth_test

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/auth"
)

func TestAdmins(t *testing.T) {
	g := NewWithT(t)
	g.Expect(auth.Admins("etcdpilot", "c-member")).To(Equal([]string{"c-member", "etcdpilot", "root"}))
	g.Expect(auth.Admins("root", "")).To(Equal([]string{"root"}), "no duplicate, no empty name")
}

func TestPlan(t *testing.T) {
	admins := auth.Admins("etcdpilot", "c-member")
	for _, tc := range []struct {
		name string
		want bool
		o    auth.Observed
		kind auth.Kind
	}{
		{"off and not wanted", false, auth.Observed{}, auth.None},
		{"on and not wanted: disabled", false, auth.Observed{Enabled: true, RootUsers: admins}, auth.Disable},
		{"wanted: the admins hold root first", true, auth.Observed{}, auth.GrantRoot},
		{"wanted, one admin not seen holding root", true, auth.Observed{RootUsers: []string{"etcdpilot", "root"}}, auth.GrantRoot},
		{"wanted, the admins hold root: enabled", true, auth.Observed{RootUsers: admins}, auth.Enable},
		{"wanted and on, with the admins", true, auth.Observed{Enabled: true, RootUsers: admins}, auth.None},
		{"on from a restored backup, the admins not known: granted again", true, auth.Observed{Enabled: true}, auth.GrantRoot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := auth.Plan(tc.want, admins, tc.o)
			g := NewWithT(t)
			g.Expect(a.Kind).To(Equal(tc.kind))
			if tc.kind == auth.GrantRoot || tc.kind == auth.Enable {
				g.Expect(a.Users).To(Equal(admins))
			}
		})
	}
}

func TestLook(t *testing.T) {
	g := NewWithT(t)
	g.Expect(auth.Look(false, nil, false)).To(BeFalse(), "never asked for: etcd is not asked")
	g.Expect(auth.Look(true, nil, false)).To(BeTrue())
	g.Expect(auth.Look(false, &auth.Observed{Enabled: true}, false)).To(BeTrue(), "seen on, now not wanted: turned off")
	g.Expect(auth.Look(false, &auth.Observed{}, false)).To(BeFalse(), "seen off and not wanted")
	g.Expect(auth.Look(false, nil, true)).To(BeTrue(), "restored: the backup may carry auth")
	g.Expect(auth.Look(false, &auth.Observed{}, true)).To(BeFalse(), "restored and seen off")
}

func TestLacking(t *testing.T) {
	g := NewWithT(t)
	g.Expect(auth.Lacking([]string{"a", "b", "root"}, []string{"root", "a"})).To(Equal([]string{"b"}))
	g.Expect(auth.Lacking([]string{"a"}, []string{"a"})).To(BeEmpty())
}

func TestObserve(t *testing.T) {
	g := NewWithT(t)
	seen := []string{"etcdpilot", "root"}
	g.Expect(auth.Observe(&auth.Observed{Enabled: true, RootUsers: seen}, true)).To(Equal(auth.Observed{Enabled: true, RootUsers: seen}))
	g.Expect(auth.Observe(&auth.Observed{Enabled: true, RootUsers: seen}, false)).To(Equal(auth.Observed{}), "off now: checked again when on")
	g.Expect(auth.Observe(&auth.Observed{}, true)).To(Equal(auth.Observed{Enabled: true}), "on from a restore: its users not known")
	g.Expect(auth.Observe(nil, true)).To(Equal(auth.Observed{Enabled: true}))
}
