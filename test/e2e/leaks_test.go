package e2e

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"strings"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/cluster"
)

// expectNoSecretsShown searches what users and log collectors see of namespace ns (its
// events, its EtcdClusters, EtcdBackups and schedules whole, the logs of its pods) and the
// operator's log for the private keys and credentials that the Secrets of ns hold. Every
// namespace of the suite runs it before it is deleted, so every spec's clusters, backups,
// restores, rotations and failures are covered.
func expectNoSecretsShown(ctx context.Context, ns string) {
	secrets, err := clientset.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	needles := secretNeedles(secrets.Items)
	if len(needles) == 0 {
		return
	}
	shown := map[string]string{} // where -> what is shown there
	events, err := clientset.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	ExpectWithOffset(1, err).NotTo(HaveOccurred())
	for _, e := range events.Items {
		shown["event "+e.Name] = e.Note + " " + e.Reason
	}
	for _, list := range []client.ObjectList{&etcdv1alpha1.EtcdClusterList{}, &etcdv1alpha1.EtcdBackupList{}, &etcdv1alpha1.EtcdBackupScheduleList{}, &etcdv1alpha1.EtcdTenantList{}} {
		if err := k8sClient.List(ctx, list, client.InNamespace(ns)); meta.IsNoMatchError(err) {
			continue // an OLM spec that failed before its CRDs were installed
		} else {
			ExpectWithOffset(1, err).NotTo(HaveOccurred())
		}
		raw, err := json.Marshal(list)
		ExpectWithOffset(1, err).NotTo(HaveOccurred())
		shown[fmt.Sprintf("%T", list)] = string(raw)
	}
	addLogs(ctx, shown, ns, metav1.ListOptions{})
	addLogs(ctx, shown, metav1.NamespaceAll, metav1.ListOptions{LabelSelector: "control-plane=controller-manager"})
	for where, text := range shown {
		ExpectWithOffset(1, text).NotTo(ContainSubstring("PRIVATE KEY"), "%s shows a private key", where)
		for secret, needle := range needles {
			ExpectWithOffset(1, strings.Contains(text, needle)).To(BeFalse(), "%s shows %s", where, secret)
		}
	}
}

// secretNeedles are the strings that would show a Secret's content: for a PEM private key,
// the first line of its body as the PEM text holds it; for any other value that is not a
// certificate, the value itself when it is long enough to be a credential. A tenant's
// Secret also holds its endpoints and prefix, which its spec and status show anyway.
func secretNeedles(secrets []corev1.Secret) map[string]string {
	out := map[string]string{}
	for _, s := range secrets {
		for key, value := range s.Data {
			where := s.Name + "/" + key
			if s.Labels[cluster.LabelComponent] == "tenant" && (key == "endpoints" || key == "prefix") {
				continue
			}
			if !strings.Contains(string(value), "-----BEGIN") {
				if len(value) >= 12 {
					out[where] = string(value)
				}
				continue
			}
			for rest := value; ; {
				var block *pem.Block
				if block, rest = pem.Decode(rest); block == nil {
					break
				}
				if strings.Contains(block.Type, "PRIVATE KEY") {
					body := string(pem.EncodeToMemory(block))
					out[where] = strings.Split(body, "\n")[1]
				}
			}
		}
	}
	return out
}

// addLogs adds the logs of every container, init containers included, of the pods that
// opts selects in ns.
func addLogs(ctx context.Context, shown map[string]string, ns string, opts metav1.ListOptions) {
	pods, err := clientset.CoreV1().Pods(ns).List(ctx, opts)
	ExpectWithOffset(2, err).NotTo(HaveOccurred())
	for _, p := range pods.Items {
		for _, c := range append(p.Spec.InitContainers, p.Spec.Containers...) {
			// A container that has not started has no log yet: nothing is shown.
			logs, err := clientset.CoreV1().Pods(p.Namespace).GetLogs(p.Name, &corev1.PodLogOptions{Container: c.Name}).DoRaw(ctx)
			if err == nil {
				shown["log of "+p.Namespace+"/"+p.Name+"/"+c.Name] = string(logs)
			}
		}
	}
}
