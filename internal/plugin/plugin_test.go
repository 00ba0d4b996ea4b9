package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/pki"
)

var now = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func cond(t string, s metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg}
}

// main is a 3-member cluster rolling out a change, member main-2 behind.
func mainCluster() *etcdv1alpha1.EtcdCluster {
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "main"}}
	c.Spec.Size = 3
	// The API server's defaults.
	c.Spec.Maintenance.Defragmentation.Mode = etcdv1alpha1.DefragmentationAuto
	c.Spec.Maintenance.NoSpaceRecovery = etcdv1alpha1.NoSpaceRecoveryAuto
	c.Spec.ConsistencyCheck.Mode = etcdv1alpha1.ConsistencyCheckReplace
	c.Spec.QuorumLossRecovery.Policy = etcdv1alpha1.QuorumLossManual
	c.Spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{Duration: 10 * time.Minute}
	c.Status.CurrentVersion = "3.7.3"
	c.Status.ClientSecret = "main-client-tls"
	c.Status.Conditions = []metav1.Condition{
		cond(etcdv1alpha1.ConditionAvailable, metav1.ConditionTrue, etcdv1alpha1.ReasonQuorumAvailable, ""),
		cond(etcdv1alpha1.ConditionProgressing, metav1.ConditionTrue, etcdv1alpha1.ReasonRollingOut,
			"rolling out the new spec: 1 of 3 members updated; waiting for member main-2 to become healthy"),
		cond(etcdv1alpha1.ConditionDegraded, metav1.ConditionFalse, etcdv1alpha1.ReasonAsExpected, ""),
		cond(etcdv1alpha1.ConditionReady, metav1.ConditionFalse, etcdv1alpha1.ReasonProgressing, ""),
	}
	c.Status.Members = []etcdv1alpha1.MemberStatus{
		{Name: "main-1", Healthy: true, Version: "3.7.3", DBSize: 20 << 20, DBSizeInUse: 12 << 20},
		{Name: "main-0", Leader: true, Healthy: true, Version: "3.7.3", DBSize: 21 << 20, DBSizeInUse: 12 << 20, Zone: "zone-a"},
		{Name: "main-2", Learner: true, Version: "3.7.3", RaftIndexLag: 1500, Alarms: []string{"NOSPACE"}},
	}
	c.Status.Consistency = &etcdv1alpha1.ConsistencyStatus{LastCheckTime: metav1.NewTime(now.Add(-4 * time.Minute)), Result: "Consistent"}
	return c
}

func memberPod(c *etcdv1alpha1.EtcdCluster, name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: name, Labels: cluster.For(c).SelectorLabels()},
		Spec: corev1.PodSpec{NodeName: node}}
}

func backupOf(name, cluster string, completed time.Time, succeeded metav1.ConditionStatus, verified *metav1.ConditionStatus) etcdv1alpha1.EtcdBackup {
	b := etcdv1alpha1.EtcdBackup{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: name}}
	b.Spec.ClusterName = cluster
	b.Status.CompletedAt = &metav1.Time{Time: completed}
	b.Status.Conditions = []metav1.Condition{cond(etcdv1alpha1.ConditionSucceeded, succeeded, "Completed", "")}
	if verified != nil {
		b.Status.Conditions = append(b.Status.Conditions, cond(etcdv1alpha1.ConditionVerified, *verified, "Passed", ""))
	}
	return b
}

