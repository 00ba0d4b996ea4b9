package resources

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
	"github.com/etcdpilot/etcdpilot/internal/clusterspec"
	"github.com/etcdpilot/etcdpilot/internal/versions"
)

// Names inside a member pod.
const (
	// ContainerName is the name of the etcd container, for `kubectl exec -c` and for
	// finding the container's status.
	ContainerName = "etcd"
	// EtcdBinary is the etcd executable in the operand image.
	EtcdBinary = "/usr/local/bin/etcd"
	// EtcdctlBinary is etcdctl in the operand image.
	EtcdctlBinary = "/usr/local/bin/etcdctl"
	// DataVolume is the volume holding the member's data directory.
	DataVolume = "data"
	// TLSVolume is the volume holding the member certificate (TLS clusters only).
	TLSVolume = "tls"

	// ClientPortName, PeerPortName and MetricsPortName name the container and Service
	// ports, so probes and monitors can refer to them by name.
	ClientPortName  = "client"
	PeerPortName    = "peer"
	MetricsPortName = "metrics"

	// RunAsID is the user and group etcd runs as: the conventional "nonroot" ID of
	// distroless images, which owns no file in the image.
	RunAsID int64 = 65532
)

// AnnotationSpecHash records on a member pod the hash of the spec it was built from
// (SpecHash): a pod whose hash differs from the one the current spec gives is rolled out.
const AnnotationSpecHash = "etcd.etcdpilot.io/spec-hash"

// AnnotationTrustHash records on a member pod which trusted CAs and member certificate
// issuer it started with (MemberConfig.TrustHash); the spec hash covers it.
const AnnotationTrustHash = "etcd.etcdpilot.io/trust-hash"

// tlsFileMode lets the owner and the group read the Secret files and nobody else. The
// kubelet gives them the pod's fsGroup, which is etcd's group, so etcd can read its key.
const tlsFileMode int32 = 0o440

// MemberPod returns the pod of member m, running the image images gives for the cluster's
// version.
//
// The pod's hostname and subdomain make <member>.<peer-service>.<namespace>.svc resolve
// to it through the headless peer Service: the stable name its URLs advertise. Members
// are plain pods rather than a StatefulSet so the operator decides, one etcd membership
// change at a time, which member is added or removed. The pod meets the restricted Pod
// Security Standard, and `kubectl exec <pod> -- etcdctl ...` works without flags because
// the ETCDCTL_* environment points etcdctl at the local member with its certificate.
func MemberPod(c *etcdv1alpha1.EtcdCluster, m MemberConfig, images versions.Images) *corev1.Pod {
	if m.Version != "" && m.Version != c.Spec.Version {
		c = c.DeepCopy()
		c.Spec.Version = m.Version
	}
	spec := clusterspec.Effective(c)
	cl := cluster.For(c)
	labels := cl.MemberLabels(m.Name)
	labels[cluster.LabelVersion] = spec.Version
	meta := objectMeta(c, m.Name, mergeLabels(spec.PodTemplate.Labels, labels))
	meta.Annotations = copyMap(spec.PodTemplate.Annotations)
	pt := spec.PodTemplate
	pod := &corev1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: meta,
		Spec: corev1.PodSpec{
			Hostname:                      m.Name,
			Subdomain:                     cl.PeerService(),
			Containers:                    []corev1.Container{etcdContainer(c, spec, m, images)},
			Volumes:                       volumes(cl, spec, m.Name),
			SecurityContext:               podSecurityContext(),
			Affinity:                      affinity(pt.Affinity, cl),
			Tolerations:                   copyTolerations(pt.Tolerations),
			NodeSelector:                  copyMap(pt.NodeSelector),
			PriorityClassName:             pt.PriorityClassName,
			TopologySpreadConstraints:     spreadConstraints(pt.TopologySpreadConstraints, cl),
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			RestartPolicy:                 corev1.RestartPolicyAlways,
			EnableServiceLinks:            ptr.To(false),
			AutomountServiceAccountToken:  ptr.To(false),
		},
	}
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	if m.TrustHash != "" {
		pod.Annotations[AnnotationTrustHash] = m.TrustHash
	}
	pod.Annotations[AnnotationSpecHash] = SpecHash(withoutDefaultSpread(pod, pt))
	return pod
}

