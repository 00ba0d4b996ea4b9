package controllers_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// grantedRights is every right the operator's role grants, as "group/resource: verbs". A
// right added to a marker fails this test until it is added here too, next to the reason the
// marker's comment gives: the role only grows on purpose.
var grantedRights = map[string]string{
	// The dashboard ConfigMap of spec.monitoring: read by name (never listed or cached),
	// created, replaced, deleted when monitoring is disabled.
	"/configmaps": "create delete get update",
	// The zone label of the nodes members run on: read by name, once per node every 10 minutes.
	"/nodes":                        "get",
	"/persistentvolumeclaims":       "create delete get list patch watch",
	"/pods":                         "create delete get list patch watch",
	"/pods/exec":                    "create",
	"/secrets":                      "create get list update watch",
	"/services":                     "create get list patch watch",
	"batch/jobs":                    "create delete get list watch",
	"cert-manager.io/certificates":  "create get list patch watch",
	"etcd.etcdpilot.io/etcdbackups": "create delete get list update watch",
	"etcd.etcdpilot.io/etcdbackups/finalizers":     "update",
	"etcd.etcdpilot.io/etcdbackups/status":         "get patch update",
	"etcd.etcdpilot.io/etcdbackupschedules":        "get list watch",
	"etcd.etcdpilot.io/etcdbackupschedules/status": "get patch update",
	"etcd.etcdpilot.io/etcdclusters":               "get list patch update watch",
	// EtcdTenants: the finalizer added and removed; status patched.
	"etcd.etcdpilot.io/etcdtenants":             "get list update watch",
	"etcd.etcdpilot.io/etcdtenants/finalizers":  "update",
	"etcd.etcdpilot.io/etcdtenants/status":      "get patch update",
	"etcd.etcdpilot.io/etcdclusters/finalizers": "update",
	"etcd.etcdpilot.io/etcdclusters/status":     "get patch update",
	"events.k8s.io/events":                      "create patch",
	// The members' budget: deleted while the cluster hibernates.
	"policy/poddisruptionbudgets": "create delete get list patch watch",
	// The members' NetworkPolicy: cached by label, kept, deleted when disabled.
	"networking.k8s.io/networkpolicies": "create delete get list patch watch",
	"storage.k8s.io/storageclasses":     "get",
	// The PodMonitor and PrometheusRule of spec.monitoring, as the ConfigMap above.
	"monitoring.coreos.com/podmonitors":     "create delete get update",
	"monitoring.coreos.com/prometheusrules": "create delete get update",
}

// The generated role (config/rbac/role.yaml, from the markers) grants exactly grantedRights,
// with no wildcard and no resource names left open.
func TestTheRoleGrantsOnlyWhatTheOperatorUses(t *testing.T) {
	g := NewWithT(t)
	b, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var role rbacv1.ClusterRole
	g.Expect(yaml.Unmarshal(b, &role)).To(Succeed())
	got := map[string][]string{}
	for _, rule := range role.Rules {
		g.Expect(rule.NonResourceURLs).To(BeEmpty())
		for _, group := range rule.APIGroups {
			for _, res := range rule.Resources {
				for _, verb := range rule.Verbs {
					g.Expect([]string{group, res, verb}).NotTo(ContainElement("*"), "no wildcard in the role")
					got[group+"/"+res] = append(got[group+"/"+res], verb)
				}
			}
		}
	}
	rights := map[string]string{}
	for k, verbs := range got {
		sort.Strings(verbs)
		rights[k] = strings.Join(verbs, " ")
	}
	g.Expect(rights).To(Equal(grantedRights))
}
