// Package metrics holds the operator's metrics about the EtcdClusters it manages, served
// with controller-runtime's on the operator's metrics endpoint. Every series is labelled by
// the cluster's namespace and name; per-member series add the member (at most seven per
// cluster), the certificate series the Secret (two per cluster), and the few label values
// besides (condition types, Progressing reasons, action kinds) come from fixed lists, so the
// number of series grows with the clusters and nothing else.
//
// The values are those of the status the operator computed in the same pass: what it
// observed, never what it assumes. A pass that could not observe the members leaves the
// member series as the last observation set them.
package metrics

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

// Prefix starts every metric name.
const Prefix = "etcdpilot_"

var (
	clusterLabels = []string{"namespace", "name"}
	memberLabels  = []string{"namespace", "name", "member"}
	// tenantLabels: name is the tenant's cluster, as on the cluster's own series.
	tenantLabels = []string{"namespace", "name", "tenant"}
	// conditionTypes are the EtcdCluster conditions exported.
	conditionTypes = []string{etcdv1alpha1.ConditionReady, etcdv1alpha1.ConditionAvailable, etcdv1alpha1.ConditionProgressing, etcdv1alpha1.ConditionDegraded,
		etcdv1alpha1.ConditionHibernated}
)

// Recorder records the operator's metrics: about its EtcdClusters, their backups and the
// backup schedules. A nil *Recorder records nothing.
type Recorder struct {
	desired, members, ready, healthy, learners, updated *prometheus.GaugeVec
	quorumMargin, hasLeader                             *prometheus.GaugeVec
	condition, progressing, degraded                    *prometheus.GaugeVec
	memberHealthy, memberLeader, memberDBSize           *prometheus.GaugeVec
	memberDBSizeInUse, memberAlarm, memberLastDefrag    *prometheus.GaugeVec
	caNotAfter, certNotAfter, lastSuccess               *prometheus.GaugeVec
	actions, maintenance                                *prometheus.CounterVec
	backupLastSuccess, backupDuration, backupSize       *prometheus.GaugeVec
	scheduleInterval                                    *prometheus.GaugeVec
	backups                                             *prometheus.CounterVec
	verifications                                       *prometheus.CounterVec
	backupLastVerified, backupLastFailure               *prometheus.GaugeVec
	backupLastVerificationFailure                       *prometheus.GaugeVec
	tenantReady, tenantKeys, tenantCertNotAfter         *prometheus.GaugeVec
	tenantBytes, quota                                  *prometheus.GaugeVec
}

