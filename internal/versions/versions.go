// Package versions is the one table of etcd releases the operator supports, and the images
// they come from.
package versions

import (
	"fmt"
	"strings"
)

// Supported are the etcd releases this operator runs, oldest first: several patch releases of
// a minor may be listed. This table is the one source: `make generate` (hack/versions) writes
// the CRD's enum, default and upgrade rule for spec.version and the pinned operand images
// (relatedImages) from it; the operand images built by `make etcd-images` come from one
// pinned module per release under hack/tools (a test checks they agree). A release, once
// supported, stays supported for the clusters that run it: remove one only with a migration.
var Supported = []string{"3.5.35", "3.6.15", "3.6.16", "3.7.2", "3.7.3"}

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

// CorruptionCheckFlags turn on etcd's two cheap corruption checks: before serving, a member
// compares the hash of its data with its peers' and refuses to start when they differ at the
// same compaction (the initial check); and the leader compares the hashes of every member at
// each compaction, raising the CORRUPT alarm when one differs (the compact hash check). Both
// were experimental flags in 3.5; 3.6 made them feature gates, and 3.7 dropped the flags.
func CorruptionCheckFlags(v string) []string {
	if strings.HasPrefix(v, "3.5.") {
		return []string{"--experimental-initial-corrupt-check=true", "--experimental-compact-hash-check-enabled=true"}
	}
	return []string{"--feature-gates=InitialCorruptCheck=true,CompactHashCheck=true"}
}

// minPatchForNextMinor is the lowest patch release of a minor from which etcd supports
// upgrading to the next minor: 3.6 needs 3.5.20 or later (earlier 3.5 releases can leave
// members that 3.6 refuses to join).
var minPatchForNextMinor = map[string]int{"3.5": 20}

// CheckUpgrade says whether a member running release from may be restarted at release to
// in one step: any other patch release of the same minor, newer or older (patch releases of a
// minor share their data format, so moving between them is a rollout), or the next minor
// (from a patch release that allows it). Anything else, a skipped minor or an older minor,
// is refused with the reason. Equal versions are no change and fine.
func CheckUpgrade(from, to string) error {
	f, err := parse(from)
	if err != nil {
		return err
	}
	t, err := parse(to)
	if err != nil {
		return err
	}
	switch {
	case f == t:
		return nil
	case t.major != f.major:
		return fmt.Errorf("%s -> %s changes the major version", from, to)
	case t.minor == f.minor:
		return nil
	case t.minor < f.minor:
		return fmt.Errorf("%s -> %s is a downgrade to an older minor, which this operator does not do", from, to)
	case t.minor > f.minor+1:
		return fmt.Errorf("%s -> %s skips %d.%d: upgrade one minor release at a time", from, to, f.major, f.minor+1)
	}
	if min, ok := minPatchForNextMinor[fmt.Sprintf("%d.%d", f.major, f.minor)]; ok && f.patch < min {
		return fmt.Errorf("%s -> %s needs %d.%d.%d or later first", from, to, f.major, f.minor, min)
	}
	return nil
}

// Upgrades are the (from, to) pairs of supported releases that CheckUpgrade allows, oldest
// first: the upgrade path spec.version may take. The CRD's upgrade rule lists the same pairs.
func Upgrades() [][2]string {
	var out [][2]string
	for _, from := range Supported {
		for _, to := range Supported {
			if from != to && CheckUpgrade(from, to) == nil {
				out = append(out, [2]string{from, to})
			}
		}
	}
	return out
}

type release struct{ major, minor, patch int }

func parse(v string) (release, error) {
	var r release
	if n, err := fmt.Sscanf(v, "%d.%d.%d", &r.major, &r.minor, &r.patch); err != nil || n != 3 || fmt.Sprintf("%d.%d.%d", r.major, r.minor, r.patch) != v {
		return release{}, fmt.Errorf("%q is not a release version (major.minor.patch)", v)
	}
	return r, nil
}

// NeedsFreshRaftSnapshots reports whether every member must have taken a raft snapshot
// since its last entry written by an older release before a member runs release to: etcd
// 3.7 no longer reads the v2-format entries etcd 3.5 wrote, and a 3.7 member replaying such
// an entry from its log panics. Going from before 3.7 to 3.7 or later needs it.
func NeedsFreshRaftSnapshots(from, to string) bool {
	f, err := parse(from)
	if err != nil {
		return false
	}
	t, err := parse(to)
	if err != nil {
		return false
	}
	return t.major == 3 && t.minor >= 7 && f.major == 3 && f.minor < 7
}
