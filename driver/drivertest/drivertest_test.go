package drivertest_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/driver/volumegroup"
)

// fullConfig is every memdriver backend and feature, as in driver/plugin/harness_test.go.
func fullConfig(backend driver.Controller) plugin.Config {
	return plugin.Config{
		Name:             "mem.csikit.dev",
		VendorVersion:    "1.0.0",
		Controller:       backend,
		Node:             backend.(driver.Node),
		GroupController:  backend.(driver.GroupController),
		SnapshotMetadata: backend.(driver.SnapshotMetadata),
		VolumeGroups:     &plugin.VolumeGroupConfig{Controller: backend.(volumegroup.Controller)},
		Features: driver.Features{
			CloneVolume:                    true,
			PublishReadonly:                true,
			ListVolumesPublishedNodes:      true,
			SingleNodeMultiWriter:          true,
			VolumeAccessibilityConstraints: true,
		},
		CheckResponses: true,
	}
}

// newMem is the in-memory backend with what csi-sanity needs: a topology (the plugin advertises
// VOLUME_ACCESSIBILITY_CONSTRAINTS, so NodeGetInfo must report one) and a mutable parameter.
func newMem() *memdriver.Driver {
	return memdriver.New(memdriver.Options{
		MutableParameters: []string{"iops"},
		Topology:          driver.Topology{"topology.mem.csikit.dev/zone": "zone-1"},
		MaxGroupMembers:   memGroupLimit,
	})
}

func memOptions() drivertest.Options {
	return drivertest.Options{
		TestVolumeMutableParameters: map[string]string{"iops": "3000"},
		TestVolumeSize:              64 << 20,
		TestVolumeExpandSize:        128 << 20,
		VolumeGroups: drivertest.VolumeGroupOptions{
			Secrets:              map[string]string{"vg-password": "memdriver-volume-group-secret"},
			MaxMembers:           memGroupLimit,
			ExclusiveMembership:  true,
			PublishedMemberInUse: true,
			JoinParameter:        memdriver.ParamVolumeGroup,
			SnapshotParameter:    memdriver.ParamVolumeGroup,
		},
	}
}

// memGroupLimit is the member limit of the in-memory backend's volume groups.
const memGroupLimit = 4

// The skips a full memdriver run may have, each for a reason outside the driver.
var wantSkips = map[string]string{
	"Controller Service [Controller Server] ControllerPublishVolume should fail when publishing more volumes than the node max attach limit":                                "testnodevolumeattachlimit not enabled",
	"Controller Service [Controller Server] ListVolumes pagination should detect volumes added between pages and accept tokens when the last volume from a page is deleted": "disabled in csi-sanity itself (XIt)",
	"CreateSnapshot [Controller Server] should succeed when creating a snapshot with accessibility requirements":                                                            "SNAPSHOT_ACCESSIBILITY_CONSTRAINTS not supported",
}

// TestMemdriver runs the whole suite against the in-memory backend. It mounts nothing, so the
// unprivileged profile runs every spec (NoMounts).
func TestMemdriver(t *testing.T) {
	opts := memOptions()
	opts.NoMounts = true
	res := drivertest.CSI(t, fullConfig(newMem()), opts)
	if res.Failed != 0 {
		t.Errorf("%d specs failed", res.Failed)
	}
	if !maps.Equal(res.Skips, wantSkips) {
		t.Errorf("skips = %v, want %v", res.Skips, wantSkips)
	}
}

// Each of these runs in a child process, because Ginkgo runs one suite per process.
var children = map[string]func(t *testing.T) drivertest.Result{
	// The unprivileged profile of a driver that mounts: the mount specs are skipped.
	"unprivileged": func(t *testing.T) drivertest.Result {
		return drivertest.CSI(t, fullConfig(newMem()), memOptions())
	},
	// A driver with a capacity bug: it cannot restore a snapshot larger than the size asked for.
	"capacity-bug": func(t *testing.T) drivertest.Result {
		opts := memOptions()
		opts.NoMounts = true
		return drivertest.CSI(t, fullConfig(&undersizedRestore{Driver: newMem()}), opts)
	},
	// A driver with planted faults that only csikit's own specs detect.
	"faulty": func(t *testing.T) drivertest.Result {
		f := &faulty{Driver: newMem()}
		opts := memOptions()
		opts.NoMounts = true
		opts.Logs = f.logs.String
		return drivertest.CSI(t, fullConfig(f), opts)
	},
}