// New creates the metrics and registers them with reg.
func New(reg prometheus.Registerer) *Recorder {
	gauge := func(name, help string, labels ...string) *prometheus.GaugeVec {
		g := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: Prefix + name, Help: help}, labels)
		reg.MustRegister(g)
		return g
	}
	m := &Recorder{
		desired:  gauge("cluster_desired_members", "Members the EtcdCluster asks for (spec.size).", clusterLabels...),
		members:  gauge("cluster_members", "Members in etcd's member list, learners included, as last observed.", clusterLabels...),
		ready:    gauge("cluster_ready_members", "Members whose pod is Ready: etcd answers /readyz (status.readyMembers).", clusterLabels...),
		healthy:  gauge("cluster_healthy_members", "Members that answered the operator's health check, as last observed.", clusterLabels...),
		learners: gauge("cluster_learner_members", "Members that are learners (not voting yet), as last observed.", clusterLabels...),
		updated:  gauge("cluster_updated_members", "Members whose pod runs the current spec (status.updatedMembers).", clusterLabels...),
		quorumMargin: gauge("cluster_quorum_margin",
			"Healthy voting members beyond the quorum of the voting members: 0 means one more loss stops writes, below 0 the quorum is lost; no series before any member is known.", clusterLabels...),
		hasLeader: gauge("cluster_has_leader", "1 when an observed member is the leader, else 0.", clusterLabels...),
		condition: gauge("cluster_condition",
			"1 when the EtcdCluster's condition (Ready, Available, Progressing, Degraded, Hibernated) is True, else 0: alerts about availability leave out a cluster whose Hibernated is 1.", append(clusterLabels, "condition")...),
		progressing: gauge("cluster_progressing_reason",
			"1 for the reason of the Progressing condition while it is True (Upgrading, RollingOut, RotatingCA, AddingMember...); no series otherwise.", append(clusterLabels, "reason")...),
		degraded: gauge("cluster_degraded_reason",
			"1 for the reason of the Degraded condition while it is True (MembersUnhealthy, RolloutStuck, RestoreFailed, UpgradeRolledBack...); no series otherwise.", append(clusterLabels, "reason")...),
		memberHealthy: gauge("member_healthy", "1 when the member answered the operator's health check, else 0.", memberLabels...),
		memberDBSizeInUse: gauge("member_db_size_in_use_bytes",
			"Part of the member's database file that holds data, as the member reported it; the rest is reclaimed by defragmentation.", memberLabels...),
		memberAlarm:  gauge("member_alarm", "1 for each alarm raised on the member (NOSPACE, CORRUPT); no series otherwise.", append(memberLabels, "alarm")...),
		memberLeader: gauge("member_leader", "1 for the member that is the leader, else 0.", memberLabels...),
		memberDBSize: gauge("member_db_size_bytes", "Size of the member's database file as the member reported it.", memberLabels...),
		caNotAfter: gauge("cluster_ca_not_after_timestamp_seconds",
			"When the CA the operator created for the cluster expires (TLS mode OperatorCA); the operator rotates it a year before.", clusterLabels...),
		certNotAfter: gauge("cluster_certificate_not_after_timestamp_seconds",
			"When the certificate of each TLS Secret the members and clients use (label secret: the member and the client Secret) stops being valid: its expiry, or its CA's when that comes first; every TLS mode but Disabled. The operator renews its own, and has cert-manager renew, 30 days before.",
			append(clusterLabels, "secret")...),
		lastSuccess: gauge("cluster_last_successful_reconcile_timestamp_seconds",
			"When a reconcile of the EtcdCluster last ended without error: an alert can trust its age more than a condition.", clusterLabels...),
		tenantReady: gauge("tenant_ready", "1 when the EtcdTenant is Ready (its user and role in etcd as its spec asks, its certificate in its Secret), else 0.", tenantLabels...),
		tenantKeys: gauge("tenant_keys",
			"Keys under the EtcdTenant's prefix, as last counted (status.usage.keys, at most once a minute); no series before the first count.", tenantLabels...),
		tenantCertNotAfter: gauge("tenant_certificate_not_after_timestamp_seconds",
			"When the certificate in the EtcdTenant's Secret stops being valid; the operator issues it again 30 days before.", tenantLabels...),
		tenantBytes: gauge("tenant_bytes",
			"Bytes of the keys and values under the EtcdTenant's prefix, as last measured (status.usage.bytes, at most every 10 minutes); no series before the first measure.", tenantLabels...),
		quota: gauge("cluster_quota_backend_bytes",
			"The database quota the EtcdCluster's members run with: etcd.quotaBackendBytes, its default, or what storage autoscaling raised it to.", clusterLabels...),
		actions: prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "cluster_actions_total",
			Help: "Actions the operator carried out on the cluster, by kind (AddLearner, Promote, RemoveMember, RestartMember, MoveLeader...)."},
			append(clusterLabels, "action")),
	}
	reg.MustRegister(m.actions)
	m.maintenance = prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "cluster_maintenance_total",
		Help: "Maintenance steps the operator carried out on the cluster (spec.maintenance), by kind: Defragment, Compact, Disarm (of NOSPACE)."},
		append(clusterLabels, "action"))
	reg.MustRegister(m.maintenance)
	m.memberLastDefrag = gauge("member_last_defragmentation_timestamp_seconds",
		"When the operator last defragmented the member (status.members[].lastDefragmentation); no series before the first.", memberLabels...)
	m.backupLastSuccess = gauge("backup_last_success_timestamp_seconds",
		"When the newest successful EtcdBackup of the cluster completed.", clusterLabels...)
	m.backupDuration = gauge("backup_last_duration_seconds",
		"How long the newest successful EtcdBackup of the cluster took, from its pod's start to completion.", clusterLabels...)
	m.backupSize = gauge("backup_last_size_bytes",
		"Size of the stored artifact of the newest successful EtcdBackup of the cluster.", clusterLabels...)
	m.scheduleInterval = gauge("backup_schedule_interval_seconds",
		"The longest time between two runs of an EtcdBackupSchedule of the cluster (label schedule) that is not suspended: how old its newest backup may get.",
		append(clusterLabels, "schedule")...)
	m.backups = prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "backups_total",
		Help: "EtcdBackups of the cluster that ended, by outcome (succeeded, failed)."}, append(clusterLabels, "outcome"))
	reg.MustRegister(m.backups)
	m.verifications = prometheus.NewCounterVec(prometheus.CounterOpts{Name: Prefix + "backup_verifications_total",
		Help: "Verifications of the cluster's EtcdBackups (spec.verify) that ended, by outcome (passed, failed, incomplete: the key count or the hash not compared); each is 0 from the cluster's first backup on."},
		append(clusterLabels, "outcome"))
	reg.MustRegister(m.verifications)
	m.backupLastVerified = gauge("backup_last_verified_timestamp_seconds",
		"When the newest verification of an EtcdBackup of the cluster that passed ended.", clusterLabels...)
	m.backupLastFailure = gauge("backup_last_failure_timestamp_seconds",
		"When the newest failed EtcdBackup of the cluster ended; 0 until one fails, from the end of the cluster's first backup on.", clusterLabels...)
	m.backupLastVerificationFailure = gauge("backup_last_verification_failure_timestamp_seconds",
		"When the newest verification of an EtcdBackup of the cluster that failed ended; 0 until one fails, from the end of the cluster's first backup on.", clusterLabels...)
	return m
}

