package controllers

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// CacheOptions are the manager's cache options: the operator only reads the pods, claims,
// services, secrets, disruption budgets, network policies and jobs it made; caching only those (by label)
// keeps its memory flat however big the cluster. No cached object keeps its managed fields:
// the operator never reads them (it patches and updates, it does not apply), and they are
// the largest part of many objects. With namespaces listed, it caches those namespaces only.
func CacheOptions(namespaces []string) cache.Options {
	ours := cache.ByObject{Label: labels.SelectorFromSet(labels.Set{cluster.LabelManagedBy: cluster.ManagedBy})}
	opts := cache.Options{ByObject: map[client.Object]cache.ByObject{
		&corev1.Pod{}: ours, &corev1.PersistentVolumeClaim{}: ours, &corev1.Service{}: ours,
		&corev1.Secret{}: ours, &policyv1.PodDisruptionBudget{}: ours, &batchv1.Job{}: ours,
		&networkingv1.NetworkPolicy{}: ours,
	}, DefaultTransform: cache.TransformStripManagedFields()}
	if len(namespaces) > 0 {
		opts.DefaultNamespaces = map[string]cache.Config{}
		for _, ns := range namespaces {
			opts.DefaultNamespaces[ns] = cache.Config{}
		}
	}
	return opts
}
