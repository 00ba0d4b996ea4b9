package recovery

import (
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

var t0 = time.Date(2026, 11, 26, 10, 0, 0, 0, time.UTC)

// lostTwo is a 3-member cluster whose members e-0 and e-2 lost their claims and pods: only
// e-1 answers, without a leader.
func lostTwo(now time.Time) Observed {
	return Observed{
		Policy: etcdv1alpha1.QuorumLossManual, After: 5 * time.Minute, Now: now, Size: 3,
		Voters:     []string{"e-0", "e-1", "e-2"},
		Answering:  map[string]uint64{"e-1": 120},
		Pods:       map[string]Pod{"e-1": {}},
		Claims:     map[string]Claim{"e-1": {}},
		MemberName: func(i int) string { return fmt.Sprintf("e-%d", i) },
	}
}

func lostSince(at time.Time) *etcdv1alpha1.RecoveryStatus {
	return &etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoveryQuorumLost, LostSince: metav1.NewTime(at)}
}

func TestDetection(t *testing.T) {
	cases := []struct {
		name  string
		o     func() Observed
		kind  Kind
		phase etcdv1alpha1.RecoveryPhase // "" : no status
	}{
		{"a healthy cluster has nothing to recover", func() Observed {
			o := lostTwo(t0)
			o.Quorum, o.Members = true, []string{"e-0", "e-1", "e-2"}
			return o
		}, None, ""},
		{"a cluster never observed has no quorum to lose", func() Observed {
			o := lostTwo(t0)
			o.Voters = nil
			return o
		}, None, ""},
		{"a member that knows a leader means the quorum is there", func() Observed {
			o := lostTwo(t0)
			o.LeaderKnown = true
			return o
		}, None, ""},
		{"a majority answering is no loss, even when the list failed", func() Observed {
			o := lostTwo(t0)
			o.Answering["e-0"] = 120
			return o
		}, None, ""},
		{"the first pass without quorum starts the clock", func() Observed { return lostTwo(t0) }, None, etcdv1alpha1.RecoveryQuorumLost},
		{"before after has passed nothing is declared", func() Observed {
			o := lostTwo(t0.Add(4 * time.Minute))
			o.Last = lostSince(t0)
			return o
		}, None, etcdv1alpha1.RecoveryQuorumLost},
		{"a loss that ends before it is declared leaves no record", func() Observed {
			o := lostTwo(t0.Add(4 * time.Minute))
			o.Last = lostSince(t0)
			o.Quorum, o.LeaderKnown = true, true
			return o
		}, None, ""},
		{"a sustained loss under Manual awaits approval", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last = lostSince(t0)
			return o
		}, Blocked, etcdv1alpha1.RecoveryAwaitingApproval},
		{"Automatic with the lost members' data gone recovers: the snapshot first", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Policy = lostSince(t0), etcdv1alpha1.QuorumLossAutomatic
			return o
		}, SaveSnapshot, etcdv1alpha1.RecoveryRecovering},
		{"Automatic with a silent member whose data exists awaits approval", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Policy = lostSince(t0), etcdv1alpha1.QuorumLossAutomatic
			o.Claims["e-0"] = Claim{}
			return o
		}, Blocked, etcdv1alpha1.RecoveryAwaitingApproval},
		{"a silent member whose pod is made again on its data is left to the planner, awaiting approval", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Policy = lostSince(t0), etcdv1alpha1.QuorumLossAutomatic
			o.Claims["e-0"], o.Claims["e-2"], o.Restarting = Claim{}, Claim{}, "e-0"
			return o
		}, None, etcdv1alpha1.RecoveryAwaitingApproval},
		{"under Manual too, a pod made again on its data is left to the planner", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last = lostSince(t0)
			o.Claims["e-2"], o.Restarting = Claim{}, "e-2"
			return o
		}, None, etcdv1alpha1.RecoveryAwaitingApproval},
		{"a pod made again on a claim being deleted is not: the recovery stays blocked", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last = lostSince(t0)
			o.Claims["e-2"], o.Restarting = Claim{Going: true}, "e-2"
			return o
		}, Blocked, etcdv1alpha1.RecoveryAwaitingApproval},
		{"nor a pod made again for a member that answers", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Restarting = lostSince(t0), "e-1"
			return o
		}, Blocked, etcdv1alpha1.RecoveryAwaitingApproval},
		{"Automatic with one of five gone and two silent awaits approval", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Policy, o.Size = lostSince(t0), etcdv1alpha1.QuorumLossAutomatic, 5
			o.Voters = []string{"e-0", "e-1", "e-2", "e-3", "e-4"}
			o.Answering["e-3"] = 100
			o.Claims["e-0"], o.Claims["e-2"], o.Claims["e-3"] = Claim{}, Claim{}, Claim{}
			return o
		}, Blocked, etcdv1alpha1.RecoveryAwaitingApproval},
		{"no member answers: blocked, nothing to recover from", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Answering = lostSince(t0), nil
			return o
		}, Blocked, etcdv1alpha1.RecoveryBlocked},
		{"a cluster whose every member's data is gone is not started anew", func() Observed {
			o := lostTwo(t0.Add(time.Minute))
			o.Last, o.Answering, o.Seeding, o.Pods, o.Claims = lostSince(t0), nil, true, nil, nil
			return o
		}, Wait, etcdv1alpha1.RecoveryQuorumLost},
		{"an ephemeral cluster whose pods are all gone starts anew, as documented", func() Observed {
			o := lostTwo(t0.Add(time.Minute))
			o.Last, o.Answering, o.Seeding, o.Pods, o.Claims, o.Ephemeral = lostSince(t0), nil, true, nil, nil, true
			return o
		}, None, etcdv1alpha1.RecoveryQuorumLost},
		{"ephemeral members cannot be recovered from their data", func() Observed {
			o := lostTwo(t0.Add(5 * time.Minute))
			o.Last, o.Ephemeral, o.Policy = lostSince(t0), true, etcdv1alpha1.QuorumLossAutomatic
			return o
		}, Blocked, etcdv1alpha1.RecoveryBlocked},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := Plan(tc.o())
			if s.Kind != tc.kind {
				t.Fatalf("kind %s, want %s (%s)", s.Kind, tc.kind, s.Message)
			}
			switch {
			case tc.phase == "" && s.Status != nil:
				t.Fatalf("status %+v, want none", s.Status)
			case tc.phase != "" && (s.Status == nil || s.Status.Phase != tc.phase):
				t.Fatalf("status %+v, want phase %s", s.Status, tc.phase)
			}
		})
	}
}