// ObserveBackup sets the cluster's backup timestamps (last success, failure, verification
// passed and failed; with the duration and size of the newest success) from a backup's
// status, on every pass over it: unlike the counters, they come back after an operator
// restart, when every EtcdBackup is reconciled again. Each moves only forward in time, so
// the newest backup sets it whatever the order the backups are seen in. The two failure
// timestamps exist at 0 from the first backup that ended on, so that a rule can tell "none
// failed" from "no backup seen". A backup that has not ended sets nothing.
func (m *Recorder) ObserveBackup(b *etcdv1alpha1.EtcdBackup) {
	if m == nil {
		return
	}
	m.observeBackup(prometheus.Labels{"namespace": b.Namespace, "name": b.Spec.ClusterName}, b.Status)
}

// observeBackup is ObserveBackup for the backup status st of the cluster labelled l.
func (m *Recorder) observeBackup(l prometheus.Labels, st etcdv1alpha1.EtcdBackupStatus) {
	outcome := ended(st)
	if outcome == "" || st.CompletedAt == nil {
		return
	}
	failure, verificationFailure := m.backupLastFailure.With(l), m.backupLastVerificationFailure.With(l)
	switch outcome {
	case "succeeded":
		if newer(m.backupLastSuccess.With(l), st.CompletedAt.Time) {
			if st.StartedAt != nil {
				m.backupDuration.With(l).Set(st.CompletedAt.Sub(st.StartedAt.Time).Seconds())
			}
			if st.Artifact != nil {
				m.backupSize.With(l).Set(float64(st.Artifact.Size))
			}
		}
	case "failed":
		newer(failure, st.CompletedAt.Time)
	}
	if st.Verification == nil {
		return
	}
	switch verified(st) {
	case "passed":
		newer(m.backupLastVerified.With(l), st.Verification.CompletedAt.Time)
	case "failed":
		newer(verificationFailure, st.Verification.CompletedAt.Time)
	}
}

// newer sets the timestamp gauge g to at when at is later than its value, and says whether
// it did.
func newer(g prometheus.Gauge, at time.Time) bool {
	v := float64(at.Unix())
	if valueOf(g) >= v {
		return false
	}
	g.Set(v)
	return true
}

