package versions_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
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

// Each minor release names its corruption checks its own way; a wrong name stops etcd.
func TestCorruptionCheckFlags(t *testing.T) {
	g := NewWithT(t)
	g.Expect(versions.CorruptionCheckFlags("3.5.35")).To(Equal([]string{"--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"}))
	for _, v := range []string{"3.6.15", "3.6.16", "3.7.2", "3.7.3"} {
		g.Expect(versions.CorruptionCheckFlags(v)).To(Equal([]string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}), v)
	}
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

func TestImagesFor(t *testing.T) {
	g := NewWithT(t)
	env := map[string]string{
		"RELATED_IMAGE_ETCD_V3_6_16": "mirror.example/etcd@sha256:abc",
		"RELATED_IMAGE_ETCD_V3_7_3":  "",
		"RELATED_IMAGE_ETCD_V9_9_9":  "mirror.example/etcd:v9.9.9",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }

	g.Expect(versions.RelatedImageEnv("3.6.16")).To(Equal("RELATED_IMAGE_ETCD_V3_6_16"))

	pinned := versions.ImagesFromEnv("", lookup)
	g.Expect(pinned.Pinned).To(Equal(map[string]string{"3.6.16": "mirror.example/etcd@sha256:abc"}),
		"only supported releases with a non-empty reference are pinned")
	g.Expect(pinned.For("3.6.16")).To(Equal("mirror.example/etcd@sha256:abc"))
	g.Expect(pinned.For("3.7.3")).To(Equal("gcr.io/etcd-development/etcd:v3.7.3"), "unpinned releases run the official image")

	override := versions.ImagesFromEnv("localhost:5000/etcd", lookup)
	g.Expect(override.For("3.6.16")).To(Equal("localhost:5000/etcd:v3.6.16"), "a repository override wins over pins")
}

// The operator's Deployment pins one image per supported release, so the bundle's
// relatedImages (which operator-sdk derives from those variables) list every operand image.
func TestManagerPinsEveryRelease(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "manager", "manager.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	pinned := map[string]string{}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var d appsv1.Deployment
		g.Expect(yaml.Unmarshal([]byte(doc), &d)).To(Succeed())
		if d.Kind != "Deployment" {
			continue
		}
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if strings.HasPrefix(e.Name, "RELATED_IMAGE_ETCD_") {
				pinned[e.Name] = e.Value
			}
		}
	}
	want := map[string]string{}
	for _, v := range versions.Supported {
		want[versions.RelatedImageEnv(v)] = versions.Image(versions.DefaultRepository, v)
	}
	g.Expect(pinned).To(Equal(want))
}

func TestCheckUpgrade(t *testing.T) {
	g := NewWithT(t)
	for _, ok := range [][2]string{{"3.6.16", "3.6.16"}, {"3.6.15", "3.6.16"}, {"3.6.16", "3.6.15"}, {"3.5.35", "3.6.16"}, {"3.6.16", "3.7.3"}, {"3.6.15", "3.7.2"}, {"3.5.20", "3.6.0"}} {
		g.Expect(versions.CheckUpgrade(ok[0], ok[1])).To(Succeed(), "%s -> %s", ok[0], ok[1])
	}
	for _, bad := range []struct{ from, to, why string }{
		{"3.5.35", "3.7.3", "skips 3.6"},
		{"3.7.3", "3.6.16", "downgrade"},
		{"3.5.19", "3.6.16", "needs 3.5.20 or later first"},
		{"3.7.3", "4.0.0", "major"},
		{"v3.6.16", "3.7.3", "not a release version"},
		{"3.6", "3.7.3", "not a release version"},
	} {
		g.Expect(versions.CheckUpgrade(bad.from, bad.to)).To(MatchError(ContainSubstring(bad.why)), "%s -> %s", bad.from, bad.to)
	}
	g.Expect(versions.Upgrades()).To(Equal([][2]string{
		{"3.5.35", "3.6.15"}, {"3.5.35", "3.6.16"},
		{"3.6.15", "3.6.16"}, {"3.6.15", "3.7.2"}, {"3.6.15", "3.7.3"},
		{"3.6.16", "3.6.15"}, {"3.6.16", "3.7.2"}, {"3.6.16", "3.7.3"},
		{"3.7.2", "3.7.3"},
		{"3.7.3", "3.7.2"},
	}), "every patch of a minor to every other, and to every patch of the next minor")
}

// The CRD's upgrade rule (a CEL rule at the root, which can see the old spec and the
// status) lists the pairs of versions.Upgrades, in both of its checks.
func TestCRDUpgradeRuleAgreesWithTable(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "config", "crd", "bases", "etcd.etcdpilot.io_etcdclusters.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	var crd apiextensionsv1.CustomResourceDefinition
	g.Expect(yaml.Unmarshal(raw, &crd)).To(Succeed())
	var pairs []string
	for _, p := range versions.Upgrades() {
		pairs = append(pairs, "['"+p[0]+"','"+p[1]+"']")
	}
	literal := "[" + strings.Join(pairs, ",") + "]"
	var rule string
	for _, r := range crd.Spec.Versions[0].Schema.OpenAPIV3Schema.XValidations {
		if strings.Contains(r.Rule, "oldSelf.spec.version") {
			rule = r.Rule
		}
	}
	g.Expect(rule).NotTo(BeEmpty(), "the CRD has an upgrade rule")
	g.Expect(strings.Count(rule, literal)).To(Equal(2), "rule %s lists the pairs %s twice", rule, literal)
	g.Expect(strings.Count(rule, ".exists(p,")).To(Equal(2), "and no other list")
}

func TestNeedsFreshRaftSnapshots(t *testing.T) {
	g := NewWithT(t)
	g.Expect(versions.NeedsFreshRaftSnapshots("3.6.16", "3.7.3")).To(BeTrue())
	g.Expect(versions.NeedsFreshRaftSnapshots("3.5.35", "3.6.16")).To(BeFalse())
	g.Expect(versions.NeedsFreshRaftSnapshots("3.7.2", "3.7.3")).To(BeFalse())
	g.Expect(versions.NeedsFreshRaftSnapshots("x", "3.7.3")).To(BeFalse())
}
