package main

import (
	"context"
	"crypto/rand"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
)

// TestSIGTERMLetsInFlightCallsFinish sends SIGTERM while a slow CreateVolume (a clone that
// copies 256 MiB) is running: the call completes, the process exits 0 and removes its socket.
func TestSIGTERMLetsInFlightCallsFinish(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the driver binary")
	}
	bin := buildBinary(t)
	dir := t.TempDir()
	p := startProcess(t, bin, dir)
	defer p.kill()
	ctx := context.Background()
	src, err := p.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "big", VolumeCapabilities: []*csi.VolumeCapability{blockCapability()},
		CapacityRange: &csi.CapacityRange{RequiredBytes: 256 << 20}})
	if err != nil {
		t.Fatal(err)
	}
	// Fill the source with data so the clone has real work to do.
	id := src.GetVolume().GetVolumeId()
	img := filepath.Join(dir, "state", "volumes", id[4:6], id+".img")
	f, err := os.OpenFile(img, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	chunk := make([]byte, 4<<20)
	if _, err := rand.Read(chunk); err != nil {
		t.Fatal(err)
	}
	for off := int64(0); off < 256<<20; off += int64(len(chunk)) {
		if _, err := f.WriteAt(chunk, off); err != nil {
			t.Fatal(err)
		}
	}
	f.Close()

	volumesDir := filepath.Join(dir, "state", "volumes")
	before := imageCount(t, volumesDir)
	clone := make(chan error, 1)
	go func() {
		_, err := p.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "clone", VolumeCapabilities: []*csi.VolumeCapability{blockCapability()},
			VolumeContentSource: &csi.VolumeContentSource{Type: &csi.VolumeContentSource_Volume{Volume: &csi.VolumeContentSource_VolumeSource{VolumeId: src.GetVolume().GetVolumeId()}}}})
		clone <- err
	}()
	// The clone is in flight once its image file exists (the driver creates it before copying).
	deadline := time.Now().Add(30 * time.Second)
	for imageCount(t, volumesDir) == before {
		select {
		case err := <-clone:
			t.Fatalf("clone finished before SIGTERM could be sent (err %v); make the source bigger", err)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the clone never started")
		}
		time.Sleep(time.Millisecond) // observing progress, not synchronising: the check above decides
	}
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := <-clone; err != nil {
		t.Fatalf("the in-flight clone failed during graceful stop: %v", err)
	}
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("the driver did not exit 0 after SIGTERM: %v", err)
	}
	if _, err := os.Stat(p.sock); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("socket still present after exit: %v", err)
	}
}

func imageCount(t *testing.T, dir string) int {
	paths, err := filepath.Glob(filepath.Join(dir, "*", "*.img"))
	if err != nil {
		t.Fatal(err)
	}
	return len(paths)
}
