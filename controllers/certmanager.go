package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

// certificateGVK is cert-manager's Certificate. The operator speaks to it as unstructured
// data: importing cert-manager's Go API would tie the operator to cert-manager's Kubernetes
// libraries, and the fields used here have been stable since cert-manager.io/v1.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

// cert-manager's Certificates (tls.mode CertManager): created and patched to the cluster's
// names, garbage-collected with their EtcdCluster.
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;list;watch;create;patch

// certManagerTLS (TLS mode CertManager) makes sure cert-manager has a Certificate for the
// member certificate and one for the client certificate, then waits for their Secrets and
// checks them as it checks user-provided ones.
func (r *EtcdClusterReconciler) certManagerTLS(ctx context.Context, c *etcdv1alpha1.EtcdCluster, names cluster.Names) (*tlsState, error) {
	issuer := c.Spec.TLS.CertManager.IssuerRef
	member := map[string]any{
		"secretName":  names.MemberTLSSecret(),
		"commonName":  names.MemberCommonName(),
		"dnsNames":    toAny(names.ServingDNSNames(r.ClusterDomain)),
		"ipAddresses": []any{"127.0.0.1"},
		"usages":      []any{"server auth", "client auth", "digital signature", "key encipherment"},
	}
	client := map[string]any{
		"secretName": names.ClientTLSSecret(),
		"commonName": clientCertName,
		"usages":     []any{"client auth", "digital signature", "key encipherment"},
	}
	for name, spec := range map[string]map[string]any{names.Name + "-member": member, names.Name + "-client": client} {
		spec["issuerRef"] = map[string]any{"name": issuer.Name, "kind": issuer.Kind, "group": issuer.Group}
		spec["duration"] = leafValidity.String()
		spec["renewBefore"] = renewBefore.String()
		spec["privateKey"] = map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"}
		if err := r.ensureCertificate(ctx, c, name, spec); err != nil {
			return nil, err
		}
	}
	for _, secret := range []string{names.MemberTLSSecret(), names.ClientTLSSecret()} {
		if _, err := r.readTLSSecret(ctx, c.Namespace, secret); apierrors.IsNotFound(err) || isIncomplete(err) {
			return nil, &waitingError{reason: etcdv1alpha1.ReasonWaitingForCertificates,
				message: fmt.Sprintf("waiting for cert-manager to issue secret %s (issuer %s %s)", secret, issuer.Kind, issuer.Name)}
		}
	}
	return r.providedTLS(ctx, c, names)
}

// ensureCertificate creates or corrects one Certificate, owned by the EtcdCluster.
func (r *EtcdClusterReconciler) ensureCertificate(ctx context.Context, c *etcdv1alpha1.EtcdCluster, name string, spec map[string]any) error {
	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(certificateGVK)
	cert.SetNamespace(c.Namespace)
	cert.SetName(name)
	_, err := controllerutil.CreateOrPatch(ctx, r.Client, cert, func() error {
		cert.SetLabels(cluster.For(c).Labels())
		cert.SetOwnerReferences([]metav1.OwnerReference{resources.OwnerReference(c)})
		return unstructured.SetNestedMap(cert.Object, spec, "spec")
	})
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("tls.mode is CertManager but cert-manager's Certificate API (cert-manager.io/v1) is not installed: %w", err)
	}
	if err != nil {
		return fmt.Errorf("ensuring cert-manager Certificate %s: %w", name, err)
	}
	return nil
}

func toAny(in []string) []any {
	out := make([]any, len(in))
	for i, s := range in {
		out[i] = s
	}
	return out
}
