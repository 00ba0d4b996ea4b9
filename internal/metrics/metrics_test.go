package metrics

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
	"github.com/etcdpilot/etcdpilot/internal/membership"
)

var now = time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)

func cluster(members ...etcdv1alpha1.MemberStatus) *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "main"}}
	c.Spec.Size = 3
	c.Status.Members = members
	c.Status.ReadyMembers = 2
	c.Status.UpdatedMembers = 1
	c.Status.Conditions = []metav1.Condition{
		{Type: etcdv1alpha1.ConditionAvailable, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonQuorumAvailable},
		{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonRollingOut},
		{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonProgressing},
	}
	return c
}

func healthy(name string) etcdv1alpha1.MemberStatus {
	return etcdv1alpha1.MemberStatus{Name: name, Healthy: true, DBSize: 1 << 20}
}

// gather returns the registry's series of the metrics named, in the text format.
func gather(t *testing.T, reg *prometheus.Registry, names ...string) string {
	t.Helper()
	var b strings.Builder
	for _, n := range names {
		count, err := testutil.GatherAndCount(reg, Prefix+n)
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(n)
		b.WriteString("=")
		b.WriteString(strings.Repeat("|", count))
		b.WriteString(" ")
	}
	return b.String()
}

func TestRecordAClusterMidRollout(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	leader := healthy("main-0")
	leader.Leader = true
	sick := healthy("main-2")
	sick.Healthy, sick.DBSizeInUse, sick.Alarms = false, 1<<19, []string{"NOSPACE"}
	c := cluster(leader, healthy("main-1"), sick)
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonMembersUnhealthy})
	c.Status.CARotation = &etcdv1alpha1.CARotationStatus{CANotAfter: &metav1.Time{Time: now.AddDate(10, 0, 0)}}
	m.Record(Pass{Cluster: c, Seen: true, Action: membership.Action{Kind: membership.RestartMember}, Acted: true, Succeeded: true, Now: now, QuotaBytes: 2 << 30})

	l := prometheus.Labels{"namespace": "ns", "name": "main"}
	value := func(v *prometheus.GaugeVec, extra ...string) float64 {
		ls := prometheus.Labels{}
		for k, v := range l {
			ls[k] = v
		}
		for i := 0; i+1 < len(extra); i += 2 {
			ls[extra[i]] = extra[i+1]
		}
		return testutil.ToFloat64(v.With(ls))
	}
	g.Expect(value(m.desired)).To(Equal(3.0))
	g.Expect(value(m.quota)).To(Equal(float64(2 << 30)))
	g.Expect(value(m.members)).To(Equal(3.0))
	g.Expect(value(m.ready)).To(Equal(2.0))
	g.Expect(value(m.healthy)).To(Equal(2.0))
	g.Expect(value(m.updated)).To(Equal(1.0))
	g.Expect(value(m.quorumMargin)).To(Equal(0.0), "2 healthy of 3 voters: one more loss stops writes")
	g.Expect(value(m.hasLeader)).To(Equal(1.0))
	g.Expect(value(m.memberHealthy, "member", "main-2")).To(Equal(0.0))
	g.Expect(value(m.memberLeader, "member", "main-0")).To(Equal(1.0))
	g.Expect(value(m.memberDBSize, "member", "main-1")).To(Equal(float64(1 << 20)))
	g.Expect(value(m.condition, "condition", "Available")).To(Equal(1.0))
	g.Expect(value(m.condition, "condition", "Ready")).To(Equal(0.0))
	g.Expect(value(m.condition, "condition", "Degraded")).To(Equal(1.0))
	g.Expect(value(m.condition, "condition", "Progressing")).To(Equal(1.0))
	g.Expect(value(m.degraded, "reason", "MembersUnhealthy")).To(Equal(1.0))
	g.Expect(value(m.memberDBSizeInUse, "member", "main-2")).To(Equal(float64(1 << 19)))
	g.Expect(value(m.memberAlarm, "member", "main-2", "alarm", "NOSPACE")).To(Equal(1.0))
	g.Expect(gather(t, reg, "member_alarm", "member_db_size_in_use_bytes")).To(Equal("member_alarm=| member_db_size_in_use_bytes=| "),
		"no series for members without alarms or without a reported size in use")
	g.Expect(value(m.progressing, "reason", "RollingOut")).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.actions.WithLabelValues("ns", "main", "RestartMember"))).To(Equal(1.0))
	g.Expect(value(m.lastSuccess)).To(Equal(float64(now.Unix())))
	g.Expect(value(m.caNotAfter)).To(Equal(float64(now.AddDate(10, 0, 0).Unix())))
}