// RecordVerification counts the verification of backup b once it ended (its Verified
// condition went from Unknown or absent to True, False, or Unknown for good), and observes
// its timestamps (ObserveBackup).
func (m *Recorder) RecordVerification(b *etcdv1alpha1.EtcdBackup, old, updated etcdv1alpha1.EtcdBackupStatus) {
	if m == nil || verified(old) != "" {
		return
	}
	outcome := verified(updated)
	if outcome == "" {
		return
	}
	l := prometheus.Labels{"namespace": b.Namespace, "name": b.Spec.ClusterName}
	m.verifications.With(withLabel(l, "outcome", outcome)).Inc()
	m.observeBackup(l, updated)
}

// verified is "passed", "failed" or "incomplete" once the backup's Verified condition says
// its verification ended, else empty. An incomplete one sets neither verification timestamp:
// it is no pass, and no failure for EtcdBackupVerificationFailing.
func verified(st etcdv1alpha1.EtcdBackupStatus) string {
	switch c := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionVerified); {
	case c == nil:
		return ""
	case c.Status == metav1.ConditionTrue:
		return "passed"
	case c.Status == metav1.ConditionFalse:
		return "failed"
	case c.Reason == etcdv1alpha1.ReasonVerificationIncomplete:
		return "incomplete"
	}
	return ""
}

// RecordSchedule records how far apart the runs of schedule s may be: gap, the longest time
// between two of its runs. A suspended schedule, or one that does not run twice, promises
// nothing and has no series.
func (m *Recorder) RecordSchedule(s *etcdv1alpha1.EtcdBackupSchedule, gap time.Duration) {
	if m == nil {
		return
	}
	m.ForgetSchedule(s.Namespace, s.Name)
	if s.Spec.Suspend || gap <= 0 {
		return
	}
	m.scheduleInterval.With(prometheus.Labels{"namespace": s.Namespace, "name": s.Spec.BackupTemplate.ClusterName, "schedule": s.Name}).Set(gap.Seconds())
}

// ForgetSchedule removes the series of a schedule that is gone.
func (m *Recorder) ForgetSchedule(namespace, schedule string) {
	if m == nil {
		return
	}
	m.scheduleInterval.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "schedule": schedule})
}

// RecordBackup counts a backup whose status went from old to updated in one pass: once,
// when the backup ends; and observes its timestamps (ObserveBackup).
func (m *Recorder) RecordBackup(b *etcdv1alpha1.EtcdBackup, old, updated etcdv1alpha1.EtcdBackupStatus) {
	if m == nil || ended(old) != "" {
		return
	}
	outcome := ended(updated)
	if outcome == "" {
		return
	}
	l := prometheus.Labels{"namespace": b.Namespace, "name": b.Spec.ClusterName}
	m.backups.With(withLabel(l, "outcome", outcome)).Inc()
	for _, o := range []string{"passed", "failed", "incomplete"} { // the series exist before the first verification
		m.verifications.With(withLabel(l, "outcome", o)).Add(0)
	}
	m.observeBackup(l, updated)
}

// ended is "succeeded" or "failed" once the backup's Succeeded condition says it ended,
// else empty.
func ended(st etcdv1alpha1.EtcdBackupStatus) string {
	switch c := meta.FindStatusCondition(st.Conditions, etcdv1alpha1.ConditionSucceeded); {
	case c == nil:
		return ""
	case c.Status == metav1.ConditionTrue:
		return "succeeded"
	case c.Status == metav1.ConditionFalse:
		return "failed"
	}
	return ""
}

// valueOf reads a gauge's current value.
func valueOf(g prometheus.Gauge) float64 {
	var out dto.Metric
	if err := g.Write(&out); err != nil {
		return 0
	}
	return out.GetGauge().GetValue()
}