// withoutDefaultSpread is the pod as its spec hash sees it: without the spread constraints
// the operator adds when the user sets none. The default shapes where new pods go (a pod
// made for a member that restarts, moves or joins) and never restarts a running member: a
// member already placed stays where it is, and the default can change without a rollout.
// Constraints the user sets are hashed like any other field, so changing them rolls the
// members out.
func withoutDefaultSpread(pod *corev1.Pod, pt etcdv1alpha1.PodTemplate) *corev1.Pod {
	if len(pt.TopologySpreadConstraints) > 0 {
		return pod
	}
	hashed := pod.DeepCopy()
	hashed.Spec.TopologySpreadConstraints = nil
	return hashed
}

// SpecHash is the hash of what shapes a member pod and needs a restart to change: its
// containers (image, flags, resources, probes), volumes (the claim, the TLS Secret),
// scheduling, and the TLS material etcd reads only when it starts (AnnotationTrustHash: the
// trusted CAs, the issuer of its certificate). Left out: the pod's labels and annotations (changed in place), the bootstrap
// flags --initial-cluster and --initial-cluster-state (read only when the data directory is
// empty, and different each time a pod is recreated) and init containers (the restore of a
// new cluster's first member, which runs once).
func SpecHash(pod *corev1.Pod) string {
	spec := pod.Spec.DeepCopy()
	spec.InitContainers = nil
	for i := range spec.Containers {
		var args []string
		for _, a := range spec.Containers[i].Args {
			if !strings.HasPrefix(a, "--initial-cluster=") && !strings.HasPrefix(a, "--initial-cluster-state=") {
				args = append(args, a)
			}
		}
		spec.Containers[i].Args = args
	}
	b, err := json.Marshal(spec)
	if err != nil {
		panic(fmt.Sprintf("a pod spec that does not marshal: %v", err)) // cannot happen: plain API types
	}
	if trust := pod.Annotations[AnnotationTrustHash]; trust != "" {
		b = append(b, "\ntrust:"+trust...)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

func memberImage(version string, m MemberConfig, images versions.Images) string {
	if m.Image != "" {
		return m.Image
	}
	return images.For(version)
}

// etcdContainer is the one container of a member pod.
func etcdContainer(c *etcdv1alpha1.EtcdCluster, spec etcdv1alpha1.EtcdClusterSpec, m MemberConfig, images versions.Images) corev1.Container {
	tls := cluster.For(c).TLS
	return corev1.Container{
		Name:            ContainerName,
		Image:           memberImage(spec.Version, m, images),
		Command:         []string{EtcdBinary},
		Args:            EtcdArgs(c, m),
		Ports:           containerPorts(),
		Env:             etcdctlEnv(tls),
		Resources:       *spec.Resources.DeepCopy(),
		VolumeMounts:    volumeMounts(tls),
		StartupProbe:    probe("/livez", 1, 300, 5),
		LivenessProbe:   probe("/livez", 10, 6, 5),
		ReadinessProbe:  probe("/readyz", 2, 5, 5),
		SecurityContext: containerSecurityContext(),
	}
}

// containerPorts are the client, peer and metrics ports etcd listens on.
func containerPorts() []corev1.ContainerPort {
	return []corev1.ContainerPort{
		{Name: ClientPortName, ContainerPort: cluster.ClientPort, Protocol: corev1.ProtocolTCP},
		{Name: PeerPortName, ContainerPort: cluster.PeerPort, Protocol: corev1.ProtocolTCP},
		{Name: MetricsPortName, ContainerPort: cluster.MetricsPort, Protocol: corev1.ProtocolTCP},
	}
}

// etcdctlEnv points etcdctl, run inside the container, at the local member, with the
// member certificate as its client certificate (it carries the clientAuth usage) and the
// CA that signed every member. It does not set ETCDCTL_API: etcdctl speaks v3 by default
// since 3.4, and etcdctl 3.6 and later warn about it as an unrecognized variable.
func etcdctlEnv(tls bool) []corev1.EnvVar {
	endpoint := fmt.Sprintf("http://localhost:%d", cluster.ClientPort)
	if !tls {
		return []corev1.EnvVar{{Name: "ETCDCTL_ENDPOINTS", Value: endpoint}}
	}
	return []corev1.EnvVar{
		{Name: "ETCDCTL_ENDPOINTS", Value: fmt.Sprintf("https://localhost:%d", cluster.ClientPort)},
		{Name: "ETCDCTL_CACERT", Value: TLSCAFile},
		{Name: "ETCDCTL_CERT", Value: TLSCertFile},
		{Name: "ETCDCTL_KEY", Value: TLSKeyFile},
	}
}

// probe is an HTTP probe of path on the plain-HTTP metrics port, so the kubelet needs no
// client certificate. /livez fails only when the local member is wedged, so a lost quorum
// does not restart every member; /readyz also fails while the member has no leader or is
// a learner, which keeps it out of the client Service. The startup and readiness probes ask
// often (every 1 and 2 s: a request to a local HTTP handler), because a member's start, and
// every step of a bootstrap, a rollout or an upgrade that waits for it, ends only when the
// kubelet has seen it. A member leaves the client Service after 10 s of failed /readyz; one
// that has not started after 300 s is restarted.
func probe(path string, period, failures, timeout int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path:   path,
			Port:   intstr.FromString(MetricsPortName),
			Scheme: corev1.URISchemeHTTP,
		}},
		PeriodSeconds:    period,
		FailureThreshold: failures,
		TimeoutSeconds:   timeout,
		SuccessThreshold: 1,
	}
}

