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

// Image returns the image of etcd release v in repository repo. Official etcd images are
// tagged with a leading "v" (gcr.io/etcd-development/etcd:v3.6.16).
func Image(repo, v string) string {
	return fmt.Sprintf("%s:v%s", strings.TrimSuffix(repo, "/"), v)
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
