// Package memdriver holds complete backends that keep everything in memory, one per contract:
// Driver serves CSI (volumes, snapshots, group snapshots, publications, staging, block
// allocation) and the volume-group contract (driver/volumegroup), Buckets serves COSI
// (driver/bucket). They are real implementations of every interface of their contracts (not
// stubs), used by csikit's own tests to drive the whole pipeline end to end. Node publish creates
// and removes the target directory (or file, for block access) but mounts nothing, so it runs
// unprivileged.
//
// Read them as the smallest correct backends, the way gocloud's memblob shows what a blob driver
// owes: each method is the contract of its interface, kept in a few lines (idempotent create by
// name with the request's CheckExisting, "not found" on delete left to the plugin,
// driver.ErrAlreadyExists for a conflicting stage or publish at the same path). Use them as the
// backends of tests that need a plugin without storage. Everything is lost when the process
// exits, so they are no drivers to deploy.
package memdriver

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"os"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/csikit/csikit/driver"
)

// BlockSize is the allocation unit of the simulated block map.
const BlockSize = 4096

// Options configure a Driver.
type Options struct {
	// NodeID is what NodeGetInfo reports; "" means "mem-node-1".
	NodeID string

	// Topology is where the pool and the node are; nil means no topology. With it set,
	// CreateVolume places volumes there and refuses a requirement for anywhere else with
	// ErrResourceExhausted, as a zonal array would.
	Topology driver.Topology

	// MaxVolumesPerNode is the attach limit NodeGetInfo reports; 0 lets the CO decide.
	MaxVolumesPerNode int64

	// CapacityBytes is the total pool size; 0 means 1 TiB.
	CapacityBytes int64
	// DefaultVolumeSize is used when CreateVolume gives no capacity range; 0 means 1 GiB.
	DefaultVolumeSize int64
	// MaxVolumeSize rejects bigger requests with OUT_OF_RANGE; 0 means no limit but the pool.
	MaxVolumeSize int64
	// MutableParameters lists the keys ControllerModifyVolume and CreateVolume accept there.
	MutableParameters []string
	// MaxGroupMembers caps the volumes of one volume group (ModifyVolumeGroupMembership answers
	// RESOURCE_EXHAUSTED past it); 0 means no cap.
	MaxGroupMembers int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

type volume struct {
	id, name string
	size     int64
	// nodeSize is what the node has grown the filesystem to: a controller expansion past it
	// needs a node expansion, and says so however often it is repeated.
	nodeSize    int64
	fingerprint string
	params      map[string]string
	mutable     map[string]string
	context     map[string]string
	source      driver.ContentSource
	topology    []driver.Topology
	block       bool
	published   map[string]publication // node ID -> how
	blocks      map[int64]bool         // allocated block numbers
	health      []driver.HealthCondition
}

type publication struct {
	readonly bool
	mode     driver.AccessMode
}

type snapshot struct {
	id, name, source string
	fingerprint      string
	size             int64
	created          time.Time
	group            string
	blocks           map[int64]bool
}

type groupSnapshot struct {
	id, name    string
	fingerprint string
	members     []string
	created     time.Time
}

type staging struct {
	path  string
	block bool
	mode  driver.AccessMode
}

type nodePublication struct {
	volume   string
	readonly bool
	block    bool
	mode     driver.AccessMode
}

// Driver is the in-memory CSI and volume-group backend. It implements driver.Controller,
// driver.Node, every optional controller and node interface, driver.GroupController,
// driver.SnapshotMetadata, and volumegroup.Controller with its Getter and Lister.
type Driver struct {
	opts Options

	mu        sync.Mutex
	seq       int
	volumes   map[string]*volume
	names     map[string]string // volume name -> ID
	snapshots map[string]*snapshot
	snapNames map[string]string
	groups    map[string]*groupSnapshot
	groupName map[string]string
	staged    map[string]staging                    // volume ID -> where and how it is staged
	published map[string]map[string]nodePublication // volume ID -> target path -> how
	notReady  bool

	volGroups     map[string]*volumeGroup
	volGroupNames map[string]string // group name -> ID
	memberOf      map[string]string // volume ID -> volume group ID
}

// New returns an empty backend.
func New(opts Options) *Driver {
	if opts.NodeID == "" {
		opts.NodeID = "mem-node-1"
	}
	if opts.CapacityBytes == 0 {
		opts.CapacityBytes = 1 << 40
	}
	if opts.DefaultVolumeSize == 0 {
		opts.DefaultVolumeSize = 1 << 30
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Driver{
		opts:      opts,
		volumes:   map[string]*volume{},
		names:     map[string]string{},
		snapshots: map[string]*snapshot{},
		snapNames: map[string]string{},
		groups:    map[string]*groupSnapshot{},
		groupName: map[string]string{},

		volGroups:     map[string]*volumeGroup{},
		volGroupNames: map[string]string{},
		memberOf:      map[string]string{},
		staged:        map[string]staging{},
		published:     map[string]map[string]nodePublication{},
	}
}

func (d *Driver) newID(prefix string) string {
	d.seq++
	return fmt.Sprintf("%s-%06d", prefix, d.seq)
}

func (d *Driver) used() int64 {
	var n int64
	for _, v := range d.volumes {
		n += v.size
	}
	return n
}

// SetReady makes Probe report ready or still initialising.
func (d *Driver) SetReady(ready bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.notReady = !ready
}

// Probe reports readiness.
func (d *Driver) Probe(context.Context) (bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return !d.notReady, nil
}

// Write marks the blocks covering [offset, offset+length) of a volume as allocated, as a workload
// writing to it would.
func (d *Driver) Write(volumeID string, offset, length int64) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[volumeID]
	if !ok {
		return fmt.Errorf("volume %q: %w", volumeID, driver.ErrNotFound)
	}
	if offset < 0 || length <= 0 || offset+length > v.size {
		return fmt.Errorf("write [%d, %d) outside volume of %d bytes: %w", offset, offset+length, v.size, driver.ErrOutOfRange)
	}
	for b := offset / BlockSize; b*BlockSize < offset+length; b++ {
		v.blocks[b] = true
	}
	return nil
}

// SetHealth records adverse conditions of a volume (nil clears them).
func (d *Driver) SetHealth(volumeID string, conds []driver.HealthCondition) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, ok := d.volumes[volumeID]
	if !ok {
		return fmt.Errorf("volume %q: %w", volumeID, driver.ErrNotFound)
	}
	v.health = conds
	return nil
}

