package versions_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/etcdpilot/etcdpilot/internal/versions"
)

func TestImage(t *testing.T) {
	g := NewWithT(t)
	g.Expect(versions.Image("gcr.io/etcd-development/etcd", "3.6.16")).To(Equal("gcr.io/etcd-development/etcd:v3.6.16"))
	g.Expect(versions.Image("localhost:5000/etcd/", "3.5.35")).To(Equal("localhost:5000/etcd:v3.5.35"))
	g.Expect(versions.Default()).To(Equal("3.7.3"))
	g.Expect(versions.IsSupported("3.4.0")).To(BeFalse())
}

func TestPeerSkipClientSANVerificationFlag(t *testing.T) {
	g := NewWithT(t)
	g.Expect(versions.PeerSkipClientSANVerificationFlag("3.5.35")).To(Equal("experimental-peer-skip-client-san-verification"))
	g.Expect(versions.PeerSkipClientSANVerificationFlag("3.6.16")).To(Equal("peer-skip-client-san-verification"))
	g.Expect(versions.PeerSkipClientSANVerificationFlag("3.7.3")).To(Equal("peer-skip-client-san-verification"))
}

// The CRD refuses unsupported versions through an enum on spec.version, and defaults to the
// newest; both must agree with the table.
func TestCRDAgreesWithTable(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "etcd.etcdpilot.io_etcdclusters.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	version := crd.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"].Properties["version"]

	var enum []string
	for _, e := range version.Enum {
		enum = append(enum, strings.Trim(string(e.Raw), `"`))
	}
	g.Expect(enum).To(Equal(versions.Supported))
	g.Expect(string(version.Default.Raw)).To(Equal(`"` + versions.Default() + `"`))
}

// `make etcd-images` builds one operand image per pinned module hack/tools/etcd-vX.Y.
func TestOperandModulesAgreeWithTable(t *testing.T) {
	g := NewWithT(t)
	mods, err := filepath.Glob(filepath.Join("..", "..", "hack", "tools", "etcd-v*", "go.mod"))
	g.Expect(err).NotTo(HaveOccurred())
	var pinned []string
	for _, m := range mods {
		raw, err := os.ReadFile(m)
		g.Expect(err).NotTo(HaveOccurred())
		for _, line := range strings.Split(string(raw), "\n") {
			f := strings.Fields(line)
			if len(f) == 2 && f[0] == "go.etcd.io/etcd/server/v3" {
				pinned = append(pinned, strings.TrimPrefix(f[1], "v"))
			}
		}
	}
	sort.Strings(pinned)
	g.Expect(pinned).To(Equal(versions.Supported))
}
