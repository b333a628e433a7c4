package driver

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"slices"

	"github.com/csikit/csikit/idempotency"
)

// A create-by-name call that arrives again for a name the backend already has must answer OK with
// the existing resource when that resource is compatible with the new request, and ALREADY_EXISTS
// otherwise. "Compatible" is not "equal": the spec lets a retry carry a wider capacity range, or a
// topology requirement the existing volume satisfies, and still get the volume back. So the test
// has two halves:
//
//   - Fingerprint covers what must be identical (parameters, mutable parameters, source, and the
//     kinds of access: block, or mount with a filesystem type). The backend stores it with the
//     resource.
//   - CheckExisting compares the stored fingerprint and then the resource as it is against the
//     parts of the request that are ranges or sets (capacity, topology).

// createVolumeFingerprintDomain versions the CreateVolume fingerprint, which combines the generic
// message fingerprint of Raw with the capability kinds read from Raw's volume_capabilities (a
// set: their order, access modes and mount flags do not count); change it when either part
// changes.
const createVolumeFingerprintDomain = "csikit.driver.create-volume.v1\x00"

// Fingerprint is a stable digest of what must be the same when a volume is created again under
// the same name: parameters, mutable parameters, content source, and the set of access kinds
// (block, or mount with its filesystem type). It leaves out the capacity range and the topology
// requirement, which CheckExisting compares against the volume itself, as well as access modes
// and mount flags (a retry may ask for them differently; the backend decides at publish time) and
// secrets (rotating a secret does not make a retry a conflict).
//
// Store it with the volume and pass it to CheckExisting when the name comes again. It is computed
// from Raw alone, which the plugin always sets; a hand-built request in a test must set it too.
func (r *CreateVolumeRequest) Fingerprint() string {
	base := idempotency.Fingerprint(r.Raw, "name", "capacity_range", "accessibility_requirements", "volume_capabilities", "secrets")
	caps := r.Raw.GetVolumeCapabilities()
	kinds := make([]string, 0, len(caps))
	for _, c := range caps {
		// As Capabilities holds it: block when the block access type is set, else mount (with
		// its filesystem type, "" when none is named).
		k := "block"
		if c.GetBlock() == nil {
			k = "mount\x00" + c.GetMount().GetFsType()
		}
		if !slices.Contains(kinds, k) {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	h := sha256.New()
	h.Write([]byte(createVolumeFingerprintDomain))
	h.Write([]byte(base))
	for _, k := range kinds {
		h.Write([]byte{0})
		h.Write([]byte(k))
	}
	return base64.RawURLEncoding.EncodeToString(h.Sum(nil)[:16])
}

// CheckExisting decides a repeated CreateVolume: existing is the volume the backend already has
// under r.Name, and fingerprint is what r.Fingerprint() returned when it was created. It returns
// nil when the volume can be returned as the answer (the spec's "compatible": same parameters and
// source, its size within the requested range, accessible from the required topology), and an
// error wrapping ErrAlreadyExists that names the difference otherwise.
//
// Whether the volume supports the requested access modes is the backend's own knowledge; check it
// beside this call when modes matter.
func (r *CreateVolumeRequest) CheckExisting(fingerprint string, existing *Volume) error {
	if existing == nil {
		return nil
	}
	if fingerprint != r.Fingerprint() {
		return fmt.Errorf("volume %q (%s) was created with other parameters, mutable parameters, content source or access kinds: %w",
			r.Name, existing.ID, ErrAlreadyExists)
	}
	if existing.CapacityBytes != 0 && !r.Capacity.Contains(existing.CapacityBytes) {
		return fmt.Errorf("volume %q (%s) has %d bytes, outside the requested range %s: %w",
			r.Name, existing.ID, existing.CapacityBytes, r.Capacity, ErrAlreadyExists)
	}
	if !r.Topology.SatisfiedBy(existing.AccessibleTopology) {
		return fmt.Errorf("volume %q (%s) is accessible from %v, none of the required topologies: %w",
			r.Name, existing.ID, existing.AccessibleTopology, ErrAlreadyExists)
	}
	return nil
}

// Fingerprint is a stable digest of what must be the same when a snapshot is created again under
// the same name: the source volume and the parameters (never secrets, never the topology
// requirement, which CheckExisting compares against the snapshot). Store it with the snapshot.
func (r *CreateSnapshotRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.Raw, "name", "accessibility_requirements", "secrets")
}

// CheckExisting decides a repeated CreateSnapshot, as CreateVolumeRequest.CheckExisting does for
// volumes: nil when the existing snapshot can be returned, an error wrapping ErrAlreadyExists
// naming the difference otherwise.
func (r *CreateSnapshotRequest) CheckExisting(fingerprint string, existing *Snapshot) error {
	if existing == nil {
		return nil
	}
	if fingerprint != r.Fingerprint() {
		return fmt.Errorf("snapshot %q (%s) was created from another source volume or with other parameters: %w",
			r.Name, existing.ID, ErrAlreadyExists)
	}
	if !r.Topology.SatisfiedBy(existing.AccessibleTopology) {
		return fmt.Errorf("snapshot %q (%s) is accessible from %v, none of the required topologies: %w",
			r.Name, existing.ID, existing.AccessibleTopology, ErrAlreadyExists)
	}
	return nil
}

// Fingerprint is a stable digest of what must be the same when a group snapshot is created again
// under the same name: the set of source volumes (in any order) and the parameters, never secrets.
// Store it with the group; an equal fingerprint on a repeated name means "return the existing
// group", a different one ErrAlreadyExists (see CheckExisting).
func (r *CreateVolumeGroupSnapshotRequest) Fingerprint() string {
	return idempotency.Fingerprint(r.Raw, "name", "secrets")
}

// CheckExisting decides a repeated CreateVolumeGroupSnapshot: nil when the stored fingerprint
// matches, an error wrapping ErrAlreadyExists otherwise.
func (r *CreateVolumeGroupSnapshotRequest) CheckExisting(fingerprint string, existing *GroupSnapshot) error {
	if existing == nil || fingerprint == r.Fingerprint() {
		return nil
	}
	return fmt.Errorf("group snapshot %q (%s) was created from other volumes or with other parameters: %w",
		r.Name, existing.ID, ErrAlreadyExists)
}

// SatisfiedBy reports whether a resource accessible from the given topologies meets the
// requirement: with requisite topologies, at least one of the resource's segments must hold in one
// of them (every key of the segment present there with the same value); preferred topologies are
// wishes and never fail it. A nil or empty requirement, or a resource that reports no topology
// (accessible everywhere), always satisfies it.
func (t *TopologyRequirement) SatisfiedBy(accessible []Topology) bool {
	if t == nil || len(t.Requisite) == 0 || len(accessible) == 0 {
		return true
	}
	for _, seg := range accessible {
		for _, req := range t.Requisite {
			if seg.Within(req) {
				return true
			}
		}
	}
	return false
}

// Within reports whether every key of t is present in other with the same value: a resource
// accessible from t is then accessible from a node in other.
func (t Topology) Within(other Topology) bool {
	for k, v := range t {
		if ov, ok := other[k]; !ok || ov != v {
			return false
		}
	}
	return true
}