// TestChild is the child side of TestProfiles; it does nothing in a normal run.
func TestChild(t *testing.T) {
	name := os.Getenv("DRIVERTEST_CHILD")
	if name == "" {
		t.Skip("runs only as a child process of TestProfiles")
	}
	res := children[name](t)
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv("DRIVERTEST_RESULT"), b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// runChild runs one child suite and returns its result.
func runChild(t *testing.T, name string) drivertest.Result {
	t.Helper()
	out := filepath.Join(t.TempDir(), "result.json")
	cmd := exec.Command(os.Args[0], "-test.run=^TestChild$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "DRIVERTEST_CHILD="+name, "DRIVERTEST_RESULT="+out)
	output, _ := cmd.CombinedOutput() // the faulty child fails by design
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatalf("child %s left no result: %v\n%s", name, err, output)
	}
	var res drivertest.Result
	if err := json.Unmarshal(b, &res); err != nil {
		t.Fatal(err)
	}
	return res
}

func TestProfiles(t *testing.T) {
	if os.Getenv("DRIVERTEST_CHILD") != "" {
		t.Skip("child process")
	}
	t.Parallel()

	t.Run("unprivileged", func(t *testing.T) {
		t.Parallel()
		res := runChild(t, "unprivileged")
		if res.Failed != 0 {
			t.Errorf("%d specs failed: %v", res.Failed, slices.Collect(maps.Keys(res.Failures)))
		}
		want := maps.Clone(wantSkips)
		for _, m := range drivertest.MountSpecs() {
			want[m.Spec] = "unprivileged profile: " + m.Reason
		}
		if !maps.Equal(res.Skips, want) {
			t.Errorf("skips:\n%s\nwant:\n%s", show(res.Skips), show(want))
		}
	})

	t.Run("faulty", func(t *testing.T) {
		t.Parallel()
		res := runChild(t, "faulty")
		want := map[string]string{
			"csikit pagination ListVolumes returns every volume exactly once across pages of 1, 3 and 7 entries":                                                                          "never returned",
			"csikit idempotency a repeated CreateVolume, ControllerPublishVolume, ControllerExpandVolume or CreateSnapshot gets the same answer, a repeated delete or unpublish succeeds": "CreateSnapshot answered differently",
			"csikit secret-canary no secret sent with any controller, group or snapshot metadata call appears in a response, an error or a log line":                                      "appears in the response",
			"csikit secret-canary no secret sent through a node stage and publish lifecycle appears in a response, an error or a log line":                                                "is logged",
			"csikit secret-canary no secret sent with any volume-group call appears in a response, an error or a log line":                                                                "appears in the response",
			"csikit volume-groups DeleteVolumeGroup of a group with a published member is FAILED_PRECONDITION and deletes nothing":                                                        "want FailedPrecondition",
			"csikit volume-groups a volume group is created empty, read back, given exactly the listed members, emptied, listed, and deleted with its volumes":                            "deleted volume",
		}
		for spec, msg := range want {
			got, ok := res.Failures[spec]
			switch {
			case !ok:
				t.Errorf("the faulty driver passed %q", spec)
			case !strings.Contains(got, msg):
				t.Errorf("%q failed with %q, want a message containing %q", spec, got, msg)
			}
		}
		for spec, msg := range res.Failures {
			if _, ok := want[spec]; !ok {
				t.Errorf("unexpected failure of %q: %s", spec, msg)
			}
		}
	})
}

// TestConformanceFailureNamesTheOperation: a driver with a capacity bug fails the secret canary,
// whose lifecycle restores a snapshot of an expanded volume. The failure must say that this
// operation failed, not only which spec (nor only csi-sanity's "volume create failed").
func TestConformanceFailureNamesTheOperation(t *testing.T) {
	if os.Getenv("DRIVERTEST_CHILD") != "" {
		t.Skip("child process")
	}
	res := runChild(t, "capacity-bug")
	const spec = "csikit secret-canary no secret sent with any controller, group or snapshot metadata call appears in a response, an error or a log line"
	got, ok := res.Failures[spec]
	if !ok {
		t.Fatalf("the driver with a capacity bug passed %q; failures: %v", spec, res.Failures)
	}
	for _, want := range []string{"CreateVolume from a snapshot of the expanded volume", "OutOfRange", "snapshot holds"} {
		if !strings.Contains(got, want) {
			t.Errorf("%q failed with:\n%s\nwant it to name %q", spec, got, want)
		}
	}
}

// undersizedRestore is the in-memory backend with a capacity bug: it restores a snapshot only
// into a volume no larger than the size the request asks for, so a snapshot of a volume that was
// expanded since it was created cannot be restored at the volume's original size.
type undersizedRestore struct{ *memdriver.Driver }

func (u *undersizedRestore) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	if id := req.Source.SnapshotID; id != "" && req.Capacity.RequiredBytes > 0 {
		if snap, err := u.Driver.GetSnapshot(ctx, &driver.GetSnapshotRequest{SnapshotID: id}); err == nil && snap.SizeBytes > req.Capacity.RequiredBytes {
			return nil, fmt.Errorf("the snapshot holds %d bytes, more than the %d asked for: %w", snap.SizeBytes, req.Capacity.RequiredBytes, driver.ErrOutOfRange)
		}
	}
	return u.Driver.CreateVolume(ctx, req)
}

