package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// probeUntil polls Probe, as a liveness probe does, until it answers want or a minute passes.
func (cl clients) probeUntil(t *testing.T, want bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := cl.id.Probe(context.Background(), &csi.ProbeRequest{})
		if err != nil {
			t.Fatalf("Probe: %v", err)
		}
		if resp.GetReady().GetValue() == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Probe still answers ready=%v after a minute", !want)
		}
		time.Sleep(250 * time.Millisecond) // a probe's period
	}
}

// TestCephDown stops every Ceph daemon while the driver serves: each controller call answers
// UNAVAILABLE (never INTERNAL or a final code) within the Ceph timeout, Probe reports not ready;
// once the daemons are back the same driver process serves everything again and Probe is ready.
func TestCephDown(t *testing.T) {
	e := newEnv(t)
	cl := serve(t, e, 3*time.Second)
	// A driver that has had no call with secrets yet probes the monitors' ports alone.
	cold := serve(t, e, 3*time.Second)
	ctx := context.Background()
	create := func(name string) (*csi.CreateVolumeResponse, error) {
		return cl.ctrl.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, CapacityRange: &csi.CapacityRange{RequiredBytes: 1 << 20},
			VolumeCapabilities: []*csi.VolumeCapability{mountCap()}, Secrets: e.secrets})
	}
	// With a 3 s bound a loaded machine can make a healthy call UNAVAILABLE too: outside the
	// outage, calls are retried as a CO does.
	var before *csi.CreateVolumeResponse
	if err := untilAvailable(func() (err error) { before, err = create("fault-before"); return err }); err != nil {
		t.Fatal(err)
	}
	cl.probeUntil(t, true)
	cold.probeUntil(t, true)

	stopCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if err := e.c.StopDaemons(stopCtx); err != nil {
		t.Fatal(err)
	}
	restarted := false
	t.Cleanup(func() {
		if !restarted {
			if err := e.c.StartDaemons(context.Background()); err != nil {
				t.Errorf("StartDaemons: %v", err)
			}
		}
	})
	calls := []struct {
		name string
		call func() error
	}{
		{"CreateVolume", func() error { _, err := create("fault-during"); return err }},
		{"DeleteVolume", func() error {
			_, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: before.Volume.VolumeId, Secrets: e.secrets})
			return err
		}},
		{"CreateSnapshot", func() error {
			_, err := cl.ctrl.CreateSnapshot(ctx, &csi.CreateSnapshotRequest{Name: "fault-snap", SourceVolumeId: before.Volume.VolumeId, Secrets: e.secrets})
			return err
		}},
		{"ControllerExpandVolume", func() error {
			_, err := cl.ctrl.ControllerExpandVolume(ctx, &csi.ControllerExpandVolumeRequest{VolumeId: before.Volume.VolumeId,
				CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 20}, Secrets: e.secrets})
			return err
		}},
		{"ListVolumes", func() error { _, err := cl.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{}); return err }},
		{"GetCapacity", func() error { _, err := cl.ctrl.GetCapacity(ctx, &csi.GetCapacityRequest{}); return err }},
		{"NodeStageVolume", func() error {
			staging := filepath.Join(t.TempDir(), "staging")
			if err := os.Mkdir(staging, 0o750); err != nil {
				return err
			}
			_, err := cl.node.NodeStageVolume(ctx, &csi.NodeStageVolumeRequest{VolumeId: before.Volume.VolumeId, StagingTargetPath: staging,
				VolumeCapability: mountCap(), VolumeContext: before.Volume.VolumeContext, Secrets: e.secrets})
			return err
		}},
	}
	for _, c := range calls {
		start := time.Now()
		err := c.call()
		if status.Code(err) != codes.Unavailable {
			t.Errorf("%s with Ceph down: %v; want UNAVAILABLE", c.name, err)
		} else if d := time.Since(start); d > 30*time.Second {
			t.Errorf("%s took %v to answer UNAVAILABLE", c.name, d)
		} else {
			t.Logf("%s: UNAVAILABLE in %v: %s", c.name, d.Round(time.Millisecond), status.Convert(err).Message())
		}
	}
	cl.probeUntil(t, false)
	cold.probeUntil(t, false)

	if err := e.c.StartDaemons(stopCtx); err != nil {
		t.Fatal(err)
	}
	restarted = true
	cl.probeUntil(t, true)
	cold.probeUntil(t, true)
	// Ceph is healthy again; a CO retries what failed until it succeeds.
	var during *csi.CreateVolumeResponse
	if err := untilAvailable(func() (err error) { during, err = create("fault-during"); return err }); err != nil {
		t.Fatalf("CreateVolume after Ceph came back: %v", err)
	}
	var list *csi.ListVolumesResponse
	if err := untilAvailable(func() (err error) { list, err = cl.ctrl.ListVolumes(ctx, &csi.ListVolumesRequest{}); return err }); err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, en := range list.Entries {
		ids = append(ids, en.Volume.VolumeId)
	}
	for _, want := range []string{before.Volume.VolumeId, during.Volume.VolumeId} {
		if !strings.Contains(strings.Join(ids, " "), want) {
			t.Errorf("ListVolumes after the restart: %v, missing %s", ids, want)
		}
		if err := untilAvailable(func() error {
			_, err := cl.ctrl.DeleteVolume(ctx, &csi.DeleteVolumeRequest{VolumeId: want, Secrets: e.secrets})
			return err
		}); err != nil {
			t.Errorf("DeleteVolume %s: %v", want, err)
		}
	}
	if left := e.subvolumes(t); len(left) != 0 {
		t.Errorf("subvolumes left: %v", left)
	}
}

// untilAvailable repeats call while it answers UNAVAILABLE, for up to a minute, as a CO retries.
func untilAvailable(call func() error) error {
	deadline := time.Now().Add(time.Minute)
	for {
		err := call()
		if status.Code(err) != codes.Unavailable || time.Now().After(deadline) {
			return err
		}
		time.Sleep(500 * time.Millisecond) // the CO's back-off
	}
}
