package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/cmdline"
)

// TestMinimalDriver runs the example as a newcomer would and walks a volume through its life.
func TestMinimalDriver(t *testing.T) {
	dir := t.TempDir()
	sock := filepath.Join(dir, "csi.sock")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, &cmdline.Settings{Endpoint: "unix://" + sock, LogLevel: "error"}, filepath.Join(dir, "volumes"))
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("run: %v", err)
		}
	}()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	identity, ctrl, node := csi.NewIdentityClient(conn), csi.NewControllerClient(conn), csi.NewNodeClient(conn)
	wait := grpc.WaitForReady(true)
	if _, err := identity.Probe(ctx, &csi.ProbeRequest{}, wait); err != nil {
		t.Fatal(err)
	}
	capability := &csi.VolumeCapability{
		AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{}},
		AccessMode: &csi.VolumeCapability_AccessMode{Mode: csi.VolumeCapability_AccessMode_SINGLE_NODE_WRITER},
	}
	create := &csi.CreateVolumeRequest{Name: "pvc-1", VolumeCapabilities: []*csi.VolumeCapability{capability}}
	vol, err := ctrl.CreateVolume(ctx, create)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ctrl.CreateVolume(ctx, create)
	if err != nil || again.GetVolume().GetVolumeId() != vol.GetVolume().GetVolumeId() {
		t.Fatalf("repeated CreateVolume = %v, %v; want the same volume", again, err)
	}
	create.Parameters = map[string]string{"other": "settings"}
	if _, err := ctrl.CreateVolume(ctx, create); status.Code(err) != codes.AlreadyExists {
		t.Fatalf("same name, other parameters: %v, want ALREADY_EXISTS", err)
	}
	if _, err := ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "pvc-2"}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("no capabilities: %v, want INVALID_ARGUMENT", err)
	}
	id := vol.GetVolume().GetVolumeId()
	if os.Geteuid() == 0 {
		target := filepath.Join(dir, "pod", "mnt")
		if _, err := node.NodePublishVolume(ctx, &csi.NodePublishVolumeRequest{VolumeId: id, TargetPath: target, VolumeCapability: capability}); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(target, "hello"), []byte("hi"), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(filepath.Join(dir, "volumes", id, "hello")); err != nil {
			t.Fatalf("write through the bind mount did not reach the volume: %v", err)
		}
		if _, err := node.NodeUnpublishVolume(ctx, &csi.NodeUnpublishVolumeRequest{VolumeId: id, TargetPath: target}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(target); !os.IsNotExist(err) {
			t.Fatalf("target still present after unpublish: %v", err)
		}
	} else {
		t.Log("not root: skipping the bind-mount part (NodePublishVolume needs mount privileges)")
	}
	for range 2 {
		if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "volumes", id)); !os.IsNotExist(err) {
		t.Fatalf("volume directory still present after delete: %v", err)
	}
}