// CreateVolume creates a volume, idempotently by name.
func (d *Driver) CreateVolume(_ context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	fp := req.Fingerprint()
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.names[req.Name]; ok {
		vol := d.volumes[id].public()
		if err := req.CheckExisting(d.volumes[id].fingerprint, vol); err != nil {
			return nil, err
		}
		return vol, nil
	}
	for k := range req.MutableParameters {
		if !slices.Contains(d.opts.MutableParameters, k) {
			return nil, fmt.Errorf("mutable parameter %q is not supported: %w", k, driver.ErrInvalidArgument)
		}
	}
	// A group named by the parameter is checked before anything is made: a wrong or full group
	// costs no volume.
	group, err := d.joinTarget(req.Parameters)
	if err != nil {
		return nil, err
	}
	size, err := req.Capacity.Resolve(d.opts.DefaultVolumeSize, BlockSize)
	if err != nil {
		return nil, err
	}
	if d.opts.MaxVolumeSize > 0 && size > d.opts.MaxVolumeSize {
		return nil, fmt.Errorf("%d bytes is more than the largest volume, %d bytes: %w", size, d.opts.MaxVolumeSize, driver.ErrOutOfRange)
	}
	block := false
	for _, c := range req.Capabilities {
		block = block || c.Block
	}
	blocks := map[int64]bool{}
	switch {
	case req.Source.SnapshotID != "":
		s, ok := d.snapshots[req.Source.SnapshotID]
		if !ok {
			return nil, fmt.Errorf("source snapshot %q: %w", req.Source.SnapshotID, driver.ErrNotFound)
		}
		if size < s.size {
			if req.Capacity.LimitBytes != 0 && req.Capacity.LimitBytes < s.size {
				return nil, fmt.Errorf("snapshot %q has %d bytes, more than the limit %d: %w", s.id, s.size, req.Capacity.LimitBytes, driver.ErrOutOfRange)
			}
			size = s.size
		}
		blocks = maps.Clone(s.blocks)
	case req.Source.VolumeID != "":
		src, ok := d.volumes[req.Source.VolumeID]
		if !ok {
			return nil, fmt.Errorf("source volume %q: %w", req.Source.VolumeID, driver.ErrNotFound)
		}
		if size < src.size {
			if req.Capacity.LimitBytes != 0 && req.Capacity.LimitBytes < src.size {
				return nil, fmt.Errorf("volume %q has %d bytes, more than the limit %d: %w", src.id, src.size, req.Capacity.LimitBytes, driver.ErrOutOfRange)
			}
			size = src.size
		}
		blocks = maps.Clone(src.blocks)
	}
	if d.used()+size > d.opts.CapacityBytes {
		return nil, fmt.Errorf("%d bytes requested, %d free: %w", size, d.opts.CapacityBytes-d.used(), driver.ErrResourceExhausted)
	}
	var topo []driver.Topology
	if req.Topology != nil {
		// One location only: the first preferred, else the first requisite.
		switch {
		case len(req.Topology.Preferred) > 0:
			topo = []driver.Topology{req.Topology.Preferred[0]}
		case len(req.Topology.Requisite) > 0:
			topo = []driver.Topology{req.Topology.Requisite[0]}
		}
		if len(topo) > 0 && len(d.opts.Topology) > 0 && !maps.Equal(topo[0], d.opts.Topology) {
			return nil, fmt.Errorf("this pool serves only %v: %w", d.opts.Topology, driver.ErrResourceExhausted)
		}
	} else if len(d.opts.Topology) > 0 {
		topo = []driver.Topology{d.opts.Topology}
	}
	v := &volume{
		id: d.newID("vol"), name: req.Name, size: size, nodeSize: size, fingerprint: fp,
		params: req.Parameters, mutable: maps.Clone(req.MutableParameters),
		context: map[string]string{"memdriver/name": req.Name}, source: req.Source,
		topology: topo, block: block, published: map[string]publication{}, blocks: blocks,
	}
	d.volumes[v.id] = v
	d.names[v.name] = v.id
	if group != nil {
		group.members = append(group.members, v.id)
		d.memberOf[v.id] = group.id
	}
	return v.public(), nil
}