func TestRecordKeepsWhatWasLastObserved(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	c := cluster(healthy("main-0"), healthy("main-1"), healthy("main-2"))
	m.Record(Pass{Cluster: c, Seen: true, Succeeded: true, Now: now})

	why := "a pass that failed before observing: member series unchanged, no success time, no action"
	c.Status.Members = nil
	m.Record(Pass{Cluster: c, Seen: false, Action: membership.Action{Kind: membership.RemoveMember}, Acted: false, Now: now.Add(time.Minute)})
	g.Expect(testutil.ToFloat64(m.healthy.WithLabelValues("ns", "main"))).To(Equal(3.0), why)
	g.Expect(testutil.ToFloat64(m.quorumMargin.WithLabelValues("ns", "main"))).To(Equal(1.0), why)
	g.Expect(testutil.ToFloat64(m.lastSuccess.WithLabelValues("ns", "main"))).To(Equal(float64(now.Unix())), why)
	g.Expect(testutil.ToFloat64(m.actions.WithLabelValues("ns", "main", "RemoveMember"))).To(BeZero(), why)
}

func TestRecordDropsGoneMembersAndEndedProgress(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	c := cluster(healthy("main-0"), healthy("main-1"), healthy("main-2"))
	m.Record(Pass{Cluster: c, Seen: true})

	c.Status.Members[1].Alarms = []string{"CORRUPT"}
	c.Status.Conditions = append(c.Status.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonRestoreFailed})
	m.Record(Pass{Cluster: c, Seen: true})
	g.Expect(gather(t, reg, "member_alarm", "cluster_degraded_reason")).To(Equal("member_alarm=| cluster_degraded_reason=| "))

	c.Status.Members = c.Status.Members[:1]
	c.Status.Conditions[1].Status = metav1.ConditionFalse
	c.Status.Conditions[3].Status = metav1.ConditionFalse
	m.Record(Pass{Cluster: c, Seen: true})
	g.Expect(gather(t, reg, "member_healthy", "cluster_progressing_reason", "cluster_degraded_reason", "member_alarm")).
		To(Equal("member_healthy=| cluster_progressing_reason= cluster_degraded_reason= member_alarm= "))
	g.Expect(testutil.ToFloat64(m.quorumMargin.WithLabelValues("ns", "main"))).To(Equal(0.0), "one voter, healthy: its own quorum")
}

// withCertificates gives the cluster's status.tls: each Secret and its certificate's end.
func withCertificates(c *etcdv1alpha1.EtcdCluster, secretEnds ...any) *etcdv1alpha1.EtcdCluster {
	c.Status.TLS = &etcdv1alpha1.TLSStatus{}
	for i := 0; i+1 < len(secretEnds); i += 2 {
		c.Status.TLS.Certificates = append(c.Status.TLS.Certificates, etcdv1alpha1.CertificateStatus{
			Secret: secretEnds[i].(string), NotAfter: metav1.Time{Time: secretEnds[i+1].(time.Time)}})
	}
	return c
}