func TestLostSinceCarriesOver(t *testing.T) {
	o := lostTwo(t0.Add(time.Minute))
	o.Last = lostSince(t0)
	if s := Plan(o); !s.Status.LostSince.Time.Equal(t0) {
		t.Fatalf("lostSince %s, want %s", s.Status.LostSince, t0)
	}
}

func TestSurvivorIsTheMostAdvancedAnsweringVoter(t *testing.T) {
	o := lostTwo(t0.Add(5 * time.Minute))
	o.Size, o.Voters = 5, []string{"e-0", "e-1", "e-2", "e-3", "e-4"}
	o.Answering = map[string]uint64{"e-1": 120, "e-3": 130, "e-9": 500} // e-9: not a voter
	o.Last = lostSince(t0)
	s := Plan(o)
	if s.Status.Survivor != "e-3" || s.Status.SurvivorAppliedIndex != 130 {
		t.Fatalf("survivor %s at %d, want e-3 at 130", s.Status.Survivor, s.Status.SurvivorAppliedIndex)
	}
	if got := strings.Join(s.Status.LostMembers, ","); got != "e-0,e-2,e-4" {
		t.Fatalf("lost members %s, want e-0,e-2,e-4", got)
	}
	if !strings.Contains(s.Message, etcdv1alpha1.AnnotationApproveRecovery+"="+s.Status.ID) {
		t.Fatalf("the message does not say how to approve: %s", s.Message)
	}
}

func TestApproval(t *testing.T) {
	o := lostTwo(t0.Add(5 * time.Minute))
	o.Last = lostSince(t0)
	waiting := Plan(o).Status
	o.Now, o.Last = o.Now.Add(time.Minute), waiting

	o.Approval = "an-old-id"
	if s := Plan(o); s.Kind != Blocked || s.Status.ID != waiting.ID {
		t.Fatalf("a stale approval went on (%s), or the ID changed (%s -> %s)", s.Kind, waiting.ID, s.Status.ID)
	}
	o.Approval = waiting.ID
	s := Plan(o)
	if s.Kind != SaveSnapshot || !s.Status.Approved || s.Status.Phase != etcdv1alpha1.RecoveryRecovering {
		t.Fatalf("approved: %s %+v, want SaveSnapshot and Recovering", s.Kind, s.Status)
	}
}

// world applies steps to an observation the way the controller and the kubelet would.
type world struct{ o Observed }

