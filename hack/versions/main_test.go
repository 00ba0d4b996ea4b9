package main

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/etcdpilot/etcdpilot/internal/versions"
)

const staleTypes = `type EtcdClusterSpec struct {
	// +kubebuilder:default="3.1.0"
	// +kubebuilder:validation:Enum="3.0.0";"3.1.0"
	// +optional
	// +operator-sdk:csv:customresourcedefinitions:type=spec,displayName="etcd Version",xDescriptors={"old"}
	Version string
}

// +kubebuilder:validation:XValidation:rule="self.spec.version == oldSelf.spec.version || old",messageExpression="'old'"
type EtcdCluster struct{}
`

func TestRewriteTypesWritesTheTable(t *testing.T) {
	g := NewWithT(t)
	out, err := rewriteTypes(staleTypes)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(ContainSubstring(`// +kubebuilder:default="` + versions.Default() + `"`))
	g.Expect(out).To(ContainSubstring(`// +kubebuilder:validation:Enum="` + strings.Join(versions.Supported, `";"`) + `"`))
	for _, v := range versions.Supported {
		g.Expect(out).To(ContainSubstring(`select:` + v + `"`))
	}
	g.Expect(out).To(ContainSubstring("['3.7.3','3.7.2']"), "patch releases in both directions")
	g.Expect(out).To(ContainSubstring("(3.5 -> 3.6 -> 3.7)"))
	g.Expect(out).NotTo(ContainSubstring("3.0.0"))

	again, err := rewriteTypes(out)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(out), "idempotent")
}

func TestRewriteFailsWithoutItsMarkers(t *testing.T) {
	g := NewWithT(t)
	_, err := rewriteTypes(strings.Replace(staleTypes, "+kubebuilder:validation:Enum", "+enum", 1))
	g.Expect(err).To(MatchError(ContainSubstring("expected one line matching")))
	_, err = rewriteManager("env: []\n")
	g.Expect(err).To(MatchError(ContainSubstring("no RELATED_IMAGE_ETCD_")))
}

func TestRewriteManagerPinsEveryRelease(t *testing.T) {
	g := NewWithT(t)
	in := "        env:\n        - name: A\n          value: b\n        - name: RELATED_IMAGE_ETCD_V3_0_0\n          value: x:v3.0.0\n        - name: Z\n          value: \"\"\n"
	out, err := rewriteManager(in)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).NotTo(ContainSubstring("V3_0_0"))
	g.Expect(out).To(ContainSubstring("        - name: RELATED_IMAGE_ETCD_V3_6_15\n          value: gcr.io/etcd-development/etcd:v3.6.15\n"))
	g.Expect(out).To(HavePrefix("        env:\n        - name: A\n"))
	g.Expect(out).To(HaveSuffix("        - name: Z\n          value: \"\"\n"))
}