// One series per certificate Secret, from status.tls: a pass that did not read the Secrets
// keeps the status, so the series; Secrets the status no longer names lose theirs.
func TestRecordCertificateExpiryPerSecret(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	member, client := now.AddDate(0, 0, 20), now.AddDate(1, 0, 0)
	c := withCertificates(cluster(), "main-member-tls", member, "main-client-tls", client)
	m.Record(Pass{Cluster: c, Now: now})
	g.Expect(testutil.ToFloat64(m.certNotAfter.WithLabelValues("ns", "main", "main-member-tls"))).To(Equal(float64(member.Unix())))
	g.Expect(testutil.ToFloat64(m.certNotAfter.WithLabelValues("ns", "main", "main-client-tls"))).To(Equal(float64(client.Unix())))

	renewed := now.AddDate(1, 0, 0)
	withCertificates(c, "main-member-tls", renewed, "mine-client", client)
	m.Record(Pass{Cluster: c, Now: now})
	g.Expect(gather(t, reg, "cluster_certificate_not_after_timestamp_seconds")).To(Equal("cluster_certificate_not_after_timestamp_seconds=|| "))
	g.Expect(testutil.ToFloat64(m.certNotAfter.WithLabelValues("ns", "main", "main-member-tls"))).To(Equal(float64(renewed.Unix())))
	g.Expect(testutil.ToFloat64(m.certNotAfter.WithLabelValues("ns", "main", "mine-client"))).To(Equal(float64(client.Unix())))

	c.Status.TLS = nil
	m.Record(Pass{Cluster: c, Now: now})
	g.Expect(testutil.CollectAndCount(m.certNotAfter)).To(BeZero(), "TLS disabled: no certificate, no series")
}

func TestQuorumMarginBelowZeroWhenLost(t *testing.T) {
	g := NewWithT(t)
	m := New(prometheus.NewRegistry())
	learner := healthy("main-3")
	learner.Learner = true
	sick := func(n string) etcdv1alpha1.MemberStatus { s := healthy(n); s.Healthy = false; return s }
	m.Record(Pass{Cluster: cluster(healthy("main-0"), sick("main-1"), sick("main-2"), learner), Seen: true})
	g.Expect(testutil.ToFloat64(m.quorumMargin.WithLabelValues("ns", "main"))).To(Equal(-1.0), "1 healthy of 3 voters; the healthy learner does not vote")
	g.Expect(testutil.ToFloat64(m.learners.WithLabelValues("ns", "main"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.hasLeader.WithLabelValues("ns", "main"))).To(Equal(0.0))

	m.Record(Pass{Cluster: cluster(), Seen: true})
	g.Expect(testutil.CollectAndCount(m.quorumMargin)).To(BeZero(), "no member known: no margin, rather than a made-up one")
}

func TestForgetRemovesEverySeries(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	other := cluster(healthy("other-0"))
	other.Name = "other"
	main := withCertificates(cluster(healthy("main-0")), "main-member-tls", now)
	m.Record(Pass{Cluster: main, Seen: true, Action: membership.Action{Kind: membership.AddLearner}, Acted: true, Succeeded: true, Now: now, QuotaBytes: 1 << 30})
	m.Record(Pass{Cluster: other, Seen: true, Succeeded: true, Now: now})
	m.Forget("ns", "main")
	families, err := reg.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		for _, s := range f.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "name" {
					g.Expect(l.GetValue()).To(Equal("other"), f.GetName())
				}
			}
		}
	}
	var nilMetrics *Recorder
	nilMetrics.Record(Pass{Cluster: other})
	nilMetrics.Forget("ns", "other")
}

func backupStatus(outcome metav1.ConditionStatus, started, completed time.Time, size int64) etcdv1alpha1.EtcdBackupStatus {
	st := etcdv1alpha1.EtcdBackupStatus{Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionSucceeded, Status: outcome}}}
	if outcome != metav1.ConditionUnknown {
		st.StartedAt, st.CompletedAt = &metav1.Time{Time: started}, &metav1.Time{Time: completed}
	}
	if outcome == metav1.ConditionTrue {
		st.Artifact = &etcdv1alpha1.BackupArtifact{Size: size}
	}
	return st
}

