package membership_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// upgrading is a healthy 3-member cluster (e-0 leads) whose pods run the given versions,
// created an hour before now, with spec.version target.
func upgrading(target string, podVersions ...string) membership.Observed {
	o := membership.Observed{Cluster: c, Size: len(podVersions), Now: now, Pods: map[string]membership.Pod{}, PVCs: map[string]membership.PVC{},
		Upgrade: membership.Upgrade{Target: target, MemberTimeout: 5 * time.Minute, SnapshotTaken: true, RaftSnapshotsForced: true, SnapshotCount: 10000}}
	for i, v := range podVersions {
		m := voter(i, uint64(10+i))
		m.RaftIndex = 5000
		if i == 0 {
			m = leader(m)
		}
		o.Members = append(o.Members, m)
		o.Pods[m.Name] = membership.Pod{Ready: true, Version: v, Created: now.Add(-time.Hour)}
		o.PVCs[m.Name] = membership.PVC{Bootstrapped: true}
	}
	return o
}

// backingUp is a 3.5 -> 3.6 upgrade with spec.upgradeBackupDestination set, before the
// snapshot is recorded, its EtcdBackup as given.
func backingUp(b membership.UpgradeBackup) func() membership.Observed {
	return func() membership.Observed {
		o := upgrading("3.6.16", "3.5.35", "3.5.35", "3.5.35")
		o.Upgrade.SnapshotTaken = false
		o.Upgrade.Backup = &b
		return o
	}
}