// volume returns a volume by ID; the caller holds d.mu.
func (d *Driver) volume(id string) (*volume, error) {
	v, ok := d.volumes[id]
	if !ok {
		return nil, fmt.Errorf("volume %q: %w", id, driver.ErrNotFound)
	}
	return v, nil
}

func (v *volume) public() *driver.Volume {
	return &driver.Volume{ID: v.id, CapacityBytes: v.size, Context: v.context, Source: v.source, AccessibleTopology: v.topology}
}

// DeleteVolume deletes a volume that is not published.
func (d *Driver) DeleteVolume(_ context.Context, req *driver.DeleteVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return err
	}
	if err := d.inUse(v); err != nil {
		return err
	}
	if g, ok := d.memberOf[v.id]; ok {
		return fmt.Errorf("volume %q is a member of volume group %q; delete the group or take the volume out of it first: %w", v.id, g, driver.ErrInUse)
	}
	delete(d.volumes, v.id)
	delete(d.names, v.name)
	return nil
}

// inUse reports a volume that is published to a node or staged or published on this one: it
// cannot be deleted, alone or with its group.
func (d *Driver) inUse(v *volume) error {
	if len(v.published) > 0 {
		return fmt.Errorf("volume %q is published on %d node(s): %w", v.id, len(v.published), driver.ErrInUse)
	}
	if _, staged := d.staged[v.id]; len(d.published[v.id]) > 0 || staged {
		return fmt.Errorf("volume %q is staged or published on this node: %w", v.id, driver.ErrInUse)
	}
	return nil
}

// ValidateVolumeCapabilities confirms every mode for an existing volume, except block access to a
// volume created for mount access and vice versa.
func (d *Driver) ValidateVolumeCapabilities(_ context.Context, req *driver.ValidateVolumeCapabilitiesRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return err
	}
	for _, c := range req.Capabilities {
		if c.Block && !v.block {
			return fmt.Errorf("volume %q was created for filesystem access: %w", v.id, driver.ErrUnsupported)
		}
	}
	return nil
}

