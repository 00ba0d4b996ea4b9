package resources_test

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
	"github.com/etcdpilot/etcdpilot/internal/resources"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ with the current output")

func TestEtcdArgsGolden(t *testing.T) {
	tuned := plainCluster()
	tuned.Spec.Etcd = etcdv1alpha1.EtcdOptions{
		AutoCompactionMode:      etcdv1alpha1.AutoCompactionRevision,
		AutoCompactionRetention: "50000",
		QuotaBackendBytes:       ptr.To(resource.MustParse("6Gi")),
		SnapshotCount:           25000,
		HeartbeatIntervalMillis: 250,
		ElectionTimeoutMillis:   2500,
	}

	for _, tc := range []struct {
		golden string
		c      *etcdv1alpha1.EtcdCluster
		m      resources.MemberConfig
	}{
		{
			golden: "tls-new-member-0",
			c:      newCluster(),
			m:      resources.MemberConfig{Name: "main-0", InitialCluster: initialCluster(newCluster(), 3), InitialClusterState: "new"},
		},
		{
			golden: "tls-join-existing",
			c:      newCluster(),
			m:      resources.MemberConfig{Name: "main-2", InitialCluster: initialCluster(newCluster(), 3), InitialClusterState: "existing"},
		},
		{
			golden: "plaintext-tuned",
			c:      tuned,
			m:      resources.MemberConfig{Name: "main-0", InitialCluster: initialCluster(tuned, 1), InitialClusterState: "new"},
		},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			g := NewWithT(t)
			got := strings.Join(resources.EtcdArgs(tc.c, tc.m), "\n") + "\n"
			path := filepath.Join("testdata", tc.golden+".golden")
			if *update {
				g.Expect(os.WriteFile(path, []byte(got), 0o644)).To(Succeed())
			}
			want, err := os.ReadFile(path)
			g.Expect(err).NotTo(HaveOccurred(), "run `go test ./internal/resources -update` to create it")
			g.Expect(got).To(Equal(string(want)))
		})
	}
}

func TestEtcdArgsHaveNoTLSFlagsWhenDisabled(t *testing.T) {
	g := NewWithT(t)
	c := plainCluster()
	args := resources.EtcdArgs(c, resources.MemberConfig{Name: "main-0", InitialCluster: initialCluster(c, 1), InitialClusterState: "new"})
	for _, a := range args {
		g.Expect(a).NotTo(ContainSubstring("https"))
		g.Expect(a).NotTo(ContainSubstring("cert"))
	}
}

func TestEtcdArgsUseOneFlagPerElement(t *testing.T) {
	g := NewWithT(t)
	c := newCluster()
	args := resources.EtcdArgs(c, resources.MemberConfig{Name: "main-0", InitialCluster: initialCluster(c, 3), InitialClusterState: "new"})
	seen := map[string]bool{}
	for _, a := range args {
		g.Expect(a).To(MatchRegexp(`^--[a-z-]+=\S+$`))
		name, _, _ := strings.Cut(a, "=")
		g.Expect(seen).NotTo(HaveKey(name), "flag %s given twice", name)
		seen[name] = true
	}
}