func TestStatusOf(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	pods := []corev1.Pod{*memberPod(c, "main-0", "node-a"), *memberPod(c, "main-1", "node-b")}
	passed := metav1.ConditionTrue
	backups := []etcdv1alpha1.EtcdBackup{
		backupOf("old", "main", now.Add(-3*time.Hour), metav1.ConditionTrue, nil),
		backupOf("newest", "main", now.Add(-5*time.Minute), metav1.ConditionTrue, &passed),
		backupOf("other-cluster", "other", now.Add(-time.Minute), metav1.ConditionTrue, nil),
	}
	s := StatusOf(c, pods, backups, now)
	g.Expect(s.Conditions).To(HaveLen(5))
	g.Expect(s.Conditions[0]).To(Equal(Condition{Type: "Ready", Status: "False", Reason: "Progressing"}))
	g.Expect(s.Conditions[4]).To(Equal(Condition{Type: "Monitoring", Status: "Unknown"}), "absent: Unknown")
	g.Expect(s.Members).To(ContainElements(
		Member{Name: "main-0", Role: "leader", Healthy: true, Version: "3.7.3", Node: "node-a", Zone: "zone-a", DBSize: 21 << 20, DBSizeInUse: 12 << 20},
		Member{Name: "main-2", Role: "learner", Version: "3.7.3", RaftIndexLag: 1500, Alarms: []string{"NOSPACE"}},
	))
	g.Expect(s.Doing).To(HavePrefix("rolling out the new spec"))
	g.Expect(s.LastBackup).To(Equal(&LastBackup{Name: "newest", Succeeded: true, Reason: "Completed",
		Completed: now.Add(-5 * time.Minute), AgeSeconds: 300, Verified: "True"}))
	g.Expect(s.AutoPilot).To(ContainElement(Feature{Name: "consistency check", Setting: "Replace", State: "Consistent 4m ago"}))
	g.Expect(s.AutoPilot).To(ContainElement(Feature{Name: "storage autoscaling", Setting: "Disabled"}))

	g.Expect(s.Auth).To(Equal(Auth{}), "never asked for")

	c.Status.Conditions[1].Status = metav1.ConditionFalse
	g.Expect(StatusOf(c, nil, nil, now).Doing).To(BeEmpty(), "nothing progresses or is degraded")
	g.Expect(StatusOf(c, nil, nil, now).LastBackup).To(BeNil())
}

func TestRenderStatusFitsEightyColumns(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	var b bytes.Buffer
	g.Expect(RenderStatus(&b, StatusOf(c, []corev1.Pod{*memberPod(c, "main-0", "node-a")}, nil, now))).To(Succeed())
	out := b.String()
	for _, line := range strings.Split(out, "\n") {
		g.Expect(len([]rune(line))).To(BeNumerically("<=", 80), "%q", line)
	}
	g.Expect(out).To(ContainSubstring("EtcdCluster apps/main: 3 members, etcd 3.7.3"))
	g.Expect(out).To(MatchRegexp(`main-0\s+leader\s+yes\s+3.7.3\s+node-a\s+21.0M\s+12.0M\s+0\s+-`))
	g.Expect(out).To(MatchRegexp(`main-2\s+learner\s+no\s+3.7.3\s+-\s+0.0M\s+0.0M\s+1500\s+NOSPACE`))
	g.Expect(out).To(ContainSubstring("Now: rolling out the new spec"))
	g.Expect(out).To(ContainSubstring("Last backup: none finished"))
	g.Expect(out).To(MatchRegexp(`consistency check\s+Replace\s+Consistent 4m ago`))
	g.Expect(out).To(MatchRegexp(`member replacement\s+10m, node lost 3m\s`))
	g.Expect(out).To(MatchRegexp(`quorum-loss recovery\s+Manual`))
	g.Expect(out).To(ContainSubstring("Auth: off\n"))
}

// Auth says what the spec asks and what etcd reported, in each combination.
func TestAuthLine(t *testing.T) {
	g := NewWithT(t)
	on, off := true, false
	for _, tc := range []struct {
		auth Auth
		line string
	}{
		{Auth{}, "off"},
		{Auth{Wanted: true}, "asked for, etcd not asked yet"},
		{Auth{Wanted: true, Enabled: &off}, "off, turning on"},
		{Auth{Wanted: true, Enabled: &on, RootUsers: []string{"main-member", "etcdpilot", "root"}}, "on; root role: main-member, etcdpilot, root"},
		{Auth{Enabled: &on}, "on, turning off"},
		{Auth{Enabled: &off}, "off"},
	} {
		g.Expect(authLine(tc.auth)).To(Equal(tc.line), "%+v", tc.auth)
	}
	c := mainCluster()
	c.Spec.Auth.Enabled = true
	c.Status.Auth = &etcdv1alpha1.AuthStatus{Enabled: true, RootUsers: []string{"root"}}
	g.Expect(StatusOf(c, nil, nil, now).Auth).To(Equal(Auth{Wanted: true, Enabled: &on, RootUsers: []string{"root"}}))
}

