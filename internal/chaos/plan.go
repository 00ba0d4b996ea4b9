package chaos

import (
	"math/rand/v2"
	"time"
)

// Fault is a kind of fault the suite injects.
type Fault string

// The faults.
const (
	// DeletePod deletes a member's pod; its claim stays.
	DeletePod Fault = "delete-member-pod"
	// KillProcess kills a member's etcd process with SIGKILL; the kubelet restarts it.
	KillProcess Fault = "kill-member-process"
	// KillOperator deletes the operator's pod at that moment, whatever it is doing.
	KillOperator Fault = "kill-operator"
	// Partition drops a member's traffic with its peers, inside its own network
	// namespace, for Hold.
	Partition Fault = "partition-member"
	// CutAPIAccess takes the operator's access to the Kubernetes API away for Hold.
	CutAPIAccess Fault = "cut-operator-api-access"
	// StopNode stops the node a member runs on for Hold, as a machine that loses power
	// (its kubelet, container runtime and every process of its pods killed at once), then
	// starts it again, as after a reboot: every pod of that node goes and comes back.
	StopNode Fault = "stop-member-node"
)

// Faults are the kinds of fault of every round, each once, in a random order.
var Faults = []Fault{DeletePod, KillProcess, KillOperator, Partition, CutAPIAccess, StopNode}

// Held says whether f lasts for the profile's Hold before it is taken away; the others are
// instant, and recovery follows.
func Held(f Fault) bool { return f == Partition || f == CutAPIAccess || f == StopNode }

// Change is a change of the cluster's spec that the suite starts right before a fault, so
// that the operator carries it out while the fault happens.
type Change string

// The changes.
const (
	// Rollout changes an etcd option: every member restarted, one at a time.
	Rollout Change = "rollout"
	// Upgrade moves to the next minor etcd release.
	Upgrade Change = "upgrade"
	// ScaleUp grows the cluster from 3 to 5 members, with the operator crashing right
	// after its first member add (its failpoint).
	ScaleUp Change = "scale-up"
	// ScaleDown shrinks the cluster from 5 to 3 members, with the operator crashing right
	// after its first member removal.
	ScaleDown Change = "scale-down"
)

// Profile is how much chaos a run makes.
type Profile struct {
	Name string
	// Changes lists, per round, the changes started in that round; there are as many
	// rounds as entries.
	Changes [][]Change
	// Hold is how long a partition, a cut of API access or a node stop lasts.
	Hold time.Duration
}

// The profiles: Short runs in CI (one round, about 2 minutes on the local cluster); Long
// runs on demand (make test-chaos, 72 faults in about 35 minutes): two upgrades, three
// scalings 3 -> 5 -> 3, three rollouts.
var (
	Short = Profile{Name: "short", Changes: [][]Change{{Rollout}}, Hold: 20 * time.Second}
	Long  = Profile{Name: "long", Hold: 30 * time.Second, Changes: [][]Change{
		{Upgrade}, {ScaleUp}, {Rollout, ScaleDown}, {Upgrade}, {ScaleUp}, {ScaleDown}, {Rollout}, {},
		{ScaleUp}, {Rollout}, {ScaleDown}, {}}}
)

// Step is one fault of a plan, with the change started right before it, if any.
type Step struct {
	Round int
	// Change is started right before the fault; "" for none.
	Change Change
	Fault  Fault
	// Member picks the fault's member among the members of the moment, sorted by name
	// (modulo their number); faults on the operator ignore it.
	Member int
	// Hold is how long the fault lasts before it is taken away (Held faults); the others
	// are instant, and recovery follows.
	Hold time.Duration
}

// Plan returns the steps of a run of profile p: per round, every fault once in an order
// seed decides, and the round's changes each started before a fault seed decides (two
// changes of a round are never started before the same fault). The same seed gives the
// same plan, so a failed run can be replayed.
func Plan(seed uint64, p Profile) []Step {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var steps []Step
	for round, changes := range p.Changes {
		faults := append([]Fault(nil), Faults...)
		rng.Shuffle(len(faults), func(i, j int) { faults[i], faults[j] = faults[j], faults[i] })
		at := rng.Perm(len(faults))
		first := len(steps)
		for _, f := range faults {
			s := Step{Round: round + 1, Fault: f, Member: rng.IntN(1 << 10)}
			if Held(f) {
				s.Hold = p.Hold
			}
			steps = append(steps, s)
		}
		for i, c := range changes {
			steps[first+at[i]].Change = c
		}
	}
	return steps
}