func TestRecordBackupOnceWhenItEnds(t *testing.T) {
	g := NewWithT(t)
	m := New(prometheus.NewRegistry())
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly-1"}}
	b.Spec.ClusterName = "main"
	running := backupStatus(metav1.ConditionUnknown, time.Time{}, time.Time{}, 0)
	done := backupStatus(metav1.ConditionTrue, now, now.Add(90*time.Second), 4096)

	m.RecordBackup(b, etcdv1alpha1.EtcdBackupStatus{}, running)
	g.Expect(testutil.CollectAndCount(m.backups)).To(BeZero(), "still running")
	m.RecordBackup(b, running, done)
	m.RecordBackup(b, done, done) // a later pass over the same backup
	g.Expect(testutil.ToFloat64(m.backups.WithLabelValues("ns", "main", "succeeded"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.backupLastSuccess.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(90 * time.Second).Unix())))
	g.Expect(testutil.ToFloat64(m.backupDuration.WithLabelValues("ns", "main"))).To(Equal(90.0))
	g.Expect(testutil.ToFloat64(m.backupSize.WithLabelValues("ns", "main"))).To(Equal(4096.0))

	why := "an older backup that ends later (seen after a restart) counts, but does not move the last success back"
	older := backupStatus(metav1.ConditionTrue, now.Add(-time.Hour), now.Add(-time.Hour+time.Second), 1)
	m.RecordBackup(b, running, older)
	g.Expect(testutil.ToFloat64(m.backups.WithLabelValues("ns", "main", "succeeded"))).To(Equal(2.0), why)
	g.Expect(testutil.ToFloat64(m.backupSize.WithLabelValues("ns", "main"))).To(Equal(4096.0), why)

	m.RecordBackup(b, running, backupStatus(metav1.ConditionFalse, now, now.Add(time.Minute), 0))
	g.Expect(testutil.ToFloat64(m.backups.WithLabelValues("ns", "main", "failed"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.backupLastSuccess.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(90*time.Second).Unix())), "a failure is no success")

	g.Expect(testutil.ToFloat64(m.backupLastFailure.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(time.Minute).Unix())))

	m.Forget("ns", "main")
	g.Expect(testutil.CollectAndCount(m.backups)).To(BeZero())
	g.Expect(testutil.CollectAndCount(m.backupSize)).To(BeZero())
	g.Expect(testutil.CollectAndCount(m.backupLastFailure)).To(BeZero())
}

