package restore_test

import (
	"encoding/json"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/agent/result"
	"github.com/etcdpilot/etcdpilot/internal/membership"
	"github.com/etcdpilot/etcdpilot/internal/restore"
)

var (
	seed     = membership.Action{Kind: membership.CreateSeed, Member: "r-0", InitialClusterState: "new", Reason: etcdv1alpha1.ReasonBootstrapping}
	waiting  = membership.Action{Kind: membership.Wait, Reason: etcdv1alpha1.ReasonBootstrapping, Message: "waiting for the first member r-0 to start"}
	addOne   = membership.Action{Kind: membership.AddLearner, Member: "r-1", Reason: etcdv1alpha1.ReasonAddingMember}
	observed = restore.Observed{FirstMember: "r-0", Source: "backup b (s3://bucket/key)"}
)

func terminated(code int32, message string) *corev1.ContainerStatus {
	return &corev1.ContainerStatus{Name: "restore", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Message: message}}}
}

func TestPlan(t *testing.T) {
	failure, err := json.Marshal(result.Result{Reason: result.ReasonChecksumMismatch, Error: "artifact has sha256 x, expected y"})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		action   membership.Action
		observed func(o restore.Observed) restore.Observed
		want     membership.Kind
		reason   string
		says     string
	}{
		{"the source is not ready: no member starts", seed, func(o restore.Observed) restore.Observed {
			o.Source, o.NotReady = "", "EtcdBackup b has not succeeded; no member starts until it has"
			return o
		}, membership.Wait, etcdv1alpha1.ReasonRestoreSourceNotReady, "EtcdBackup b has not succeeded"},
		{"the source is ready: the first member is created, restoring it", seed, nil,
			membership.CreateSeed, etcdv1alpha1.ReasonRestoring, "creating the first member r-0, restored from backup b (s3://bucket/key)"},
		{"a first member that never started is created again the same way",
			membership.Action{Kind: membership.CreatePod, Member: "r-0", InitialClusterState: "new"}, nil,
			membership.CreatePod, etcdv1alpha1.ReasonRestoring, "restored from backup b"},
		{"waiting, before the kubelet reports the init container: restoring", waiting, func(o restore.Observed) restore.Observed {
			o.HasInit = true
			return o
		}, membership.Wait, etcdv1alpha1.ReasonRestoring, "the first member r-0 is restoring the backup"},
		{"the init container running: restoring", waiting, func(o restore.Observed) restore.Observed {
			o.HasInit, o.Init = true, &corev1.ContainerStatus{Name: "restore", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}
			return o
		}, membership.Wait, etcdv1alpha1.ReasonRestoring, "is restoring"},
		{"restored: etcd starts, the plain wait goes on", waiting, func(o restore.Observed) restore.Observed {
			o.HasInit, o.Init = true, terminated(0, "")
			return o
		}, membership.Wait, etcdv1alpha1.ReasonBootstrapping, "waiting for the first member"},
		{"a failed restore: Blocked with the agent's words", waiting, func(o restore.Observed) restore.Observed {
			o.HasInit, o.Init = true, terminated(1, string(failure))
			return o
		}, membership.Blocked, etcdv1alpha1.ReasonRestoreFailed, "could not restore the backup (it retries with a growing back-off): artifact has sha256 x, expected y"},
		{"a failed last run, while the kubelet waits to retry: still Blocked", waiting, func(o restore.Observed) restore.Observed {
			o.HasInit = true
			o.Init = &corev1.ContainerStatus{Name: "restore", State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
				LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 2, Message: "panic: boom\ngoroutine 1\nexit status 2\n"}}}
			return o
		}, membership.Blocked, etcdv1alpha1.ReasonRestoreFailed, "back-off): exit status 2"},
		{"a pod without the init container (restored before): nothing to say", waiting, nil,
			membership.Wait, etcdv1alpha1.ReasonBootstrapping, "waiting for the first member"},
		{"later steps are not the restore's business", addOne, nil, membership.AddLearner, etcdv1alpha1.ReasonAddingMember, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			o := observed
			if tc.observed != nil {
				o = tc.observed(o)
			}
			a := restore.Plan(tc.action, o)
			g.Expect(a.Kind).To(Equal(tc.want), "%+v", a)
			g.Expect(a.Reason).To(Equal(tc.reason))
			g.Expect(a.Message).To(ContainSubstring(tc.says))
		})
	}
}