// Pass is what one reconcile of an EtcdCluster leaves for the metrics.
type Pass struct {
	// Cluster is the EtcdCluster with the status this pass computed.
	Cluster *etcdv1alpha1.EtcdCluster
	// Seen is true when the pass observed the members (status.Input.Seen).
	Seen bool
	// Action is what the pass did; Acted is true when it was carried out without error.
	Action membership.Action
	Acted  bool
	// Succeeded is true when the reconcile ended without error, at Now.
	Succeeded bool
	Now       time.Time
	// Maintenance is the maintenance step the pass planned (zero when it planned none); it
	// was carried out when Succeeded.
	Maintenance maintenance.Action
	// QuotaBytes is the database quota the members are built with (clusterspec.Effective).
	QuotaBytes int64
}

// Record sets the cluster's series from a pass.
func (m *Recorder) Record(p Pass) {
	if m == nil {
		return
	}
	c := p.Cluster
	l := prometheus.Labels{"namespace": c.Namespace, "name": c.Name}
	m.desired.With(l).Set(float64(c.Spec.Size))
	m.ready.With(l).Set(float64(c.Status.ReadyMembers))
	m.updated.With(l).Set(float64(c.Status.UpdatedMembers))
	if p.QuotaBytes > 0 {
		m.quota.With(l).Set(float64(p.QuotaBytes))
	}
	for _, t := range conditionTypes {
		m.condition.With(withLabel(l, "condition", t)).Set(boolValue(meta.IsStatusConditionTrue(c.Status.Conditions, t)))
	}
	for t, g := range map[string]*prometheus.GaugeVec{etcdv1alpha1.ConditionProgressing: m.progressing, etcdv1alpha1.ConditionDegraded: m.degraded} {
		g.DeletePartialMatch(l)
		if cond := meta.FindStatusCondition(c.Status.Conditions, t); cond != nil && cond.Status == metav1.ConditionTrue {
			g.With(withLabel(l, "reason", cond.Reason)).Set(1)
		}
	}
	m.recordCertificates(l, c.Status)
	// The counters alerts read with increase() exist at 0 from a cluster's first pass:
	// increase() cannot see the increment that creates a series.
	m.actions.With(withLabel(l, "action", string(membership.RemoveMember))).Add(0)
	for _, outcome := range []string{"succeeded", "failed"} {
		m.backups.With(withLabel(l, "outcome", outcome)).Add(0)
	}
	if p.Acted && countsAsAction(p.Action.Kind) {
		m.actions.With(withLabel(l, "action", string(p.Action.Kind))).Inc()
	}
	if p.Succeeded {
		m.lastSuccess.With(l).Set(float64(p.Now.Unix()))
		switch k := p.Maintenance.Kind; k {
		case maintenance.Defragment, maintenance.Compact, maintenance.Disarm:
			m.maintenance.With(withLabel(l, "action", string(k))).Inc()
		}
	}
	if p.Seen {
		m.recordMembers(l, c.Status.Members)
	}
}

// recordCertificates sets the expiry series of the cluster's CA and of the certificates of
// its Secrets, removing those of Secrets the status no longer lists.
func (m *Recorder) recordCertificates(l prometheus.Labels, st etcdv1alpha1.EtcdClusterStatus) {
	if r := st.CARotation; r != nil && r.CANotAfter != nil {
		m.caNotAfter.With(l).Set(float64(r.CANotAfter.Unix()))
	}
	m.certNotAfter.DeletePartialMatch(l)
	if t := st.TLS; t != nil {
		for _, cert := range t.Certificates {
			m.certNotAfter.With(withLabel(l, "secret", cert.Secret)).Set(float64(cert.NotAfter.Unix()))
		}
	}
}