// After a restart the counters start from zero, but the timestamps the backup alerts read
// come back from the finished backups, seen in any order.
func TestObserveBackupSetsTheTimestampsAgainAfterARestart(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	backup := func(name string, st etcdv1alpha1.EtcdBackupStatus) *etcdv1alpha1.EtcdBackup {
		b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Status: st}
		b.Spec.ClusterName = "main"
		return b
	}
	m.ObserveBackup(backup("running", backupStatus(metav1.ConditionUnknown, time.Time{}, time.Time{}, 0)))
	n, err := testutil.GatherAndCount(reg)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeZero(), "a backup that has not ended sets nothing")

	m.ObserveBackup(backup("new", backupStatus(metav1.ConditionTrue, now, now.Add(time.Minute), 4096)))
	g.Expect(testutil.ToFloat64(m.backupLastSuccess.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(time.Minute).Unix())))
	g.Expect(testutil.ToFloat64(m.backupSize.WithLabelValues("ns", "main"))).To(Equal(4096.0))
	g.Expect(testutil.CollectAndCount(m.backupLastFailure)).To(Equal(1), "the failure timestamp exists at 0 once a backup ended")
	g.Expect(testutil.ToFloat64(m.backupLastFailure.WithLabelValues("ns", "main"))).To(BeZero())
	g.Expect(testutil.CollectAndCount(m.backupLastVerificationFailure)).To(Equal(1))

	older := backupStatus(metav1.ConditionTrue, now.Add(-time.Hour), now.Add(-time.Hour+time.Second), 1)
	m.ObserveBackup(backup("old", older))
	g.Expect(testutil.ToFloat64(m.backupLastSuccess.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(time.Minute).Unix())), "an older backup seen later moves nothing back")
	g.Expect(testutil.ToFloat64(m.backupSize.WithLabelValues("ns", "main"))).To(Equal(4096.0))

	failed := backupStatus(metav1.ConditionFalse, now.Add(-2*time.Hour), now.Add(-2*time.Hour), 0)
	m.ObserveBackup(backup("failed", failed))
	m.ObserveBackup(backup("failed", failed)) // the next pass over it
	g.Expect(testutil.ToFloat64(m.backupLastFailure.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(-2 * time.Hour).Unix())))

	verification := func(st metav1.ConditionStatus, at time.Time) *etcdv1alpha1.EtcdBackup {
		out := backup("verified", backupStatus(metav1.ConditionTrue, now.Add(-3*time.Hour), now.Add(-3*time.Hour), 1))
		out.Status.Conditions = append(out.Status.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionVerified, Status: st})
		out.Status.Verification = &etcdv1alpha1.BackupVerification{CompletedAt: metav1.NewTime(at)}
		return out
	}
	m.ObserveBackup(verification(metav1.ConditionFalse, now))
	m.ObserveBackup(verification(metav1.ConditionTrue, now.Add(-time.Hour)))
	g.Expect(testutil.ToFloat64(m.backupLastVerificationFailure.WithLabelValues("ns", "main"))).To(Equal(float64(now.Unix())))
	g.Expect(testutil.ToFloat64(m.backupLastVerified.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(-time.Hour).Unix())))
	g.Expect(testutil.CollectAndCount(m.backups)).To(BeZero(), "observing counts nothing: the counters count what ended in this process")
}

func TestRecordVerificationOnceWhenItEnds(t *testing.T) {
	g := NewWithT(t)
	m := New(prometheus.NewRegistry())
	b := &etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly-1"}}
	b.Spec.ClusterName = "main"
	m.RecordBackup(b, backupStatus(metav1.ConditionUnknown, time.Time{}, time.Time{}, 0), backupStatus(metav1.ConditionTrue, now, now.Add(time.Minute), 1))
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "passed"))).To(BeZero(), "the series exist from the first backup on")
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "failed"))).To(BeZero())
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "incomplete"))).To(BeZero())

	verifiedAt := func(st metav1.ConditionStatus, at time.Time) etcdv1alpha1.EtcdBackupStatus {
		out := backupStatus(metav1.ConditionTrue, now, now.Add(time.Minute), 1) // only a backup that succeeded is verified
		out.Conditions = append(out.Conditions, metav1.Condition{Type: etcdv1alpha1.ConditionVerified, Status: st})
		if st != metav1.ConditionUnknown {
			out.Verification = &etcdv1alpha1.BackupVerification{CompletedAt: metav1.NewTime(at)}
		}
		return out
	}
	running := verifiedAt(metav1.ConditionUnknown, time.Time{})
	passed := verifiedAt(metav1.ConditionTrue, now)
	m.RecordVerification(b, etcdv1alpha1.EtcdBackupStatus{}, running)
	m.RecordVerification(b, running, passed)
	m.RecordVerification(b, passed, passed) // a later pass
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "passed"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.backupLastVerified.WithLabelValues("ns", "main"))).To(Equal(float64(now.Unix())))
	m.RecordVerification(b, running, verifiedAt(metav1.ConditionFalse, now.Add(time.Hour)))
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "failed"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.backupLastVerified.WithLabelValues("ns", "main"))).To(Equal(float64(now.Unix())), "a failure is no pass")
	incomplete := verifiedAt(metav1.ConditionUnknown, now.Add(2*time.Hour))
	incomplete.Conditions[len(incomplete.Conditions)-1].Reason = etcdv1alpha1.ReasonVerificationIncomplete
	incomplete.Verification = &etcdv1alpha1.BackupVerification{CompletedAt: metav1.NewTime(now.Add(2 * time.Hour))}
	m.RecordVerification(b, running, incomplete)
	m.RecordVerification(b, incomplete, incomplete) // a later pass
	g.Expect(testutil.ToFloat64(m.verifications.WithLabelValues("ns", "main", "incomplete"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.backupLastVerified.WithLabelValues("ns", "main"))).To(Equal(float64(now.Unix())), "an incomplete verification is no pass")
	g.Expect(testutil.ToFloat64(m.backupLastVerificationFailure.WithLabelValues("ns", "main"))).To(Equal(float64(now.Add(time.Hour).Unix())), "nor a failure")

	m.Forget("ns", "main")
	g.Expect(testutil.CollectAndCount(m.verifications)).To(BeZero())
	g.Expect(testutil.CollectAndCount(m.backupLastVerified)).To(BeZero())
}

