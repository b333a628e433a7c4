package hostpath

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestRestartAfterLostBackings: what a crash can leave, handled at start-up. A volume made empty
// whose backing did not reach the disk (its create committed, the unsynced new entry was lost
// with the machine) is made again, empty, and keeps its ID and name; a copy missing its backing,
// or a volume whose delete was cut short in the trash, is dropped and its name freed.
func TestRestartAfterLostBackings(t *testing.T) {
	ctx := context.Background()
	dirReq := &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20}}
	imageReq := &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{blockCap()},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 16 << 20}}
	removeBacking := func(t *testing.T, e *env, vol *csi.Volume) {
		l := e.plugin.Controller.l
		must(t, os.Remove(l.backing(vol.GetVolumeContext()[volumeContextKind], vol.GetVolumeId())))
	}
	tests := []struct {
		name string
		// request makes the volume (its source, if any, is made first).
		request  func(t *testing.T, e *env) *csi.CreateVolumeRequest
		lose     func(t *testing.T, e *env, vol *csi.Volume)
		wantKept bool
	}{
		{"directory, entry lost", func(*testing.T, *env) *csi.CreateVolumeRequest { return dirReq }, removeBacking, true},
		{"image, entry lost", func(*testing.T, *env) *csi.CreateVolumeRequest { return imageReq }, removeBacking, true},
		{"clone, entry lost", func(t *testing.T, e *env) *csi.CreateVolumeRequest {
			src := e.create(t, "src", 1<<20, mountCap(""))
			return &csi.CreateVolumeRequest{Name: "v", VolumeCapabilities: []*csi.VolumeCapability{mountCap("")},
				VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolumeId()}}}}
		}, removeBacking, false},
		{"delete cut short before its commit", func(*testing.T, *env) *csi.CreateVolumeRequest { return dirReq },
			func(t *testing.T, e *env, vol *csi.Volume) {
				withFailpoint(t, "delete-volume:after-backing")
				if _, err := e.controller.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: vol.GetVolumeId()}); err == nil {
					t.Fatal("the injected failure was not reported")
				}
				failpoint = nil
			}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			req := tt.request(t, e)
			resp, err := e.controller.CreateVolume(ctx, req)
			if err != nil {
				t.Fatal(err)
			}
			vol := resp.GetVolume()
			id, kind := vol.GetVolumeId(), vol.GetVolumeContext()[volumeContextKind]
			tt.lose(t, e, vol)
			e.restart()

			l := e.plugin.Controller.l
			list, err := e.controller.ListVolumes(ctx, &csi.ListVolumesRequest{})
			if err != nil {
				t.Fatal(err)
			}
			listed := slices.ContainsFunc(list.GetEntries(), func(en *csi.ListVolumesResponse_Entry) bool { return en.GetVolume().GetVolumeId() == id })
			_, statErr := os.Stat(l.backing(kind, id))
			if left, err := l.trashEntries(); err != nil || len(left) != 0 {
				t.Fatalf("after restart the trash holds %v, %v; want it empty", left, err)
			}
			again, err := e.controller.CreateVolume(ctx, req)
			if err != nil {
				t.Fatalf("CreateVolume again after restart: %v", err)
			}
			if !tt.wantKept {
				if listed || statErr == nil {
					t.Fatalf("volume %s: listed %v, backing error %v; want it dropped", id, listed, statErr)
				}
				if again.GetVolume().GetVolumeId() == id {
					t.Fatalf("the name still gives the dropped volume %s", id)
				}
				return
			}
			if !listed || statErr != nil {
				t.Fatalf("volume %s: listed %v, backing error %v; want it kept with its backing made again", id, listed, statErr)
			}
			if got := again.GetVolume().GetVolumeId(); got != id {
				t.Fatalf("the name gives %s, want the kept volume %s", got, id)
			}
			if kind == kindFile {
				if got := imageSize(t, l.volumeImage(id)); got != vol.GetCapacityBytes() {
					t.Fatalf("image made again with %d bytes, want %d", got, vol.GetCapacityBytes())
				}
			} else if got := entries(t, l.volumeDir(id)); len(got) != 0 {
				t.Fatalf("directory made again holds %v, want it empty", got)
			}
		})
	}
}
