package framework

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/etcd"
)

// SetAuth sets spec.auth.enabled of c.
func (e *Env) SetAuth(ctx context.Context, c *etcdv1alpha1.EtcdCluster, enabled bool) error {
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Auth.Enabled = enabled
	if err := e.Client.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("setting spec.auth.enabled of EtcdCluster %s to %t: %w", c.Name, enabled, err)
	}
	return nil
}

// AuthEnabled holds once etcd's authentication is on, as status.auth reports it.
func AuthEnabled() Predicate {
	return func(c *etcdv1alpha1.EtcdCluster) (bool, string) {
		return c.Status.Auth != nil && c.Status.Auth.Enabled, Describe(c)
	}
}

// NewTenant is a tenant of c with prefix, whose keys go with it (deletionPolicy Delete) at
// once, written or not (the force-delete annotation): a test's tenant leaves nothing behind.
func NewTenant(name string, c *etcdv1alpha1.EtcdCluster, prefix string) *etcdv1alpha1.EtcdTenant {
	return &etcdv1alpha1.EtcdTenant{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.Namespace,
			Annotations: map[string]string{etcdv1alpha1.AnnotationForceDelete: "true"}},
		Spec: etcdv1alpha1.EtcdTenantSpec{ClusterName: c.Name, Prefix: prefix, DeletionPolicy: etcdv1alpha1.TenantDeletionPolicyDelete},
	}
}

// CreateTenant creates t; Cleanup deletes it.
func (e *Env) CreateTenant(ctx context.Context, t *etcdv1alpha1.EtcdTenant) error {
	if err := e.Client.Create(ctx, t); err != nil {
		return fmt.Errorf("creating EtcdTenant %s: %w", t.Name, err)
	}
	e.track(t)
	e.Report.Logf("created EtcdTenant %s/%s: cluster %s, prefix %s", t.Namespace, t.Name, t.Spec.ClusterName, t.Spec.Prefix)
	return nil
}

// WaitForTenant polls t until it is Ready; t then holds the last state seen.
func (e *Env) WaitForTenant(ctx context.Context, t *etcdv1alpha1.EtcdTenant) error {
	return waitFor(ctx, e, "EtcdTenant", t, "tenant "+t.Name+" to be Ready", func(t *etcdv1alpha1.EtcdTenant) (bool, string) {
		ready := meta.FindStatusCondition(t.Status.Conditions, etcdv1alpha1.ConditionReady)
		if ready == nil {
			return false, "no Ready condition yet"
		}
		return ready.Status == metav1.ConditionTrue, fmt.Sprintf("Ready=%s (%s: %s), secret %q", ready.Status, ready.Reason, ready.Message, t.Status.SecretName)
	})
}

// ConnectAs returns an etcd client of c, as Connect does, authenticated with the
// certificate in tenant t's Secret and trusting the CAs it lists.
func (e *Env) ConnectAs(ctx context.Context, c *etcdv1alpha1.EtcdCluster, t *etcdv1alpha1.EtcdTenant) (etcd.Client, error) {
	addresses, err := e.clientAddresses(ctx, c)
	if err != nil {
		return nil, err
	}
	secret := &corev1.Secret{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: t.Namespace, Name: t.Status.SecretName}, secret); err != nil {
		return nil, fmt.Errorf("reading the Secret of tenant %s: %w", t.Name, err)
	}
	cfg := etcd.Config{Endpoints: urls(c, addresses)}
	if cfg.TLS, err = TLSConfig(secret.Data); err != nil {
		return nil, fmt.Errorf("the Secret %s of tenant %s: %w", secret.Name, t.Name, err)
	}
	if e.fromHost() {
		verifyAs(cfg.TLS, c.Status.ClientService)
	}
	return e.newEtcdClient(cfg)
}

// DeleteTenant deletes t and waits until the operator let it go.
func (e *Env) DeleteTenant(ctx context.Context, t *etcdv1alpha1.EtcdTenant) error {
	return e.release(ctx, "EtcdTenant", t)
}