func TestCertificatesOf(t *testing.T) {
	g := NewWithT(t)
	caPair, err := pki.NewCA("main CA", 24*time.Hour, now)
	g.Expect(err).NotTo(HaveOccurred())
	c := mainCluster()
	c.Status.TLS = &etcdv1alpha1.TLSStatus{Certificates: []etcdv1alpha1.CertificateStatus{
		{Secret: "main-member-tls", NotAfter: metav1.NewTime(now.Add(90 * 24 * time.Hour))},
		{Secret: "main-client-tls", NotAfter: metav1.NewTime(now.Add(-time.Hour))},
	}}
	certs, err := CertificatesOf(c, caPair.CertPEM, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(certs).To(HaveLen(3))
	g.Expect(certs[0]).To(Equal(Certificate{What: "client", Secret: "main-client-tls", NotAfter: now.Add(-time.Hour), ExpiresInSeconds: -3600}))
	g.Expect(certs[1].What).To(Equal("CA main CA"))
	g.Expect(certs[1].ExpiresInSeconds).To(BeNumerically("~", 24*3600, 60))
	g.Expect(certs[2].What).To(Equal("member"))
	var b bytes.Buffer
	g.Expect(RenderCertificates(&b, certs)).To(Succeed())
	g.Expect(b.String()).To(MatchRegexp(`client\s+main-client-tls\s+2026-11-29 11:00 UTC\s+expired`))
	g.Expect(b.String()).To(MatchRegexp(`member\s+main-member-tls\s+2027-02-27 12:00 UTC\s+90d`))
	_, err = CertificatesOf(c, []byte("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"), now)
	g.Expect(err).To(MatchError(ContainSubstring("a CA certificate of main-client-tls")))
}

func TestBackupAndRestoreObjects(t *testing.T) {
	g := NewWithT(t)
	b, err := backupFor("apps", "main", options{pvc: "backups", path: "prod", verify: true}, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Name).To(Equal("main-20261129-120000"))
	g.Expect(b.Spec.Destination.PVC).To(Equal(&etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "prod"}))
	g.Expect(b.Spec.Verify).To(BeTrue())
	b, err = backupFor("apps", "main", options{s3Bucket: "b", s3Endpoint: "https://s3", s3Secret: "creds", name: "now"}, now)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.Name).To(Equal("now"))
	g.Expect(b.Spec.Destination.S3.Bucket).To(Equal("b"))
	g.Expect(b.Spec.Destination.S3.CredentialsSecretName).To(Equal("creds"))
	_, err = backupFor("apps", "main", options{s3Bucket: "b"}, now)
	g.Expect(err).To(MatchError(ContainSubstring("needs --s3-endpoint and --s3-secret")))
	_, err = backupFor("apps", "main", options{}, now)
	g.Expect(err).To(MatchError(ContainSubstring("say where to")))
	_, err = backupFor("apps", "main", options{pvc: "x", s3Bucket: "b"}, now)
	g.Expect(err).To(MatchError(ContainSubstring("not both")))

	c, err := restoreFor("apps", "main-now", "main-restored", 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.Spec.Bootstrap.Restore.BackupName).To(Equal("main-now"))
	g.Expect(c.Spec.Size).To(Equal(int32(3)))
	_, err = restoreFor("apps", "main-now", "", 3)
	g.Expect(err).To(MatchError(ContainSubstring("--into")))
}

func fakeEnv(t *testing.T, objs ...client.Object) (Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := etcdv1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(objs...).
		WithStatusSubresource(&etcdv1alpha1.EtcdCluster{}, &etcdv1alpha1.EtcdBackup{}).Build()
	var out, errOut bytes.Buffer
	return Env{Out: &out, Err: &errOut, Client: c, Namespace: "default", Now: func() time.Time { return now }, Poll: time.Millisecond}, &out, &errOut
}

