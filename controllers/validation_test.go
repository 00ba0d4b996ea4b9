package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Every validation rule of the EtcdCluster API, against the real API server: what it
// accepts, what it refuses, and the message a user sees.

func TestDefaults(t *testing.T) {
	g := NewWithT(t)
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "defaults", Namespace: newNamespace(t)}}

	g.Expect(k8sClient.Create(context.Background(), c)).To(Succeed())

	g.Expect(c.Spec.Size).To(Equal(int32(3)))
	g.Expect(c.Spec.Version).To(Equal("3.7.3"))
	g.Expect(c.Spec.Storage.Size.String()).To(Equal("4Gi"))
	g.Expect(c.Spec.Storage.Ephemeral).To(BeFalse())
	g.Expect(c.Spec.TLS.Mode).To(Equal(etcdv1alpha1.TLSModeOperatorCA))
	g.Expect(c.Spec.DeletionPolicy).To(Equal(etcdv1alpha1.DeletionPolicyRetain))
	g.Expect(c.Spec.ReplaceUnhealthyMemberAfter).To(Equal(&metav1.Duration{Duration: 10 * time.Minute}))
	g.Expect(c.Spec.ReplaceMemberOnLostNodeAfter).To(Equal(&metav1.Duration{Duration: 3 * time.Minute}))
	g.Expect(c.Spec.Etcd).To(Equal(etcdv1alpha1.EtcdOptions{
		AutoCompactionMode: etcdv1alpha1.AutoCompactionPeriodic, AutoCompactionRetention: "1h",
		SnapshotCount:           10000,
		HeartbeatIntervalMillis: 100, ElectionTimeoutMillis: 1000, TimingProfile: etcdv1alpha1.TimingCustom,
	}), "no quota: the operator's follows storage.size (internal/clusterspec.DefaultQuotaBackendBytes)")
	g.Expect(c.Spec.Storage.Autoscaling).To(BeNil(), "storage autoscaling is opt-in")
	g.Expect(c.Spec.Monitoring).To(Equal(etcdv1alpha1.MonitoringSpec{Mode: etcdv1alpha1.MonitoringAuto}))
	g.Expect(c.Spec.Maintenance).To(Equal(etcdv1alpha1.MaintenanceSpec{
		NoSpaceRecovery: etcdv1alpha1.NoSpaceRecoveryAuto,
		Defragmentation: etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationAuto,
			MinFragmentationPercent: 45, MinReclaimable: ptr.To(resource.MustParse("100Mi"))},
	}))
	g.Expect(c.Spec.ConsistencyCheck).To(Equal(etcdv1alpha1.ConsistencyCheckSpec{Mode: etcdv1alpha1.ConsistencyCheckReplace}),
		"the consistency check is on, replacing; its interval's default (10m) lives in the operator")
	g.Expect(c.Spec.QuorumLossRecovery).To(Equal(etcdv1alpha1.QuorumLossRecoverySpec{Policy: etcdv1alpha1.QuorumLossManual}),
		"a lost quorum is recovered only after approval; the default wait (5m) lives in the operator")
	g.Expect(c.Spec.NetworkPolicy).To(Equal(etcdv1alpha1.NetworkPolicySpec{Mode: etcdv1alpha1.NetworkPolicyEnabled, SameNamespace: etcdv1alpha1.NamespaceAllowed}),
		"a NetworkPolicy by default, admitting the cluster's namespace")
}