func TestUpgrade(t *testing.T) {
	e0, e1, e2 := c.MemberName(0), c.MemberName(1), c.MemberName(2)
	runPlanCases(t, []planCase{
		{
			name: "everyone at spec.version: nothing to do",
			obs:  func() membership.Observed { return upgrading("3.6.16", "3.6.16", "3.6.16", "3.6.16") },
			want: membership.None,
		},
		{
			name: "a new minor: first a snapshot, on a follower's volume",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.5.35", "3.5.35")
				o.Upgrade.SnapshotTaken = false
				return o
			},
			want: membership.Snapshot,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.6.16"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
				g.Expect(a.Message).To(ContainSubstring("saving a snapshot to the volume of member " + e1))
			},
		},
		{
			name: "with a backup destination: first the EtcdBackup is created",
			obs:  backingUp(membership.UpgradeBackup{Name: "e-pre-upgrade-3-6-16", State: membership.BackupMissing}),
			want: membership.CreateBackup,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Backup).To(Equal("e-pre-upgrade-3-6-16"))
				g.Expect(a.Version).To(Equal("3.6.16"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
				g.Expect(a.Message).To(ContainSubstring("backing up to spec.upgradeBackupDestination (EtcdBackup e-pre-upgrade-3-6-16)"))
			},
		},
		{
			name: "with a backup destination, the backup running: no member is restarted",
			obs:  backingUp(membership.UpgradeBackup{Name: "e-pre-upgrade-3-6-16", State: membership.BackupRunning}),
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(ContainSubstring("waiting for EtcdBackup e-pre-upgrade-3-6-16"))
			},
		},
		{
			name: "with a backup destination, the backup succeeded: it is recorded as the snapshot",
			obs:  backingUp(membership.UpgradeBackup{Name: "e-pre-upgrade-3-6-16", State: membership.BackupSucceeded}),
			want: membership.Snapshot,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Backup).To(Equal("e-pre-upgrade-3-6-16"))
				g.Expect(a.Member).To(BeEmpty(), "no member's volume is used")
			},
		},
		{
			name: "with a backup destination, the backup failed: the upgrade is blocked and says how to go on",
			obs:  backingUp(membership.UpgradeBackup{Name: "e-pre-upgrade-3-6-16", State: membership.BackupFailed, Message: "DestinationUnreachable: no route"}),
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeBlocked))
				g.Expect(a.Message).To(ContainSubstring("EtcdBackup e-pre-upgrade-3-6-16, failed (DestinationUnreachable: no route)"))
				g.Expect(a.Message).To(ContainSubstring("delete EtcdBackup e-pre-upgrade-3-6-16 to try again"))
			},
		},
		{
			name: "with a backup destination, snapshot recorded: the first follower is restarted",
			obs: func() membership.Observed {
				o := backingUp(membership.UpgradeBackup{Name: "e-pre-upgrade-3-6-16", State: membership.BackupSucceeded})()
				o.Upgrade.SnapshotTaken = true
				return o
			},
			want: membership.RestartMember,
		},
		{
			name: "to 3.7: every member takes a raft snapshot before the first restart",
			obs: func() membership.Observed {
				o := upgrading("3.7.3", "3.6.16", "3.6.16", "3.6.16")
				o.Upgrade.RaftSnapshotsForced = false
				return o
			},
			want: membership.ForceRaftSnapshots,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Entries).To(Equal(10100))
				g.Expect(a.Version).To(Equal("3.7.3"))
			},
		},
		{
			name: "to 3.7, one member already restarted: no more padding",
			obs: func() membership.Observed {
				o := upgrading("3.7.3", "3.6.16", "3.6.16", "3.7.3")
				o.Upgrade.RaftSnapshotsForced = false
				return o
			},
			want: membership.RestartMember,
		},
		{
			name: "no snapshot when going back to what members still run",
			obs: func() membership.Observed {
				o := upgrading("3.5.35", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.SnapshotTaken = false
				return o
			},
			want: membership.RestartMember,
		},
		{
			name: "a new minor, snapshot taken: the first follower is restarted at it",
			obs:  func() membership.Observed { return upgrading("3.6.16", "3.5.35", "3.5.35", "3.5.35") },
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.6.16"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
				g.Expect(a.Message).To(ContainSubstring("0/3 members at 3.6.16"))
			},
		},
		{
			name: "followers done: leadership moves to an upgraded member before the leader restarts",
			obs:  func() membership.Observed { return upgrading("3.6.16", "3.5.35", "3.6.16", "3.6.16") },
			want: membership.MoveLeader,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e0))
				g.Expect(a.MemberID).To(Equal(uint64(11)))
				g.Expect(a.Message).To(ContainSubstring("2/3 members at 3.6.16"))
			},
		},
		{
			name: "the old leader is a follower now: it restarts",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.6.16")
				o.Members[0].Leader, o.Members[1].Leader = false, true
				return o
			},
			want:  membership.RestartMember,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e0)) },
		},
		{
			name:  "a single member restarts in place: there is nobody to lead instead",
			obs:   func() membership.Observed { return upgrading("3.7.3", "3.6.16") },
			want:  membership.RestartMember,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e0)) },
		},
		{
			name: "a member behind the leader's raft index: wait until it catches up",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Members[1].RaftIndex = 3000
				return o
			},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("catch up"))
			},
		},
		{
			name: "the restarted member is not healthy yet, within the timeout: wait",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From = "3.5.35"
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Pods[e1] = membership.Pod{Version: "3.6.16", Created: now.Add(-time.Minute)}
				return o
			},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading), "the wait belongs to the upgrade")
				g.Expect(a.Message).To(HavePrefix("upgrading to 3.6.16: 1/3 members at 3.6.16; waiting for member " + e1))
			},
		},
		{
			name: "a restarted member's pod is created again as part of the upgrade",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.6.16")
				o.Upgrade.From = "3.5.35"
				delete(o.Pods, e2)
				return o
			},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e2))
				g.Expect(a.Version).To(Equal("3.6.16"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgrading))
				g.Expect(a.Message).To(HavePrefix("upgrading to 3.6.16: 1/3 members at 3.6.16; "))
			},
		},
		{
			name: "the restarted member is not healthy past the timeout while others run the old release: roll back",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From = "3.5.35"
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Pods[e1] = membership.Pod{Version: "3.6.16", Created: now.Add(-6 * time.Minute)}
				return o
			},
			want: membership.RollBack,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.5.35"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeRolledBack))
				g.Expect(a.Message).To(ContainSubstring("set spec.version to 3.5.35, then to 3.6.16 again"))
			},
		},
		{
			name: "every member already runs the new release: no rollback (the cluster version may be raised)",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.6.16", "3.6.16", "3.6.16")
				o.Upgrade.From = "3.5.35"
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				o.Pods[e1] = membership.Pod{Version: "3.6.16", Created: now.Add(-time.Hour)}
				return o
			},
			want: membership.Wait,
		},
		{
			name: "rolled back: the failed member goes back at once, health gates or not",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				o.Members[1].Healthy, o.Members[1].Ready = false, false
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.5.35"))
			},
		},
		{
			name: "rolled back: the failed member answers but is not Ready, and another voter is down: wait",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				o.Members[1].Ready = false
				o.Members[2].Healthy, o.Members[2].Ready = false, false
				return o
			},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(Equal("not restarting member " + e1 + " yet: 1 of the 2 other voting members are healthy"))
			},
		},
		{
			name: "rolled back: the failed member answers, is not Ready and leads: leadership moves first",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				for i := range o.Members {
					o.Members[i].Leader = i == 1
				}
				o.Members[1].Ready = false
				return o
			},
			want: membership.MoveLeader,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.MemberID).To(Equal(uint64(10)), "to the first healthy voter")
			},
		},
		{
			name: "rolled back: the failed member's pod is already stopping: wait for it",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.6.16", "3.5.35")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				stopping(&o, 1)
				return o
			},
			want: membership.Wait,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Message).To(Equal("waiting for the pod of member " + e1 + " to stop; it comes back on 3.5.35"))
			},
		},
		{
			name: "rolled back: a recreated pod runs the old release",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.5.35", "3.5.35")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				delete(o.Pods, e1)
				return o
			},
			want: membership.CreatePod,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Version).To(Equal("3.5.35"))
			},
		},
		{
			name: "rolled back: a healthy member upgraded earlier goes back too, through the gates",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.5.35", "3.5.35", "3.6.16")
				o.Upgrade.From, o.Upgrade.RolledBack = "3.5.35", true
				return o
			},
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e2))
				g.Expect(a.Version).To(Equal("3.5.35"))
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeRolledBack))
			},
		},
		{
			name: "spec.version set back while a member still runs the old release: it goes back",
			obs:  func() membership.Observed { return upgrading("3.5.35", "3.5.35", "3.6.16", "3.5.35") },
			want: membership.RestartMember,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Member).To(Equal(e1))
				g.Expect(a.Message).To(ContainSubstring("going back to 3.5.35"))
			},
		},
		{
			name: "a member that cannot reach spec.version in one step: touch nothing",
			obs:  func() membership.Observed { return upgrading("3.7.3", "3.6.16", "3.5.35", "3.6.16") },
			want: membership.Blocked,
			check: func(g Gomega, a membership.Action) {
				g.Expect(a.Reason).To(Equal(etcdv1alpha1.ReasonUpgradeBlocked))
				g.Expect(a.Message).To(ContainSubstring("member " + e1 + " runs 3.5.35, which cannot go to 3.7.3"))
			},
		},
		{
			name: "a member whose release is unknown: wait",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.6.16", "", "3.6.16")
				return o
			},
			want:  membership.Wait,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Member).To(Equal(e1)) },
		},
		{
			name: "growing during an upgrade: the new member runs the target release",
			obs: func() membership.Observed {
				o := upgrading("3.6.16", "3.6.16", "3.6.16", "3.6.16")
				o.Size = 5
				return o
			},
			want:  membership.AddLearner,
			check: func(g Gomega, a membership.Action) { g.Expect(a.Version).To(Equal("3.6.16")) },
		},
	})
}

// planCase is one row of a planner table test: the observation, the kind of action Plan
// must choose, and what else to check about it.
type planCase struct {
	name  string
	obs   func() membership.Observed
	want  membership.Kind
	check func(g Gomega, a membership.Action)
}

func runPlanCases(t *testing.T, cases []planCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			a := membership.Plan(tc.obs())
			g.Expect(a.Kind).To(Equal(tc.want), "action: %+v", a)
			g.Expect(a.Message).NotTo(BeEmpty())
			if tc.check != nil {
				tc.check(g, a)
			}
		})
	}
}
