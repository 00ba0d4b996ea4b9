package controllers_test

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd/fake"
)

// spec.auth against the fake etcd: nothing asked of etcd until auth is wanted; then the root
// users first, authentication on last, once; off again on request.
func TestAuthIsTurnedOnAfterItsRootUsersAndOffAgain(t *testing.T) {
	t.Parallel() // a long wait in real time: see TestMain
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "auth", nil)
	g.Expect(calls(f, fake.AuthEnabled, fake.GrantRoot, fake.SetAuth)).To(BeEmpty(), "a cluster that never asked for auth: etcd is not asked")
	f.ResetCalls()
	before := podUIDs(g, ns)

	updateCluster(g, ns, "auth", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "auth", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Auth).To(Equal(&etcdv1alpha1.AuthStatus{Enabled: true, RootUsers: []string{"auth-member", "etcdpilot", "root"}}))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(condition(got, etcdv1alpha1.ConditionReady).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(eventReasons(g, ns)).To(ContainElement("AuthEnabled"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.GrantRoot, fake.SetAuth)).To(Equal([]string{"GrantRoot auth-member,etcdpilot,root", "SetAuth on"}),
		"the root users first, then authentication on")
	g.Expect(f.Roles("etcdpilot")).To(Equal([]string{"root"}))
	g.Expect(podUIDs(g, ns)).To(Equal(before), "no member restarted")

	poke(g, ns, "auth")
	g.Consistently(func() []string { return calls(f, fake.GrantRoot, fake.SetAuth) }).WithTimeout(3*time.Second).WithPolling(interval).
		Should(HaveLen(2), "on, with its root users seen: nothing more to do")

	updateCluster(g, ns, "auth", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = false })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "auth", &etcdv1alpha1.EtcdCluster{})
		g.Expect(got.Status.Auth).To(Equal(&etcdv1alpha1.AuthStatus{}))
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		g.Expect(eventReasons(g, ns)).To(ContainElement("AuthDisabled"))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
	g.Expect(calls(f, fake.SetAuth)).To(Equal([]string{"SetAuth on", "SetAuth off"}))
}

// etcd refusing to enable authentication leaves it off, says why in Degraded, and keeps
// observedGeneration where it was.
func TestAuthRefusedByEtcdIsReported(t *testing.T) {
	t.Parallel()
	g := NewWithT(t)
	ns := newNamespace(t)
	f := readyCluster(g, ns, "refused", nil)
	f.SetError(fake.SetAuth, rpctypes.ErrPermissionDenied)
	before := updateCluster(g, ns, "refused", func(c *etcdv1alpha1.EtcdCluster) { c.Spec.Auth.Enabled = true })
	g.Eventually(func(g Gomega) {
		got := get(g, ns, "refused", &etcdv1alpha1.EtcdCluster{})
		d := condition(got, etcdv1alpha1.ConditionDegraded)
		g.Expect(d.Status).To(Equal(metav1.ConditionTrue))
		g.Expect(d.Message).To(ContainSubstring("configuring etcd's authentication"))
		g.Expect(got.Status.ObservedGeneration).To(Equal(before.Generation - 1))
	}).WithTimeout(time.Minute).WithPolling(interval).Should(Succeed())
}
