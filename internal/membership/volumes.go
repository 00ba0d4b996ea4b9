package membership

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/resource"

	etcdv1alpha1 "github.com/etcdpilot/etcdpilot/api/v1alpha1"
)

// Volume growth. spec.storage.size may grow; each member's claim is then expanded, one
// claim at a time and only while the cluster is otherwise steady (every member healthy and
// current): the request is raised, the storage provider grows the volume, and, when the
// file system can only grow while no pod uses it (FileSystemResizePending), the member is
// restarted through the rollout (rollout.go). When the claims' StorageClass does not allow
// expansion, nothing is changed and the cluster says so (Blocked, Degraded).

// Storage is what spec.storage asks of the members' claims.
type Storage struct {
	// Size is spec.storage.size; zero for an ephemeral cluster.
	Size resource.Quantity
	// Class is the StorageClass of the claims that must grow, and Expandable whether it
	// allows volume expansion: nil when no claim must grow (the class is not looked up
	// then), or when it is not known, and Unknown says why (the class was not found, could
	// not be read, or the claim names none).
	Class      string
	Expandable *bool
	Unknown    string
}

// Volume is a member claim's size and resize state.
type Volume struct {
	// Requested is the claim's storage request; Capacity is what the volume provides.
	Requested resource.Quantity
	Capacity  resource.Quantity
	// FileSystemResizePending: the volume grew but its file system grows only when the
	// pod restarts.
	FileSystemResizePending bool
}

// NeedsToGrow says whether a claim requests less than Storage.Size.
func (s Storage) NeedsToGrow(v Volume) bool {
	return !s.Size.IsZero() && !v.Requested.IsZero() && v.Requested.Cmp(s.Size) < 0
}

// growing: the claim asked for more than its volume provides yet.
func growing(v Volume) bool {
	return !v.Capacity.IsZero() && v.Capacity.Cmp(v.Requested) < 0
}

// growVolumes expands the next member claim that is smaller than spec.storage.size, once the
// previous expansion is complete.
func (o Observed) growVolumes() (Action, bool) {
	if o.Ephemeral || o.Storage.Size.IsZero() {
		return Action{}, false
	}
	var small []string
	done := 0
	for _, m := range o.Members {
		v := o.PVCs[m.Name].Volume
		switch {
		case growing(v) || v.FileSystemResizePending:
			return Action{Kind: Wait, Member: m.Name, Reason: etcdv1alpha1.ReasonExpandingVolumes,
				Message: fmt.Sprintf("growing member volumes to %s: waiting for the claim of member %s to grow from %s to %s",
					o.Storage.Size.String(), m.Name, v.Capacity.String(), v.Requested.String())}, true
		case o.Storage.NeedsToGrow(v):
			small = append(small, m.Name)
		default:
			done++
		}
	}
	if len(small) == 0 {
		return Action{}, false
	}
	sortByOrdinal(o.Cluster, small)
	if o.Storage.Expandable == nil || !*o.Storage.Expandable {
		why := fmt.Sprintf("their StorageClass %q does not allow volume expansion; set allowVolumeExpansion: true on the class if its provisioner can expand volumes", o.Storage.Class)
		if o.Storage.Expandable == nil {
			why = o.Storage.Unknown
		}
		return Action{Kind: Blocked, Member: small[0], Reason: etcdv1alpha1.ReasonVolumeExpansionNotSupported,
			Message: fmt.Sprintf("spec.storage.size is %s but %d member claims are smaller and cannot grow: %s; nothing was changed",
				o.Storage.Size.String(), len(small), why)}, true
	}
	return Action{Kind: ExpandVolume, Member: small[0], Reason: etcdv1alpha1.ReasonExpandingVolumes,
		Message: fmt.Sprintf("growing member volumes to %s: %d of %d claims done; expanding the claim of member %s",
			o.Storage.Size.String(), done, len(o.Members), small[0])}, true
}
