package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/monitoring"
)

// The monitoring objects (PodMonitor, PrometheusRule, dashboard ConfigMap) are read from the
// API server, not the cache, and only when they may need a change: the first pass after a
// start, a change of what they are made from, and every monitoringRecheck to put back what a
// user changed or deleted. While the Prometheus Operator's CRDs are missing, the API server
// is asked about them at most every monitoringCRDRecheck.
const (
	monitoringRecheck    = 10 * time.Minute
	monitoringCRDRecheck = time.Minute
)

// RBAC of the monitoring objects: read by name, created, replaced when they differ from what
// the cluster asks for, deleted when spec.monitoring.mode becomes Disabled (the owner
// reference deletes them with their EtcdCluster).
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=podmonitors;prometheusrules,verbs=get;create;update;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;create;update;delete

// monitoringState is what the reconciler remembers between passes about monitoring.
type monitoringState struct {
	mu sync.Mutex
	// crdsCheckedAt and crdsPresent: the last look at the Prometheus Operator's CRDs.
	crdsCheckedAt time.Time
	crdsPresent   bool
	// done: by EtcdCluster UID, what the objects last put in place were made from
	// (monitoringInputs, or "disabled") and when.
	done map[types.UID]monitoringDone
}

type monitoringDone struct {
	inputs string
	at     time.Time
}

// upToDate says whether cluster uid's objects were put in place from inputs recently enough.
func (s *monitoringState) upToDate(uid types.UID, inputs string, now time.Time) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.done[uid]
	return ok && d.inputs == inputs && now.Sub(d.at) < monitoringRecheck
}

func (s *monitoringState) record(uid types.UID, inputs string, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done == nil {
		s.done = map[types.UID]monitoringDone{}
	}
	if inputs == "" {
		delete(s.done, uid)
		return
	}
	s.done[uid] = monitoringDone{inputs: inputs, at: now}
}

// Forget drops what is remembered about a deleted cluster.
func (s *monitoringState) forget(uid types.UID) { s.record(uid, "", time.Time{}) }

// crds says whether the Prometheus Operator's PodMonitor and PrometheusRule kinds are served.
func (r *EtcdClusterReconciler) crds(now time.Time) bool {
	s := &r.monitoring
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.crdsCheckedAt.IsZero() && !s.crdsPresent && now.Sub(s.crdsCheckedAt) < monitoringCRDRecheck {
		return false
	}
	present := true
	for _, gvk := range []schema.GroupVersionKind{monitoring.PodMonitorKind, monitoring.PrometheusRuleKind} {
		if _, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
			present = false
		}
	}
	s.crdsCheckedAt, s.crdsPresent = now, present
	return present
}

// ensureMonitoring keeps the cluster's monitoring objects as spec.monitoring asks and returns
// the Monitoring condition: what this pass found, or, when the objects were put in place from
// the same spec less than monitoringRecheck ago, what that pass found (every pass says it, so
// a status patch that failed loses nothing). A failure is reported in the condition, not
// returned: the etcd cluster is managed whatever happens to its monitoring.
func (r *EtcdClusterReconciler) ensureMonitoring(ctx context.Context, c *etcdv1alpha1.EtcdCluster) *metav1.Condition {
	now := r.now()
	if c.Spec.Monitoring.Mode == etcdv1alpha1.MonitoringDisabled {
		if !r.monitoring.upToDate(c.UID, "disabled", now) {
			if err := r.deleteMonitoring(ctx, c, now); err != nil {
				return monitoringFailed(err)
			}
			r.monitoring.record(c.UID, "disabled", now)
		}
		return &metav1.Condition{Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonMonitoringDisabled,
			Message: "spec.monitoring.mode is Disabled: the operator keeps no PodMonitor, PrometheusRule or dashboard for this cluster"}
	}
	if !r.crds(now) {
		r.monitoring.forget(c.UID)
		return &metav1.Condition{Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonPrometheusOperatorMissing,
			Message: "the Prometheus Operator's CRDs (monitoring.coreos.com/v1 PodMonitor and PrometheusRule) are not installed: no monitoring objects are created; every member serves its metrics on port 2381 (named metrics) all the same"}
	}
	// Building the objects (rules and dashboard scoped to the cluster) costs more than the
	// rest of a steady pass: it is done only when they may need a change.
	inputs := monitoringInputs(c)
	if !r.monitoring.upToDate(c.UID, inputs, now) {
		objs, err := monitoring.For(c, monitoring.Dashboard)
		if err != nil {
			return monitoringFailed(err)
		}
		for _, obj := range []client.Object{objs.PodMonitor, objs.PrometheusRule, objs.Dashboard} {
			if err := r.applyMonitoringObject(ctx, c, obj); err != nil {
				if meta.IsNoMatchError(err) {
					// The CRDs went away since they were looked at.
					r.monitoring.mu.Lock()
					r.monitoring.crdsCheckedAt = time.Time{}
					r.monitoring.mu.Unlock()
				}
				return monitoringFailed(err)
			}
		}
		r.monitoring.record(c.UID, inputs, now)
	}
	return &metav1.Condition{Status: metav1.ConditionTrue, Reason: etcdv1alpha1.ReasonMonitoringConfigured,
		Message: fmt.Sprintf("PodMonitor %s, PrometheusRule %s and ConfigMap %s (a Grafana dashboard) are in place",
			monitoring.PodMonitorName(c), monitoring.PrometheusRuleName(c), monitoring.DashboardName(c))}
}

