package plugin_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

func TestVolumeLifecycle(t *testing.T) {
	mem := memdriver.New(memdriver.Options{MutableParameters: []string{"iops"}})
	p := start(t, fullConfig(mem))
	ctx := context.Background()
	dir := t.TempDir()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")

	vol := createVolume(t, p, "life")
	again := createVolume(t, p, "life")
	if again.GetVolumeId() != vol.GetVolumeId() {
		t.Fatalf("CreateVolume is not idempotent: %s then %s", vol.GetVolumeId(), again.GetVolumeId())
	}
	_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "life", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}})
	if status.Code(err) != codes.AlreadyExists {
		t.Fatalf("same name, other size: %v, want ALREADY_EXISTS", err)
	}

	pub, err := p.controller.ControllerPublishVolume(ctx, &csi.ControllerPublishVolumeRequest{
		VolumeId: vol.GetVolumeId(), NodeId: "mem-node-1", VolumeCapability: mountCap(snw)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging,
		VolumeCapability: mountCap(snw), PublishContext: pub.GetPublishContext()}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: mountCap(snw)}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(target); err != nil {
		t.Fatalf("target not created: %v", err)
	}
	stats, err := p.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: vol.GetVolumeId(), VolumePath: target})
	if err != nil || len(stats.GetUsage()) != 1 || stats.GetUsage()[0].GetTotal() != 1<<20 {
		t.Fatalf("NodeGetVolumeStats = %v, %v", stats, err)
	}
	if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()}); status.Code(err) != codes.FailedPrecondition {
		t.Fatalf("deleting a published volume: %v, want FAILED_PRECONDITION", err)
	}
	exp, err := p.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: vol.GetVolumeId(),
		CapacityRange: &csi.CapacityRange{RequiredBytes: 4 << 20}})
	if err != nil || exp.GetCapacityBytes() != 4<<20 || !exp.GetNodeExpansionRequired() {
		t.Fatalf("ControllerExpandVolume = %v, %v", exp, err)
	}
	if _, err := p.node.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: vol.GetVolumeId(), VolumePath: target,
		CapacityRange: &csi.CapacityRange{RequiredBytes: 4 << 20}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.controller.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: vol.GetVolumeId(),
		MutableParameters: map[string]string{"iops": "3000"}}); err != nil {
		t.Fatal(err)
	}
	if got := mem.MutableParameters(vol.GetVolumeId())["iops"]; got != "3000" {
		t.Fatalf("modify not applied: iops=%q", got)
	}
	if _, err := p.controller.ControllerModifyVolume(ctx, &csi.ControllerModifyVolumeRequest{VolumeId: vol.GetVolumeId(),
		MutableParameters: map[string]string{"XXX_FakeKey": "x"}}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("unsupported mutable parameter: %v, want INVALID_ARGUMENT", err)
	}
	got, err := p.controller.ControllerGetVolume(ctx, &csi.ControllerGetVolumeRequest{VolumeId: vol.GetVolumeId()})
	if err != nil || len(got.GetStatus().GetPublishedNodeIds()) != 1 {
		t.Fatalf("ControllerGetVolume = %v, %v; want one published node", got, err)
	}

	for _, step := range []func() error{
		func() error {
			_, err := p.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), TargetPath: target})
			return err
		},
		func() error {
			_, err := p.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: vol.GetVolumeId(), StagingTargetPath: staging})
			return err
		},
		func() error {
			_, err := p.controller.ControllerUnpublishVolume(ctx, &csi.ControllerUnpublishVolumeRequest{VolumeId: vol.GetVolumeId(), NodeId: "mem-node-1"})
			return err
		},
		func() error {
			_, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()})
			return err
		},
		func() error { // repeated delete is still OK
			_, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()})
			return err
		},
	} {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(target); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("target still there after unpublish: %v", err)
	}
}

