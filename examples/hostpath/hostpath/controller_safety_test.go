package hostpath

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver"
)

func imageSize(t *testing.T, path string) int64 {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Size()
}

// setRecordSize makes a volume's record say size, as an expansion that committed and was cut
// short before it grew the image leaves it.
func (e *env) setRecordSize(t *testing.T, id string, size int64) {
	t.Helper()
	err := e.plugin.Controller.st.update(func(tx *bolt.Tx) error {
		var rec volumeRecord
		if err := getJSON(tx, bVolumes, id, &rec); err != nil {
			return err
		}
		delta := size - rec.Size
		rec.Size = size
		if err := putJSON(tx, bVolumes, id, &rec); err != nil {
			return err
		}
		return addCounter(tx, bMeta, metaUsed, delta)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestExpandNeverGrowsPastTheReservation: the image grows only once the space is reserved, and
// an image left smaller than its record is grown by a retry or at start-up.
func TestExpandNeverGrowsPastTheReservation(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		run  func(t *testing.T, e *env, id, img string)
	}{
		{"refused for capacity", func(t *testing.T, e *env, id, img string) {
			e.create(t, "big", 40<<30, mountCap(""))
			_, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 30 << 30}})
			wantCode(t, "expansion past the pool", err, codes.ResourceExhausted)
			if got := imageSize(t, img); got != 16<<20 {
				t.Fatalf("a refused expansion grew the image to %d bytes", got)
			}
		}},
		{"growing the image fails", func(t *testing.T, e *env, id, img string) {
			must(t, os.Remove(img)) // the file the expansion must grow is gone
			_, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 32 << 20}})
			wantCode(t, "expansion of a missing image", err, codes.Internal)
			if rec, _ := e.plugin.Controller.volume(id); rec.Size != 16<<20 {
				t.Fatalf("the record kept the failed expansion: %d bytes", rec.Size)
			}
			cp, err := e.controller.GetCapacity(ctx, &csi.GetCapacityRequest{})
			if err != nil || cp.GetAvailableCapacity() != e.cfg.CapacityBytes-16<<20 {
				t.Fatalf("the reservation of the failed expansion was not given back: %v, %v", cp, err)
			}
		}},
		{"cut short, then retried", func(t *testing.T, e *env, id, img string) {
			e.setRecordSize(t, id, 32<<20)
			r, err := e.controller.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: id, CapacityRange: &csi.CapacityRange{RequiredBytes: 32 << 20}})
			if err != nil || r.GetCapacityBytes() != 32<<20 {
				t.Fatalf("retry: %v, %v", r, err)
			}
			if got := imageSize(t, img); got != 32<<20 {
				t.Fatalf("the retry left the image at %d bytes, want 32 MiB", got)
			}
		}},
		{"cut short, then restarted", func(t *testing.T, e *env, id, img string) {
			e.setRecordSize(t, id, 48<<20)
			e.restart()
			if got := imageSize(t, img); got != 48<<20 {
				t.Fatalf("start-up left the image at %d bytes, want 48 MiB", got)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			vol := e.create(t, "v", 16<<20, blockCap())
			tt.run(t, e, vol.GetVolumeId(), e.plugin.Controller.l.volumeImage(vol.GetVolumeId()))
		})
	}
}

// TestGroupSnapshotDeleteCutShort: a group delete killed after removing one member's copy is
// finished at start-up, so the group's name can be used again.
func TestGroupSnapshotDeleteCutShort(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.create(t, "a", 1<<20, mountCap("")).GetVolumeId()
	b := e.create(t, "b", 1<<20, blockCap()).GetVolumeId()
	g, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{a, b}})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range g.GetGroupSnapshot().GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	first, _ := e.plugin.Controller.snapshot(ids[0])
	must(t, removeAll(e.plugin.Controller.l.snapshotBacking(first.Kind, first.ID))) // where the kill landed
	e.restart()
	gid := g.GetGroupSnapshot().GetGroupSnapshotId()
	_, err = e.group.GetVolumeGroupSnapshot(ctx, &csi.GetVolumeGroupSnapshotRequest{GroupSnapshotId: gid, SnapshotIds: ids})
	wantCode(t, "GetVolumeGroupSnapshot of the deleted group", err, codes.NotFound)
	if got := backings(t, e.plugin.Controller.l.snapshotsDir()); len(got) != 0 {
		t.Fatalf("members of the deleted group left: %v", got)
	}
	if _, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{a, b}}); err != nil {
		t.Fatalf("creating the group again: %v", err)
	}
}