// The counters the alerts read with increase() exist at 0 before their first increment, so
// that the first removal or the first failed backup of a cluster is an increase.
func TestCountersTheAlertsReadStartAtZero(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	m.Record(Pass{Cluster: cluster(), Now: now})
	g.Expect(testutil.ToFloat64(m.actions.With(prometheus.Labels{"namespace": "ns", "name": "main", "action": "RemoveMember"}))).To(BeZero())
	for _, outcome := range []string{"succeeded", "failed"} {
		g.Expect(testutil.ToFloat64(m.backups.With(prometheus.Labels{"namespace": "ns", "name": "main", "outcome": outcome}))).To(BeZero())
	}
	n, err := testutil.GatherAndCount(reg, Prefix+"cluster_actions_total", Prefix+"backups_total")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(Equal(3), "RemoveMember, and the two backup outcomes")
}

func TestRecordScheduleKeepsOneSeriesPerScheduleWhileItRuns(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	s := &etcdv1alpha1.EtcdBackupSchedule{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "nightly"}}
	s.Spec.BackupTemplate.ClusterName = "main"
	m.RecordSchedule(s, 24*time.Hour)
	g.Expect(testutil.ToFloat64(m.scheduleInterval.WithLabelValues("ns", "main", "nightly"))).To(Equal(86400.0))

	s.Spec.BackupTemplate.ClusterName = "other" // a schedule moved to another cluster leaves no series behind
	m.RecordSchedule(s, time.Hour)
	g.Expect(gather(t, reg, "backup_schedule_interval_seconds")).To(Equal("backup_schedule_interval_seconds=| "))
	g.Expect(testutil.ToFloat64(m.scheduleInterval.WithLabelValues("ns", "other", "nightly"))).To(Equal(3600.0))

	s.Spec.Suspend = true
	m.RecordSchedule(s, time.Hour)
	g.Expect(gather(t, reg, "backup_schedule_interval_seconds")).To(Equal("backup_schedule_interval_seconds= "), "suspended: no promise")
	s.Spec.Suspend = false
	m.RecordSchedule(s, time.Hour)
	m.ForgetSchedule("ns", "nightly")
	g.Expect(gather(t, reg, "backup_schedule_interval_seconds")).To(Equal("backup_schedule_interval_seconds= "))
}

