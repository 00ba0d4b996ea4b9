package maintenance_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/maintenance"
)

func TestPolicyFor(t *testing.T) {
	created := time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	cluster := func(spec etcdv1alpha1.MaintenanceSpec, last *time.Time) *etcdv1alpha1.EtcdCluster {
		c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created)},
			Spec: etcdv1alpha1.EtcdClusterSpec{Maintenance: spec}}
		if last != nil {
			c.Status.Maintenance = &etcdv1alpha1.MaintenanceStatus{LastScheduledRun: &metav1.Time{Time: *last}}
		}
		return c
	}
	sundays := etcdv1alpha1.MaintenanceSpec{Defragmentation: etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "0 3 * * 0"}}
	saturday := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	sundayRun := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	q := resource.MustParse("64Mi")
	compaction := func(mode etcdv1alpha1.AutoCompactionMode, retention string) *etcdv1alpha1.EtcdCluster {
		c := cluster(etcdv1alpha1.MaintenanceSpec{}, nil)
		c.Spec.Etcd.AutoCompactionMode, c.Spec.Etcd.AutoCompactionRetention = mode, retention
		return c
	}
	cases := []struct {
		name string
		c    *etcdv1alpha1.EtcdCluster
		now  time.Time
		want maintenance.Policy
	}{
		{"a cluster stored before spec.maintenance existed: Auto, recovery on, etcd's default quota",
			cluster(etcdv1alpha1.MaintenanceSpec{}, nil), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"thresholds and recovery off from the spec",
			cluster(etcdv1alpha1.MaintenanceSpec{NoSpaceRecovery: etcdv1alpha1.NoSpaceRecoveryDisabled,
				Defragmentation: etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationAuto, MinFragmentationPercent: 30, MinReclaimable: &q}}, nil), saturday,
			maintenance.Policy{Mode: maintenance.Auto, MinFragmentationPercent: 30, MinReclaimableBytes: 64 << 20, QuotaBytes: 2 << 30}},
		{"disabled",
			cluster(etcdv1alpha1.MaintenanceSpec{Defragmentation: etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationDisabled}}, nil), saturday,
			maintenance.Policy{Mode: maintenance.Disabled, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"schedule: a time passed since the cluster was created, no run yet: due",
			cluster(sundays, nil), sundayRun.Add(time.Minute),
			maintenance.Policy{Mode: maintenance.Schedule, ScheduledRunDue: true, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"schedule: no time passed since the last run: not due",
			cluster(sundays, &sundayRun), sundayRun.Add(time.Hour),
			maintenance.Policy{Mode: maintenance.Schedule, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"revision mode: the retention is the history kept",
			compaction(etcdv1alpha1.AutoCompactionRevision, "50000"), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30, HistoryRevisions: 50000}},
		{"revision mode without a retention: etcd's flag gets the default count, and so does the policy",
			compaction(etcdv1alpha1.AutoCompactionRevision, ""), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30, HistoryRevisions: 10000}},
		{"revision mode with a retention that is not a count: none",
			compaction(etcdv1alpha1.AutoCompactionRevision, "1h"), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"periodic mode: a time window is no count of revisions",
			compaction(etcdv1alpha1.AutoCompactionPeriodic, "30m"), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"periodic mode with a retention that reads as a count: still none",
			compaction(etcdv1alpha1.AutoCompactionPeriodic, "5"), saturday,
			maintenance.Policy{Mode: maintenance.Auto, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
		{"schedule: the next Sunday came: due",
			cluster(sundays, &sundayRun), sundayRun.Add(7 * 24 * time.Hour),
			maintenance.Policy{Mode: maintenance.Schedule, ScheduledRunDue: true, RecoverFromNoSpace: true, QuotaBytes: 2 << 30}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			got, err := maintenance.PolicyFor(tc.c, tc.now)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(got).To(Equal(tc.want))
		})
	}

	g := NewWithT(t)
	bad := cluster(etcdv1alpha1.MaintenanceSpec{Defragmentation: etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "every day"}}, nil)
	_, err := maintenance.PolicyFor(bad, saturday)
	g.Expect(err).To(MatchError(ContainSubstring("spec.maintenance.defragmentation.schedule")))
}

// A defragmentation asked for by annotation: due once its time has come, limited to the
// members named; a value that is no time is reported, never guessed at.
func TestPolicyForRequest(t *testing.T) {
	g := NewWithT(t)
	now := time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)
	with := func(annotations map[string]string) maintenance.Policy {
		p, err := maintenance.PolicyFor(&etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Annotations: annotations}}, now)
		g.Expect(err).NotTo(HaveOccurred())
		return p
	}
	g.Expect(with(nil).Request).To(BeNil())
	g.Expect(with(map[string]string{etcdv1alpha1.AnnotationDefragmentAt: "2026-11-30T14:59:00Z"}).Request).
		To(Equal(&maintenance.Request{At: now.Add(-time.Minute)}))
	g.Expect(with(map[string]string{etcdv1alpha1.AnnotationDefragmentAt: "2026-11-30T15:00:00Z", etcdv1alpha1.AnnotationDefragmentMembers: "main-1, main-2,"}).Request).
		To(Equal(&maintenance.Request{At: now, Members: []string{"main-1", "main-2"}}))
	later := with(map[string]string{etcdv1alpha1.AnnotationDefragmentAt: "2026-11-30T15:00:01Z"})
	g.Expect(later.Request).To(BeNil(), "not yet")
	g.Expect(later.RequestError).To(BeEmpty())
	bad := with(map[string]string{etcdv1alpha1.AnnotationDefragmentAt: "now"})
	g.Expect(bad.Request).To(BeNil())
	g.Expect(bad.RequestError).To(Equal(`annotation etcd.etcdpilot.io/defragment-at is "now", not a time such as 2026-11-30T15:00:00Z: no defragmentation is requested`))
}
