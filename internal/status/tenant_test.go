package status_test

import (
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

func readyOf(s etcdv1alpha1.EtcdTenantStatus) metav1.Condition {
	return *meta.FindStatusCondition(s.Conditions, etcdv1alpha1.ConditionReady)
}

// observedGeneration, the Secret and the certificate move only when the tenant is
// provisioned; a blocked, failed or held tenant keeps them and says why.
func TestComputeTenant(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	tn := &etcdv1alpha1.EtcdTenant{ObjectMeta: metav1.ObjectMeta{Name: "a", Generation: 2},
		Spec: etcdv1alpha1.EtcdTenantSpec{ClusterName: "c", Prefix: "/a/", ReadOnly: true}}
	tn.Status.ObservedGeneration = 1

	s := status.ComputeTenant(tn, status.Tenant{Provisioned: true, NotAfter: t0, Usage: &tenant.Usage{Keys: 4, Revision: 9, At: t0}})
	g.Expect(s.ObservedGeneration).To(Equal(int64(2)))
	g.Expect(s.User).To(Equal("tenant:a"))
	g.Expect(s.SecretName).To(Equal("a-etcd-client"))
	g.Expect(s.CertificateNotAfter.Time).To(Equal(t0))
	g.Expect(s.Usage).To(Equal(&etcdv1alpha1.TenantUsage{Keys: 4, Revision: 9, ObservedAt: metav1.Time{Time: t0}}), "no size: never measured")
	sized := status.ComputeTenant(tn, status.Tenant{Provisioned: true, NotAfter: t0,
		Usage: &tenant.Usage{Keys: 4, Revision: 9, At: t0.Add(time.Minute), Bytes: 2048, SizedAt: t0}})
	g.Expect(sized.Usage).To(Equal(&etcdv1alpha1.TenantUsage{Keys: 4, Revision: 9, ObservedAt: metav1.Time{Time: t0.Add(time.Minute)},
		Bytes: ptr.To[int64](2048), BytesObservedAt: &metav1.Time{Time: t0}}))
	g.Expect(readyOf(s).Status).To(Equal(metav1.ConditionTrue))
	g.Expect(readyOf(s).Message).To(Equal("user tenant:a may use the keys under /a/, read-only"))

	for _, tc := range []struct {
		in     status.Tenant
		reason string
	}{
		{status.Tenant{Blocked: &tenant.Blocker{Reason: tenant.BlockedNoAuth, Message: "no auth"}}, etcdv1alpha1.ReasonAuthNotEnabled},
		{status.Tenant{Failed: errors.New("etcdserver: request timed out")}, etcdv1alpha1.ReasonClusterNotAvailable},
		{status.Tenant{InUse: "written"}, etcdv1alpha1.ReasonPrefixInUse},
	} {
		s := status.ComputeTenant(tn, tc.in)
		g.Expect(s.ObservedGeneration).To(Equal(int64(1)), tc.reason)
		g.Expect(readyOf(s).Status).To(Equal(metav1.ConditionFalse))
		g.Expect(readyOf(s).Reason).To(Equal(tc.reason))
		g.Expect(s.CertificateNotAfter).To(BeNil())
	}
	g.Expect(status.ComputeTenant(tn, status.Tenant{}).Conditions).To(BeEmpty(), "a pass that learned nothing says nothing")
}

func TestTenantTransitions(t *testing.T) {
	g := NewWithT(t)
	tn := &etcdv1alpha1.EtcdTenant{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: etcdv1alpha1.EtcdTenantSpec{Prefix: "/a/"}}
	blocked := status.ComputeTenant(tn, status.Tenant{Blocked: &tenant.Blocker{Reason: tenant.BlockedByConflict, Message: "overlaps"}})
	ready := status.ComputeTenant(tn, status.Tenant{Provisioned: true})

	g.Expect(status.TenantTransitions(etcdv1alpha1.EtcdTenantStatus{}, blocked)).To(Equal([]status.Event{
		{Type: corev1.EventTypeWarning, Reason: etcdv1alpha1.ReasonPrefixConflict, Action: "Provision", Message: "overlaps"}}))
	g.Expect(status.TenantTransitions(blocked, ready)).To(Equal([]status.Event{
		{Type: corev1.EventTypeNormal, Reason: etcdv1alpha1.ReasonTenantProvisioned, Action: "Provision", Message: "user tenant:a may use the keys under /a/"}}))
	g.Expect(status.TenantTransitions(ready, ready)).To(BeEmpty())
}

// internal/tenant names its blockers' reasons without importing the API: they are the API's.
func TestTenantBlockersAreTheAPIReasons(t *testing.T) {
	g := NewWithT(t)
	g.Expect(tenant.BlockedNoCluster).To(Equal(etcdv1alpha1.ReasonClusterNotFound))
	g.Expect(tenant.BlockedNoTLS).To(Equal(etcdv1alpha1.ReasonTenantTLSUnsupported))
	g.Expect(tenant.BlockedNoAuth).To(Equal(etcdv1alpha1.ReasonAuthNotEnabled))
	g.Expect(tenant.BlockedByConflict).To(Equal(etcdv1alpha1.ReasonPrefixConflict))
	g.Expect(tenant.BlockedHibernated).To(Equal(etcdv1alpha1.ReasonClusterHibernated))
}
