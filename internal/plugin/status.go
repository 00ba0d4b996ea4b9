package plugin

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
)

// Status is what `kubectl etcdpilot status` shows of one EtcdCluster, as `-o json` prints it.
type Status struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Size is spec.size; Version, the version every member runs (status.currentVersion).
	Size    int32  `json:"size"`
	Version string `json:"version,omitempty"`
	// Ready, Available, Progressing and Degraded are the conditions' statuses, Unknown
	// when absent.
	Conditions []Condition `json:"conditions"`
	Members    []Member    `json:"members"`
	// Doing is what the operator is doing now: the Progressing message, or the Degraded one
	// when nothing progresses; "" when the cluster is as its spec asks.
	Doing      string      `json:"doing,omitempty"`
	LastBackup *LastBackup `json:"lastBackup,omitempty"`
	AutoPilot  []Feature   `json:"autoPilot"`
	Auth       Auth        `json:"auth"`
}

// Auth is etcd's authentication: what spec.auth asks, and what etcd last reported
// (status.auth).
type Auth struct {
	Wanted bool `json:"wanted"`
	// Enabled is nil until the operator asked etcd.
	Enabled   *bool    `json:"enabled,omitempty"`
	RootUsers []string `json:"rootUsers,omitempty"`
}

// Condition is one condition of the cluster.
type Condition struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// Member is one member as the operator last observed it, with the node of its pod (as the
// pod says now) and that node's zone (as the operator last observed it).
type Member struct {
	Name    string `json:"name"`
	Role    string `json:"role"` // leader, follower or learner
	Healthy bool   `json:"healthy"`
	Version string `json:"version,omitempty"`
	Node    string `json:"node,omitempty"`
	Zone    string `json:"zone,omitempty"`
	// DBSize and DBSizeInUse are in bytes; RaftIndexLag, how far it is behind the leader.
	DBSize       int64    `json:"dbSize"`
	DBSizeInUse  int64    `json:"dbSizeInUse"`
	RaftIndexLag int64    `json:"raftIndexLag"`
	Alarms       []string `json:"alarms,omitempty"`
}

// LastBackup is the newest EtcdBackup of the cluster that finished, successful or not.
type LastBackup struct {
	Name      string    `json:"name"`
	Succeeded bool      `json:"succeeded"`
	Reason    string    `json:"reason,omitempty"`
	Completed time.Time `json:"completed"`
	// Age is how long ago it completed, in whole seconds.
	AgeSeconds int64 `json:"ageSeconds"`
	// Verified is the Verified condition's status, "" when the backup was not verified.
	Verified string `json:"verified,omitempty"`
}

// Feature is one Auto Pilot feature: its setting, and what it last did or said.
type Feature struct {
	Name    string `json:"name"`
	Setting string `json:"setting"`
	State   string `json:"state,omitempty"`
}

// conditionTypes are the conditions status shows, in order.
var conditionTypes = []string{
	etcdv1alpha1.ConditionReady, etcdv1alpha1.ConditionAvailable, etcdv1alpha1.ConditionProgressing,
	etcdv1alpha1.ConditionDegraded, etcdv1alpha1.ConditionMonitoring,
}

// StatusOf is the Status of c, given its member pods (for their nodes) and the EtcdBackups
// of its namespace, at now.
func StatusOf(c *etcdv1alpha1.EtcdCluster, pods []corev1.Pod, backups []etcdv1alpha1.EtcdBackup, now time.Time) Status {
	s := Status{Namespace: c.Namespace, Name: c.Name, Size: c.Spec.Size, Version: c.Status.CurrentVersion,
		Conditions: []Condition{}, Members: []Member{}}
	for _, t := range conditionTypes {
		cond := Condition{Type: t, Status: string(metav1.ConditionUnknown)}
		if got := meta.FindStatusCondition(c.Status.Conditions, t); got != nil {
			cond = Condition{Type: t, Status: string(got.Status), Reason: got.Reason, Message: got.Message}
		}
		s.Conditions = append(s.Conditions, cond)
	}
	if got := meta.FindStatusCondition(c.Status.Conditions, etcdv1alpha1.ConditionHibernated); got != nil {
		// Only there while spec.hibernation.enabled is true.
		s.Conditions = append(s.Conditions, Condition{Type: got.Type, Status: string(got.Status), Reason: got.Reason, Message: got.Message})
	}
	nodes := map[string]string{}
	for _, p := range pods {
		nodes[p.Name] = p.Spec.NodeName
	}
	for _, m := range c.Status.Members {
		role := "follower"
		switch {
		case m.Leader:
			role = "leader"
		case m.Learner:
			role = "learner"
		}
		s.Members = append(s.Members, Member{Name: m.Name, Role: role, Healthy: m.Healthy, Version: m.Version, Node: nodes[m.Name], Zone: m.Zone,
			DBSize: m.DBSize, DBSizeInUse: m.DBSizeInUse, RaftIndexLag: m.RaftIndexLag, Alarms: m.Alarms})
	}
	s.Doing = doing(c)
	s.LastBackup = lastBackup(c, backups, now)
	s.AutoPilot = autoPilot(c, now)
	s.Auth = Auth{Wanted: c.Spec.Auth.Enabled}
	if a := c.Status.Auth; a != nil {
		s.Auth.Enabled, s.Auth.RootUsers = &a.Enabled, a.RootUsers
	}
	return s
}

