package controllers

import (
	"bytes"
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
	"github.com/etcdpilot/etcdpilot/internal/metrics"
	"github.com/etcdpilot/etcdpilot/internal/pki"
	"github.com/etcdpilot/etcdpilot/internal/resources"
	"github.com/etcdpilot/etcdpilot/internal/status"
	"github.com/etcdpilot/etcdpilot/internal/tenant"
)

// TenantFinalizer holds an EtcdTenant until its etcd user and role are deleted, and with
// deletionPolicy Delete its keys.
const TenantFinalizer = "etcd.etcdpilot.io/tenant"

// The keys of a tenant's Secret beside ca.crt, tls.crt and tls.key: the cluster's client
// URL, and the tenant's prefix.
const (
	tenantSecretEndpoints = "endpoints"
	tenantSecretPrefix    = "prefix"
)

// EtcdTenantReconciler reconciles EtcdTenant objects: an etcd user and role bounded to the
// tenant's prefix, and a client certificate for it signed by the cluster's CA.
type EtcdTenantReconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// NewEtcdClient makes the client the operator talks to the cluster's members with.
	NewEtcdClient etcd.Factory
	// Now is the clock; time.Now when nil.
	Now func() time.Time
	// Metrics records each tenant's readiness, keys and certificate expiry; nil records
	// nothing.
	Metrics *metrics.Recorder
}

// EtcdTenants: read and watched; updated to add and remove the finalizer; status patched.
// Their Secrets are created and updated (Secrets are already read, listed and watched for
// the clusters).
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdtenants,verbs=get;list;watch;update
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdtenants/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=etcd.etcdpilot.io,resources=etcdtenants/finalizers,verbs=update

// tenantPass is what one pass over an EtcdTenant carries from step to step.
type tenantPass struct {
	tenant  *etcdv1alpha1.EtcdTenant
	cluster *etcdv1alpha1.EtcdCluster
	etcd    etcd.Client
	out     status.Tenant
}

// steps is one pass over a tenant that is not being deleted, in order; then the status is
// patched once (finish).
func (r *EtcdTenantReconciler) steps() []step[*tenantPass] {
	return []step[*tenantPass]{
		// The finalizer first: the tenant may have a user in etcd from the next step on.
		r.stepAddFinalizer,
		// The cluster exists, signs with the operator's CA and has auth on in etcd, and no
		// older tenant of it overlaps the prefix (tenant.Admit); otherwise nothing is made.
		r.stepAdmit,
		// The user and its role, with exactly the prefix's range (GrantRange).
		r.stepGrant,
		// The certificate in the tenant's Secret, issued again when due or when the
		// cluster's CA changed (ensureTenantSecret).
		r.stepCertificate,
		// The keys counted, at most once per tenant.CountInterval.
		r.stepCount,
	}
}

