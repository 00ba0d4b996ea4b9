package controllers

import (
	"os"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// LeaderLock is the Lease the operator's replicas elect their leader with, held under the
// name of the pod (PodNameEnv, in PodNamespaceEnv). A pod's name is its own while it exists,
// and its containers run one at a time: when the kubelet restarts the operator's container
// after a crash, the new process holds the same identity and takes the Lease back at once,
// where an identity of its own would wait out the lease the crashed process held (15 s by
// default). A graceful stop gives the Lease up (LeaderElectionReleaseOnCancel). Outside a
// pod it returns nil: the manager then makes its own lock, under a fresh identity.
func LeaderLock(cfg *rest.Config, name string, renewDeadline time.Duration) (resourcelock.Interface, error) {
	pod, ns := os.Getenv(PodNameEnv), os.Getenv(PodNamespaceEnv)
	if pod == "" || ns == "" {
		return nil, nil
	}
	cfg = rest.CopyConfig(cfg)
	// A request must end well within the renew deadline, or one hung call loses the lease.
	cfg.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(rest.AddUserAgent(cfg, "leader-election"))
	if err != nil {
		return nil, err
	}
	return resourcelock.New(resourcelock.LeasesResourceLock, ns, name, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: pod})
}
