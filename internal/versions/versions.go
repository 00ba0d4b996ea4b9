// Package versions is the one table of etcd releases the operator supports, and the images
// they come from.
package versions

import (
	"fmt"
	"strings"
)

// Supported are the etcd releases this operator runs, oldest first. The CRD's enum for
// spec.version and the operand images built by `make etcd-images` (hack/tools/etcd-v*) must
// list the same releases; a test checks both.
var Supported = []string{"3.5.35", "3.6.16", "3.7.3"}

// Default is the version of a cluster whose spec does not name one: the newest supported.
func Default() string { return Supported[len(Supported)-1] }

// IsSupported reports whether v is one of the supported releases.
func IsSupported(v string) bool {
	for _, s := range Supported {
		if s == v {
			return true
		}
	}
	return false
}

// DefaultRepository is where a real user's etcd members come from: the official etcd
// release images.
const DefaultRepository = "gcr.io/etcd-development/etcd"

// Image returns the image of etcd release v in repository repo. Official etcd images are
// tagged with a leading "v" (gcr.io/etcd-development/etcd:v3.6.16).
func Image(repo, v string) string {
	return fmt.Sprintf("%s:v%s", strings.TrimSuffix(repo, "/"), v)
}

// RelatedImageEnv is the environment variable that pins the image of etcd release v
// (RELATED_IMAGE_ETCD_V3_6_16 for 3.6.16). The bundle's Deployment sets one per supported
// release, so OLM lists them as relatedImages and mirroring tools for disconnected clusters
// rewrite them to their mirror.
func RelatedImageEnv(v string) string {
	return "RELATED_IMAGE_ETCD_V" + strings.ReplaceAll(v, ".", "_")
}

// Images says which image runs each etcd release.
type Images struct {
	// Repository, when set, overrides everything else: release v runs Repository:v<v>.
	Repository string
	// Pinned maps a release to its full image reference (from RelatedImageEnv).
	Pinned map[string]string
}

// ImagesFromEnv reads the repository override and the pinned image of every supported
// release through lookup (os.LookupEnv in the operator).
func ImagesFromEnv(repository string, lookup func(string) (string, bool)) Images {
	images := Images{Repository: repository, Pinned: map[string]string{}}
	for _, v := range Supported {
		if ref, ok := lookup(RelatedImageEnv(v)); ok && ref != "" {
			images.Pinned[v] = ref
		}
	}
	return images
}

// For returns the image of release v: Repository:v<v> when a repository override is set,
// otherwise the pinned reference, otherwise the official image.
func (i Images) For(v string) string {
	if i.Repository != "" {
		return Image(i.Repository, v)
	}
	if ref, ok := i.Pinned[v]; ok {
		return ref
	}
	return Image(DefaultRepository, v)
}

// PeerSkipClientSANVerificationFlag is the name of the flag that stops a member from
// checking a peer certificate's names against the address the peer connects from: it was
// experimental (and so prefixed) in 3.5 and became a stable flag in 3.6.
func PeerSkipClientSANVerificationFlag(v string) string {
	if strings.HasPrefix(v, "3.5.") {
		return "experimental-peer-skip-client-san-verification"
	}
	return "peer-skip-client-san-verification"
}
