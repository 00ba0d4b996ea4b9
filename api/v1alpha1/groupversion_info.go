// Package v1alpha1 contains the etcdpilot API: the etcd.etcdpilot.io/v1alpha1 group.
//
// +kubebuilder:object:generate=true
// +groupName=etcd.etcdpilot.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every etcdpilot kind.
	GroupVersion = schema.GroupVersion{Group: "etcd.etcdpilot.io", Version: "v1alpha1"}

	// SchemeBuilder registers the etcdpilot kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the etcdpilot kinds to a runtime.Scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
