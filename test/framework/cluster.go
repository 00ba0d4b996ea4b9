package framework

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// NewName returns prefix plus a random suffix, such as sc-l1-x7k2p: tests running at the
// same time, or again after an interrupted run, never collide.
func NewName(prefix string) string { return prefix + utilrand.String(5) }

// Prepare returns a copy of example ready to be created as name in namespace: server-set
// metadata cleared, the scorecard label on the cluster and its member pods, and
// deletionPolicy Delete so that deleting the cluster also deletes its volumes.
func Prepare(example *etcdv1alpha1.EtcdCluster, name, namespace string) *etcdv1alpha1.EtcdCluster {
	c := example.DeepCopy()
	c.ObjectMeta = metav1.ObjectMeta{
		Name:        name,
		Namespace:   namespace,
		Labels:      withPartOf(example.Labels),
		Annotations: example.Annotations,
	}
	c.Status = etcdv1alpha1.EtcdClusterStatus{}
	c.Spec.DeletionPolicy = etcdv1alpha1.DeletionPolicyDelete
	c.Spec.PodTemplate.Labels = withPartOf(c.Spec.PodTemplate.Labels)
	return c
}

func withPartOf(labels map[string]string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[PartOfLabel] = PartOfValue
	return out
}

// Create creates c and remembers it for Cleanup. c is updated with what the API server
// stored, defaults included.
func (e *Env) Create(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	if err := e.Client.Create(ctx, c); err != nil {
		return fmt.Errorf("creating EtcdCluster %s: %w", c.Name, err)
	}
	e.track(c)
	e.Report.Logf("created EtcdCluster %s/%s: size %d, etcd %s, TLS %s", c.Namespace, c.Name, c.Spec.Size, c.Spec.Version, c.Spec.TLS.Mode)
	return nil
}

// WaitFor polls c until until says it is done or ctx ends; c then holds the last state
// seen. Every change of the state until describes is logged, so the log shows how the
// cluster got there, or where it got stuck.
func (e *Env) WaitFor(ctx context.Context, c *etcdv1alpha1.EtcdCluster, what string, until Predicate) error {
	return waitFor(ctx, e, "EtcdCluster", c, what, until)
}

// waitFor polls obj, of kind, until until says it is done or ctx ends, and logs every
// change of the state until describes.
func waitFor[T client.Object](ctx context.Context, e *Env, kind string, obj T, what string, until func(T) (bool, string)) error {
	key := client.ObjectKeyFromObject(obj)
	// last is the last state observed; readErr, the error of the reads since, if any: a
	// read cut short by the deadline must not hide what was seen before it.
	last, readErr := "nothing read yet", ""
	err := wait.PollUntilContextCancel(ctx, e.poll(), true, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, key, obj); err != nil {
			readErr = fmt.Sprintf("reading %s %s: %v", kind, key.Name, err) // the API server may be busy: try again
			return false, nil
		}
		readErr = ""
		done, state := until(obj)
		if state != last {
			e.Report.Logf("%s: %s", key.Name, state)
			last = state
		}
		return done, nil
	})
	if err == nil {
		return nil
	}
	if readErr != "" {
		return fmt.Errorf("gave up waiting for %s (%w); last seen: %s; then %s", what, err, last, readErr)
	}
	return fmt.Errorf("gave up waiting for %s (%w); last seen: %s", what, err, last)
}

// Resize sets spec.size.
func (e *Env) Resize(ctx context.Context, c *etcdv1alpha1.EtcdCluster, size int32) error {
	patch := client.MergeFrom(c.DeepCopy())
	c.Spec.Size = size
	if err := e.Client.Patch(ctx, c, patch); err != nil {
		return fmt.Errorf("setting spec.size of EtcdCluster %s to %d: %w", c.Name, size, err)
	}
	return nil
}

// SetVersion sets spec.version; with dryRun the API server validates the change without
// storing it.
func (e *Env) SetVersion(ctx context.Context, c *etcdv1alpha1.EtcdCluster, version string, dryRun bool) error {
	target := c
	if dryRun {
		target = c.DeepCopy()
	}
	patch := client.MergeFrom(target.DeepCopy())
	target.Spec.Version = version
	var opts []client.PatchOption
	if dryRun {
		opts = append(opts, client.DryRunAll)
	}
	return e.Client.Patch(ctx, target, patch, opts...)
}

// DestroyMember deletes the volume claim and then the pod of member: its data is gone, as
// when a node and its disk are lost. The claim goes first; it stays Terminating until the
// pod is gone, so the operator never sees the pod missing while the data still exists.
func (e *Env) DestroyMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string) error {
	names := cluster.For(c)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: names.PVCName(member)}}
	if err := e.Client.Delete(ctx, pvc); err != nil {
		return fmt.Errorf("deleting PersistentVolumeClaim %s: %w", pvc.Name, err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: member}}
	if err := e.Client.Delete(ctx, pod); err != nil {
		return fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
	}
	e.Report.Logf("deleted PersistentVolumeClaim %s and Pod %s", pvc.Name, pod.Name)
	return nil
}