// doing is what the operator is doing now: the Progressing message while it is True, else
// the Degraded message while that is True, else the Hibernated message while that is.
func doing(c *etcdv1alpha1.EtcdCluster) string {
	for _, t := range []string{etcdv1alpha1.ConditionProgressing, etcdv1alpha1.ConditionDegraded, etcdv1alpha1.ConditionHibernated} {
		if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
			return cond.Message
		}
	}
	return ""
}

// lastBackup is the newest finished EtcdBackup of c among backups.
func lastBackup(c *etcdv1alpha1.EtcdCluster, backups []etcdv1alpha1.EtcdBackup, now time.Time) *LastBackup {
	var out *LastBackup
	for _, b := range backups {
		if b.Spec.ClusterName != c.Name || b.Namespace != c.Namespace || b.Status.CompletedAt == nil {
			continue
		}
		done := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionSucceeded)
		if done == nil || done.Status == metav1.ConditionUnknown {
			continue
		}
		at := b.Status.CompletedAt.Time
		if out != nil && !at.After(out.Completed) {
			continue
		}
		out = &LastBackup{Name: b.Name, Succeeded: done.Status == metav1.ConditionTrue, Reason: done.Reason, Completed: at,
			AgeSeconds: int64(now.Sub(at).Seconds())}
		if v := meta.FindStatusCondition(b.Status.Conditions, etcdv1alpha1.ConditionVerified); v != nil {
			out.Verified = string(v.Status)
		}
	}
	return out
}

// autoPilot is each Auto Pilot feature's setting (with the operator's defaults) and what the
// status says it last did.
func autoPilot(c *etcdv1alpha1.EtcdCluster, now time.Time) []Feature {
	spec := clusterspec.WithDefaults(c.Spec)
	st := c.Status
	defrag := Feature{Name: "defragmentation", Setting: string(spec.Maintenance.Defragmentation.Mode)}
	if st.Maintenance != nil {
		defrag.State = st.Maintenance.Message
	}
	nospace := Feature{Name: "NOSPACE recovery", Setting: string(spec.Maintenance.NoSpaceRecovery)}
	timing := Feature{Name: "raft timing", Setting: string(spec.Etcd.TimingProfile)}
	if st.RaftTiming != nil {
		timing.State = fmt.Sprintf("%d/%d ms: %s", st.RaftTiming.HeartbeatIntervalMillis, st.RaftTiming.ElectionTimeoutMillis, st.RaftTiming.Reason)
	}
	storage := Feature{Name: "storage autoscaling", Setting: string(etcdv1alpha1.StorageAutoscalingDisabled)}
	if spec.Storage.Autoscaling != nil {
		storage.Setting = string(spec.Storage.Autoscaling.Mode)
	}
	if st.Storage != nil {
		storage.State = st.Storage.Reason
	}
	consistency := Feature{Name: "consistency check", Setting: string(spec.ConsistencyCheck.Mode)}
	if cs := st.Consistency; cs != nil {
		consistency.State = fmt.Sprintf("%s %s ago", cs.Result, age(now.Sub(cs.LastCheckTime.Time)))
	}
	replace := Feature{Name: "member replacement", Setting: "off"}
	// Short: the column must leave the states room in 80 columns.
	var after []string
	if d := spec.ReplaceUnhealthyMemberAfter; d != nil && d.Duration > 0 {
		after = append(after, shortDuration(d.Duration))
	}
	if d := spec.ReplaceMemberOnLostNodeAfter; d != nil && d.Duration > 0 {
		after = append(after, "node lost "+shortDuration(d.Duration))
	}
	if len(after) > 0 {
		replace.Setting = strings.Join(after, ", ")
	}
	recovery := Feature{Name: "quorum-loss recovery", Setting: string(spec.QuorumLossRecovery.Policy)}
	if r := st.Recovery; r != nil {
		recovery.State = string(r.Phase)
	}
	return []Feature{defrag, nospace, replace, timing, storage, consistency, recovery}
}

// age is d rounded for a person: 45s, 12m, 3h, 2d.
func age(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int(d.Seconds()))
	case d < time.Hour:
		return fmt.Sprintf("%dm", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%dh", int(d.Hours()))
	}
	return fmt.Sprintf("%dd", int(d.Hours()/24))
}

// shortDuration is d without its zero units: 10m, 1h30m, 45s.
func shortDuration(d time.Duration) string {
	out := d.String()
	if strings.HasSuffix(out, "m0s") {
		out = strings.TrimSuffix(out, "0s")
	}
	if strings.HasSuffix(out, "h0m") {
		out = strings.TrimSuffix(out, "0m")
	}
	return out
}

// size is n bytes in MiB or GiB, with one decimal.
func size(n int64) string {
	if n >= 1<<30 {
		return fmt.Sprintf("%.1fG", float64(n)/(1<<30))
	}
	return fmt.Sprintf("%.1fM", float64(n)/(1<<20))
}

// sortedMembers orders members by name.
func sortedMembers(ms []Member) []Member {
	out := append([]Member(nil), ms...)
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// orDash is s, or "-" when empty.
func orDash(s string) string {
	if strings.TrimSpace(s) == "" {
		return "-"
	}
	return s
}
