package framework_test

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/test/framework"
)

func TestBackupClaimAndNewBackup(t *testing.T) {
	g := NewWithT(t)
	pvc := framework.BackupClaim("c-backups", ns, resource.MustParse("256Mi"))
	g.Expect(pvc.ObjectMeta).To(Equal(metav1.ObjectMeta{Name: "c-backups", Namespace: ns,
		Labels: map[string]string{framework.PartOfLabel: framework.PartOfValue}}))
	g.Expect(pvc.Spec.AccessModes).To(Equal([]corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}))
	g.Expect(pvc.Spec.Resources.Requests.Storage().String()).To(Equal("256Mi"))
	g.Expect(pvc.Spec.StorageClassName).To(BeNil(), "the default StorageClass")

	c := settled()
	c.Namespace = ns
	b := framework.NewBackup("c-backup", c, "c-backups", 3*time.Minute)
	g.Expect(b.ObjectMeta).To(Equal(metav1.ObjectMeta{Name: "c-backup", Namespace: ns,
		Labels: map[string]string{framework.PartOfLabel: framework.PartOfValue}}))
	g.Expect(b.Spec).To(Equal(etcdv1alpha1.EtcdBackupSpec{
		ClusterName:    "c",
		Destination:    etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "c-backups"}},
		DeletionPolicy: etcdv1alpha1.BackupDeletionPolicyDelete,
		Timeout:        &metav1.Duration{Duration: 3 * time.Minute},
	}))
}

// succeeded is a backup of settled() to claim c-backups, as the operator reports it.
func succeeded() *etcdv1alpha1.EtcdBackup {
	b := &etcdv1alpha1.EtcdBackup{}
	b.Name = "c-backup"
	b.Status = etcdv1alpha1.EtcdBackupStatus{
		Conditions: []metav1.Condition{{Type: etcdv1alpha1.ConditionSucceeded, Status: metav1.ConditionTrue,
			Reason: etcdv1alpha1.ReasonBackupCompleted, Message: "stored pvc://c-backups/ns/c/x.db.gz"}},
		Artifact: &etcdv1alpha1.BackupArtifact{Location: "pvc://c-backups/ns/c/x.db.gz", Key: "ns/c/x.db.gz", Compression: "gzip",
			SHA256: strings.Repeat("ab", 32), Size: 4096, SnapshotSize: 20480},
		Snapshot: &etcdv1alpha1.BackupSnapshot{Member: "c-1", MemberID: "b", Revision: 57, EtcdVersion: "3.7.3", ClusterID: "f00"},
	}
	return b
}

func TestCheckBackup(t *testing.T) {
	cases := []struct {
		name   string
		change func(b *etcdv1alpha1.EtcdBackup)
		want   string
	}{
		{name: "usable", change: func(*etcdv1alpha1.EtcdBackup) {}},
		{name: "no member ID", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Snapshot.MemberID = "" }},
		{name: "no artifact", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact = nil }, want: "no status.artifact"},
		{name: "no snapshot", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Snapshot = nil }, want: "no status.snapshot"},
		{name: "short checksum", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact.SHA256 = "abc" },
			want: `status.artifact.sha256 "abc" is not 64 lowercase hex digits`},
		{name: "upper-case checksum", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact.SHA256 = strings.Repeat("AB", 32) },
			want: "is not 64 lowercase hex digits"},
		{name: "empty", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact.Size = 0 }, want: "status.artifact.size is 0"},
		{name: "another claim", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact.Location = "pvc://other/ns/c/x.db.gz" },
			want: `status.artifact.location "pvc://other/ns/c/x.db.gz" is not on claim c-backups`},
		{name: "no revision", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Snapshot.Revision = 0 }, want: "status.snapshot.revision is 0"},
		{name: "not a member", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Snapshot.Member = "d-0" },
			want: `status.snapshot.member "d-0" is not a member of EtcdCluster c (c-0, c-1, c-2)`},
		{name: "another member's ID", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Snapshot.MemberID = "c" },
			want: "status.snapshot.memberID c is not the ID of member c-1 (b)"},
		{name: "several problems", change: func(b *etcdv1alpha1.EtcdBackup) { b.Status.Artifact.Size, b.Status.Snapshot.Revision = -1, -1 },
			want: "status.artifact.size is -1; status.snapshot.revision is -1"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			b := succeeded()
			tc.change(b)
			err := framework.CheckBackup(b, settled(), "c-backups")
			if tc.want == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(err).To(MatchError(ContainSubstring(tc.want)))
		})
	}
}

func TestBackupFinished(t *testing.T) {
	g := NewWithT(t)
	b := succeeded()
	done, state := framework.BackupFinished(b)
	g.Expect(done).To(BeTrue())
	g.Expect(state).To(Equal("Succeeded=True (Completed: stored pvc://c-backups/ns/c/x.db.gz)"))

	b.Status.Conditions[0] = metav1.Condition{Type: etcdv1alpha1.ConditionSucceeded, Status: metav1.ConditionUnknown,
		Reason: etcdv1alpha1.ReasonBackupRunning, Message: "streaming the snapshot"}
	done, state = framework.BackupFinished(b)
	g.Expect(done).To(BeFalse())
	g.Expect(state).To(Equal("Succeeded=Unknown (Running: streaming the snapshot)"))

	b.Status.Conditions[0].Status, b.Status.Conditions[0].Reason = metav1.ConditionFalse, etcdv1alpha1.ReasonBackupTimeout
	done, _ = framework.BackupFinished(b)
	g.Expect(done).To(BeTrue(), "a failed backup is never retried")

	done, state = framework.BackupFinished(&etcdv1alpha1.EtcdBackup{})
	g.Expect(done).To(BeFalse())
	g.Expect(state).To(Equal("no Succeeded condition yet"))
}

func TestVerificationFinished(t *testing.T) {
	g := NewWithT(t)
	b := succeeded()
	verified := metav1.Condition{Type: etcdv1alpha1.ConditionVerified, Status: metav1.ConditionUnknown, Reason: etcdv1alpha1.ReasonVerifying, Message: "restoring"}
	b.Status.Conditions = append(b.Status.Conditions, verified)
	done, state := framework.VerificationFinished(b)
	g.Expect(done).To(BeFalse())
	g.Expect(state).To(Equal("Verified=Unknown (Verifying: restoring)"))

	b.Status.Conditions[1].Reason, b.Status.Conditions[1].Message = etcdv1alpha1.ReasonVerificationIncomplete, "not compared: the hash"
	done, state = framework.VerificationFinished(b)
	g.Expect(done).To(BeTrue(), "over: it never turns True")
	g.Expect(state).To(Equal("Verified=Unknown (VerificationIncomplete: not compared: the hash)"))

	b.Status.Conditions[1].Status, b.Status.Conditions[1].Reason = metav1.ConditionTrue, etcdv1alpha1.ReasonVerificationPassed
	done, _ = framework.VerificationFinished(b)
	g.Expect(done).To(BeTrue())
}