// monitoringInputs is what monitoring.For reads of a cluster that can change: its name (the
// namespace and UID are fixed) and spec.monitoring.labels (JSON sorts the keys). The rules
// and the dashboard are this binary's, and what a pass remembers lives no longer than it.
func monitoringInputs(c *etcdv1alpha1.EtcdCluster) string {
	labels, err := json.Marshal(c.Spec.Monitoring.Labels)
	if err != nil {
		panic(err) // a map of strings always marshals
	}
	return "auto " + c.Name + " " + string(labels)
}

func monitoringFailed(err error) *metav1.Condition {
	return &metav1.Condition{Status: metav1.ConditionFalse, Reason: etcdv1alpha1.ReasonMonitoringFailed, Message: err.Error()}
}

// applyMonitoringObject creates obj, owned by c, or replaces the existing one when its hash
// differs. An object of that name that c does not own is left alone, and is an error.
func (r *EtcdClusterReconciler) applyMonitoringObject(ctx context.Context, c *etcdv1alpha1.EtcdCluster, obj client.Object) error {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if err := controllerutil.SetControllerReference(c, obj, r.Scheme); err != nil {
		return err
	}
	current, err := r.readMonitoringObject(ctx, obj)
	if apierrors.IsNotFound(err) {
		if err := r.Client.Create(ctx, obj); err != nil {
			return fmt.Errorf("creating %s %s: %w", kind, obj.GetName(), err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", kind, obj.GetName(), err)
	}
	if !metav1.IsControlledBy(current, c) {
		return fmt.Errorf("%s %s exists and does not belong to this EtcdCluster: delete or rename it, or set spec.monitoring.mode to Disabled", kind, obj.GetName())
	}
	if current.GetAnnotations()[monitoring.AnnotationHash] == obj.GetAnnotations()[monitoring.AnnotationHash] {
		return nil
	}
	obj.SetResourceVersion(current.GetResourceVersion())
	if err := r.Client.Update(ctx, obj); err != nil {
		return fmt.Errorf("updating %s %s: %w", kind, obj.GetName(), err)
	}
	return nil
}

// readMonitoringObject reads the object of obj's kind and name from the API server (the
// cache holds none of these kinds).
func (r *EtcdClusterReconciler) readMonitoringObject(ctx context.Context, obj client.Object) (client.Object, error) {
	var current client.Object
	if _, ok := obj.(*corev1.ConfigMap); ok {
		current = &corev1.ConfigMap{}
	} else {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(obj.GetObjectKind().GroupVersionKind())
		current = u
	}
	err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(obj), current)
	return current, err
}

// deleteMonitoring deletes the monitoring objects the cluster owns.
func (r *EtcdClusterReconciler) deleteMonitoring(ctx context.Context, c *etcdv1alpha1.EtcdCluster, now time.Time) error {
	objs, err := monitoring.For(c, monitoring.Dashboard)
	if err != nil {
		return err
	}
	candidates := []client.Object{objs.Dashboard}
	if r.crds(now) {
		candidates = append(candidates, objs.PodMonitor, objs.PrometheusRule)
	}
	for _, obj := range candidates {
		current, err := r.readMonitoringObject(ctx, obj)
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("reading %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
		if !metav1.IsControlledBy(current, c) {
			continue
		}
		if err := r.Client.Delete(ctx, current, client.Preconditions{UID: ptrTo(current.GetUID())}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	return nil
}

func ptrTo[T any](v T) *T { return &v }