// ControllerPublishVolume attaches a volume to a node.
func (d *Driver) ControllerPublishVolume(_ context.Context, req *driver.ControllerPublishVolumeRequest) (map[string]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	if req.NodeID != d.opts.NodeID {
		return nil, fmt.Errorf("node %q: %w", req.NodeID, driver.ErrNotFound)
	}
	want := publication{readonly: req.Readonly, mode: req.Capability.AccessMode}
	if p, ok := v.published[req.NodeID]; ok {
		if p != want {
			return nil, fmt.Errorf("volume %q is published on node %q with other settings: %w", v.id, req.NodeID, driver.ErrAlreadyExists)
		}
		return map[string]string{"memdriver/node": req.NodeID}, nil
	}
	if !req.Capability.AccessMode.MultiNode() && len(v.published) > 0 {
		for other := range v.published {
			return nil, fmt.Errorf("volume %q is published on node %q and its access mode allows one node: %w", v.id, other, driver.ErrFailedPrecondition)
		}
	}
	if max := d.opts.MaxVolumesPerNode; max > 0 {
		n := int64(0)
		for _, o := range d.volumes {
			if _, ok := o.published[req.NodeID]; ok {
				n++
			}
		}
		if n >= max {
			return nil, fmt.Errorf("node %q has %d volumes attached, its limit: %w", req.NodeID, n, driver.ErrResourceExhausted)
		}
	}
	v.published[req.NodeID] = want
	return map[string]string{"memdriver/node": req.NodeID}, nil
}

// ControllerUnpublishVolume detaches a volume from one node or all.
func (d *Driver) ControllerUnpublishVolume(_ context.Context, req *driver.ControllerUnpublishVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return err
	}
	if req.NodeID == "" {
		clear(v.published)
		return nil
	}
	delete(v.published, req.NodeID)
	return nil
}

func (v *volume) entry() driver.VolumeEntry {
	nodes := slices.Sorted(maps.Keys(v.published))
	return driver.VolumeEntry{Volume: *v.public(), PublishedNodeIDs: nodes}
}

// ListVolumesPage returns volumes in ID order after req.After.
func (d *Driver) ListVolumesPage(_ context.Context, req *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	ids := slices.Sorted(maps.Keys(d.volumes))
	i := sort.SearchStrings(ids, req.After)
	if i < len(ids) && ids[i] == req.After {
		i++
	}
	var out []driver.VolumeEntry
	for _, id := range ids[i:] {
		if req.Limit > 0 && len(out) == req.Limit {
			break
		}
		out = append(out, d.volumes[id].entry())
	}
	return out, nil
}

// GetCapacity reports the free space of the pool.
func (d *Driver) GetCapacity(_ context.Context, req *driver.GetCapacityRequest) (*driver.Capacity, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(req.Topology) > 0 && len(d.opts.Topology) > 0 && !maps.Equal(req.Topology, d.opts.Topology) {
		return &driver.Capacity{}, nil
	}
	return &driver.Capacity{AvailableBytes: d.opts.CapacityBytes - d.used(), MaximumVolumeSize: d.opts.MaxVolumeSize, MinimumVolumeSize: BlockSize}, nil
}

// CreateSnapshot snapshots a volume, idempotently by name.
func (d *Driver) CreateSnapshot(_ context.Context, req *driver.CreateSnapshotRequest) (*driver.Snapshot, error) {
	fp := req.Fingerprint()
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.snapNames[req.Name]; ok {
		snap := d.snapshots[id].public()
		if err := req.CheckExisting(d.snapshots[id].fingerprint, snap); err != nil {
			return nil, err
		}
		return snap, nil
	}
	v, ok := d.volumes[req.SourceVolumeID]
	if !ok {
		return nil, fmt.Errorf("source volume %q: %w", req.SourceVolumeID, driver.ErrNotFound)
	}
	s := d.snapshotOf(v, req.Name, fp, "")
	return s.public(), nil
}

func (d *Driver) snapshotOf(v *volume, name, fp, group string) *snapshot {
	s := &snapshot{id: d.newID("snap"), name: name, source: v.id, fingerprint: fp, size: v.size,
		created: d.opts.Now(), group: group, blocks: maps.Clone(v.blocks)}
	d.snapshots[s.id] = s
	if name != "" {
		d.snapNames[name] = s.id
	}
	return s
}