func TestSnapshotsAndClones(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	ctx := context.Background()
	vol := createVolume(t, p, "snap-source")
	snap, err := p.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s1", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	if snap.GetSnapshot().GetCreationTime() == nil || snap.GetSnapshot().GetSourceVolumeId() != vol.GetVolumeId() {
		t.Fatalf("snapshot incomplete: %v", snap)
	}
	other := createVolume(t, p, "other")
	if _, err := p.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s1", SourceVolumeId: other.GetVolumeId()}); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("same snapshot name, other source: %v, want ALREADY_EXISTS", err)
	}
	restored, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "restored", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.GetSnapshot().GetSnapshotId()}}}})
	if err != nil {
		t.Fatal(err)
	}
	if restored.GetVolume().GetContentSource().GetSnapshot().GetSnapshotId() != snap.GetSnapshot().GetSnapshotId() {
		t.Fatalf("restored volume does not report its source: %v", restored)
	}
	_, err = p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "from-nothing", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: "nope"}}}})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("missing source snapshot: %v, want NOT_FOUND", err)
	}
	list, err := p.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()})
	if err != nil || len(list.GetEntries()) != 1 {
		t.Fatalf("ListSnapshots by ID = %v, %v", list, err)
	}
	list, err = p.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SnapshotId: "does-not-exist"})
	if err != nil || len(list.GetEntries()) != 0 {
		t.Fatalf("ListSnapshots for a missing ID = %v, %v; want empty", list, err)
	}
	list, err = p.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{SourceVolumeId: other.GetVolumeId()})
	if err != nil || len(list.GetEntries()) != 0 {
		t.Fatalf("ListSnapshots of a volume without snapshots = %v, %v; want empty", list, err)
	}
	if _, err := p.controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.controller.GetSnapshot(ctx, &csi.GetSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetSnapshot after delete: %v, want NOT_FOUND", err)
	}
}

func TestGroupSnapshotLifecycle(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	ctx := context.Background()
	a, b := createVolume(t, p, "ga"), createVolume(t, p, "gb")
	g, err := p.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{a.GetVolumeId(), b.GetVolumeId()}})
	if err != nil {
		t.Fatal(err)
	}
	gs := g.GetGroupSnapshot()
	if len(gs.GetSnapshots()) != 2 || !gs.GetReadyToUse() {
		t.Fatalf("group snapshot = %v", gs)
	}
	var ids []string
	for _, s := range gs.GetSnapshots() {
		if s.GetGroupSnapshotId() != gs.GetGroupSnapshotId() {
			t.Fatalf("member %v does not name its group", s)
		}
		ids = append(ids, s.GetSnapshotId())
	}
	if _, err := p.controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: ids[0]}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("deleting a group member alone: %v, want INVALID_ARGUMENT", err)
	}
	if _, err := p.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
		t.Fatal(err)
	}
	// Restore one member into a new volume.
	if _, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "from-group", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: ids[1]}}}}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(), SnapshotIds: ids[:1]}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("delete with a wrong member list: %v, want INVALID_ARGUMENT", err)
	}
	for range 2 {
		if _, err := p.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := p.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gs.GetGroupSnapshotId(), SnapshotIds: ids}); status.Code(err) != codes.NotFound {
		t.Fatalf("GetVolumeGroupSnapshot after delete: %v, want NOT_FOUND", err)
	}
}

func TestListVolumesPagination(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	ctx := context.Background()
	const n = 57
	want := map[string]bool{}
	for i := range n {
		want[createVolume(t, p, fmt.Sprintf("page-%02d", i)).GetVolumeId()] = true
	}
	for _, max := range []int32{0, 1, 7, 56, 57, 100} {
		t.Run(fmt.Sprint("max=", max), func(t *testing.T) {
			seen := map[string]bool{}
			token := ""
			for pages := 0; ; pages++ {
				if pages > n+1 {
					t.Fatal("listing does not end")
				}
				resp, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: max, StartingToken: token})
				if err != nil {
					t.Fatal(err)
				}
				if max > 0 && len(resp.GetEntries()) > int(max) {
					t.Fatalf("%d entries for max_entries %d", len(resp.GetEntries()), max)
				}
				for _, e := range resp.GetEntries() {
					id := e.GetVolume().GetVolumeId()
					if seen[id] {
						t.Fatalf("volume %s returned twice", id)
					}
					seen[id] = true
				}
				if token = resp.GetNextToken(); token == "" {
					break
				}
				if len(token) > 128 {
					t.Fatalf("next_token is %d bytes, over the CSI limit", len(token))
				}
			}
			if len(seen) != n {
				t.Fatalf("saw %d volumes, want %d", len(seen), n)
			}
		})
	}
	for _, bad := range []string{"garbage", "AAAA", strings.Repeat("x", 100)} {
		if _, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{StartingToken: bad}); status.Code(err) != codes.Aborted {
			t.Fatalf("starting_token %q: %v, want ABORTED", bad, err)
		}
	}
	if _, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: -1}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("negative max_entries: %v, want INVALID_ARGUMENT", err)
	}
	// A token minted for one listing is refused by another.
	resp, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.controller.ListSnapshots(ctx, &csi.ListSnapshotsRequest{StartingToken: resp.GetNextToken()}); status.Code(err) != codes.Aborted {
		t.Fatalf("ListVolumes token given to ListSnapshots: %v, want ABORTED", err)
	}
}