func TestRunStatusJSON(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	env, out, _ := fakeEnv(t, c, memberPod(c, "main-0", "node-a"))
	g.Expect(Run(context.Background(), []string{"status", "main", "-n", "apps", "-o", "json"}, env)).To(Equal(0))
	var s Status
	g.Expect(json.Unmarshal(out.Bytes(), &s)).To(Succeed())
	g.Expect(s.Name).To(Equal("main"))
	g.Expect(s.Members).To(HaveLen(3))

	env, _, errOut := fakeEnv(t)
	g.Expect(Run(context.Background(), []string{"status", "nope", "-n", "apps"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("EtcdCluster apps/nope"))
	env, _, errOut = fakeEnv(t)
	g.Expect(Run(context.Background(), []string{"frobnicate"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring(`unknown command "frobnicate"`))
	env, out, _ = fakeEnv(t)
	g.Expect(Run(context.Background(), nil, env)).To(Equal(0))
	g.Expect(out.String()).To(ContainSubstring("approve-recovery NAME"))
}

func TestRunApproveRecovery(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	env, _, errOut := fakeEnv(t, c)
	g.Expect(Run(context.Background(), []string{"approve-recovery", "main", "-n", "apps"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("no recovery awaiting approval (status.recovery.phase: none)"))

	c.Status.Recovery = &etcdv1alpha1.RecoveryStatus{Phase: etcdv1alpha1.RecoveryAwaitingApproval, ID: "r-1", Message: "main-0 survives"}
	env, out, _ := fakeEnv(t, c)
	g.Expect(Run(context.Background(), []string{"approve-recovery", "main", "-n", "apps"}, env)).To(Equal(0))
	g.Expect(out.String()).To(ContainSubstring("approved recovery r-1"))
	got := &etcdv1alpha1.EtcdCluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), got)).To(Succeed())
	g.Expect(got.Annotations).To(HaveKeyWithValue(etcdv1alpha1.AnnotationApproveRecovery, "r-1"))
}

func TestRunBackupWaits(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	env, out, errOut := fakeEnv(t, c)
	// The operator's part: the backup succeeds once it exists.
	go func() {
		for range 1000 {
			b := &etcdv1alpha1.EtcdBackup{}
			if env.Client.Get(context.Background(), client.ObjectKey{Namespace: "apps", Name: "now"}, b) == nil {
				b.Status.Conditions = []metav1.Condition{cond(etcdv1alpha1.ConditionSucceeded, metav1.ConditionFalse, etcdv1alpha1.ReasonDestinationNotFound, "no claim backups")}
				_ = env.Client.Status().Update(context.Background(), b)
				return
			}
			time.Sleep(time.Millisecond)
		}
	}()
	g.Expect(Run(context.Background(), []string{"backup", "main", "-n", "apps", "--pvc", "backups", "--name", "now", "--wait"}, env)).To(Equal(1))
	g.Expect(out.String()).To(ContainSubstring("created EtcdBackup apps/now"))
	g.Expect(errOut.String()).To(ContainSubstring("EtcdBackup now failed: DestinationNotFound: no claim backups"))
}

func TestRunEtcdctl(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	env, _, _ := fakeEnv(t, c)
	var ran []string
	env.Kubectl = func(_ context.Context, args []string, out, _ io.Writer) error {
		ran = args
		_, err := io.WriteString(out, "ok\n")
		return err
	}
	g.Expect(Run(context.Background(), []string{"etcdctl", "main", "-n", "apps", "--", "member", "list"}, env)).To(Equal(0))
	g.Expect(ran).To(Equal([]string{"-n", "apps", "exec", "main-0", "-c", "etcd", "--", "etcdctl", "member", "list"}), "the healthy leader")
}

func TestRunDefragment(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	env, _, errOut := fakeEnv(t, c)
	g.Expect(Run(context.Background(), []string{"defragment", "main", "-n", "apps", "--member", "main-7"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("EtcdCluster main has no member main-7"))

	env, out, _ := fakeEnv(t, c)
	g.Expect(Run(context.Background(), []string{"defragment", "main", "-n", "apps", "--member", "main-1,main-2"}, env)).To(Equal(0))
	got := &etcdv1alpha1.EtcdCluster{}
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), got)).To(Succeed())
	at := now.UTC().Truncate(time.Second).Format(time.RFC3339)
	g.Expect(got.Annotations).To(HaveKeyWithValue(etcdv1alpha1.AnnotationDefragmentAt, at))
	g.Expect(got.Annotations).To(HaveKeyWithValue(etcdv1alpha1.AnnotationDefragmentMembers, "main-1,main-2"))
	g.Expect(out.String()).To(Equal("requested the defragmentation of main-1, main-2 of EtcdCluster main at " + at + "\n"))

	// Every member, waiting: done once each was defragmented at the request's time or later.
	env, out, _ = fakeEnv(t, got)
	go func() {
		for range 1000 {
			cur := &etcdv1alpha1.EtcdCluster{}
			if env.Client.Get(context.Background(), client.ObjectKeyFromObject(c), cur) == nil && cur.Annotations[etcdv1alpha1.AnnotationDefragmentMembers] == "" {
				for i := range cur.Status.Members {
					cur.Status.Members[i].LastDefragmentation = &etcdv1alpha1.DefragmentationRecord{
						Time: metav1.NewTime(now.Add(time.Duration(i) * time.Second)), SizeBefore: 64 << 20, SizeAfter: 16 << 20}
				}
				if env.Client.Status().Update(context.Background(), cur) == nil {
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	g.Expect(Run(context.Background(), []string{"defragment", "main", "-n", "apps", "--wait"}, env)).To(Equal(0))
	g.Expect(out.String()).To(ContainSubstring("requested the defragmentation of main-0, main-1, main-2 of EtcdCluster main"))
	g.Expect(out.String()).To(ContainSubstring("defragmented main-2: 64.0M -> 16.0M\n"))
}

func TestRunHibernateAndWake(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	c := mainCluster()
	env, _, errOut := fakeEnv(t, c)
	g.Expect(Run(ctx, []string{"wake", "main", "-n", "apps", "--pvc", "backups"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("wake: a backup destination is for hibernate"))

	env, out, _ := fakeEnv(t, c)
	g.Expect(Run(ctx, []string{"hibernate", "main", "-n", "apps", "--pvc", "backups", "--path", "final"}, env)).To(Equal(0))
	got := &etcdv1alpha1.EtcdCluster{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	g.Expect(got.Spec.Hibernation.Enabled).To(BeTrue())
	g.Expect(got.Spec.Hibernation.BackupDestination).To(Equal(&etcdv1alpha1.BackupDestination{
		PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups", Path: "final"}}))
	g.Expect(out.String()).To(ContainSubstring("EtcdCluster main hibernates: a final backup (EtcdBackup main-hibernation-"))

	// --wait: a failed final backup ends the wait with the operator's words.
	env, _, errOut = fakeEnv(t, got)
	blocked := got.DeepCopy()
	blocked.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: etcdv1alpha1.ReasonHibernationBlocked, Message: "the final backup main-hibernation-2 failed (DestinationFull: no space)"}}
	g.Expect(env.Client.Status().Update(ctx, blocked)).To(Succeed())
	g.Expect(Run(ctx, []string{"hibernate", "main", "-n", "apps", "--wait"}, env)).To(Equal(1))
	g.Expect(errOut.String()).To(ContainSubstring("EtcdCluster main cannot hibernate: the final backup main-hibernation-2 failed (DestinationFull: no space)"))

	// wake --wait: done once Ready for the generation that turned hibernation off.
	env, out, _ = fakeEnv(t, got)
	go func() {
		for range 1000 {
			cur := &etcdv1alpha1.EtcdCluster{}
			if env.Client.Get(ctx, client.ObjectKeyFromObject(c), cur) == nil && !cur.Spec.Hibernation.Enabled {
				cur.Status.ObservedGeneration = cur.Generation
				cur.Status.Conditions = []metav1.Condition{{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionTrue,
					Reason: etcdv1alpha1.ReasonReady, Message: "3 of 3 members are ready"}}
				if env.Client.Status().Update(ctx, cur) == nil {
					return
				}
			}
			time.Sleep(time.Millisecond)
		}
	}()
	g.Expect(Run(ctx, []string{"wake", "main", "-n", "apps", "--wait"}, env)).To(Equal(0))
	g.Expect(out.String()).To(ContainSubstring("EtcdCluster main wakes"))
	g.Expect(out.String()).To(ContainSubstring("EtcdCluster main is ready: 3 of 3 members are ready"))
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(c), got)).To(Succeed())
	g.Expect(got.Spec.Hibernation.Enabled).To(BeFalse())
	g.Expect(got.Spec.Hibernation.BackupDestination).NotTo(BeNil(), "wake leaves the destination for the next hibernation")
}

func TestStatusOfAHibernatedCluster(t *testing.T) {
	g := NewWithT(t)
	c := mainCluster()
	msg := "every member is stopped; their claims keep the data. Set spec.hibernation.enabled to false to wake the cluster"
	c.Status.Conditions = []metav1.Condition{
		{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonHibernated, Message: msg},
		{Type: etcdv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonAsExpected},
		{Type: etcdv1alpha1.ConditionHibernated, Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonHibernated, Message: msg},
	}
	s := StatusOf(c, nil, nil, now)
	g.Expect(s.Conditions).To(ContainElement(Condition{Type: etcdv1alpha1.ConditionHibernated, Status: "True", Reason: etcdv1alpha1.ReasonHibernated, Message: msg}))
	g.Expect(s.Doing).To(Equal(msg))
	var b strings.Builder
	g.Expect(RenderStatus(&b, s)).To(Succeed())
	g.Expect(b.String()).To(MatchRegexp(`(?m)^Hibernated +True +Hibernated$`))
}