func (s *snapshot) public() *driver.Snapshot {
	return &driver.Snapshot{ID: s.id, SourceVolumeID: s.source, SizeBytes: s.size, CreationTime: s.created, ReadyToUse: true, GroupSnapshotID: s.group}
}

// DeleteSnapshot deletes a snapshot that is not part of a group.
func (d *Driver) DeleteSnapshot(_ context.Context, req *driver.DeleteSnapshotRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.snapshots[req.SnapshotID]
	if !ok {
		return fmt.Errorf("snapshot %q: %w", req.SnapshotID, driver.ErrNotFound)
	}
	if s.group != "" {
		return fmt.Errorf("snapshot %q belongs to group snapshot %q: %w", s.id, s.group, driver.ErrGroupMember)
	}
	delete(d.snapshots, s.id)
	delete(d.snapNames, s.name)
	return nil
}

// ListSnapshots returns every snapshot; the library filters, sorts and pages.
func (d *Driver) ListSnapshots(_ context.Context, _ *driver.ListSnapshotsRequest) ([]driver.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]driver.Snapshot, 0, len(d.snapshots))
	for _, s := range d.snapshots {
		out = append(out, *s.public())
	}
	return out, nil
}

// GetSnapshot returns one snapshot.
func (d *Driver) GetSnapshot(_ context.Context, req *driver.GetSnapshotRequest) (*driver.Snapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.snapshots[req.SnapshotID]
	if !ok {
		return nil, fmt.Errorf("snapshot %q: %w", req.SnapshotID, driver.ErrNotFound)
	}
	return s.public(), nil
}

// ControllerExpandVolume grows a volume; filesystem volumes then need a node expansion until the
// node has grown them. A repeated call gets the same answer, node expansion included: a CO that
// lost the first answer must still learn that the node has work to do.
func (d *Driver) ControllerExpandVolume(_ context.Context, req *driver.ControllerExpandVolumeRequest) (int64, bool, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return 0, false, err
	}
	size, err := req.Capacity.Resolve(v.size, BlockSize)
	if err != nil {
		return 0, false, err
	}
	filesystem := !v.block
	if req.Capability != nil {
		filesystem = !req.Capability.Block
	}
	if size <= v.size {
		return v.size, filesystem && v.nodeSize < v.size, nil
	}
	if d.opts.MaxVolumeSize > 0 && size > d.opts.MaxVolumeSize {
		return 0, false, fmt.Errorf("%d bytes is more than the largest volume, %d bytes: %w", size, d.opts.MaxVolumeSize, driver.ErrOutOfRange)
	}
	if d.used()-v.size+size > d.opts.CapacityBytes {
		return 0, false, fmt.Errorf("not enough free space to grow to %d bytes: %w", size, driver.ErrResourceExhausted)
	}
	v.size = size
	if !filesystem {
		// A raw block device has no filesystem for the node to grow.
		v.nodeSize = size
	}
	return v.size, v.nodeSize < v.size, nil
}

// ControllerGetVolume returns one volume.
func (d *Driver) ControllerGetVolume(_ context.Context, req *driver.ControllerGetVolumeRequest) (*driver.VolumeEntry, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	e := v.entry()
	return &e, nil
}

// ControllerModifyVolume applies mutable parameters from the allow-list, all or none.
func (d *Driver) ControllerModifyVolume(_ context.Context, req *driver.ControllerModifyVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return err
	}
	for k := range req.MutableParameters {
		if !slices.Contains(d.opts.MutableParameters, k) {
			return fmt.Errorf("mutable parameter %q is not supported: %w", k, driver.ErrInvalidArgument)
		}
	}
	if v.mutable == nil {
		v.mutable = map[string]string{}
	}
	maps.Copy(v.mutable, req.MutableParameters)
	return nil
}

// MutableParameters returns the current mutable parameters of a volume (for tests).
func (d *Driver) MutableParameters(volumeID string) map[string]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	if v, ok := d.volumes[volumeID]; ok {
		return maps.Clone(v.mutable)
	}
	return nil
}

// ControllerGetVolumeHealth reports recorded conditions.
func (d *Driver) ControllerGetVolumeHealth(_ context.Context, req *driver.ControllerGetVolumeHealthRequest) (*driver.VolumeHealth, error) {
	return d.recordedHealth(req.VolumeID)
}