// holdFinalizer keeps the pods DestroyMembers deletes in the API until their claims are
// deleted too.
const holdFinalizer = "test.etcdpilot.io/hold"

// destroyWait bounds each wait of DestroyMembers: the members' etcd stopping, then their
// pods and claims going.
const destroyWait = 2 * time.Minute

// DestroyMembers destroys members of c together, as a disaster does (nodes lost with their
// disks): every member stops while its data still exists, and only then is the data deleted.
// Destroyed one after another instead (DestroyMember each), the first whose claim goes
// may be replaced while the others still make a quorum, and so may the next: a majority
// destroyed that way may never lose the quorum. Each pod is held in the API by a
// finalizer while its etcd stops: the operator sees it going and makes no new one, and no
// member is replaced without a healthy quorum of the others. Then the claims are deleted
// and the pods let go. The finalizers are removed whatever happens.
func (e *Env) DestroyMembers(ctx context.Context, c *etcdv1alpha1.EtcdCluster, members []string) (err error) {
	pods := make([]*corev1.Pod, 0, len(members))
	defer func() {
		for _, pod := range pods {
			if rerr := e.letGo(context.WithoutCancel(ctx), pod); rerr != nil && err == nil {
				err = rerr
			}
		}
	}()
	for _, m := range members {
		pod := &corev1.Pod{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: c.Namespace, Name: m}, pod); err != nil {
			return fmt.Errorf("reading Pod %s: %w", m, err)
		}
		patch := client.MergeFrom(pod.DeepCopy())
		pod.Finalizers = append(pod.Finalizers, holdFinalizer)
		if err := e.Client.Patch(ctx, pod, patch); err != nil {
			return fmt.Errorf("holding Pod %s: %w", m, err)
		}
		pods = append(pods, pod)
	}
	for _, pod := range pods {
		if err := e.Client.Delete(ctx, pod); err != nil {
			return fmt.Errorf("deleting Pod %s: %w", pod.Name, err)
		}
	}
	wctx, cancel := context.WithTimeout(ctx, destroyWait)
	defer cancel()
	for _, pod := range pods {
		if err := e.waitStopped(wctx, pod); err != nil {
			return err
		}
	}
	names := cluster.For(c)
	for _, m := range members {
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: names.PVCName(m)}}
		if err := e.Client.Delete(ctx, pvc); err != nil {
			return fmt.Errorf("deleting PersistentVolumeClaim %s: %w", pvc.Name, err)
		}
	}
	e.Report.Logf("members %v stopped together; their claims deleted", members)
	return nil
}

// waitStopped waits until every container of pod has terminated.
func (e *Env) waitStopped(ctx context.Context, pod *corev1.Pod) error {
	err := wait.PollUntilContextCancel(ctx, e.poll(), true, func(ctx context.Context) (bool, error) {
		got := &corev1.Pod{}
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
			return false, err
		}
		for _, s := range got.Status.ContainerStatuses {
			if s.State.Terminated == nil {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the containers of Pod %s to stop: %w", pod.Name, err)
	}
	return nil
}

// letGo removes holdFinalizer from pod, if it is still there.
func (e *Env) letGo(ctx context.Context, pod *corev1.Pod) error {
	got := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(pod), got); apierrors.IsNotFound(err) {
		return nil
	} else if err != nil {
		return fmt.Errorf("reading Pod %s: %w", pod.Name, err)
	}
	var kept []string
	for _, f := range got.Finalizers {
		if f != holdFinalizer {
			kept = append(kept, f)
		}
	}
	patch := client.MergeFrom(got.DeepCopy())
	got.Finalizers = kept
	if err := client.IgnoreNotFound(e.Client.Patch(ctx, got, patch)); err != nil {
		return fmt.Errorf("letting Pod %s go: %w", pod.Name, err)
	}
	return nil
}

// memberObjects returns the member pods and claims of c that exist, found through the
// cluster's selector.
func (e *Env) memberObjects(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]corev1.Pod, []corev1.PersistentVolumeClaim, error) {
	pods, err := e.listMemberPods(ctx, c)
	if err != nil {
		return nil, nil, err
	}
	var pvcs corev1.PersistentVolumeClaimList
	if err := e.Client.List(ctx, &pvcs, memberSelector(c)...); err != nil {
		return nil, nil, fmt.Errorf("listing the volume claims of EtcdCluster %s: %w", c.Name, err)
	}
	return pods, pvcs.Items, nil
}

// listMemberPods returns the member pods of c that exist (not its backup Jobs' pods).
func (e *Env) listMemberPods(ctx context.Context, c *etcdv1alpha1.EtcdCluster) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, memberSelector(c)...); err != nil {
		return nil, fmt.Errorf("listing the pods of EtcdCluster %s: %w", c.Name, err)
	}
	return pods.Items, nil
}