// Reconcile takes one tenant through its steps (steps); a deleted one has its user and,
// with deletionPolicy Delete, its keys removed first (finalize).
func (r *EtcdTenantReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	t := &etcdv1alpha1.EtcdTenant{}
	if err := r.Client.Get(ctx, req.NamespacedName, t); err != nil {
		if apierrors.IsNotFound(err) {
			r.Metrics.ForgetTenant(req.Namespace, req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	p := &tenantPass{tenant: t}
	defer p.close()
	if !t.DeletionTimestamp.IsZero() {
		return r.finalize(ctx, p)
	}
	err := runSteps(ctx, p, r.steps())
	return r.finish(ctx, p, err, tenant.CountInterval)
}

// finish patches the status computed from what the pass learned, emits the events of the
// transitions the patch made, and comes back after requeue: within tenant.CountInterval for
// a tenant in use, to count its keys, renew its certificate and follow the cluster's CA.
func (r *EtcdTenantReconciler) finish(ctx context.Context, p *tenantPass, err error, requeue time.Duration) (reconcile.Result, error) {
	desired := status.ComputeTenant(p.tenant, p.out)
	old, changed, patchErr := patchStatus(ctx, r.Client, p.tenant, &p.tenant.Status, desired)
	if changed {
		emit(r.Recorder, p.tenant, status.TenantTransitions(old, p.tenant.Status))
	}
	r.Metrics.RecordTenant(p.tenant)
	return reconcile.Result{RequeueAfter: requeue}, errors.Join(err, patchErr)
}

// failed records err, what etcd answered or that it did not, as the pass's failure, and
// returns it.
func (p *tenantPass) failed(err error) error {
	p.out.Failed = err
	return err
}

func (p *tenantPass) close() {
	if p.etcd != nil {
		_ = p.etcd.Close()
	}
}

func (r *EtcdTenantReconciler) stepAddFinalizer(ctx context.Context, p *tenantPass) (stepOutcome, error) {
	if controllerutil.AddFinalizer(p.tenant, TenantFinalizer) {
		return next, r.Client.Update(ctx, p.tenant)
	}
	return next, nil
}

func (r *EtcdTenantReconciler) stepAdmit(ctx context.Context, p *tenantPass) (stepOutcome, error) {
	t := p.tenant
	c, found, err := r.cluster(ctx, t)
	if err != nil {
		return endPass, err
	}
	p.cluster = c
	in := tenant.Cluster{Found: found, Name: t.Spec.ClusterName}
	if found {
		in.OperatorCA = operatorCA(c)
		in.AuthEnabled = c.Status.Auth != nil && c.Status.Auth.Enabled
		in.Hibernated = c.Spec.Hibernation.Enabled
	}
	siblings, err := r.siblings(ctx, t)
	if err != nil {
		return endPass, err
	}
	if b, ok := tenant.Admit(tenantOf(t), in, siblings); !ok {
		p.out.Blocked = &b
		return endPass, nil
	}
	if p.etcd, err = r.connect(ctx, c); err != nil {
		return endPass, p.failed(err)
	}
	return next, nil
}

func (r *EtcdTenantReconciler) stepGrant(ctx context.Context, p *tenantPass) (stepOutcome, error) {
	t := p.tenant
	if err := p.etcd.GrantRange(ctx, tenant.User(t.Name), tenantRange(t)); err != nil {
		return endPass, p.failed(err)
	}
	return next, nil
}

func (r *EtcdTenantReconciler) stepCertificate(ctx context.Context, p *tenantPass) (stepOutcome, error) {
	notAfter, err := r.ensureTenantSecret(ctx, p.tenant, p.cluster)
	if err != nil {
		return endPass, err
	}
	p.out.Provisioned, p.out.NotAfter = true, notAfter
	return next, nil
}

func (r *EtcdTenantReconciler) stepCount(ctx context.Context, p *tenantPass) (stepOutcome, error) {
	now, last := r.now(), lastUsage(p.tenant)
	if !tenant.CountDue(last, now) {
		return next, nil
	}
	// A failed count or measure changes nothing the tenant's clients see: it waits for the
	// next pass.
	keys, revision, err := p.etcd.CountRange(ctx, tenantRange(p.tenant))
	if err != nil {
		return next, nil
	}
	u := tenant.Counted(last, keys, revision, now)
	if tenant.SizeDue(last, now) {
		if size, err := p.etcd.SizeRange(ctx, tenantRange(p.tenant)); err == nil {
			u.Bytes, u.SizedAt = size, now
		}
	}
	p.out.Usage = &u
	return next, nil
}

// finalize removes what the tenant has in etcd, then lets it go: with deletionPolicy Delete
// its keys, once nobody wrote them for tenant.QuietPeriod (tenant.Delete) or at once when
// forced; the user and its role first, so that no client writes while the keys go. A
// cluster that is gone or being deleted takes the tenant's users and keys with it.
func (r *EtcdTenantReconciler) finalize(ctx context.Context, p *tenantPass) (reconcile.Result, error) {
	t := p.tenant
	if !controllerutil.ContainsFinalizer(t, TenantFinalizer) {
		return reconcile.Result{}, nil
	}
	c, found, err := r.cluster(ctx, t)
	if err != nil {
		return reconcile.Result{}, err
	}
	if found {
		wait, err := r.release(ctx, p, c)
		if err != nil || wait > 0 {
			return r.finish(ctx, p, err, max(wait, tenant.QuietPeriod/3))
		}
	}
	controllerutil.RemoveFinalizer(t, TenantFinalizer)
	r.Metrics.ForgetTenant(t.Namespace, t.Name)
	return reconcile.Result{}, r.Client.Update(ctx, t)
}

// release deletes the tenant's user and role, and the keys under its prefix when they go
// with it (tenant.KeysGo). It returns how long to wait when the keys are still being
// written. What etcd refuses or does not answer is the pass's failure.
func (r *EtcdTenantReconciler) release(ctx context.Context, p *tenantPass, c *etcdv1alpha1.EtcdCluster) (time.Duration, error) {
	t := p.tenant
	siblings, err := r.siblings(ctx, t)
	if err != nil {
		return 0, err
	}
	keysGo, kept := tenant.KeysGo(t.Spec.DeletionPolicy == etcdv1alpha1.TenantDeletionPolicyDelete, tenantOf(t), siblings)
	if p.etcd, err = r.connect(ctx, c); err != nil {
		return 0, p.failed(err)
	}
	if keysGo {
		keys, revision, err := p.etcd.CountRange(ctx, tenantRange(t))
		if err != nil {
			return 0, p.failed(err)
		}
		last := lastUsage(t)
		d := tenant.Delete(last, tenant.Counted(last, keys, revision, r.now()), t.Annotations[etcdv1alpha1.AnnotationForceDelete] == "true")
		if !d.Proceed {
			p.out.Usage, p.out.InUse = &d.Record, d.Message
			return d.Wait, nil
		}
	}
	if err := p.etcd.RevokeUser(ctx, tenant.User(t.Name)); err != nil {
		return 0, p.failed(err)
	}
	if !keysGo {
		eventf(r.Recorder, t, corev1.EventTypeNormal, "TenantReleased", "Delete", "Deleted etcd user %s; kept the keys under %s: %s", tenant.User(t.Name), t.Spec.Prefix, kept)
		return 0, nil
	}
	deleted, err := p.etcd.DeleteRange(ctx, tenantRange(t))
	if err != nil {
		return 0, p.failed(err)
	}
	eventf(r.Recorder, t, corev1.EventTypeNormal, "TenantReleased", "Delete", "Deleted etcd user %s and the %d keys under %s (deletionPolicy Delete)", tenant.User(t.Name), deleted, t.Spec.Prefix)
	return 0, nil
}

// cluster reads the tenant's cluster; found is false when it does not exist or is being
// deleted.
func (r *EtcdTenantReconciler) cluster(ctx context.Context, t *etcdv1alpha1.EtcdTenant) (*etcdv1alpha1.EtcdCluster, bool, error) {
	c := &etcdv1alpha1.EtcdCluster{}
	err := r.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Spec.ClusterName}, c)
	if apierrors.IsNotFound(err) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return c, c.DeletionTimestamp.IsZero(), nil
}

// siblings are the other tenants of t's cluster.
func (r *EtcdTenantReconciler) siblings(ctx context.Context, t *etcdv1alpha1.EtcdTenant) ([]tenant.Tenant, error) {
	list := &etcdv1alpha1.EtcdTenantList{}
	if err := r.Client.List(ctx, list, client.InNamespace(t.Namespace)); err != nil {
		return nil, err
	}
	var out []tenant.Tenant
	for i := range list.Items {
		o := &list.Items[i]
		if o.Name != t.Name && o.Spec.ClusterName == t.Spec.ClusterName {
			out = append(out, tenantOf(o))
		}
	}
	return out, nil
}

// connect makes a client of the cluster's members, as the operator's root user (the
// cluster's client certificate).
func (r *EtcdTenantReconciler) connect(ctx context.Context, c *etcdv1alpha1.EtcdCluster) (etcd.Client, error) {
	var endpoints []string
	for _, m := range c.Status.Members {
		if m.ClientURL != "" {
			endpoints = append(endpoints, m.ClientURL)
		}
	}
	if len(endpoints) == 0 {
		return nil, fmt.Errorf("EtcdCluster %s lists no member with a client URL yet", c.Name)
	}
	slices.Sort(endpoints)
	names := cluster.For(c)
	secret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.ClientTLSSecret()}, secret); err != nil {
		return nil, fmt.Errorf("reading the client certificate secret %s: %w", names.ClientTLSSecret(), err)
	}
	cfg, err := clientTLSConfig(secret.Data[secretCACert], pki.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]})
	if err != nil {
		return nil, fmt.Errorf("the client certificate secret %s: %w", names.ClientTLSSecret(), err)
	}
	return r.NewEtcdClient(etcd.Config{Endpoints: endpoints, TLS: cfg})
}