// TestStoreWritesAfterClose: a handler still running after a hard stop gets an error from the
// store, not a panic.
func TestStoreWritesAfterClose(t *testing.T) {
	s, err := openStore(filepath.Join(t.TempDir(), "db"), bMeta)
	if err != nil {
		t.Fatal(err)
	}
	write := func() error {
		return s.update(func(tx *bolt.Tx) error { return addCounter(tx, bMeta, "n", 1) })
	}
	var wg sync.WaitGroup
	errs := make(chan error, 64)
	for range 64 {
		wg.Add(1)
		go func() { defer wg.Done(); errs <- write() }()
	}
	must(t, s.close())
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil && !errors.Is(err, errClosed) {
			t.Fatalf("write racing close: %v", err)
		}
	}
	if err := write(); !errors.Is(err, driver.ErrUnavailable) {
		t.Fatalf("write after close: %v, want UNAVAILABLE", err)
	}
	must(t, s.close()) // closing twice is harmless
}

// TestSourcesRefuseContradictingParameters: a restore or clone keeps its source's backing; a
// kind or filesystem parameter that says otherwise is refused instead of ignored.
func TestSourcesRefuseContradictingParameters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	dirSrc := e.create(t, "dir-src", 1<<20, mountCap(""))
	extSrc := e.create(t, "ext4-src", 1<<20, mountCap("ext4"))
	rawSrc := e.create(t, "raw-src", 1<<20, blockCap())
	from := func(v *csi.Volume) *csi.VolumeContentSource {
		return &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: v.GetVolumeId()}}}
	}
	tests := []struct {
		name   string
		src    *csi.Volume
		params map[string]string
		cp     *csi.VolumeCapability
		want   codes.Code
	}{
		{"kind=file from a directory", dirSrc, map[string]string{ParamKind: kindFile}, mountCap(""), codes.InvalidArgument},
		{"kind=dir from an image", extSrc, map[string]string{ParamKind: kindDir}, mountCap(""), codes.InvalidArgument},
		{"fstype=xfs from ext4", extSrc, map[string]string{ParamFSType: "xfs"}, mountCap(""), codes.InvalidArgument},
		{"fstype=ext4 from a raw block volume, as block", rawSrc, map[string]string{ParamFSType: "ext4"}, blockCap(), codes.OK},
		{"fstype=ext4 from a directory", dirSrc, map[string]string{ParamFSType: "ext4"}, mountCap(""), codes.InvalidArgument},
		{"matching kind", extSrc, map[string]string{ParamKind: kindFile, ParamFSType: "ext4"}, mountCap(""), codes.OK},
		{"no parameters", dirSrc, nil, mountCap(""), codes.OK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone " + tt.name, Parameters: tt.params,
				VolumeCapabilities: []*csi.VolumeCapability{tt.cp}, VolumeContentSource: from(tt.src)})
			wantCode(t, "CreateVolume", err, tt.want)
		})
	}
}

// TestSnapshotsUseCapacity: a snapshot is a full copy, so it takes pool space until deleted, and
// the recomputation at start-up counts it.
func TestSnapshotsUseCapacity(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	free := func() int64 {
		t.Helper()
		cp, err := e.controller.GetCapacity(ctx, &csi.GetCapacityRequest{})
		if err != nil {
			t.Fatal(err)
		}
		return cp.GetAvailableCapacity()
	}
	vol := e.create(t, "v", 8<<30, mountCap(""))
	other := e.create(t, "w", 4<<30, mountCap(""))
	total := e.cfg.CapacityBytes
	snap, err := e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "s", SourceVolumeId: vol.GetVolumeId()})
	if err != nil {
		t.Fatal(err)
	}
	if got := free(); got != total-20<<30 {
		t.Fatalf("free after a snapshot: %d, want %d", got, total-20<<30)
	}
	g, err := e.group.CreateVolumeGroupSnapshot(ctx, &csi.CreateVolumeGroupSnapshotRequest{Name: "g", SourceVolumeIds: []string{vol.GetVolumeId(), other.GetVolumeId()}})
	if err != nil {
		t.Fatal(err)
	}
	if got := free(); got != total-32<<30 {
		t.Fatalf("free after a group snapshot: %d, want %d", got, total-32<<30)
	}
	e.restart()
	if got := free(); got != total-32<<30 {
		t.Fatalf("free after a restart: %d, want %d", got, total-32<<30)
	}
	// With 7 GiB left, another copy of the 8 GiB volume does not fit.
	filler := total - 39<<30
	e.create(t, "filler", filler, mountCap(""))
	_, err = e.controller.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "too-much", SourceVolumeId: vol.GetVolumeId()})
	wantCode(t, "a snapshot that does not fit", err, codes.ResourceExhausted)
	if _, err := e.controller.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.GetSnapshot().GetSnapshotId()}); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range g.GetGroupSnapshot().GetSnapshots() {
		ids = append(ids, s.GetSnapshotId())
	}
	if _, err := e.group.DeleteVolumeGroupSnapshot(ctx, &csi.DeleteVolumeGroupSnapshotRequest{GroupSnapshotId: g.GetGroupSnapshot().GetGroupSnapshotId(), SnapshotIds: ids}); err != nil {
		t.Fatal(err)
	}
	if got, want := free(), total-filler-12<<30; got != want {
		t.Fatalf("free after deleting the snapshots: %d, want %d", got, want)
	}
}