// recordedHealth is the health of one volume as the controller and the node both report it: the
// conditions SetHealth recorded.
func (d *Driver) recordedHealth(volumeID string) (*driver.VolumeHealth, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(volumeID)
	if err != nil {
		return nil, err
	}
	return &driver.VolumeHealth{VolumeID: v.id, Conditions: slices.Clone(v.health)}, nil
}

// ControllerListVolumeHealth reports every volume with a recorded condition.
func (d *Driver) ControllerListVolumeHealth(context.Context, *driver.ControllerListVolumeHealthRequest) ([]driver.VolumeHealth, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []driver.VolumeHealth
	for _, v := range d.volumes {
		if len(v.health) > 0 {
			out = append(out, driver.VolumeHealth{VolumeID: v.id, Conditions: slices.Clone(v.health)})
		}
	}
	return out, nil
}

// NodeGetInfo identifies the simulated node.
func (d *Driver) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	return &driver.NodeInfo{NodeID: d.opts.NodeID, MaxVolumesPerNode: d.opts.MaxVolumesPerNode, AccessibleTopology: d.opts.Topology}, nil
}

// NodeStageVolume records the staging path.
func (d *Driver) NodeStageVolume(_ context.Context, req *driver.NodeStageVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.volumes[req.VolumeID]; !ok {
		return fmt.Errorf("volume %q: %w", req.VolumeID, driver.ErrNotFound)
	}
	want := staging{path: req.StagingTargetPath, block: req.Capability.Block, mode: req.Capability.AccessMode}
	if cur, ok := d.staged[req.VolumeID]; ok && cur != want {
		return fmt.Errorf("volume %q is staged at %q with other settings: %w", req.VolumeID, cur.path, driver.ErrAlreadyExists)
	}
	d.staged[req.VolumeID] = want
	return nil
}

// NodeUnstageVolume forgets the staging path; volumes still published stay staged.
func (d *Driver) NodeUnstageVolume(_ context.Context, req *driver.NodeUnstageVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.volumes[req.VolumeID]; !ok {
		return fmt.Errorf("volume %q: %w", req.VolumeID, driver.ErrNotFound)
	}
	if len(d.published[req.VolumeID]) > 0 {
		return fmt.Errorf("volume %q is still published: %w", req.VolumeID, driver.ErrFailedPrecondition)
	}
	delete(d.staged, req.VolumeID)
	return nil
}

// NodePublishVolume creates the target (a directory, or a file for block access) and records it.
func (d *Driver) NodePublishVolume(_ context.Context, req *driver.NodePublishVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return err
	}
	if st, ok := d.staged[req.VolumeID]; !ok || st.path != req.StagingTargetPath {
		return fmt.Errorf("volume %q is not staged at %q: %w", req.VolumeID, req.StagingTargetPath, driver.ErrFailedPrecondition)
	}
	want := nodePublication{volume: v.id, readonly: req.Readonly, block: req.Capability.Block, mode: req.Capability.AccessMode}
	pubs := d.published[v.id]
	if p, ok := pubs[req.TargetPath]; ok {
		if p != want {
			return fmt.Errorf("volume %q is published at %q with other settings: %w", v.id, req.TargetPath, driver.ErrAlreadyExists)
		}
		return nil
	}
	if req.Capability.AccessMode == driver.SingleNodeSingleWriter && len(pubs) > 0 {
		return fmt.Errorf("volume %q is SINGLE_NODE_SINGLE_WRITER and already published: %w", v.id, driver.ErrFailedPrecondition)
	}
	if req.Capability.Block {
		f, err := os.OpenFile(req.TargetPath, os.O_CREATE|os.O_RDWR, 0o640)
		if err != nil {
			return fmt.Errorf("create block target %q: %w", req.TargetPath, err)
		}
		if err := f.Close(); err != nil {
			return fmt.Errorf("create block target %q: %w", req.TargetPath, err)
		}
	} else if err := os.MkdirAll(req.TargetPath, 0o750); err != nil {
		return fmt.Errorf("create target %q: %w", req.TargetPath, err)
	}
	if pubs == nil {
		pubs = map[string]nodePublication{}
		d.published[v.id] = pubs
	}
	pubs[req.TargetPath] = want
	return nil
}