func (w *world) apply(t *testing.T, s Step) {
	t.Helper()
	w.o.Last = s.Status
	switch s.Kind {
	case SaveSnapshot:
		w.o.Last.Snapshot = SnapshotKey(s.Status.ID)
	case Retire:
		delete(w.o.Pods, s.Member)
		delete(w.o.Claims, s.Member)
	case StopSurvivor:
		delete(w.o.Pods, s.Member)
		delete(w.o.Answering, s.Member)
	case StartSurvivor:
		w.o.Pods[s.Member] = Pod{Recovery: s.Status.ID}
	case StartFromBackup:
		w.o.Pods[s.Member], w.o.Claims[s.Member] = Pod{Recovery: s.Status.ID}, Claim{}
	case Wait:
		if p, ok := w.o.Pods[s.Member]; ok && p.Recovery != "" {
			// restored: it answers alone
			w.o.Quorum, w.o.Members, w.o.LeaderKnown = true, []string{s.Member}, true
			w.o.Answering = map[string]uint64{s.Member: 1}
		}
	}
}

// TestRecoveryRunsToTheEndAndSurvivesACrashAtEveryStep plays the recovery of a cluster whose
// member e-0 lost its claim and e-2 only its pod (the planner recreated it, it does not
// answer), approved by hand; then replays it with the status of every step lost once, as
// when the operator stops before its patch: the same step comes again.
func TestRecoveryRunsToTheEndAndSurvivesACrashAtEveryStep(t *testing.T) {
	start := func() *world {
		o := lostTwo(t0.Add(5 * time.Minute))
		o.Pods["e-2"], o.Claims["e-2"] = Pod{}, Claim{}
		o.Last = lostSince(t0)
		w := &world{o: o}
		w.apply(t, Plan(w.o))
		w.o.Approval = w.o.Last.ID
		return w
	}
	w := start()
	want := w.run(t)
	if got := join(want); got != "SaveSnapshot Retire StopSurvivor StartSurvivor Wait None" {
		t.Fatalf("steps %s", got)
	}
	if w.o.Last.Phase != etcdv1alpha1.RecoveryGrowing {
		t.Fatalf("phase %s, want Growing", w.o.Last.Phase)
	}
	w.o.Settled = true
	if s := Plan(w.o); s.Status.Phase != etcdv1alpha1.RecoverySucceeded || s.Status.CompletionTime == nil {
		t.Fatalf("settled: %+v, want Succeeded with a completion time", s.Status)
	}

	for crash := 0; crash < len(want)-1; crash++ {
		w := start()
		var got []Kind
		for i := 0; i < 20; i++ {
			s := Plan(w.o)
			got = append(got, s.Kind)
			if s.Kind == None {
				w.apply(t, s)
				break
			}
			if i == crash {
				kept := w.o.Last
				w.apply(t, s)
				w.o.Last = kept // the action happened, the status patch did not
				continue
			}
			w.apply(t, s)
		}
		if got[len(got)-1] != None || w.o.Last.Phase != etcdv1alpha1.RecoveryGrowing {
			t.Fatalf("crash after step %d: steps %s, phase %s", crash, join(got), w.o.Last.Phase)
		}
	}
}

// TestGrowingSurvivesALostPatchAfterALearnerWasAdded: the pass that saw the restored
// survivor answer alone decided Growing, and the membership planner added a learner in the
// same pass; its status patch was lost. The next pass sees the survivor and the learner,
// and must still say Growing, not wait for the survivor to be alone (it never will be).
func TestGrowingSurvivesALostPatchAfterALearnerWasAdded(t *testing.T) {
	for _, fromBackup := range []bool{false, true} {
		o := lostTwo(t0.Add(5 * time.Minute))
		o.Last = lostSince(t0)
		w := &world{o: o}
		w.apply(t, Plan(w.o))
		w.o.Approval = w.o.Last.ID
		if fromBackup {
			w.o.Last.Backup, w.o.Last.Phase = "b", etcdv1alpha1.RecoveryRecovering
		}
		var recovering *etcdv1alpha1.RecoveryStatus
		for i := 0; i < 20; i++ {
			s := Plan(w.o)
			if s.Kind == None {
				break
			}
			recovering = s.Status
			w.apply(t, s)
		}
		survivor := w.o.Members[0]
		w.o.Last = recovering // the Growing pass's patch was lost
		w.o.Members = []string{survivor, "e-9"}
		w.o.Answering["e-9"] = 0
		s := Plan(w.o)
		if s.Kind != None || s.Status.Phase != etcdv1alpha1.RecoveryGrowing {
			t.Fatalf("from a backup %v: %s, phase %s (%s), want None and Growing", fromBackup, s.Kind, s.Status.Phase, s.Message)
		}
	}
}