func TestRecordMaintenance(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	done := healthy("main-1")
	done.LastDefragmentation = &etcdv1alpha1.DefragmentationRecord{Time: metav1.NewTime(now), SizeBefore: 3 << 20, SizeAfter: 1 << 20}
	c := cluster(healthy("main-0"), done)
	defrag := maintenance.Action{Kind: maintenance.Defragment, Member: "main-1"}

	m.Record(Pass{Cluster: c, Seen: true, Succeeded: true, Now: now, Maintenance: defrag})
	m.Record(Pass{Cluster: c, Seen: true, Succeeded: false, Now: now, Maintenance: defrag})
	m.Record(Pass{Cluster: c, Seen: true, Succeeded: true, Now: now, Maintenance: maintenance.Action{Kind: maintenance.None}})
	m.Record(Pass{Cluster: c, Seen: true, Succeeded: true, Now: now, Maintenance: maintenance.Action{Kind: maintenance.Compact}})

	g.Expect(testutil.ToFloat64(m.maintenance.WithLabelValues("ns", "main", "Defragment"))).To(Equal(1.0), "a failed pass carried nothing out")
	g.Expect(testutil.ToFloat64(m.maintenance.WithLabelValues("ns", "main", "Compact"))).To(Equal(1.0))
	g.Expect(gather(t, reg, "cluster_maintenance_total", "member_last_defragmentation_timestamp_seconds")).
		To(Equal("cluster_maintenance_total=|| member_last_defragmentation_timestamp_seconds=| "), "nothing counted for None; no series for a member never defragmented")
	g.Expect(testutil.ToFloat64(m.memberLastDefrag.WithLabelValues("ns", "main", "main-1"))).To(Equal(float64(now.Unix())))
}

// A tenant's series follow its status, labelled with its cluster; no key count before the
// first count; none left once it is forgotten.
func TestRecordTenant(t *testing.T) {
	g := NewWithT(t)
	reg := prometheus.NewRegistry()
	m := New(reg)
	tn := &etcdv1alpha1.EtcdTenant{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "cp-a"},
		Spec: etcdv1alpha1.EtcdTenantSpec{ClusterName: "shared", Prefix: "/cp-a/"}}
	tn.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonAuthNotEnabled}}
	m.RecordTenant(tn)
	g.Expect(testutil.ToFloat64(m.tenantReady.WithLabelValues("ns", "shared", "cp-a"))).To(Equal(0.0))
	g.Expect(gather(t, reg, "tenant_ready", "tenant_keys", "tenant_certificate_not_after_timestamp_seconds", "tenant_bytes")).
		To(Equal("tenant_ready=| tenant_keys= tenant_certificate_not_after_timestamp_seconds= tenant_bytes= "))

	notAfter := time.Date(2027, 11, 30, 9, 0, 0, 0, time.UTC)
	tn.Status.Conditions[0].Status, tn.Status.Conditions[0].Reason = metav1.ConditionTrue, etcdv1alpha1.ReasonTenantProvisioned
	tn.Status.Usage = &etcdv1alpha1.TenantUsage{Keys: 1843}
	tn.Status.CertificateNotAfter = &metav1.Time{Time: notAfter}
	m.RecordTenant(tn)
	g.Expect(gather(t, reg, "tenant_bytes")).To(Equal("tenant_bytes= "), "no size before the first measure")
	tn.Status.Usage.Bytes, tn.Status.Usage.BytesObservedAt = ptr.To[int64](5<<20), &metav1.Time{Time: notAfter}
	m.RecordTenant(tn)
	g.Expect(testutil.ToFloat64(m.tenantBytes.WithLabelValues("ns", "shared", "cp-a"))).To(Equal(float64(5 << 20)))
	g.Expect(testutil.ToFloat64(m.tenantReady.WithLabelValues("ns", "shared", "cp-a"))).To(Equal(1.0))
	g.Expect(testutil.ToFloat64(m.tenantKeys.WithLabelValues("ns", "shared", "cp-a"))).To(Equal(1843.0))
	g.Expect(testutil.ToFloat64(m.tenantCertNotAfter.WithLabelValues("ns", "shared", "cp-a"))).To(Equal(float64(notAfter.Unix())))

	m.ForgetTenant("ns", "cp-a")
	g.Expect(gather(t, reg, "tenant_ready", "tenant_keys", "tenant_certificate_not_after_timestamp_seconds", "tenant_bytes")).
		To(Equal("tenant_ready= tenant_keys= tenant_certificate_not_after_timestamp_seconds= tenant_bytes= "))
}