// ensureTenantSecret keeps the tenant's Secret holding a certificate for its user signed by
// the cluster's CA, the CAs the cluster trusts, its endpoints and its prefix; the
// certificate is issued again when pki.ReissueReason says so or its common name is not the
// user. It returns when the certificate stops being valid.
func (r *EtcdTenantReconciler) ensureTenantSecret(ctx context.Context, t *etcdv1alpha1.EtcdTenant, c *etcdv1alpha1.EtcdCluster) (time.Time, error) {
	names := cluster.For(c)
	caSecret := &corev1.Secret{}
	if err := r.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: names.CASecret()}, caSecret); err != nil {
		return time.Time{}, fmt.Errorf("reading the CA secret %s: %w", names.CASecret(), err)
	}
	store, err := readCAStore(caSecret)
	if err != nil {
		return time.Time{}, fmt.Errorf("the CA secret %s: %w", names.CASecret(), err)
	}
	ca, err := pki.LoadCA(store.Signer)
	if err != nil {
		return time.Time{}, fmt.Errorf("the CA secret %s: %w", names.CASecret(), err)
	}
	trust, user, now := store.Bundle(), tenant.User(t.Name), r.now()
	secret := &corev1.Secret{}
	err = r.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: tenant.SecretName(t.Name)}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return time.Time{}, err
	}
	exists := err == nil
	pair := pki.KeyPair{CertPEM: secret.Data[corev1.TLSCertKey], KeyPEM: secret.Data[corev1.TLSPrivateKeyKey]}
	why := ca.ReissueReason(pair.CertPEM, pki.Leaf{Usage: x509.ExtKeyUsageClientAuth}, now, renewBefore)
	if cn, err := pki.CommonName(pair.CertPEM); why == "" && (err != nil || cn != user) {
		why = "its common name is not " + user
	}
	if why != "" {
		if pair, err = ca.IssueClient(user, leafValidity, now); err != nil {
			return time.Time{}, err
		}
	}
	data := map[string][]byte{
		secretCACert: trust, corev1.TLSCertKey: pair.CertPEM, corev1.TLSPrivateKeyKey: pair.KeyPEM,
		tenantSecretEndpoints: []byte(names.ClientServiceURL()), tenantSecretPrefix: []byte(t.Spec.Prefix),
	}
	switch {
	case !exists:
		err = r.Client.Create(ctx, tenantSecret(t, c, data))
	case !maps.EqualFunc(secret.Data, data, bytes.Equal):
		secret.Data = data
		err = r.Client.Update(ctx, secret)
	}
	if err != nil {
		return time.Time{}, fmt.Errorf("writing the tenant's secret %s: %w", tenant.SecretName(t.Name), err)
	}
	if why != "" {
		eventf(r.Recorder, t, corev1.EventTypeNormal, "CertificateIssued", "IssueCertificate", "Issued a certificate for etcd user %s in secret %s (the previous: %s)", user, tenant.SecretName(t.Name), why)
	}
	return pki.ChainNotAfter(trust, pair.CertPEM)
}