func TestListingDuringChurnNeverSkipsStableVolumes(t *testing.T) {
	p := start(t, fullConfig(memdriver.New(memdriver.Options{})))
	ctx := context.Background()
	stable := map[string]bool{}
	for i := range 30 {
		stable[createVolume(t, p, fmt.Sprintf("stable-%02d", i)).GetVolumeId()] = true
	}
	seen := map[string]bool{}
	token := ""
	for page := 0; ; page++ {
		resp, err := p.controller.ListVolumes(ctx, &csi.ListVolumesRequest{MaxEntries: 4, StartingToken: token})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range resp.GetEntries() {
			seen[e.GetVolume().GetVolumeId()] = true
		}
		// Churn between pages: new volumes appear, and the last volume returned disappears.
		createVolume(t, p, fmt.Sprintf("churn-%02d", page))
		if n := len(resp.GetEntries()); n > 0 {
			last := resp.GetEntries()[n-1].GetVolume().GetVolumeId()
			if _, err := p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: last}); err != nil {
				t.Fatal(err)
			}
			delete(stable, last)
		}
		if token = resp.GetNextToken(); token == "" {
			break
		}
		if page > 100 {
			t.Fatal("listing does not end")
		}
	}
	for id := range stable {
		if !seen[id] {
			t.Errorf("volume %s existed through the whole listing but was skipped", id)
		}
	}
}

// blocking holds CreateVolume of the names in gates until their gate is closed, to make calls
// overlap; other names pass straight through.
type blocking struct {
	*memdriver.Driver
	entered chan string
	gates   map[string]chan struct{}
}

func (b *blocking) CreateVolume(ctx context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if gate, ok := b.gates[r.Name]; ok {
		b.entered <- r.Name
		<-gate
	}
	return b.Driver.CreateVolume(ctx, r)
}

func TestConcurrentCallsOnOneResourceAreAborted(t *testing.T) {
	gate := make(chan struct{})
	b := &blocking{Driver: memdriver.New(memdriver.Options{}), entered: make(chan string, 1), gates: map[string]chan struct{}{"dup": gate}}
	cfg := fullConfig(b.Driver)
	cfg.Controller = b
	p := start(t, cfg)
	ctx := context.Background()
	req := &csi.CreateVolumeRequest{Name: "dup", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}}
	first := make(chan error, 1)
	go func() {
		_, err := p.controller.CreateVolume(ctx, req)
		first <- err
	}()
	<-b.entered // the first call is inside the backend, holding the name lock
	for range 3 {
		_, err := p.controller.CreateVolume(ctx, req)
		if status.Code(err) != codes.Aborted || !strings.Contains(status.Convert(err).Message(), `"dup"`) {
			t.Fatalf("duplicate call while the first is in flight: %v, want ABORTED naming the volume name", err)
		}
	}
	// A different name is not blocked by the first call.
	if _, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "other", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}}); err != nil {
		t.Fatalf("a call on another name was blocked: %v", err)
	}
	close(gate)
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	// The lock is gone once the first call returned; the repeat passes the (open) gate.
	go func() { <-b.entered }()
	if _, err := p.controller.CreateVolume(ctx, req); err != nil {
		t.Fatalf("repeat after the first call finished: %v", err)
	}
}

// panicking panics inside CreateVolume with a secret in the panic value.
type panicking struct{ minimal }

func (panicking) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	panic("backend exploded while using password " + r.Secrets["password"])
}

// leaky returns errors that quote the request's secrets.
type leaky struct{ minimal }

func (leaky) DeleteVolume(_ context.Context, r *driver.DeleteVolumeRequest) error {
	return fmt.Errorf("login with %s failed: %w", r.Secrets["password"], driver.ErrPermissionDenied)
}

const canary = "s3cr3t-canary-value-9f2c"