func TestCreateValidation(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name   string
		mutate func(c *etcdv1alpha1.EtcdCluster)
		// refusal is a substring of the API server's message; empty means accepted.
		refusal string
	}{
		{"size 1", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 1 }, ""},
		{"auth on, every other field defaulted", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true }, ""},
		{"auth on without TLS", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Auth.Enabled = true
			c.Spec.TLS.Mode = etcdv1alpha1.TLSModeDisabled
		}, "auth.enabled needs TLS: etcd knows a client by the common name of its certificate"},
		{"auth on with etcd's compaction off", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Auth.Enabled = true
			c.Spec.Etcd.AutoCompactionRetention = "0h"
		}, "with auth.enabled, etcd.autoCompactionRetention cannot turn compaction off"},
		{"created hibernated, with a final backup destination", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Hibernation = etcdv1alpha1.HibernationSpec{Enabled: true,
				BackupDestination: &etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups"}}}
		}, ""},
		{"hibernation on ephemeral storage", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Hibernation.Enabled = true
			c.Spec.Storage.Ephemeral = true
		}, "hibernation needs members that keep their data on claims: ephemeral members lose it when they stop"},
		{"ephemeral storage, hibernation off", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Ephemeral = true }, ""},
		{"auth on with etcd's compaction every 30m", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Auth.Enabled = true
			c.Spec.Etcd.AutoCompactionRetention = "30m"
		}, ""},
		{"auth off with etcd's compaction off", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.AutoCompactionRetention = "0s" }, ""},
		{"one member on a 1Gi volume, every other field defaulted", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Size = 1
			c.Spec.Storage.Size = ptr.To(resource.MustParse("1Gi"))
		}, ""},
		{"storage autoscaling volume ceiling below the volume", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Size = ptr.To(resource.MustParse("8Gi"))
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
				MaxSize: ptr.To(resource.MustParse("4Gi"))}
		}, "storage.autoscaling.maxSize must be at least storage.size"},
		{"storage autoscaling volume ceiling below the default volume", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
				MaxSize: ptr.To(resource.MustParse("1Gi"))}
		}, "storage.autoscaling.maxSize must be at least storage.size"},
		{"pod label value of 10,000 characters", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.PodTemplate.Labels = map[string]string{"team": strings.Repeat("a", 10000)}
		}, "podTemplate.labels values must be at most 63 characters"},
		{"pod label values of 63 characters and empty", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.PodTemplate.Labels = map[string]string{"team": strings.Repeat("a", 63), "tier": "", "app": "a.b_c-d"}
		}, ""},
		{"timing profile Slower", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingSlower }, ""},
		{"timing profile Auto with a window", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
			c.Spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: 5 * time.Minute}
		}, ""},
		{"unknown timing profile", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.TimingProfile = "Fast" }, "Unsupported value: \"Fast\""},
		{"timing profile with its own heartbeat", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
			c.Spec.Etcd.HeartbeatIntervalMillis = 200
			c.Spec.Etcd.ElectionTimeoutMillis = 2000
		}, "etcd.heartbeatIntervalMillis and etcd.electionTimeoutMillis are set by etcd.timingProfile"},
		{"custom timing", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.HeartbeatIntervalMillis = 200
			c.Spec.Etcd.ElectionTimeoutMillis = 2000
		}, ""},
		{"auto timing window without Auto", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: 5 * time.Minute}
		}, "etcd.autoTimingWindow applies only with etcd.timingProfile Auto"},
		{"auto timing window too short", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.TimingProfile = etcdv1alpha1.TimingAuto
			c.Spec.Etcd.AutoTimingWindow = &metav1.Duration{Duration: 10 * time.Second}
		}, "etcd.autoTimingWindow must be between 1m and 24h"},
		{"upgrade backup destination without pvc or s3", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.UpgradeBackupDestination = &etcdv1alpha1.BackupDestination{}
		}, "set exactly one of destination.pvc and destination.s3"},
		{"upgrade backup destination on a claim", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.UpgradeBackupDestination = &etcdv1alpha1.BackupDestination{PVC: &etcdv1alpha1.PVCDestination{ClaimName: "backups"}}
		}, ""},
		{"consistency check reported only, hourly", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ConsistencyCheck = etcdv1alpha1.ConsistencyCheckSpec{Mode: etcdv1alpha1.ConsistencyCheckReport, Interval: &metav1.Duration{Duration: time.Hour}}
		}, ""},
		{"consistency check interval too short", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ConsistencyCheck.Interval = &metav1.Duration{Duration: 30 * time.Second}
		}, "consistencyCheck.interval must be between 1m and 24h"},
		{"consistency check interval too long", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ConsistencyCheck.Interval = &metav1.Duration{Duration: 25 * time.Hour}
		}, "consistencyCheck.interval must be between 1m and 24h"},
		{"quorum loss recovered automatically after a minute", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.QuorumLossRecovery = etcdv1alpha1.QuorumLossRecoverySpec{Policy: etcdv1alpha1.QuorumLossAutomatic, After: &metav1.Duration{Duration: time.Minute}}
		}, ""},
		{"quorum loss declared too soon", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.QuorumLossRecovery.After = &metav1.Duration{Duration: 10 * time.Second}
		}, "quorumLossRecovery.after must be between 30s and 24h"},
		{"quorum loss declared too late", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.QuorumLossRecovery.After = &metav1.Duration{Duration: 25 * time.Hour}
		}, "quorumLossRecovery.after must be between 30s and 24h"},
		{"network policy admitting a namespace and Prometheus", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.NetworkPolicy = etcdv1alpha1.NetworkPolicySpec{SameNamespace: etcdv1alpha1.NamespaceDenied,
				ClientFrom:  []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "shop"}}}},
				MetricsFrom: []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "monitoring"}}}}}
		}, ""},
		{"network policy mode unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.NetworkPolicy.Mode = "Strict"
		}, `spec.networkPolicy.mode: Unsupported value: "Strict"`},
		{"network policy namespace access unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.NetworkPolicy.SameNamespace = "Some"
		}, `spec.networkPolicy.sameNamespace: Unsupported value: "Some"`},
		{"network policy with too many client sources", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.NetworkPolicy.ClientFrom = make([]networkingv1.NetworkPolicyPeer, 17)
			for i := range c.Spec.NetworkPolicy.ClientFrom {
				c.Spec.NetworkPolicy.ClientFrom[i].PodSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": fmt.Sprint(i)}}
			}
		}, "spec.networkPolicy.clientFrom: Too many: 17: must have at most 16 items"},
		{"quorum loss policy unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.QuorumLossRecovery.Policy = "Always"
		}, `spec.quorumLossRecovery.policy: Unsupported value: "Always"`},
		{"consistency check mode unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ConsistencyCheck.Mode = "Fix"
		}, `spec.consistencyCheck.mode: Unsupported value: "Fix"`},
		{"storage autoscaling with ceilings", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
				MaxQuotaBackendBytes: ptr.To(resource.MustParse("8Gi")), MaxSize: ptr.To(resource.MustParse("32Gi"))}
		}, ""},
		{"storage autoscaling quota ceiling above 8Gi", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
				MaxQuotaBackendBytes: ptr.To(resource.MustParse("9Gi"))}
		}, "storage.autoscaling.maxQuotaBackendBytes must be between 16Mi and 8Gi"},
		{"storage autoscaling volume ceiling too small", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: etcdv1alpha1.StorageAutoscalingAuto,
				MaxSize: ptr.To(resource.MustParse("10Mi"))}
		}, "storage.autoscaling.maxSize must be at least 64Mi"},
		{"unknown storage autoscaling mode", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Autoscaling = &etcdv1alpha1.StorageAutoscalingSpec{Mode: "Always"}
		}, "Unsupported value: \"Always\""},
		{"defragmentation on a schedule", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation = etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "0 3 * * 0"}
		}, ""},
		{"defragmentation @weekly", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation = etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "@weekly"}
		}, ""},
		{"defragmentation Schedule without a schedule", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.Mode = etcdv1alpha1.DefragmentationSchedule
		}, "defragmentation.schedule is required with mode Schedule, and only allowed with it"},
		{"a schedule with mode Auto", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.Schedule = "0 3 * * 0"
		}, "defragmentation.schedule is required with mode Schedule, and only allowed with it"},
		{"a schedule that is not cron", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation = etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "every sunday"}
		}, "defragmentation.schedule must be a cron expression of five fields"},
		{"a schedule with a backwards range", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation = etcdv1alpha1.DefragmentationSpec{Mode: etcdv1alpha1.DefragmentationSchedule, Schedule: "0 17-8 * * *"}
		}, "defragmentation.schedule: a range a-b must not end before it starts"},
		{"defragmentation mode unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.Mode = "Sometimes"
		}, `Unsupported value: "Sometimes"`},
		{"minFragmentationPercent 0", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.MinFragmentationPercent = -1
		}, "should be greater than or equal to 1"},
		{"minFragmentationPercent 100", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.MinFragmentationPercent = 100
		}, "should be less than or equal to 99"},
		{"minReclaimable 512Ki", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.MinReclaimable = ptr.To(resource.MustParse("512Ki"))
		}, "defragmentation.minReclaimable must be at least 1Mi"},
		{"minReclaimable 1Mi", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.Defragmentation.MinReclaimable = ptr.To(resource.MustParse("1Mi"))
		}, ""},
		{"NOSPACE recovery off", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.NoSpaceRecovery = etcdv1alpha1.NoSpaceRecoveryDisabled
		}, ""},
		{"NOSPACE recovery unknown", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Maintenance.NoSpaceRecovery = "Sometimes"
		}, `Unsupported value: "Sometimes"`},
		{"replacement off", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{}
		}, ""},
		{"replacement after 30s", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{Duration: 30 * time.Second}
		}, ""},
		{"replacement after 10s", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceUnhealthyMemberAfter = &metav1.Duration{Duration: 10 * time.Second}
		}, "spec.replaceUnhealthyMemberAfter: Invalid value: \"10s\": replaceUnhealthyMemberAfter must be 0s (never replace) or at least 30s"},
		{"lost-node replacement off", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{}
		}, ""},
		{"lost-node replacement after 30s", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: 30 * time.Second}
		}, ""},
		{"lost-node replacement after 29s", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.ReplaceMemberOnLostNodeAfter = &metav1.Duration{Duration: 29 * time.Second}
		}, "spec.replaceMemberOnLostNodeAfter: Invalid value: \"29s\": replaceMemberOnLostNodeAfter must be 0s (only replaceUnhealthyMemberAfter applies) or at least 30s: a node briefly NotReady must not cost a member its data"},
		{"size 7", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 7 }, ""},
		{"monitoring disabled, with labels", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Monitoring = etcdv1alpha1.MonitoringSpec{Mode: etcdv1alpha1.MonitoringDisabled, Labels: map[string]string{"release": "prometheus"}}
		}, ""},
		{"unknown monitoring mode", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Monitoring.Mode = "Always" },
			`spec.monitoring.mode: Unsupported value: "Always": supported values: "Auto", "Disabled"`},
		{"monitoring label of the operator's", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Monitoring.Labels = map[string]string{"app.kubernetes.io/name": "x"}
		}, "monitoring.labels cannot set the operator's own labels (app.kubernetes.io/*, etcd.etcdpilot.io/*, grafana_dashboard)"},
		{"monitoring label grafana_dashboard", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Monitoring.Labels = map[string]string{"grafana_dashboard": "0"}
		}, "monitoring.labels cannot set the operator's own labels"},
		{"even size", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 4 },
			`spec.size: Unsupported value: 4: supported values: "1", "3", "5", "7"`},
		{"size above 7", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 9 }, `spec.size: Unsupported value: 9`},
		{"negative size", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = -1 }, `spec.size: Unsupported value: -1`},
		{"supported version", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "3.5.35" }, ""},
		{"unsupported version", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "3.4.30" },
			`spec.version: Unsupported value: "3.4.30": supported values: "3.5.35", "3.6.15", "3.6.16", "3.7.2", "3.7.3"`},
		{"malformed version", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "v3.6.16" },
			`spec.version: Unsupported value: "v3.6.16"`},
		{"tiny storage", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("10Mi")) },
			"storage.size must be at least 64Mi"},
		{"quota not below storage", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Size = ptr.To(resource.MustParse("2Gi"))
			c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("2Gi"))
		}, "etcd.quotaBackendBytes must be smaller than storage.size"},
		{"quota above storage is fine when ephemeral", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage = etcdv1alpha1.StorageSpec{Size: ptr.To(resource.MustParse("1Gi")), Ephemeral: true}
		}, ""},
		{"quota too large", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi"))
			c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("9Gi"))
		}, "etcd.quotaBackendBytes must be between 16Mi and 8Gi"},
		{"quota of exactly 8Gi", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Storage.Size = ptr.To(resource.MustParse("20Gi"))
			c.Spec.Etcd.QuotaBackendBytes = ptr.To(resource.MustParse("8Gi"))
		}, ""},
		{"election timeout too short", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.HeartbeatIntervalMillis, c.Spec.Etcd.ElectionTimeoutMillis = 200, 900
		}, "etcd.electionTimeoutMillis must be at least 5 times etcd.heartbeatIntervalMillis"},
		{"periodic retention must be a duration", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.AutoCompactionRetention = "lots"
		}, "etcd.autoCompactionRetention must be a duration such as 1h"},
		{"periodic retention of 1h30m", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.AutoCompactionRetention = "1h30m"
		}, ""},
		{"revision retention must be a count", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.AutoCompactionMode, c.Spec.Etcd.AutoCompactionRetention = etcdv1alpha1.AutoCompactionRevision, "1h"
		}, "etcd.autoCompactionRetention must be a positive number of revisions"},
		{"revision retention of 10000", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Etcd.AutoCompactionMode, c.Spec.Etcd.AutoCompactionRetention = etcdv1alpha1.AutoCompactionRevision, "10000"
		}, ""},
		{"unknown TLS mode", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.TLS.Mode = "Sometimes" },
			`spec.tls.mode: Unsupported value: "Sometimes": supported values: "OperatorCA", "CertManager", "Secrets", "Disabled"`},
		{"CertManager mode without an issuer", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.TLS.Mode = etcdv1alpha1.TLSModeCertManager },
			"tls.certManager is required when tls.mode is CertManager, and allowed only then"},
		{"an issuer in OperatorCA mode", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS.CertManager = &etcdv1alpha1.CertManagerTLS{IssuerRef: etcdv1alpha1.IssuerReference{Name: "ca"}}
		}, "tls.certManager is required when tls.mode is CertManager, and allowed only then"},
		{"an issuer of an unknown kind", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeCertManager,
				CertManager: &etcdv1alpha1.CertManagerTLS{IssuerRef: etcdv1alpha1.IssuerReference{Name: "ca", Kind: "Vault"}}}
		}, `spec.tls.certManager.issuerRef.kind: Unsupported value: "Vault": supported values: "Issuer", "ClusterIssuer"`},
		{"a ClusterIssuer", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeCertManager,
				CertManager: &etcdv1alpha1.CertManagerTLS{IssuerRef: etcdv1alpha1.IssuerReference{Name: "ca", Kind: "ClusterIssuer"}}}
		}, ""},
		{"TLS from the user's secrets", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeSecrets,
				Secrets: &etcdv1alpha1.TLSSecrets{MemberSecretName: "m", ClientSecretName: "c"}}
		}, ""},
		{"Secrets mode without secrets", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.TLS.Mode = etcdv1alpha1.TLSModeSecrets },
			"tls.secrets is required when tls.mode is Secrets, and allowed only then"},
		{"secrets in OperatorCA mode", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS.Secrets = &etcdv1alpha1.TLSSecrets{MemberSecretName: "m", ClientSecretName: "c"}
		}, "tls.secrets is required when tls.mode is Secrets, and allowed only then"},
		{"empty secret name", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.TLS = etcdv1alpha1.TLSSpec{Mode: etcdv1alpha1.TLSModeSecrets,
				Secrets: &etcdv1alpha1.TLSSecrets{MemberSecretName: "m"}}
		}, "spec.tls.secrets.clientSecretName"},
		{"unknown deletion policy", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.DeletionPolicy = "Orphan" },
			`spec.deletionPolicy: Unsupported value: "Orphan": supported values: "Retain", "Delete"`},
		{"name too long", func(c *etcdv1alpha1.EtcdCluster) { c.Name = strings.Repeat("a", 49) },
			"metadata.name must be at most 48 characters"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "v-", Namespace: ns}}
			tc.mutate(c)
			if c.Name != "" {
				c.GenerateName = ""
			}

			err := k8sClient.Create(context.Background(), c)

			if tc.refusal == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.refusal))
		})
	}
}