// NodeUnpublishVolume removes the target it created.
func (d *Driver) NodeUnpublishVolume(_ context.Context, req *driver.NodeUnpublishVolumeRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if _, ok := d.volumes[req.VolumeID]; !ok {
		return fmt.Errorf("volume %q: %w", req.VolumeID, driver.ErrNotFound)
	}
	if _, ok := d.published[req.VolumeID][req.TargetPath]; !ok {
		return nil
	}
	if err := os.Remove(req.TargetPath); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove target %q: %w", req.TargetPath, err)
	}
	delete(d.published[req.VolumeID], req.TargetPath)
	if len(d.published[req.VolumeID]) == 0 {
		delete(d.published, req.VolumeID)
	}
	return nil
}

// NodeGetVolumeStats reports the allocated bytes of a volume published or staged at the path.
func (d *Driver) NodeGetVolumeStats(_ context.Context, req *driver.NodeGetVolumeStatsRequest) ([]driver.VolumeUsage, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return nil, err
	}
	if _, pub := d.published[v.id][req.VolumePath]; !pub && d.staged[v.id].path != req.VolumePath {
		return nil, fmt.Errorf("volume %q is not published or staged at %q: %w", v.id, req.VolumePath, driver.ErrNotFound)
	}
	used := int64(len(v.blocks)) * BlockSize
	return []driver.VolumeUsage{{Unit: driver.UsageBytes, Total: v.size, Used: used, Available: v.size - used}}, nil
}

// NodeExpandVolume acknowledges a grown volume.
func (d *Driver) NodeExpandVolume(_ context.Context, req *driver.NodeExpandVolumeRequest) (int64, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	v, err := d.volume(req.VolumeID)
	if err != nil {
		return 0, err
	}
	if req.Capacity.RequiredBytes > v.size {
		return 0, fmt.Errorf("volume %q has %d bytes; expand it on the controller first: %w", v.id, v.size, driver.ErrOutOfRange)
	}
	v.nodeSize = v.size
	return v.size, nil
}

// NodeGetVolumeHealth reports recorded conditions.
func (d *Driver) NodeGetVolumeHealth(_ context.Context, req *driver.NodeGetVolumeHealthRequest) (*driver.VolumeHealth, error) {
	return d.recordedHealth(req.VolumeID)
}

// NodeGetStorageHealth reports the pool degraded when it is more than 90% full.
func (d *Driver) NodeGetStorageHealth(context.Context, *driver.NodeGetStorageHealthRequest) ([]driver.StorageHealth, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.used()*10 > d.opts.CapacityBytes*9 {
		return []driver.StorageHealth{{Status: driver.StorageDegraded, Reason: "PoolAlmostFull", Message: "more than 90% of the pool is used"}}, nil
	}
	return nil, nil
}

// CreateVolumeGroupSnapshot snapshots several volumes at one instant, idempotently by name.
func (d *Driver) CreateVolumeGroupSnapshot(_ context.Context, req *driver.CreateVolumeGroupSnapshotRequest) (*driver.GroupSnapshot, error) {
	fp := req.Fingerprint()
	d.mu.Lock()
	defer d.mu.Unlock()
	if id, ok := d.groupName[req.Name]; ok {
		g := d.groupPublic(d.groups[id])
		if err := req.CheckExisting(d.groups[id].fingerprint, g); err != nil {
			return nil, err
		}
		return g, nil
	}
	vols := make([]*volume, 0, len(req.SourceVolumeIDs))
	for _, id := range req.SourceVolumeIDs {
		v, ok := d.volumes[id]
		if !ok {
			return nil, fmt.Errorf("source volume %q: %w", id, driver.ErrNotFound)
		}
		vols = append(vols, v)
	}
	// d.mu is held from this check to the last member snapshot, so the volume group cannot
	// change in between: the snapshot is of the whole group as it is.
	if err := d.checkWholeGroup(req.Parameters, req.SourceVolumeIDs); err != nil {
		return nil, err
	}
	g := &groupSnapshot{id: d.newID("group"), name: req.Name, fingerprint: fp, created: d.opts.Now()}
	for _, v := range vols {
		s := d.snapshotOf(v, "", "", g.id)
		g.members = append(g.members, s.id)
	}
	d.groups[g.id] = g
	d.groupName[g.name] = g.id
	return d.groupPublic(g), nil
}

