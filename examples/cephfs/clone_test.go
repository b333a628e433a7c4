package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/drivertest"
)

// clients are the controller and node clients of a driver served for one test.
type clients struct {
	ctrl csi.ControllerClient
	node csi.NodeClient
	id   csi.IdentityClient
	srv  *drivertest.Server
	// logs holds what the backend logged, at debug level.
	logs *observer.ObservedLogs
}

func serve(t *testing.T, e *env, timeout time.Duration) clients {
	cfg, _, logs := e.config(t, timeout, 0)
	srv := drivertest.NewServer(t, cfg)
	return clients{csi.NewControllerClient(srv.Conn), csi.NewNodeClient(srv.Conn), csi.NewIdentityClient(srv.Conn), srv, logs}
}

// subvolumes lists the names in the driver's group, straight from Ceph.
func (e *env) subvolumes(t *testing.T) []string {
	t.Helper()
	return e.group(t, "csi")
}

// group lists the subvolumes of a group, straight from Ceph; none when the group does not exist.
func (e *env) group(t *testing.T, group string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.c.Ceph(ctx, "fs", "subvolume", "ls", e.c.CephFS.Name, "--group_name", group, "--format", "json")
	if err != nil {
		if strings.Contains(err.Error(), "does not exist") {
			return nil
		}
		t.Fatal(err)
	}
	var list []struct{ Name string }
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list {
		names = append(names, l.Name)
	}
	return names
}

func (e *env) snapshots(t *testing.T, sv string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.c.Ceph(ctx, "fs", "subvolume", "snapshot", "ls", e.c.CephFS.Name, sv, "--group_name", "csi", "--format", "json")
	if err != nil {
		t.Fatal(err)
	}
	var list []struct{ Name string }
	if err := json.Unmarshal(out, &list); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range list {
		names = append(names, l.Name)
	}
	return names
}

// stage and publish mount a volume for real and return the published path.
func (cl clients) publish(t *testing.T, e *env, v *csi.Volume) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	staging, target := filepath.Join(dir, "staging"), filepath.Join(dir, "target")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	if _, err := cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: staging,
		VolumeCapability: mountCap(), VolumeContext: v.VolumeContext, Secrets: e.secrets}); err != nil {
		t.Fatalf("NodeStageVolume: %v", err)
	}
	t.Cleanup(func() {
		if _, err := cl.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: staging}); err != nil {
			t.Errorf("NodeUnstageVolume: %v", err)
		}
	})
	if _, err := cl.node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: v.VolumeId, StagingTargetPath: staging,
		TargetPath: target, VolumeCapability: mountCap(), VolumeContext: v.VolumeContext}); err != nil {
		t.Fatalf("NodePublishVolume: %v", err)
	}
	t.Cleanup(func() {
		if _, err := cl.node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: v.VolumeId, TargetPath: target}); err != nil {
			t.Errorf("NodeUnpublishVolume: %v", err)
		}
	})
	return target
}

// createUntilDone repeats CreateVolume as a CO does while the answer is ABORTED and returns the
// volume and how many ABORTED answers came first.
func (cl clients) createUntilDone(t *testing.T, req *csi.CreateVolumeRequest) (*csi.Volume, int) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for aborted := 0; ; aborted++ {
		resp, err := cl.ctrl.CreateVolume(context.Background(), req)
		if err == nil {
			return resp.Volume, aborted
		}
		if status.Code(err) != codes.Aborted || time.Now().After(deadline) {
			t.Fatalf("CreateVolume %s after %d ABORTED answers: %v", req.Name, aborted, err)
		}
		time.Sleep(200 * time.Millisecond) // the CO's back-off between retries, not synchronisation
	}
}

// TestCloneInProgress restores a snapshot and clones a volume, each holding a file, through the
// mgr's asynchronous clone: the first CreateVolume finds the clone in progress and answers
// ABORTED, the retries complete it, and in the end there is exactly one subvolume per volume,
// with the data, and no clone snapshot left on the source.
func TestCloneInProgress(t *testing.T) {
	e := newEnv(t)
	cl := serve(t, e, time.Minute)
	ctx := context.Background()
	src, err := cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone-src", CapacityRange: &csi.CapacityRange{RequiredBytes: 64 << 20},
		VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	// Cleanups run last first: the volume is deleted after it is unpublished.
	t.Cleanup(func() {
		if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: src.Volume.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
		if left := e.subvolumes(t); len(left) != 0 {
			t.Errorf("subvolumes left: %v", left)
		}
	})
	mnt := cl.publish(t, e, src.Volume)
	if err := os.WriteFile(filepath.Join(mnt, "hello"), []byte("from the source"), 0o644); err != nil {
		t.Fatal(err)
	}
	snap, err := cl.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "clone-snap", SourceVolumeId: src.Volume.VolumeId, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mnt, "hello"), []byte("after the snapshot"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		source *csi.VolumeContentSource
		want   string
	}{
		{"restored", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Snapshot{Snapshot: &csi.VolumeContentSource_SnapshotSource{SnapshotId: snap.Snapshot.SnapshotId}}}, "from the source"},
		{"cloned", &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.Volume.VolumeId}}}, "after the snapshot"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &csi.CreateVolumeRequest{Name: tc.name, CapacityRange: &csi.CapacityRange{RequiredBytes: 128 << 20},
				VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, VolumeContentSource: tc.source, Secrets: e.secrets}
			v, aborted := cl.createUntilDone(t, req)
			if aborted == 0 {
				t.Errorf("the first CreateVolume completed the clone; want ABORTED while the mgr clones (at least one)")
			}
			t.Logf("%s: %d ABORTED answers before OK", tc.name, aborted)
			t.Cleanup(func() {
				if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.VolumeId, Secrets: e.secrets}); err != nil {
					t.Errorf("DeleteVolume: %v", err)
				}
			})
			if v.CapacityBytes != 128<<20 {
				t.Errorf("capacity %d, want %d", v.CapacityBytes, 128<<20)
			}
			again, err := cl.ctrl.CreateVolume(ctx, req)
			if err != nil || again.Volume.VolumeId != v.VolumeId {
				t.Fatalf("a retry after completion: %v, %v", again, err)
			}
			n := 0
			for _, s := range e.subvolumes(t) {
				if s == v.VolumeId {
					n++
				}
			}
			if n != 1 {
				t.Errorf("%d subvolumes named %s, want 1", n, v.VolumeId)
			}
			target := cl.publish(t, e, v)
			got, err := os.ReadFile(filepath.Join(target, "hello"))
			if err != nil || string(got) != tc.want {
				t.Errorf("the clone holds %q, %v; want %q", got, err, tc.want)
			}
			// ceph-fuse shows the quota as the filesystem's size.
			stats, err := cl.node.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: v.VolumeId, VolumePath: target})
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range stats.Usage {
				if u.Unit == csi.VolumeUsage_BYTES && u.Total != v.CapacityBytes {
					t.Errorf("NodeGetVolumeStats: %d bytes in all, want the quota %d", u.Total, v.CapacityBytes)
				}
			}
		})
	}
	if snaps := e.snapshots(t, src.Volume.VolumeId); len(snaps) != 1 || snaps[0] != "clone-snap" {
		t.Errorf("the source has snapshots %v, want only clone-snap (the clone's own snapshot removed)", snaps)
	}
	if _, err := cl.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId, Secrets: e.secrets}); err != nil {
		t.Fatal(err)
	}
}