// recordMembers sets the member series from the observed members, removing those of
// members that are gone.
func (m *Recorder) recordMembers(l prometheus.Labels, members []etcdv1alpha1.MemberStatus) {
	var healthy, learners, voters, healthyVoters, leader int
	for _, g := range []*prometheus.GaugeVec{m.memberHealthy, m.memberLeader, m.memberDBSize, m.memberDBSizeInUse, m.memberAlarm, m.memberLastDefrag} {
		g.DeletePartialMatch(l)
	}
	for _, s := range members {
		ml := withLabel(l, "member", s.Name)
		m.memberHealthy.With(ml).Set(boolValue(s.Healthy))
		m.memberLeader.With(ml).Set(boolValue(s.Leader))
		if s.DBSize > 0 {
			m.memberDBSize.With(ml).Set(float64(s.DBSize))
		}
		if s.DBSizeInUse > 0 {
			m.memberDBSizeInUse.With(ml).Set(float64(s.DBSizeInUse))
		}
		for _, a := range s.Alarms {
			m.memberAlarm.With(withLabel(ml, "alarm", a)).Set(1)
		}
		if d := s.LastDefragmentation; d != nil {
			m.memberLastDefrag.With(ml).Set(float64(d.Time.Unix()))
		}
		if s.Healthy {
			healthy++
		}
		if s.Leader {
			leader = 1
		}
		if s.Learner {
			learners++
			continue
		}
		voters++
		if s.Healthy {
			healthyVoters++
		}
	}
	m.members.With(l).Set(float64(len(members)))
	m.healthy.With(l).Set(float64(healthy))
	m.learners.With(l).Set(float64(learners))
	m.hasLeader.With(l).Set(float64(leader))
	if voters == 0 { // no member known yet: there is no quorum to speak of
		m.quorumMargin.Delete(l)
		return
	}
	m.quorumMargin.With(l).Set(float64(healthyVoters - (voters/2 + 1)))
}

// Forget removes every series of a cluster that is gone.
func (m *Recorder) Forget(namespace, name string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": namespace, "name": name}
	for _, g := range []*prometheus.GaugeVec{m.desired, m.members, m.ready, m.healthy, m.learners, m.updated,
		m.quorumMargin, m.hasLeader, m.condition, m.progressing, m.degraded, m.memberHealthy, m.memberLeader, m.memberDBSize,
		m.memberDBSizeInUse, m.memberAlarm,
		m.caNotAfter, m.certNotAfter, m.lastSuccess, m.backupLastSuccess, m.backupDuration, m.backupSize, m.backupLastVerified,
		m.backupLastFailure, m.backupLastVerificationFailure, m.quota} {
		g.DeletePartialMatch(l)
	}
	m.actions.DeletePartialMatch(l)
	m.backups.DeletePartialMatch(l)
	m.verifications.DeletePartialMatch(l)
}

// countsAsAction is false for the plans that change nothing.
func countsAsAction(k membership.Kind) bool {
	switch k {
	case "", membership.None, membership.Wait, membership.Blocked:
		return false
	}
	return true
}

func withLabel(l prometheus.Labels, key, value string) prometheus.Labels {
	out := prometheus.Labels{key: value}
	for k, v := range l {
		out[k] = v
	}
	return out
}

func boolValue(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// RecordTenant sets the series of tenant t from its status after a pass.
func (m *Recorder) RecordTenant(t *etcdv1alpha1.EtcdTenant) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": t.Namespace, "name": t.Spec.ClusterName, "tenant": t.Name}
	ready := meta.FindStatusCondition(t.Status.Conditions, etcdv1alpha1.ConditionReady)
	m.tenantReady.With(l).Set(boolValue(ready != nil && ready.Status == metav1.ConditionTrue))
	if u := t.Status.Usage; u != nil {
		m.tenantKeys.With(l).Set(float64(u.Keys))
		if u.Bytes != nil {
			m.tenantBytes.With(l).Set(float64(*u.Bytes))
		}
	}
	if na := t.Status.CertificateNotAfter; na != nil {
		m.tenantCertNotAfter.With(l).Set(float64(na.Unix()))
	}
}

// ForgetTenant removes the series of a tenant that is gone.
func (m *Recorder) ForgetTenant(namespace, tenant string) {
	if m == nil {
		return
	}
	l := prometheus.Labels{"namespace": namespace, "tenant": tenant}
	for _, g := range []*prometheus.GaugeVec{m.tenantReady, m.tenantKeys, m.tenantCertNotAfter, m.tenantBytes} {
		g.DeletePartialMatch(l)
	}
}