func TestUpdateValidation(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name    string
		initial func(c *etcdv1alpha1.EtcdCluster)
		update  func(c *etcdv1alpha1.EtcdCluster)
		refusal string
	}{
		{"storage grows", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("8Gi")) }, ""},
		{"storage shrinks", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("3Gi")) },
			"storage.size cannot be decreased"},
		{"storage class set after creation", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("fast") },
			"storage.storageClassName cannot be changed"},
		{"storage class changed",
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("fast") },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("slow") },
			"storage.storageClassName cannot be changed"},
		{"storage class kept",
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.StorageClassName = ptr.To("fast") },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Size = ptr.To(resource.MustParse("5Gi")) }, ""},
		{"ephemeral switched on", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Storage.Ephemeral = true },
			"storage.ephemeral cannot be changed"},
		{"TLS switched off", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.TLS.Mode = etcdv1alpha1.TLSModeDisabled },
			"tls.mode cannot be changed after the cluster is created"},
		{"size changes", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 5 }, ""},
		{"etcd options change", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.SnapshotCount = 50000 }, ""},
		{"auth turned on", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true }, ""},
		{"auth turned off", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = false }, ""},
		{"hibernation turned on", nil, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Hibernation.Enabled = true }, ""},
		{"woken", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Hibernation.Enabled = true },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Hibernation.Enabled = false }, ""},
		{"scaled while hibernated", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Hibernation.Enabled = true },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Size = 5 }, ""},
		{"upgraded while hibernated", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Version = "3.7.2"
			c.Spec.Hibernation.Enabled = true
		}, func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "3.7.3" },
			"spec.version cannot change while the cluster hibernates, nor when hibernation is turned on or off"},
		{"upgraded as hibernation is turned on", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Version = "3.7.2" },
			func(c *etcdv1alpha1.EtcdCluster) {
				c.Spec.Version = "3.7.3"
				c.Spec.Hibernation.Enabled = true
			}, "spec.version cannot change while the cluster hibernates"},
		{"upgraded as it wakes", func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Version = "3.7.2"
			c.Spec.Hibernation.Enabled = true
		}, func(c *etcdv1alpha1.EtcdCluster) {
			c.Spec.Version = "3.7.3"
			c.Spec.Hibernation.Enabled = false
		}, "spec.version cannot change while the cluster hibernates"},
		{"compaction turned off under auth", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true },
			func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Etcd.AutoCompactionRetention = "0m" },
			"with auth.enabled, etcd.autoCompactionRetention cannot turn compaction off"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "u-", Namespace: ns}}
			if tc.initial != nil {
				tc.initial(c)
			}
			g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

			// The controller updates the object (finalizer, status); retry on conflicts.
			var err error
			for range 5 {
				g.Expect(k8sClient.Get(ctx, keyOf(c), c)).To(Succeed())
				tc.update(c)
				if err = k8sClient.Update(ctx, c); !apierrors.IsConflict(err) {
					break
				}
			}

			if tc.refusal == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.refusal))
		})
	}
}

