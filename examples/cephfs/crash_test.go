package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// startBinary runs the built driver on sock, controller only, in its own subvolume group.
func startBinary(t *testing.T, e *env, bin, sock string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(bin, "--endpoint", "unix://"+sock, "--monitors", e.c.MonHost, "--fs-name", e.c.CephFS.Name,
		"--subvolume-group", "crash", "--mode", "controller", "--log-level", "error")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(sock); err == nil {
			return cmd
		}
		if time.Now().After(deadline) {
			t.Fatal("the driver did not listen within 30 s")
		}
		time.Sleep(50 * time.Millisecond) // waiting for another process's socket
	}
}

// TestKill9DuringCreates kills the driver (SIGKILL) while a loop creates volumes, restarts it,
// and lets the "CO" retry the create that got no answer, as it must: every acknowledged volume
// is then listed with its ID, exactly the listed volumes exist in Ceph (no duplicate, no orphan
// subvolume), and deleting them leaves the group empty.
func TestKill9DuringCreates(t *testing.T) {
	e := newEnv(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "cephfs")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	sock := filepath.Join(dir, "csi.sock")
	cmd := startBinary(t, e, bin, sock)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctrl := csi.NewControllerClient(conn)
	req := func(i int) *csi.CreateVolumeRequest {
		return &csi.CreateVolumeRequest{Name: fmt.Sprintf("crash-%d", i), CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets}
	}

	acked := map[string]string{} // CSI name -> volume ID
	var answered atomic.Int32
	errs := make(chan error, 1)
	killed := make(chan struct{})
	go func() {
		// The kill lands while creates are in flight: after the fifth answer, in the middle of
		// whatever the loop is doing then.
		for answered.Load() < 5 {
			time.Sleep(10 * time.Millisecond)
		}
		errs <- cmd.Process.Kill()
		close(killed)
	}()
	inFlight := -1
	for i := 0; ; i++ {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		resp, err := ctrl.CreateVolume(ctx, req(i))
		cancel()
		if err != nil {
			inFlight = i // no answer: the CO will retry this name
			break
		}
		acked[req(i).Name] = resp.Volume.VolumeId
		answered.Add(1)
	}
	<-killed
	if err := <-errs; err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	t.Logf("killed after %d acknowledged creates; create %d got no answer", len(acked), inFlight)

	os.Remove(sock)
	startBinary(t, e, bin, sock)
	ctx := context.Background()
	// A CO retries the unanswered create with the same name until it gets an answer.
	resp, err := ctrl.CreateVolume(ctx, req(inFlight))
	for deadline := time.Now().Add(time.Minute); err != nil && time.Now().Before(deadline); resp, err = ctrl.CreateVolume(ctx, req(inFlight)) {
		time.Sleep(200 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("retried create: %v", err)
	}
	acked[req(inFlight).Name] = resp.Volume.VolumeId

	list, err := ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{})
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, en := range list.Entries {
		listed = append(listed, en.Volume.VolumeId)
	}
	var want []string
	for _, id := range acked {
		want = append(want, id)
	}
	slices.Sort(listed)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("listed %v, acknowledged %v", listed, want)
	}
	inCeph := e.group(t, "crash")
	slices.Sort(inCeph)
	if !slices.Equal(inCeph, want) {
		t.Errorf("subvolumes in Ceph %v, acknowledged %v: a duplicate or an orphan", inCeph, want)
	}
	for _, id := range want {
		if _, err := ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: id, Secrets: e.secrets}); err != nil {
			t.Errorf("DeleteVolume %s: %v", id, err)
		}
	}
	if left := e.group(t, "crash"); len(left) != 0 {
		t.Errorf("subvolumes left in Ceph: %v", left)
	}
}