// volumeMounts mounts the data volume and, with TLS, the member certificate read-only.
func volumeMounts(tls bool) []corev1.VolumeMount {
	mounts := []corev1.VolumeMount{{Name: DataVolume, MountPath: DataMountPath}}
	if tls {
		mounts = append(mounts, corev1.VolumeMount{Name: TLSVolume, MountPath: TLSMountPath, ReadOnly: true})
	}
	return mounts
}

// volumes are the member's data volume (its PVC, or an emptyDir capped at storage.size
// when the cluster is ephemeral) and, with TLS, the member certificate Secret.
func volumes(cl cluster.Names, spec etcdv1alpha1.EtcdClusterSpec, member string) []corev1.Volume {
	data := corev1.Volume{Name: DataVolume}
	if spec.Storage.Ephemeral {
		data.EmptyDir = &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(spec.Storage.Size.DeepCopy())}
	} else {
		data.PersistentVolumeClaim = &corev1.PersistentVolumeClaimVolumeSource{ClaimName: cl.PVCName(member)}
	}
	vols := []corev1.Volume{data}
	if cl.TLS {
		vols = append(vols, corev1.Volume{Name: TLSVolume, VolumeSource: corev1.VolumeSource{
			Secret: &corev1.SecretVolumeSource{SecretName: cl.MemberTLSSecret(), DefaultMode: ptr.To(tlsFileMode)},
		}})
	}
	return vols
}

// podSecurityContext runs etcd as an unprivileged user, with the volumes group-owned by
// it (fixed up only when the volume root does not match already, which keeps restarts
// on large volumes fast) and the runtime's default seccomp profile.
func podSecurityContext() *corev1.PodSecurityContext {
	return &corev1.PodSecurityContext{
		RunAsNonRoot:        ptr.To(true),
		RunAsUser:           ptr.To(RunAsID),
		RunAsGroup:          ptr.To(RunAsID),
		FSGroup:             ptr.To(RunAsID),
		FSGroupChangePolicy: ptr.To(corev1.FSGroupChangeOnRootMismatch),
		SeccompProfile:      &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
	}
}

// containerSecurityContext drops every capability and makes the root filesystem
// read-only: etcd writes only to its data volume.
func containerSecurityContext() *corev1.SecurityContext {
	return &corev1.SecurityContext{
		AllowPrivilegeEscalation: ptr.To(false),
		ReadOnlyRootFilesystem:   ptr.To(true),
		RunAsNonRoot:             ptr.To(true),
		Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
	}
}

// affinity is the user's affinity when set. Otherwise members prefer different nodes, so
// losing one node costs at most one member where the cluster has room; it is only
// preferred so that a cluster larger than the node count still schedules.
func affinity(user *corev1.Affinity, cl cluster.Names) *corev1.Affinity {
	if user != nil {
		return user.DeepCopy()
	}
	return &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{
		PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
			Weight: 100,
			PodAffinityTerm: corev1.PodAffinityTerm{
				LabelSelector: &metav1.LabelSelector{MatchLabels: cl.SelectorLabels()},
				TopologyKey:   corev1.LabelHostname,
			},
		}},
	}}
}