// tenantSecret is a new Secret of tenant t: owned by it, labelled as the cluster's (the
// operator caches only the Secrets it labels so), of type TLS.
func tenantSecret(t *etcdv1alpha1.EtcdTenant, c *etcdv1alpha1.EtcdCluster, data map[string][]byte) *corev1.Secret {
	labels := cluster.For(c).Labels()
	labels[cluster.LabelComponent] = "tenant"
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name: tenant.SecretName(t.Name), Namespace: t.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{resources.TenantOwnerReference(t)},
		},
		Type: corev1.SecretTypeTLS,
		Data: data,
	}
}

// operatorCA says whether the cluster's certificates come from a CA the operator holds.
func operatorCA(c *etcdv1alpha1.EtcdCluster) bool {
	return c.Spec.TLS.Mode == etcdv1alpha1.TLSModeOperatorCA || c.Spec.TLS.Mode == ""
}

// tenantOf is what tenant.Conflict compares of t.
func tenantOf(t *etcdv1alpha1.EtcdTenant) tenant.Tenant {
	return tenant.Tenant{Name: t.Name, Prefix: t.Spec.Prefix, Created: t.CreationTimestamp.Time}
}

// tenantRange is the key range of t's prefix, read-only as its spec says.
func tenantRange(t *etcdv1alpha1.EtcdTenant) etcd.Range {
	return etcd.Range{Key: t.Spec.Prefix, End: tenant.RangeEnd(t.Spec.Prefix), ReadOnly: t.Spec.ReadOnly}
}