func TestSecretsNeverLeak(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })), zapcore.DebugLevel)
	logger := zap.New(core)
	ctx := context.Background()
	secrets := map[string]string{"password": canary}

	p := start(t, plugin.Config{Name: "leak.example.com", VendorVersion: "1", Controller: panicking{}, Logger: logger})
	_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "x", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}, Secrets: secrets})
	if status.Code(err) != codes.Internal {
		t.Fatalf("panicking backend: %v, want INTERNAL", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("secret in the panic's status: %v", err)
	}
	// The server survived the panic.
	if _, err := p.identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); err != nil {
		t.Fatalf("server did not survive a panic: %v", err)
	}

	p = start(t, plugin.Config{Name: "leak.example.com", VendorVersion: "1", Controller: leaky{}, Logger: logger})
	_, err = p.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: "v", Secrets: secrets})
	if status.Code(err) != codes.PermissionDenied {
		t.Fatalf("leaky backend: %v, want PERMISSION_DENIED", err)
	}
	if strings.Contains(err.Error(), canary) {
		t.Fatalf("secret in an error message: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), canary) {
		t.Fatalf("secret in the log:\n%s", logs.String())
	}
	if !strings.Contains(logs.String(), "password") {
		t.Fatalf("the secret's key should be logged (value redacted), log:\n%s", logs.String())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }

func TestSnapshotMetadataStreams(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	p := start(t, fullConfig(mem))
	ctx := context.Background()
	vol := createVolume(t, p, "blocks")
	for _, off := range []int64{0, 3 * memdriver.BlockSize, 10 * memdriver.BlockSize} {
		if err := mem.Write(vol.GetVolumeId(), off, memdriver.BlockSize); err != nil {
			t.Fatal(err)
		}
	}
	base, err := p.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "base", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	if err := mem.Write(vol.GetVolumeId(), 20*memdriver.BlockSize, 2*memdriver.BlockSize); err != nil {
		t.Fatal(err)
	}
	target, err := p.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "target", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	collect := func(recv func() ([]*csi.BlockMetadata, error)) ([]int64, int, error) {
		var offs []int64
		msgs := 0
		for {
			blocks, err := recv()
			if err == io.EOF {
				return offs, msgs, nil
			}
			if err != nil {
				return nil, msgs, err
			}
			msgs++
			for _, b := range blocks {
				offs = append(offs, b.GetByteOffset()/memdriver.BlockSize)
			}
		}
	}
	st, err := p.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: base.GetSnapshot().GetSnapshotId(), MaxResults: 2})
	if err != nil {
		t.Fatal(err)
	}
	offs, msgs, err := collect(func() ([]*csi.BlockMetadata, error) { r, err := st.Recv(); return r.GetBlockMetadata(), err })
	if err != nil || fmt.Sprint(offs) != "[0 3 10]" || msgs != 2 {
		t.Fatalf("allocated = %v in %d messages (%v), want [0 3 10] in 2", offs, msgs, err)
	}
	st, err = p.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: base.GetSnapshot().GetSnapshotId(), StartingOffset: 3*memdriver.BlockSize + 1})
	if err != nil {
		t.Fatal(err)
	}
	offs, _, err = collect(func() ([]*csi.BlockMetadata, error) { r, err := st.Recv(); return r.GetBlockMetadata(), err })
	if err != nil || fmt.Sprint(offs) != "[3 10]" {
		t.Fatalf("allocated from an offset inside block 3 = %v (%v), want [3 10]", offs, err)
	}
	dst, err := p.metadata.GetMetadataDelta(ctx, &csi.GetMetadataDeltaRequest{BaseSnapshotId: base.GetSnapshot().GetSnapshotId(), TargetSnapshotId: target.GetSnapshot().GetSnapshotId()})
	if err != nil {
		t.Fatal(err)
	}
	offs, _, err = collect(func() ([]*csi.BlockMetadata, error) { r, err := dst.Recv(); return r.GetBlockMetadata(), err })
	if err != nil || fmt.Sprint(offs) != "[20 21]" {
		t.Fatalf("delta = %v (%v), want [20 21]", offs, err)
	}
	st, err = p.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: base.GetSnapshot().GetSnapshotId(), StartingOffset: 1 << 40})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.OutOfRange {
		t.Fatalf("starting_offset past the end: %v, want OUT_OF_RANGE", err)
	}
	st, err = p.metadata.GetMetadataAllocated(ctx, &csi.GetMetadataAllocatedRequest{SnapshotId: "missing"})
	if err == nil {
		_, err = st.Recv()
	}
	if status.Code(err) != codes.NotFound {
		t.Fatalf("missing snapshot: %v, want NOT_FOUND", err)
	}
}

// slowNode blocks NodePublishVolume until released, to have a call in flight during shutdown.
type slowNode struct {
	minimal
	entered, release chan struct{}
}

func (s slowNode) NodePublishVolume(context.Context, *driver.NodePublishVolumeRequest) error {
	close(s.entered)
	<-s.release
	return nil
}

