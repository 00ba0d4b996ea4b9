package resources

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// PeerService returns the headless Service that gives every member pod the stable DNS
// name its peer and client URLs advertise (<member>.<peer-service>.<namespace>.svc).
//
// It publishes not-ready addresses because members must resolve each other before any of
// them is ready: a new cluster has no leader, so no member passes /readyz, until enough
// members have found each other to elect one. Without it the cluster could never form,
// and a member restarting into a cluster without quorum could never be reached.
func PeerService(c *etcdv1alpha1.EtcdCluster) *corev1.Service {
	cl := cluster.For(c)
	svc := service(c, cl.PeerService(), servicePort(PeerPortName, cluster.PeerPort), servicePort(ClientPortName, cluster.ClientPort))
	svc.Spec.ClusterIP = corev1.ClusterIPNone
	svc.Spec.PublishNotReadyAddresses = true
	return svc
}

// ClientService returns the Service clients connect to, on the client port. It routes
// only to ready members (passing /readyz: part of a cluster with a leader, not a
// learner), so clients are not sent to a member that cannot serve them.
func ClientService(c *etcdv1alpha1.EtcdCluster) *corev1.Service {
	cl := cluster.For(c)
	svc := service(c, cl.ClientService(), servicePort(ClientPortName, cluster.ClientPort))
	svc.Spec.Type = corev1.ServiceTypeClusterIP
	return svc
}

// service is a Service of the cluster selecting its member pods, on the given ports.
func service(c *etcdv1alpha1.EtcdCluster, name string, ports ...corev1.ServicePort) *corev1.Service {
	cl := cluster.For(c)
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: objectMeta(c, name, cl.Labels()),
		Spec: corev1.ServiceSpec{
			Selector: cl.SelectorLabels(),
			Ports:    ports,
		},
	}
}

// servicePort is a TCP Service port forwarding to the container port of the same name.
func servicePort(name string, port int32) corev1.ServicePort {
	return corev1.ServicePort{
		Name:       name,
		Port:       port,
		TargetPort: intstr.FromString(name),
		Protocol:   corev1.ProtocolTCP,
	}
}
