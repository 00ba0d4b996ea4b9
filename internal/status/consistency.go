package status

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/consistency"
)

// Suspects are the members the last consistency check found holding data that differs from
// the majority's, by etcd member ID, with what it found: fenced (no backup is taken from
// them) and, in mode Replace, replaced. Empty while the check is off.
func Suspects(c *etcdv1alpha1.EtcdCluster) map[uint64]string {
	st := c.Status.Consistency
	if st == nil || st.Result != string(consistency.Mismatch) || !clusterspec.ConsistencyCheckEnabled(c) {
		return nil
	}
	out := map[uint64]string{}
	for _, s := range st.Suspects {
		if id, err := strconv.ParseUint(s.ID, 16, 64); err == nil {
			out[id] = st.Message
		}
	}
	return out
}

// ConsistencyChecked is status.consistency after a check made at now found v: the
// revision compared, the result, and the suspects with their etcd member IDs (hex, as
// etcdctl shows them).
func ConsistencyChecked(v consistency.Verdict, now time.Time) *etcdv1alpha1.ConsistencyStatus {
	out := &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.NewTime(now), Revision: v.Revision,
		Result: string(v.Kind), Message: v.Message}
	for i, name := range v.Suspects {
		out.Suspects = append(out.Suspects, etcdv1alpha1.SuspectMember{Name: name, ID: strconv.FormatUint(v.SuspectIDs[i], 16)})
	}
	return out
}

// consistencyStatus is status.consistency: what this pass's check found (nil when none ran:
// the last stays), and nothing while the check is off.
func consistencyStatus(c *etcdv1alpha1.EtcdCluster, decided *etcdv1alpha1.ConsistencyStatus) *etcdv1alpha1.ConsistencyStatus {
	if !clusterspec.ConsistencyCheckEnabled(c) {
		return nil
	}
	if decided != nil {
		return decided
	}
	return c.Status.Consistency
}

// corruptMembers is the Degraded condition of a cluster whose consistency check named
// members that are still in the member list this pass observed.
func corruptMembers(in Input, st *etcdv1alpha1.ConsistencyStatus) (metav1.Condition, bool) {
	if st == nil || st.Result != string(consistency.Mismatch) || in.Observed.Members == nil {
		return metav1.Condition{}, false
	}
	present := map[string]bool{}
	for _, m := range in.Observed.Members {
		present[strconv.FormatUint(m.ID, 16)] = true
	}
	var still []string
	for _, s := range st.Suspects {
		if present[s.ID] {
			still = append(still, s.Name)
		}
	}
	if len(still) == 0 {
		return metav1.Condition{}, false
	}
	// (A replacement the others' health blocks is Degraded through the planner's Blocked.)
	what := "being replaced one at a time"
	if !clusterspec.ReplacesCorruptMembers(in.Cluster) {
		what = "consistencyCheck.mode is Report: nothing is changed, a human decides (delete the member's claim and pod to replace it)"
	}
	return metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonMemberCorrupt,
		Message: fmt.Sprintf("data of %s differs from the majority's (%s); fenced, %s", strings.Join(still, ", "), st.Message, what)}, true
}

// consistencyTransitions: a check that newly found suspects is a warning event.
func consistencyTransitions(old, updated etcdv1alpha1.EtcdClusterStatus) []Event {
	n := updated.Consistency
	if n == nil || n.Result != string(consistency.Mismatch) {
		return nil
	}
	if o := old.Consistency; o != nil && o.Result == n.Result && suspectIDs(o) == suspectIDs(n) {
		return nil
	}
	return []Event{{corev1.EventTypeWarning, etcdv1alpha1.ReasonMemberCorrupt, "CheckConsistency",
		fmt.Sprintf("Consistency check at revision %d: %s", n.Revision, n.Message)}}
}

func suspectIDs(st *etcdv1alpha1.ConsistencyStatus) string {
	ids := make([]string, len(st.Suspects))
	for i, s := range st.Suspects {
		ids[i] = s.ID
	}
	return strings.Join(ids, ",")
}