// spec.version moves one minor release at a time, from the old spec and from what the
// members run (status.currentVersion), and can always go back to what the members run.
func TestVersionChangeRules(t *testing.T) {
	ns := newNamespace(t)
	cases := []struct {
		name          string
		from, current string // spec.version at creation; status.currentVersion ("" = unknown)
		to            string
		refusal       string
	}{
		{"next minor", "3.6.16", "", "3.7.3", ""},
		{"next minor, members at the old one", "3.5.35", "3.5.35", "3.6.16", ""},
		{"a skipped minor", "3.5.35", "", "3.7.3",
			"spec.version cannot change from 3.5.35 to 3.7.3: etcd is upgraded one minor release at a time (3.5 -> 3.6 -> 3.7), never skipping one and never back to an older minor, " +
				"and moves freely between the patch releases of a minor (supported: 3.5.35; 3.6.15, 3.6.16; 3.7.2, 3.7.3)"},
		{"back to an older minor", "3.7.3", "3.7.3", "3.6.16", "spec.version cannot change from 3.7.3 to 3.6.16 while members run 3.7.3"},
		{"an older patch of the same minor", "3.7.3", "3.7.3", "3.7.2", ""},
		{"a newer patch of the same minor", "3.6.15", "3.6.15", "3.6.16", ""},
		{"from an older patch to the next minor", "3.6.15", "3.6.15", "3.7.2", ""},
		{"an older minor from a patch", "3.7.2", "3.7.2", "3.6.16", "spec.version cannot change from 3.7.2 to 3.6.16"},
		{"the next minor while members still run the one before", "3.6.16", "3.5.35", "3.7.3",
			"spec.version cannot change from 3.6.16 to 3.7.3 while members run 3.5.35"},
		{"back to what the members run: cancel or retry", "3.6.16", "3.5.35", "3.5.35", ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ctx := context.Background()
			c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{GenerateName: "v-", Namespace: ns},
				Spec: etcdv1alpha1.EtcdClusterSpec{Version: tc.from}}
			g.Expect(k8sClient.Create(ctx, c)).To(Succeed())
			var err error
			for range 5 {
				g.Expect(k8sClient.Get(ctx, keyOf(c), c)).To(Succeed())
				if c.Status.CurrentVersion != tc.current {
					c.Status.CurrentVersion = tc.current
					err = k8sClient.Status().Update(ctx, c)
				} else {
					c.Spec.Version = tc.to
					err = k8sClient.Update(ctx, c)
				}
				if err == nil && c.Spec.Version == tc.to || err != nil && !apierrors.IsConflict(err) {
					break
				}
			}
			if tc.refusal == "" {
				g.Expect(err).NotTo(HaveOccurred())
				return
			}
			g.Expect(apierrors.IsInvalid(err)).To(BeTrue(), "want Invalid, got %v", err)
			g.Expect(err.Error()).To(ContainSubstring(tc.refusal))
		})
	}
}

