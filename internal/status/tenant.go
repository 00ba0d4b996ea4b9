package status

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

// Tenant is what one reconcile of an EtcdTenant learned and did. Exactly one of Blocked,
// Failed, InUse and Provisioned says where it stands; none when the pass ended before it
// knew (the Ready condition stays as it was).
type Tenant struct {
	// Blocked is why the tenant gets nothing in etcd (tenant.Admit).
	Blocked *tenant.Blocker
	// Failed is what etcd answered when the operator acted, or that it did not answer.
	Failed error
	// InUse is why the keys of a tenant being deleted are kept (tenant.Delete).
	InUse string
	// Provisioned: the user and role are in etcd as the spec asks, and the certificate,
	// valid until NotAfter, is in the tenant's Secret.
	Provisioned bool
	NotAfter    time.Time
	// Usage is the newest count of the tenant's keys; nil when the pass did not count.
	Usage *tenant.Usage
}

// ComputeTenant returns the tenant's status after this reconcile. observedGeneration and
// the certificate move only when the tenant is provisioned: the spec is then in force.
func ComputeTenant(t *etcdv1alpha1.EtcdTenant, in Tenant) etcdv1alpha1.EtcdTenantStatus {
	out := *t.Status.DeepCopy()
	out.User = tenant.User(t.Name)
	if in.Usage != nil {
		out.Usage = &etcdv1alpha1.TenantUsage{Keys: in.Usage.Keys, Revision: in.Usage.Revision, ObservedAt: metav1.Time{Time: in.Usage.At}}
		if !in.Usage.SizedAt.IsZero() {
			out.Usage.Bytes, out.Usage.BytesObservedAt = &in.Usage.Bytes, &metav1.Time{Time: in.Usage.SizedAt}
		}
	}
	ready := metav1.Condition{Type: etcdv1alpha1.ConditionReady, Status: metav1.ConditionFalse, ObservedGeneration: t.Generation}
	switch {
	case in.Blocked != nil:
		ready.Reason, ready.Message = in.Blocked.Reason, in.Blocked.Message
	case in.Failed != nil:
		ready.Reason, ready.Message = etcdv1alpha1.ReasonClusterNotAvailable, in.Failed.Error()
	case in.InUse != "":
		ready.Reason, ready.Message = etcdv1alpha1.ReasonPrefixInUse, in.InUse
	case in.Provisioned:
		ready.Status, ready.Reason = metav1.ConditionTrue, etcdv1alpha1.ReasonTenantProvisioned
		ready.Message = "user " + out.User + " may use the keys under " + t.Spec.Prefix
		if t.Spec.ReadOnly {
			ready.Message += ", read-only"
		}
		out.ObservedGeneration = t.Generation
		out.SecretName = tenant.SecretName(t.Name)
		out.CertificateNotAfter = &metav1.Time{Time: in.NotAfter}
	default:
		return out
	}
	meta.SetStatusCondition(&out.Conditions, ready)
	return out
}

// TenantTransitions returns the events the change of a tenant's status from old to updated
// deserves: its Ready condition changing status or reason; a warning, but for the tenant
// provisioned or its cluster hibernating, which is what was asked.
func TenantTransitions(old, updated etcdv1alpha1.EtcdTenantStatus) []Event {
	was := meta.FindStatusCondition(old.Conditions, etcdv1alpha1.ConditionReady)
	now := meta.FindStatusCondition(updated.Conditions, etcdv1alpha1.ConditionReady)
	switch {
	case now == nil || was != nil && was.Status == now.Status && was.Reason == now.Reason:
		return nil
	case now.Status == metav1.ConditionTrue, now.Reason == etcdv1alpha1.ReasonClusterHibernated:
		return []Event{{corev1.EventTypeNormal, now.Reason, "Provision", now.Message}}
	}
	return []Event{{corev1.EventTypeWarning, now.Reason, "Provision", now.Message}}
}