func show(m map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "  %s: %s\n", k, m[k])
	}
	return b.String()
}

// faulty is the in-memory backend with faults planted where only csikit's specs look: it leaks
// secrets into volume contexts and its own logs, skips an entry at every page boundary, gives a
// repeated CreateSnapshot a new creation time, and deletes a volume group without its volumes.
type faulty struct {
	*memdriver.Driver
	logs syncBuffer
}

func (f *faulty) CreateVolume(ctx context.Context, req *driver.CreateVolumeRequest) (*driver.Volume, error) {
	v, err := f.Driver.CreateVolume(ctx, req)
	if err != nil || len(req.Secrets) == 0 {
		return v, err
	}
	v.Context = maps.Clone(v.Context)
	for k, s := range req.Secrets {
		v.Context["leaked-"+k] = s
		fmt.Fprintf(&f.logs, "creating volume %s with secret %s=%s\n", req.Name, k, s)
	}
	return v, nil
}

func (f *faulty) ListVolumesPage(ctx context.Context, req *driver.ListVolumesRequest) ([]driver.VolumeEntry, error) {
	page, err := f.Driver.ListVolumesPage(ctx, req)
	if err == nil && req.After != "" && req.Limit > 0 && len(page) > 0 {
		page = page[1:]
	}
	return page, err
}

// DeleteVolumeGroup empties the group before deleting it, so its volumes outlive it.
func (f *faulty) DeleteVolumeGroup(ctx context.Context, req *volumegroup.DeleteVolumeGroupRequest) error {
	_, _ = f.Driver.ModifyVolumeGroupMembership(ctx, &volumegroup.ModifyVolumeGroupMembershipRequest{GroupID: req.GroupID})
	return f.Driver.DeleteVolumeGroup(ctx, req)
}

func (f *faulty) CreateSnapshot(ctx context.Context, req *driver.CreateSnapshotRequest) (*driver.Snapshot, error) {
	s, err := f.Driver.CreateSnapshot(ctx, req)
	if err == nil {
		s.CreationTime = time.Now()
	}
	return s, err
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