// DefaultSpread is where members go when the user sets no spread constraints:
//
//   - across nodes, required (DoNotSchedule, maxSkew 1): no node gets a second member while a
//     node the member may use has none, so with at least as many nodes as members no two
//     members share one, and a node lost costs one member. With fewer nodes, members share
//     them evenly instead of waiting: a one-node cluster still runs three members;
//   - across zones, preferred (ScheduleAnyway): nodes without a zone label stay usable;
//   - both count only nodes the member may use (its node selector and affinity) and that
//     take pods (nodeTaintsPolicy Honor): a cordoned, NotReady or tainted node is not a place
//     to balance against, or a lost node would keep the replacement of its member from
//     being placed anywhere.
func DefaultSpread(cl cluster.Names) []corev1.TopologySpreadConstraint {
	honor := corev1.NodeInclusionPolicyHonor
	spread := func(key string, when corev1.UnsatisfiableConstraintAction) corev1.TopologySpreadConstraint {
		return corev1.TopologySpreadConstraint{
			MaxSkew: 1, TopologyKey: key, WhenUnsatisfiable: when,
			LabelSelector:      &metav1.LabelSelector{MatchLabels: cl.SelectorLabels()},
			NodeAffinityPolicy: &honor, NodeTaintsPolicy: &honor,
		}
	}
	return []corev1.TopologySpreadConstraint{
		spread(corev1.LabelHostname, corev1.DoNotSchedule),
		spread(corev1.LabelTopologyZone, corev1.ScheduleAnyway),
	}
}

// copyTolerations returns a deep copy of the user's tolerations, or nil.
func copyTolerations(in []corev1.Toleration) []corev1.Toleration {
	if len(in) == 0 {
		return nil
	}
	out := make([]corev1.Toleration, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
	}
	return out
}

// spreadConstraints copies the user's topology spread constraints, giving those without
// a label selector the cluster's member selector: a constraint without one counts no
// pods and so spreads nothing. Without any, members get DefaultSpread.
func spreadConstraints(in []corev1.TopologySpreadConstraint, cl cluster.Names) []corev1.TopologySpreadConstraint {
	if len(in) == 0 {
		return DefaultSpread(cl)
	}
	out := make([]corev1.TopologySpreadConstraint, len(in))
	for i := range in {
		in[i].DeepCopyInto(&out[i])
		if out[i].LabelSelector == nil {
			out[i].LabelSelector = &metav1.LabelSelector{MatchLabels: cl.SelectorLabels()}
		}
	}
	return out
}

// InPlace returns the labels and annotations a live member pod should carry without a
// restart, given the pod the current spec gives it (desired): every label and annotation of
// desired is set, and the others the pod has are kept (the kubelet's, other tools'). Keys
// removed from spec.podTemplate stay on running pods until they restart. The spec hash is
// the exception, and the trust hash with it: they say which spec and TLS material the
// containers run, so they are only ever set on a pod that has no spec hash (made before the
// operator recorded it) and runs the desired release: such a pod is taken as current. changed is false when the pod already carries everything.
func InPlace(live, desired *corev1.Pod) (labels, annotations map[string]string, changed bool) {
	labels, annotations = copyMap(live.Labels), copyMap(live.Annotations)
	if labels == nil {
		labels = map[string]string{}
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	set := func(m map[string]string, k, v string) {
		if old, ok := m[k]; !ok || old != v {
			m[k] = v
			changed = true
		}
	}
	for k, v := range desired.Labels {
		if k == cluster.LabelVersion {
			continue // the release the containers run: it changes only with a restart
		}
		set(labels, k, v)
	}
	for k, v := range desired.Annotations {
		if k == AnnotationSpecHash || k == AnnotationTrustHash {
			if _, has := live.Annotations[AnnotationSpecHash]; !has && live.Labels[cluster.LabelVersion] == desired.Labels[cluster.LabelVersion] {
				set(annotations, k, v)
			}
			continue
		}
		set(annotations, k, v)
	}
	return labels, annotations, changed
}
