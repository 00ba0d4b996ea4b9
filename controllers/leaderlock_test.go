package controllers_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"

	"github.com/etcdpilot/etcdpilot/controllers"
)

// The Lease is held under the pod's name: a container restarted in the same pod is the same
// candidate, and leads again without waiting for the lease to expire.
func TestTheLeaderLockIsHeldUnderThePodsName(t *testing.T) {
	g := NewWithT(t)
	cfg := &rest.Config{Host: "https://127.0.0.1:1"}
	t.Setenv(controllers.PodNameEnv, "")
	t.Setenv(controllers.PodNamespaceEnv, "")
	lock, err := controllers.LeaderLock(cfg, "etcdpilot.etcd.etcdpilot.io", 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lock).To(BeNil(), "outside a pod the manager makes its own lock")

	t.Setenv(controllers.PodNameEnv, "etcdpilot-controller-manager-5d9c7-x2x4q")
	t.Setenv(controllers.PodNamespaceEnv, "etcdpilot-system")
	lock, err = controllers.LeaderLock(cfg, "etcdpilot.etcd.etcdpilot.io", 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(lock.Identity()).To(Equal("etcdpilot-controller-manager-5d9c7-x2x4q"))
	g.Expect(lock.Describe()).To(Equal("etcdpilot-system/etcdpilot.etcd.etcdpilot.io"))
	again, err := controllers.LeaderLock(cfg, "etcdpilot.etcd.etcdpilot.io", 10*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again.Identity()).To(Equal(lock.Identity()), "a restarted process is the same candidate")
}