func (d *Driver) groupPublic(g *groupSnapshot) *driver.GroupSnapshot {
	out := &driver.GroupSnapshot{ID: g.id, CreationTime: g.created, ReadyToUse: true}
	for _, id := range g.members {
		out.Snapshots = append(out.Snapshots, *d.snapshots[id].public())
	}
	return out
}

func (d *Driver) checkMembers(g *groupSnapshot, ids []string) error {
	if !slices.Equal(slices.Sorted(slices.Values(ids)), slices.Sorted(slices.Values(g.members))) {
		return fmt.Errorf("snapshot_ids do not match the members of group snapshot %q: %w", g.id, driver.ErrInvalidArgument)
	}
	return nil
}

// DeleteVolumeGroupSnapshot deletes a group and its members.
func (d *Driver) DeleteVolumeGroupSnapshot(_ context.Context, req *driver.DeleteVolumeGroupSnapshotRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.groups[req.GroupSnapshotID]
	if !ok {
		return fmt.Errorf("group snapshot %q: %w", req.GroupSnapshotID, driver.ErrNotFound)
	}
	if err := d.checkMembers(g, req.SnapshotIDs); err != nil {
		return err
	}
	for _, id := range g.members {
		delete(d.snapshots, id)
	}
	delete(d.groups, g.id)
	delete(d.groupName, g.name)
	return nil
}

// GetVolumeGroupSnapshot returns one group.
func (d *Driver) GetVolumeGroupSnapshot(_ context.Context, req *driver.GetVolumeGroupSnapshotRequest) (*driver.GroupSnapshot, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	g, ok := d.groups[req.GroupSnapshotID]
	if !ok {
		return nil, fmt.Errorf("group snapshot %q: %w", req.GroupSnapshotID, driver.ErrNotFound)
	}
	if err := d.checkMembers(g, req.SnapshotIDs); err != nil {
		return nil, err
	}
	return d.groupPublic(g), nil
}

// GetMetadataAllocated streams the allocated blocks of a snapshot.
func (d *Driver) GetMetadataAllocated(_ context.Context, req *driver.GetMetadataAllocatedRequest) (*driver.BlockMetadataStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	s, ok := d.snapshots[req.SnapshotID]
	if !ok {
		return nil, fmt.Errorf("snapshot %q: %w", req.SnapshotID, driver.ErrNotFound)
	}
	return blockStream(s.size, slices.Sorted(maps.Keys(s.blocks))), nil
}

// GetMetadataDelta streams the blocks that differ between two snapshots of one volume.
func (d *Driver) GetMetadataDelta(_ context.Context, req *driver.GetMetadataDeltaRequest) (*driver.BlockMetadataStream, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	base, ok := d.snapshots[req.BaseSnapshotID]
	if !ok {
		return nil, fmt.Errorf("base snapshot %q: %w", req.BaseSnapshotID, driver.ErrNotFound)
	}
	target, ok := d.snapshots[req.TargetSnapshotID]
	if !ok {
		return nil, fmt.Errorf("target snapshot %q: %w", req.TargetSnapshotID, driver.ErrNotFound)
	}
	if base.source != target.source {
		return nil, fmt.Errorf("snapshots %q and %q are of different volumes: %w", base.id, target.id, driver.ErrInvalidArgument)
	}
	var changed []int64
	for b := range target.blocks {
		if !base.blocks[b] {
			changed = append(changed, b)
		}
	}
	for b := range base.blocks {
		if !target.blocks[b] {
			changed = append(changed, b)
		}
	}
	slices.Sort(changed)
	return blockStream(target.size, changed), nil
}

func blockStream(size int64, blocks []int64) *driver.BlockMetadataStream {
	return &driver.BlockMetadataStream{
		Type:                driver.FixedLength,
		VolumeCapacityBytes: size,
		Blocks: iter.Seq2[driver.BlockRange, error](func(yield func(driver.BlockRange, error) bool) {
			for _, b := range blocks {
				if !yield(driver.BlockRange{Offset: b * BlockSize, Size: BlockSize}, nil) {
					return
				}
			}
		}),
	}
}

// String describes the backend's contents, for test failure messages.
func (d *Driver) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return "memdriver{volumes: " + strconv.Itoa(len(d.volumes)) + ", snapshots: " + strconv.Itoa(len(d.snapshots)) + "}"
}
