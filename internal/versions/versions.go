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
