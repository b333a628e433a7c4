package drivertest

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	"k8s.io/mount-utils"

	"github.com/csikit/csikit/driver/drivertest/internal/csisuite"
	"github.com/csikit/csikit/internal/testenv"
)

func TestSkipReason(t *testing.T) {
	mountSpec := mountSpecs[0].Spec
	other := "Controller Service [Controller Server] CreateVolume should fail when no name is provided"
	own := groupText(CheckPagination) + " " + csisuite.ItPageVolumes
	tests := []struct {
		name string
		opts Options
		spec string
		skip bool
		want string
	}{
		{"unprivileged mount spec", Options{}, mountSpec, true, "unprivileged profile: "},
		{"unprivileged other spec", Options{}, other, false, ""},
		{"no mounts", Options{NoMounts: true}, mountSpec, false, ""},
		{"privileged", Options{Privileged: true}, mountSpec, false, ""},
		{"disabled group", Options{Disable: map[Check]string{CheckPagination: "slow backend"}}, own, true, "slow backend"},
		{"other group", Options{Disable: map[Check]string{CheckConcurrency: "x"}}, own, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &run{opts: tt.opts}
			reason, skip := r.skipReason(tt.spec)
			if skip != tt.skip || !strings.Contains(reason, tt.want) {
				t.Errorf("skipReason = %q, %v; want %v containing %q", reason, skip, tt.skip, tt.want)
			}
			// The Ginkgo expressions must skip exactly the same specs.
			re := regexp.MustCompile(strings.Join(append(r.skipPatterns(), "^$"), "|"))
			if got := re.MatchString(suiteDescription + " " + tt.spec); got != tt.skip {
				t.Errorf("skip patterns match = %v, want %v", got, tt.skip)
			}
		})
	}
}

func TestMountSpecsAreUnique(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range MountSpecs() {
		if seen[m.Spec] || m.Reason == "" {
			t.Errorf("mount spec %q is listed twice or has no reason", m.Spec)
		}
		seen[m.Spec] = true
	}
}

func TestMountsBelow(t *testing.T) {
	fake := mount.NewFakeMounter([]mount.MountPoint{
		{Path: "/w/target-1/target"},
		{Path: "/w/target-1"},
		{Path: "/w/target-10/target"}, // a sibling sharing a prefix
		{Path: "/w/target-1/a/b"},
		{Path: "/other"},
		{Path: "/w/target-1/target"}, // stacked
	})
	got, err := mountsBelow(fake, "/w/target-1/")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"/w/target-1/target", "/w/target-1/a/b", "/w/target-1"}
	if !slices.Equal(got, want) {
		t.Errorf("mountsBelow = %v, want %v (deepest first, no siblings, no duplicates)", got, want)
	}
}

// TestRemoveDir checks the directory cleanup against real bind mounts: the privileged profile
// unmounts and removes, the unprivileged one refuses and leaves the data alone.
func TestRemoveDir(t *testing.T) {
	testenv.Root(t, "makes bind mounts")
	mounter := mount.New("")
	tests := []struct {
		name       string
		privileged bool
		wantErr    bool
	}{
		{"privileged", true, false},
		{"unprivileged", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			base, err := filepath.EvalSymlinks(t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			data := filepath.Join(base, "volume")
			spec := filepath.Join(base, "spec")
			target := filepath.Join(spec, "target")
			for _, d := range []string{data, target} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.WriteFile(filepath.Join(data, "keep"), []byte("data"), 0o600); err != nil {
				t.Fatal(err)
			}
			// Stacked twice, as a driver that publishes twice by mistake would leave it.
			for range 2 {
				if err := mounter.Mount(data, target, "", []string{"bind"}); err != nil {
					testenv.Skip(t, "cannot bind mount here: %v", err)
				}
			}
			t.Cleanup(func() {
				for {
					if points, _ := mountsBelow(mounter, spec); len(points) == 0 || mounter.Unmount(points[0]) != nil {
						return
					}
				}
			})
			r := &run{opts: Options{Privileged: tt.privileged}, root: base}
			err = r.removeDir(spec)
			recorded := r.takeCleanupErrors()
			if (err != nil) != tt.wantErr || (len(recorded) > 0) != tt.wantErr {
				t.Fatalf("removeDir = %v (recorded %v), want an error %v, recorded to fail the spec", err, recorded, tt.wantErr)
			}
			if left := r.takeLeftovers(); tt.privileged && !slices.Equal(left, []string{target}) {
				t.Errorf("leftover mounts = %v, want %v reported", left, []string{target})
			}
			if _, err := os.ReadFile(filepath.Join(data, "keep")); err != nil {
				t.Errorf("the volume's data was touched: %v", err)
			}
			_, statErr := os.Stat(spec)
			if gone := errors.Is(statErr, os.ErrNotExist); gone == tt.wantErr {
				t.Errorf("spec directory removed = %v, want %v", gone, !tt.wantErr)
			}
		})
	}
}

// TestSendCopy checks that a request csi-sanity sends stays deeply equal to a decoded copy of
// itself, as its reflect.DeepEqual comparisons need.
func TestSendCopy(t *testing.T) {
	// Both decoded, as csi-sanity's are: one from NodeGetInfo, one from CreateSnapshot.
	b, err := proto.Marshal(&csi.Topology{Segments: map[string]string{"zone": "a"}})
	if err != nil {
		t.Fatal(err)
	}
	var sent, returned csi.Topology
	if err := proto.Unmarshal(b, &sent); err != nil {
		t.Fatal(err)
	}
	if err := proto.Unmarshal(b, &returned); err != nil {
		t.Fatal(err)
	}
	req := &csi.CreateSnapshotRequest{Name: "s", AccessibilityRequirements: &csi.TopologyRequirement{Requisite: []*csi.Topology{&sent}}}
	marshal := func(_ context.Context, _ string, req, _ any, _ *grpc.ClientConn, _ ...grpc.CallOption) error {
		_, err := proto.Marshal(req.(proto.Message))
		return err
	}
	if err := sendCopy(context.Background(), "/m", req, nil, nil, marshal); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(&sent, &returned) {
		t.Error("sending changed the caller's message")
	}
}
