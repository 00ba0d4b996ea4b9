package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TenantDeletionPolicy says what happens to a tenant's keys when the EtcdTenant is deleted.
// +kubebuilder:validation:Enum=Retain;Delete
type TenantDeletionPolicy string

const (
	// TenantDeletionPolicyRetain keeps the keys under the prefix when the EtcdTenant is
	// deleted; only the tenant's etcd user and role go, so its certificate opens nothing.
	TenantDeletionPolicyRetain TenantDeletionPolicy = "Retain"
	// TenantDeletionPolicyDelete deletes every key under the prefix with the EtcdTenant,
	// once no key under it was written for 30 seconds, or at once with the force-delete
	// annotation; none when the tenant never held its prefix (it met an older tenant's).
	TenantDeletionPolicyDelete TenantDeletionPolicy = "Delete"
)

// AnnotationForceDelete set to "true" on an EtcdTenant with deletionPolicy Delete deletes
// its keys even while they are being written: its clients lose their data mid-write.
const AnnotationForceDelete = "etcd.etcdpilot.io/force-delete"

// EtcdTenantSpec is a slice of an EtcdCluster's keys: an etcd user and role that may use
// exactly the keys under prefix, and a client certificate for them.
type EtcdTenantSpec struct {
	// clusterName is the EtcdCluster, in the same namespace, the tenant's keys live in. It
	// must have spec.auth.enabled (without authentication etcd lets every client read and
	// write every key) and tls.mode OperatorCA (the operator signs the tenant's
	// certificate with the cluster's CA). Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="clusterName is immutable: create another tenant for another cluster"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Cluster",xDescriptors={"urn:alm:descriptor:io.kubernetes:etcd.etcdpilot.io:v1alpha1:EtcdCluster"}
	ClusterName string `json:"clusterName"`

	// prefix is the start of every key the tenant may use, for example "/tenants/a/". It
	// starts and ends with '/' (so that "/a/" does not cover "/ab/") and is not "/" alone.
	// No two tenants of a cluster may overlap; of two that would, the one created later
	// gets nothing. A kube-apiserver using the tenant is given it as --etcd-prefix.
	// Immutable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/')",message="prefix must start with '/'"
	// +kubebuilder:validation:XValidation:rule="self != '/'",message="prefix cannot be '/' alone: it would cover every key of the cluster, the operator's and other tenants' included"
	// +kubebuilder:validation:XValidation:rule="self.endsWith('/')",message="prefix must end with '/', or it would also cover the keys of longer prefixes (\"/a\" covers \"/ab/\")"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="prefix is immutable: create another tenant for another prefix"
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Key Prefix"
	Prefix string `json:"prefix"`

	// readOnly lets the tenant read its keys but not write them.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Read Only",xDescriptors={"urn:alm:descriptor:com.tectonic.ui:booleanSwitch"}
	ReadOnly bool `json:"readOnly,omitempty"`

	// deletionPolicy says what happens to the keys under prefix when the tenant is
	// deleted: Retain (the default) keeps them, Delete deletes them once no key under the
	// prefix was written for 30 seconds (a client still writing holds the deletion; a
	// kube-apiserver renews its lease every 10 seconds), or at once with the annotation
	// etcd.etcdpilot.io/force-delete: "true". A tenant that met an older one's prefix
	// (PrefixConflict) deletes no key: they are the older tenant's. Either way the tenant's
	// etcd user and role are deleted.
	// +kubebuilder:default=Retain
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="Deletion Policy"
	DeletionPolicy TenantDeletionPolicy `json:"deletionPolicy,omitempty"`
}

// TenantUsage is what the tenant's keys were found to be at one time.
type TenantUsage struct {
	// keys is how many keys are under the prefix.
	Keys int64 `json:"keys"`

	// revision is the highest revision at which a key under the prefix was written (its
	// mod revision); zero when there is none.
	Revision int64 `json:"revision"`

	// observedAt is when the keys were counted. They are counted at most once a minute.
	ObservedAt metav1.Time `json:"observedAt"`

	// bytes is the size of the keys and values under the prefix: what reading them all
	// returns. etcd's database file holds more (the history until it is compacted, and its
	// own structures). Omitted until first measured.
	// +optional
	Bytes *int64 `json:"bytes,omitempty"`

	// bytesObservedAt is when bytes was measured: it reads every key and value under the
	// prefix, so at most every 10 minutes.
	// +optional
	BytesObservedAt *metav1.Time `json:"bytesObservedAt,omitempty"`
}

// EtcdTenantStatus is what the operator observed of a tenant.
type EtcdTenantStatus struct {
	// observedGeneration is the generation of the spec that is in force in etcd.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Observed Generation"
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready is True when the tenant's user and role exist in etcd with exactly
	// the prefix's range and its certificate is in its Secret; otherwise the reason says
	// why.
	// +listType=map
	// +listMapKey=type
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Conditions",xDescriptors={"urn:alm:descriptor:io.kubernetes.conditions"}
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// user is the tenant's etcd user and role, and the common name of its certificate:
	// "tenant:" followed by the EtcdTenant's name.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="etcd User"
	User string `json:"user,omitempty"`

	// secretName is the Secret holding the tenant's client certificate (tls.crt, tls.key),
	// the CAs to trust (ca.crt), the cluster's client URLs (endpoints, comma-separated) and
	// the prefix (prefix).
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Client Secret",xDescriptors={"urn:alm:descriptor:io.kubernetes:Secret"}
	SecretName string `json:"secretName,omitempty"`

	// certificateNotAfter is when the certificate in the Secret stops being valid. It is
	// issued again 30 days before.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Certificate Expiry"
	CertificateNotAfter *metav1.Time `json:"certificateNotAfter,omitempty"`

	// usage is what the keys under the prefix were last found to be.
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=status,displayName="Usage"
	Usage *TenantUsage `json:"usage,omitempty"`
}

// EtcdTenant is a tenant of an EtcdCluster with authentication on: an etcd user whose role
// may use only the keys under a prefix, and a client certificate for it signed by the
// cluster's CA, in a Secret. It is what a Kubernetes API server of a hosted control plane
// (or any other client) is given instead of the operator's root certificate.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcdtn,categories=etcdpilot
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63",message="metadata.name must be at most 63 characters: it names the tenant's Secret and etcd user"
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.clusterName`
// +kubebuilder:printcolumn:name="Prefix",type=string,JSONPath=`.spec.prefix`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Keys",type=integer,JSONPath=`.status.usage.keys`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.status.secretName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +operator-sdk:csv:customresourcedefinitions:displayName="etcd Tenant",resources={{Secret,v1,""}}
type EtcdTenant struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec EtcdTenantSpec `json:"spec"`
	// +optional
	Status EtcdTenantStatus `json:"status,omitempty"`
}

// EtcdTenantList is a list of EtcdTenants.
//
// +kubebuilder:object:root=true
type EtcdTenantList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdTenant `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdTenant{}, &EtcdTenantList{})
}