// kubectl scale goes through the /scale subresource, which maps to spec.size and its rules.
func TestScaleSubresource(t *testing.T) {
	t.Parallel() // a wait in real time: see TestMain
	g := NewWithT(t)
	ctx := context.Background()
	c := &etcdv1alpha1.EtcdCluster{ObjectMeta: metav1.ObjectMeta{Name: "scaled", Namespace: newNamespace(t)}}
	g.Expect(k8sClient.Create(ctx, c)).To(Succeed())

	scale := &autoscalingv1.Scale{}
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.SubResource("scale").Get(ctx, c, scale)).To(Succeed())
		g.Expect(scale.Status.Selector).To(Equal("app.kubernetes.io/name=etcd,etcd.etcdpilot.io/cluster=scaled"))
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(scale.Spec.Replicas).To(Equal(int32(3)))

	// The controller writes the object too (its finalizer): a conflict is read again.
	g.Eventually(func(g Gomega) {
		g.Expect(k8sClient.SubResource("scale").Get(ctx, c, scale)).To(Succeed())
		scale.Spec.Replicas = 5
		g.Expect(k8sClient.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(scale))).To(Succeed())
	}).WithTimeout(timeout).WithPolling(interval).Should(Succeed())
	g.Expect(k8sClient.Get(ctx, keyOf(c), c)).To(Succeed())
	g.Expect(c.Spec.Size).To(Equal(int32(5)))

	scale.Spec.Replicas = 4
	scale.ResourceVersion = ""
	err := k8sClient.SubResource("scale").Update(ctx, c, client.WithSubResourceBody(scale))
	g.Expect(err).To(MatchError(ContainSubstring(`spec.size: Unsupported value: 4`)))
}
