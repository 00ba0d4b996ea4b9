package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// EtcdClusterSpec is the desired state of an etcd cluster.
//
// This is the first cut of the API: it carries only the member count. Version, storage, TLS
// and the etcd tuning options arrive with the level 1 (Basic Install) work.
type EtcdClusterSpec struct {
	// size is the number of etcd members. An etcd cluster tolerates the loss of
	// (size-1)/2 members, so only odd sizes are useful: 1 (no fault tolerance, for
	// development), 3 (tolerates one failure), 5 (two) or 7 (three).
	// +kubebuilder:default=3
	// +kubebuilder:validation:Enum=1;3;5;7
	// +optional
	Size int32 `json:"size,omitempty"`
}

// EtcdClusterStatus is the observed state of an etcd cluster, written only by the operator.
type EtcdClusterStatus struct {
	// observedGeneration is the metadata.generation of the spec the operator last
	// reconciled successfully.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions describe the cluster. Ready summarises the others.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Condition types of an EtcdCluster.
const (
	// ConditionReady is True when the cluster is serving as the spec asks.
	ConditionReady = "Ready"
)

// Condition reasons of an EtcdCluster.
const (
	// ReasonMembersNotManaged: this release of the operator accepts EtcdCluster objects
	// but does not create etcd members yet, so the cluster is never Ready.
	ReasonMembersNotManaged = "MembersNotManaged"
)

// EtcdCluster is an etcd cluster managed by etcdpilot.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=etcd,categories=etcdpilot
// +kubebuilder:printcolumn:name="Size",type=integer,JSONPath=`.spec.size`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type EtcdCluster struct {
	metav1.TypeMeta `json:",inline"`
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired state of the cluster.
	// +optional
	Spec EtcdClusterSpec `json:"spec,omitempty"`

	// status is the observed state of the cluster.
	// +optional
	Status EtcdClusterStatus `json:"status,omitempty"`
}

// EtcdClusterList is a list of EtcdCluster.
//
// +kubebuilder:object:root=true
type EtcdClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []EtcdCluster `json:"items"`
}

func init() {
	SchemeBuilder.Register(&EtcdCluster{}, &EtcdClusterList{})
}