func TestRecoveringWaitsForTheSurvivor(t *testing.T) {
	st := &etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoveryRecovering, ID: "x", Survivor: "e-1", Approved: true}
	o := lostTwo(t0)
	o.Last, o.Answering = st, nil
	if s := Plan(o); s.Kind != Wait {
		t.Fatalf("no snapshot without the survivor answering: %s", s.Kind)
	}
	st.Snapshot = SnapshotKey("x")
	o.Pods["e-1"] = Pod{Recovery: "x", Init: &corev1.ContainerStatus{State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: "restoring\nsnapshot file has wrong hash"}}}}
	s := Plan(o)
	if s.Kind != Wait || !strings.Contains(s.Message, "wrong hash") {
		t.Fatalf("a failed restore: %s %q", s.Kind, s.Message)
	}
	delete(o.Claims, "e-1")
	delete(o.Pods, "e-1")
	if s := Plan(o); s.Kind != Blocked {
		t.Fatalf("the survivor's claim gone: %s, want Blocked", s.Kind)
	}
}

// run plans and applies steps until the plan is None (20 at most), and returns the kinds
// of the steps in order.
func (w *world) run(t *testing.T) []Kind {
	var kinds []Kind
	for range 20 {
		s := Plan(w.o)
		kinds = append(kinds, s.Kind)
		w.apply(t, s)
		if s.Kind == None {
			break
		}
	}
	return kinds
}

func join(ks []Kind) string {
	s := make([]string, len(ks))
	for i, k := range ks {
		s[i] = string(k)
	}
	return strings.Join(s, " ")
}

// TestRecoveryFromBackup plays the recovery of a cluster none of whose members answers,
// from its newest backup: under Automatic only once every member's data is gone; every
// member retired, one fresh member restores the backup, then the cluster grows. A crash
// after any step (its status lost) repeats that step or finds it done.
func TestRecoveryFromBackup(t *testing.T) {
	start := func() *world {
		o := lostTwo(t0.Add(5 * time.Minute))
		o.Policy, o.Last, o.Answering = etcdv1alpha1.QuorumLossAutomatic, lostSince(t0), nil
		o.Backup = &Backup{Name: "nightly", Completed: t0.Add(-time.Hour), Revision: 90}
		o.Claims["e-2"] = Claim{Removed: true} // a member removed long ago, its claim retained
		return &world{o: o}
	}
	w := start()
	w.o.Pods["e-1"] = Pod{} // e-1's pod runs and its claim exists, but it does not answer
	if s := Plan(w.o); s.Kind != Blocked || s.Status.Phase != etcdv1alpha1.RecoveryAwaitingApproval || s.Status.Backup != "nightly" {
		t.Fatalf("a member whose data exists: %s %+v, want awaiting approval of the recovery from nightly", s.Kind, s.Status)
	}
	if s := Plan(w.o); !strings.Contains(s.Message, "every write after the backup is lost") {
		t.Fatalf("the message does not say what is lost: %s", s.Message)
	}
	w.o.Backup = nil
	if s := Plan(w.o); s.Kind != Blocked || s.Status.Phase != etcdv1alpha1.RecoveryBlocked {
		t.Fatalf("no survivor and no backup: %s, want Blocked", s.Kind)
	}

}

// TestRecoveryFromBackupSurvivesACrashAtEveryStep plays it to the end, then with the
// status of each step lost once.
func TestRecoveryFromBackupSurvivesACrashAtEveryStep(t *testing.T) {
	start := func() *world {
		o := lostTwo(t0.Add(5 * time.Minute))
		o.Policy, o.Last, o.Answering = etcdv1alpha1.QuorumLossAutomatic, lostSince(t0), nil
		o.Backup = &Backup{Name: "nightly", Completed: t0.Add(-time.Hour), Revision: 90}
		o.Claims["e-2"] = Claim{Removed: true}
		o.Claims["e-1"] = Claim{Going: true}
		return &world{o: o}
	}
	w := start()
	want := w.run(t)
	if got := join(want); got != "Retire StartFromBackup Wait None" {
		t.Fatalf("steps %s", got)
	}
	if w.o.Last.Phase != etcdv1alpha1.RecoveryGrowing || w.o.Last.Survivor != "e-0" {
		t.Fatalf("phase %s with member %s, want Growing with e-0 (the first free name)", w.o.Last.Phase, w.o.Last.Survivor)
	}
	for crash := 0; crash < len(want)-1; crash++ {
		w := start()
		var got []Kind
		for i := 0; i < 20; i++ {
			s := Plan(w.o)
			got = append(got, s.Kind)
			kept := w.o.Last
			w.apply(t, s)
			if s.Kind == None {
				break
			}
			if i == crash {
				w.o.Last = kept
			}
		}
		if w.o.Last.Phase != etcdv1alpha1.RecoveryGrowing || strings.Count(join(got), "StartFromBackup") != 1 {
			t.Fatalf("crash after step %d: steps %s, phase %s: want one member started from the backup, then Growing", crash, join(got), w.o.Last.Phase)
		}
	}
}