func TestServeStopsGracefully(t *testing.T) {
	node := slowNode{entered: make(chan struct{}), release: make(chan struct{})}
	d, err := plugin.New(plugin.Config{Name: "slow.example.com", VendorVersion: "1", Node: node, ShutdownTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- d.Serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	call := make(chan error, 1)
	go func() {
		_, err := csi.NewNodeClient(conn).NodePublishVolume(context.Background(), &csi.NodePublishVolumeRequest{
			VolumeId: "v", TargetPath: "/t", VolumeCapability: mountCap(snw)})
		call <- err
	}()
	<-node.entered
	cancel() // stop requested while the call is in flight
	select {
	case err := <-served:
		t.Fatalf("Serve returned before the in-flight call finished: %v", err)
	case err := <-call:
		t.Fatalf("in-flight call ended before it was released: %v", err)
	default:
	}
	close(node.release)
	if err := <-call; err != nil {
		t.Fatalf("in-flight call failed during graceful stop: %v", err)
	}
	if err := <-served; err != nil {
		t.Fatalf("Serve: %v", err)
	}
	if _, err := os.Stat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket still present after stop: %v", err)
	}
}

// mountLeaky fails with errors that quote mount options, parameters and secrets.
type mountLeaky struct{ minimal }

func (mountLeaky) NodePublishVolume(_ context.Context, r *driver.NodePublishVolumeRequest) error {
	return fmt.Errorf("mount -o %s failed", strings.Join(r.Capability.MountFlags, ","))
}

func (mountLeaky) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	return nil, fmt.Errorf("storage array refused password %s", r.Parameters["password"])
}

func (mountLeaky) ValidateVolumeCapabilities(_ context.Context, r *driver.ValidateVolumeCapabilitiesRequest) error {
	return fmt.Errorf("credentials %s may not use this volume: %w", r.Secrets["token"], driver.ErrUnsupported)
}

func TestMountOptionsAndSecretLookingParametersNeverLeak(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	core := zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()),
		zapcore.AddSync(writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })), zapcore.DebugLevel)
	p := start(t, plugin.Config{Name: "leak.example.com", VendorVersion: "1", Controller: mountLeaky{}, Node: mountLeaky{},
		Logger: zap.New(core), RedactSecretLookingKeys: true})
	ctx := context.Background()
	c := mountCap(snw)
	c.GetMount().MountFlags = []string{"ro", "password=" + canary}
	_, err := p.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: "v", TargetPath: "/t", VolumeCapability: c})
	if err == nil || strings.Contains(err.Error(), canary) || !strings.Contains(err.Error(), "ro,password=") {
		t.Fatalf("NodePublishVolume error = %v: want the options with the value scrubbed", err)
	}
	_, err = p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "n", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)},
		Parameters: map[string]string{"password": canary}})
	if err == nil || strings.Contains(err.Error(), canary) {
		t.Fatalf("CreateVolume error = %v: a secret-looking parameter leaked", err)
	}
	resp, err := p.controller.ValidateVolumeCapabilities(ctx, &csi.ValidateVolumeCapabilitiesRequest{VolumeId: "v",
		VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}, Secrets: map[string]string{"token": canary}})
	if err != nil || resp.GetConfirmed() != nil || strings.Contains(resp.GetMessage(), canary) {
		t.Fatalf("ValidateVolumeCapabilities = %v, %v: the declined reason leaked a secret", resp, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if strings.Contains(logs.String(), canary) {
		t.Fatalf("a secret reached the log:\n%s", logs.String())
	}
}

// failingListener accepts one connection, then fails for good once told to.
type failingListener struct {
	net.Listener
	fail     chan struct{}
	accepted bool
}

func (l *failingListener) Accept() (net.Conn, error) {
	if !l.accepted {
		l.accepted = true
		return l.Listener.Accept()
	}
	<-l.fail
	return nil, errors.New("accept: permanent failure")
}

func TestServeStopsTheServerWhenTheListenerFails(t *testing.T) {
	d, err := plugin.New(plugin.Config{Name: "fail.example.com", VendorVersion: "1", Controller: minimal{}})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "csi.sock")
	inner, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	lis := &failingListener{Listener: inner, fail: make(chan struct{})}
	served := make(chan error, 1)
	go func() { served <- d.Serve(context.Background(), lis) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	id := csi.NewIdentityClient(conn)
	if _, err := id.Probe(context.Background(), &csi.ProbeRequest{}, grpc.WaitForReady(true)); err != nil {
		t.Fatal(err)
	}
	close(lis.fail)
	if err := <-served; err == nil || !strings.Contains(err.Error(), "permanent failure") {
		t.Fatalf("Serve = %v, want the listener's error", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := id.Probe(ctx, &csi.ProbeRequest{}); err == nil {
		t.Fatal("the server still answers after Serve returned")
	}
}