// memberSelector selects the member pods and claims of c.
func memberSelector(c *etcdv1alpha1.EtcdCluster) []client.ListOption {
	return []client.ListOption{client.InNamespace(c.Namespace), client.MatchingLabels(cluster.For(c).SelectorLabels())}
}

// Cleanup deletes everything this Env created, newest first, and waits until each object
// is gone with what depends on it: an EtcdCluster with its member pods and volume claims,
// an EtcdBackup with its artifact (the operator's part) and its Jobs' pods. Newest first
// matters: a restored cluster holds the backup's claim, and the backup's Jobs carry the
// labels of the cluster it backs up. Cleanup keeps going after an error and returns them
// all. ctx bounds the whole cleanup.
func (e *Env) Cleanup(ctx context.Context) error {
	e.mu.Lock()
	created := e.created
	e.created = nil
	e.mu.Unlock()
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		if err := e.delete(ctx, created[i]); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// delete deletes obj, one of the objects this Env creates, and waits until it is gone.
func (e *Env) delete(ctx context.Context, obj client.Object) error {
	switch o := obj.(type) {
	case *etcdv1alpha1.EtcdCluster:
		return e.deleteCluster(ctx, o)
	case *etcdv1alpha1.EtcdBackup:
		return e.deleteBackup(ctx, o)
	case *etcdv1alpha1.EtcdTenant:
		return e.DeleteTenant(ctx, o)
	case *corev1.PersistentVolumeClaim:
		return e.deleteClaim(ctx, o)
	case *corev1.Pod:
		return e.deletePod(ctx, o)
	default:
		return fmt.Errorf("cannot delete %T %s: the harness does not create that kind", obj, obj.GetName())
	}
}

// deleteCluster deletes c in the foreground (the API server removes it only after its
// pods, claims, Services and Secrets) and waits for it, removing its finalizers when the
// operator does not (see release). Claims that survive anyway are deleted by label.
func (e *Env) deleteCluster(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	start := time.Now()
	if err := e.release(ctx, "EtcdCluster", c, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return err
	}
	if err := e.deleteMemberObjects(ctx, c); err != nil {
		return err
	}
	e.Report.Logf("deleted EtcdCluster %s with its pods and volume claims in %s", c.Name, time.Since(start).Round(time.Millisecond))
	return nil
}

// release deletes obj, of kind, with opts and waits until it is gone. The operator's
// finalizer runs first; when obj is still there after half of what remains of ctx (no
// operator running, say), its finalizers are removed so that nothing is left behind.
func (e *Env) release(ctx context.Context, kind string, obj client.Object, opts ...client.DeleteOption) error {
	start := time.Now()
	if err := e.Client.Delete(ctx, obj, opts...); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting %s %s: %w", kind, obj.GetName(), err)
	}
	grace, cancel := HalfOf(ctx)
	err := e.waitGone(grace, obj)
	cancel()
	if err == nil {
		return nil
	}
	e.Report.Logf("%s %s is still there after %s: removing its finalizers", kind, obj.GetName(), time.Since(start).Round(time.Second))
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	if err := e.Client.Patch(ctx, obj.DeepCopyObject().(client.Object), patch); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("removing the finalizers of %s %s: %w", kind, obj.GetName(), err)
	}
	if err := e.waitGone(ctx, obj); err != nil {
		return fmt.Errorf("%s %s is not gone: %w", kind, obj.GetName(), err)
	}
	return nil
}

// deleteMemberObjects deletes the claims left of c and waits until neither pods nor claims
// of c remain.
func (e *Env) deleteMemberObjects(ctx context.Context, c *etcdv1alpha1.EtcdCluster) error {
	var left []string
	err := wait.PollUntilContextCancel(ctx, e.poll(), true, func(ctx context.Context) (bool, error) {
		pods, pvcs, err := e.memberObjects(ctx, c)
		if err != nil {
			left = []string{err.Error()}
			return false, nil // the API server may be busy: try again
		}
		left = left[:0]
		for i := range pods {
			left = append(left, "Pod "+pods[i].Name)
		}
		for i := range pvcs {
			pvc := &pvcs[i]
			left = append(left, "PersistentVolumeClaim "+pvc.Name)
			if pvc.DeletionTimestamp == nil {
				_ = e.Client.Delete(ctx, pvc) // checked on the next round, by listing again
			}
		}
		return len(left) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("objects of EtcdCluster %s are not gone (%w): %v", c.Name, err, left)
	}
	return nil
}

// waitGone waits until obj (its kind, namespace and name) no longer exists.
func (e *Env) waitGone(ctx context.Context, obj client.Object) error {
	key := client.ObjectKeyFromObject(obj)
	return wait.PollUntilContextCancel(ctx, e.poll(), true, func(ctx context.Context) (bool, error) {
		err := e.Client.Get(ctx, key, obj.DeepCopyObject().(client.Object))
		return apierrors.IsNotFound(err), nil
	})
}

// HalfOf returns a context that ends halfway to ctx's deadline, or with ctx when it has
// none.
func HalfOf(ctx context.Context) (context.Context, context.CancelFunc) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, time.Until(deadline)/2)
}
