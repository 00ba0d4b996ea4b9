package levels_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// fakeOperator plays the operator against a fake API server, just well enough for the
// tests' flows: it keeps spec.size members, each a pod and a claim, gives a member a new
// etcd ID when its claim was lost, reports all of them healthy at spec.version, records
// one event per cluster, and deletes the pods and claims of deleted clusters (the garbage
// collector's part).
type fakeOperator struct {
	c  client.Client
	ns string

	mu     sync.Mutex
	ids    map[string]string // member name -> etcd ID
	nextID int
	events bool
}

func startFakeOperator(t *testing.T, c client.Client, ns string, events bool) *fakeOperator {
	t.Helper()
	o := &fakeOperator{c: c, ns: ns, ids: map[string]string{}, events: events}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			o.reconcileAll(ctx)
			time.Sleep(5 * time.Millisecond)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
	return o
}

func (o *fakeOperator) reconcileAll(ctx context.Context) {
	var list etcdv1alpha1.EtcdClusterList
	if err := o.c.List(ctx, &list, client.InNamespace(o.ns)); err != nil {
		return
	}
	live := map[string]bool{}
	for i := range list.Items {
		live[list.Items[i].Name] = true
		o.reconcile(ctx, &list.Items[i])
	}
	var pods corev1.PodList
	var pvcs corev1.PersistentVolumeClaimList
	_ = o.c.List(ctx, &pods, client.InNamespace(o.ns))
	_ = o.c.List(ctx, &pvcs, client.InNamespace(o.ns))
	for i := range pods.Items {
		if !live[pods.Items[i].Labels[cluster.LabelCluster]] {
			_ = o.c.Delete(ctx, &pods.Items[i])
		}
	}
	for i := range pvcs.Items {
		if !live[pvcs.Items[i].Labels[cluster.LabelCluster]] {
			_ = o.c.Delete(ctx, &pvcs.Items[i])
		}
	}
}

func (o *fakeOperator) reconcile(ctx context.Context, c *etcdv1alpha1.EtcdCluster) {
	names := cluster.For(c)
	var members []etcdv1alpha1.MemberStatus
	for i := range int(c.Spec.Size) {
		name := names.MemberName(i)
		members = append(members, etcdv1alpha1.MemberStatus{Name: name, ID: o.ensureMember(ctx, c, name),
			Healthy: true, Leader: i == 0, Version: c.Spec.Version})
	}
	for i := int(c.Spec.Size); i < 7; i++ {
		name := names.MemberName(i)
		_ = o.c.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: name}})
		_ = o.c.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: names.PVCName(name)}})
	}
	_ = o.c.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: names.ClientService()},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: cluster.ClientPort}}}})
	if o.events {
		_ = o.c.Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: o.ns, Name: c.Name + ".created"},
			InvolvedObject: corev1.ObjectReference{Kind: "EtcdCluster", Name: c.Name, UID: c.UID},
			Type:           corev1.EventTypeNormal, Reason: "MemberPodCreated", Count: 1})
	}
	cond := func(t string, s metav1.ConditionStatus) metav1.Condition {
		return metav1.Condition{Type: t, Status: s, Reason: "AsExpected", ObservedGeneration: c.Generation, LastTransitionTime: metav1.Now()}
	}
	c.Status = etcdv1alpha1.EtcdClusterStatus{
		ObservedGeneration: c.Generation,
		Conditions: []metav1.Condition{
			cond(etcdv1alpha1.ConditionAvailable, metav1.ConditionTrue), cond(etcdv1alpha1.ConditionProgressing, metav1.ConditionFalse),
			cond(etcdv1alpha1.ConditionDegraded, metav1.ConditionFalse), cond(etcdv1alpha1.ConditionReady, metav1.ConditionTrue),
		},
		Members: members, ReadyMembers: c.Spec.Size, CurrentVersion: c.Spec.Version,
		ClientService: names.ClientService(), ClientSecret: "", // plain http: the fake etcd needs no certificate
	}
	_ = o.c.Status().Update(ctx, c) // a conflict is retried on the next round
}

// ensureMember makes sure member's claim and pod exist and returns its etcd ID, a new one
// when the claim had to be created: the member's data was lost.
func (o *fakeOperator) ensureMember(ctx context.Context, c *etcdv1alpha1.EtcdCluster, member string) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	names := cluster.For(c)
	meta := metav1.ObjectMeta{Namespace: o.ns, Labels: names.MemberLabels(member)}
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: meta}
	pvc.Name = names.PVCName(member)
	err := o.c.Get(ctx, client.ObjectKeyFromObject(pvc), &corev1.PersistentVolumeClaim{})
	if apierrors.IsNotFound(err) && o.c.Create(ctx, pvc) == nil {
		o.nextID++
		o.ids[member] = strconv.FormatInt(int64(o.nextID), 16)
	}
	pod := &corev1.Pod{ObjectMeta: *meta.DeepCopy()}
	pod.Name = member
	_ = o.c.Create(ctx, pod)
	return o.ids[member]
}

func (o *fakeOperator) String() string { return fmt.Sprintf("fake operator in %s", o.ns) }
