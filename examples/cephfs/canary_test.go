package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/examples/cephfs/cephfs"
)

// TestKeyNeverLogged drives every path a key travels (a create, a snapshot, a failed
// authentication, a ceph-fuse stage and unstage, a stage with a bad key) with the driver and the
// plugin logging at debug level, and checks that the key is in no log line and no error, that no
// process ever had it on its command line, and that the keyring handed to ceph-fuse is gone once
// the mount is made.
func TestKeyNeverLogged(t *testing.T) {
	e := newEnv(t)
	cl := serve(t, e, time.Minute)
	ctx := context.Background()
	key := e.key()
	var answers []string
	note := func(err error) {
		if err != nil {
			answers = append(answers, err.Error())
		}
	}
	before := keyringDirs(t)

	v, err := cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "canary", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: v.Volume.VolumeId, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume: %v", err)
		}
	})
	snap, err := cl.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "canary-snap", SourceVolumeId: v.Volume.VolumeId, Secrets: e.secrets})
	note(err)
	if err == nil {
		_, err = cl.ctrl.DeleteSnapshot(ctx, &csi.DeleteSnapshotRequest{SnapshotId: snap.Snapshot.SnapshotId, Secrets: e.secrets})
		note(err)
	}

	// A key of the right form that cephx refuses: the key itself must not come back either.
	other, err := exec.Command("ceph-authtool", "--gen-print-key").Output()
	if err != nil {
		t.Fatalf("ceph-authtool: %v", err)
	}
	wrong := map[string]string{cephfs.SecretUserID: testUser, cephfs.SecretUserKey: strings.TrimSpace(string(other))}
	_, err = cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "canary-wrong", VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: wrong})
	if c := status.Code(err); c != codes.Unauthenticated && c != codes.PermissionDenied {
		t.Errorf("CreateVolume with a wrong key: %v; want UNAUTHENTICATED", err)
	}
	note(err)

	staging := filepath.Join(t.TempDir(), "staging")
	if err := os.Mkdir(staging, 0o750); err != nil {
		t.Fatal(err)
	}
	_, err = cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging,
		VolumeCapability: mountCap(), VolumeContext: v.Volume.VolumeContext, Secrets: wrong})
	if err == nil {
		t.Errorf("NodeStageVolume with a wrong key succeeded")
	}
	note(err)
	_, err = cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging,
		VolumeCapability: mountCap(), VolumeContext: v.Volume.VolumeContext, Secrets: e.secrets})
	if err != nil {
		t.Fatal(err)
	}
	for _, cmdline := range cephFuseCmdlines(t) {
		if strings.Contains(cmdline, key) {
			t.Errorf("a ceph-fuse has the key on its command line")
		}
	}
	if after := keyringDirs(t); len(after) != len(before) {
		t.Errorf("keyring directories left after the mount: %v (before: %v)", after, before)
	}
	_, err = cl.node.NodeUnstageVolume(ctx, &csi.NodeUnstageVolumeRequest{VolumeId: v.Volume.VolumeId, StagingTargetPath: staging})
	note(err)

	for where, text := range map[string]string{"driver log": dump(cl.logs), "plugin log": cl.srv.Logs(), "answers": strings.Join(answers, "\n")} {
		if strings.Contains(text, key) || strings.Contains(text, wrong[cephfs.SecretUserKey]) {
			t.Errorf("the key appears in the %s", where)
		}
		if where == "plugin log" && !strings.Contains(text, "canary") {
			t.Errorf("the plugin log holds no line about the calls: the search proves nothing")
		}
	}
}

// cephFuseCmdlines returns the command lines of every running ceph-fuse.
func cephFuseCmdlines(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		raw, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(raw), "ceph-fuse") {
			out = append(out, strings.ReplaceAll(string(raw), "\x00", " "))
		}
	}
	if len(out) == 0 {
		t.Fatal("no ceph-fuse is running: the command line check proves nothing")
	}
	return out
}

// keyringDirs lists the temporary directories the driver makes for ceph-fuse's keyring.
func keyringDirs(t *testing.T) []string {
	t.Helper()
	m, err := filepath.Glob(filepath.Join(os.TempDir(), "csikit-cephfs-*"))
	if err != nil {
		t.Fatal(err)
	}
	return m
}