// lastUsage is the count in t's status; nil when none.
func lastUsage(t *etcdv1alpha1.EtcdTenant) *tenant.Usage {
	u := t.Status.Usage
	if u == nil {
		return nil
	}
	out := &tenant.Usage{Keys: u.Keys, Revision: u.Revision, At: u.ObservedAt.Time}
	if u.Bytes != nil && u.BytesObservedAt != nil {
		out.Bytes, out.SizedAt = *u.Bytes, u.BytesObservedAt.Time
	}
	return out
}

func (r *EtcdTenantReconciler) now() time.Time { return nowOf(r.Now) }

// SetupWithManager registers the reconciler: it watches EtcdTenants and their Secrets, and
// maps a change of an EtcdCluster (its auth coming on, its members) or of a tenant (one
// deleted leaves its prefix to a younger one) to the tenants of that cluster.
func (r *EtcdTenantReconciler) SetupWithManager(mgr manager.Manager) error {
	return builder.ControllerManagedBy(mgr).
		For(&etcdv1alpha1.EtcdTenant{}).
		Owns(&corev1.Secret{}).
		Watches(&etcdv1alpha1.EtcdCluster{}, handler.EnqueueRequestsFromMapFunc(r.tenantsOfCluster)).
		Watches(&etcdv1alpha1.EtcdTenant{}, handler.EnqueueRequestsFromMapFunc(r.tenantsOfSameCluster)).
		Named("etcdtenant").
		Complete(r)
}

// tenantsOfCluster maps an EtcdCluster to its tenants.
func (r *EtcdTenantReconciler) tenantsOfCluster(ctx context.Context, o client.Object) []reconcile.Request {
	return r.tenantsOf(ctx, o.GetNamespace(), o.GetName(), "")
}

// tenantsOfSameCluster maps an EtcdTenant to the other tenants of its cluster.
func (r *EtcdTenantReconciler) tenantsOfSameCluster(ctx context.Context, o client.Object) []reconcile.Request {
	t, ok := o.(*etcdv1alpha1.EtcdTenant)
	if !ok {
		return nil
	}
	return r.tenantsOf(ctx, t.Namespace, t.Spec.ClusterName, t.Name)
}

// tenantsOf lists the tenants of cluster name in namespace, but the one named except.
func (r *EtcdTenantReconciler) tenantsOf(ctx context.Context, namespace, name, except string) []reconcile.Request {
	list := &etcdv1alpha1.EtcdTenantList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, t := range list.Items {
		if t.Spec.ClusterName == name && t.Name != except {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&t)})
		}
	}
	return out
}
