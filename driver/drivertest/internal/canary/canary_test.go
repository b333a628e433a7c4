package canary

import (
	"errors"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
)

func TestRequestsWithSecrets(t *testing.T) {
	got := RequestsWithSecrets(csi.File_csi_proto)
	// Every request of CSI v1.13.0 with a csi_secret field.
	want := []string{
		"ControllerExpandVolumeRequest", "ControllerGetVolumeHealthRequest", "ControllerListVolumeHealthRequest",
		"ControllerModifyVolumeRequest", "ControllerPublishVolumeRequest", "ControllerUnpublishVolumeRequest",
		"CreateSnapshotRequest", "CreateVolumeGroupSnapshotRequest", "CreateVolumeRequest", "DeleteSnapshotRequest",
		"DeleteVolumeGroupSnapshotRequest", "DeleteVolumeRequest", "GetMetadataAllocatedRequest", "GetMetadataDeltaRequest",
		"GetSnapshotRequest", "GetVolumeGroupSnapshotRequest", "ListSnapshotsRequest", "NodeExpandVolumeRequest",
		"NodeGetStorageHealthRequest", "NodePublishVolumeRequest", "NodeStageVolumeRequest", "ValidateVolumeCapabilitiesRequest",
	}
	if !slices.Equal(got, want) {
		t.Errorf("RequestsWithSecrets(csi.File_csi_proto) = %v, want %v", got, want)
	}
}

func TestCanaryInject(t *testing.T) {
	shared := map[string]string{"username": "admin"}
	tests := []struct {
		name     string
		req      proto.Message
		secrets  func(proto.Message) map[string]string
		wantKeys []string
	}{
		{"keeps configured secrets", &csi.CreateVolumeRequest{Name: "v", Secrets: shared},
			func(m proto.Message) map[string]string { return m.(*csi.CreateVolumeRequest).GetSecrets() }, []string{Key, "username"}},
		{"empty map", &csi.DeleteVolumeRequest{VolumeId: "v"},
			func(m proto.Message) map[string]string { return m.(*csi.DeleteVolumeRequest).GetSecrets() }, []string{Key}},
		{"alpha field", &csi.NodeExpandVolumeRequest{VolumeId: "v"},
			func(m proto.Message) map[string]string { return m.(*csi.NodeExpandVolumeRequest).GetSecrets() }, []string{Key}},
		{"no secrets field", &csi.NodeGetInfoRequest{}, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			before := proto.Clone(tt.req)
			c.Inject("/m", tt.req)
			if tt.secrets == nil {
				if !proto.Equal(before, tt.req) || len(c.values) != 0 {
					t.Fatalf("a request without secrets changed: %v", tt.req)
				}
				return
			}
			got := tt.secrets(tt.req)
			keys := make([]string, 0, len(got))
			for k := range got {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			if !slices.Equal(keys, tt.wantKeys) {
				t.Errorf("secret keys = %v, want %v", keys, tt.wantKeys)
			}
			v := got[Key]
			if ok, _ := regexp.MatchString("^[0-9a-f]{48}$", v); !ok || c.values[v] != "/m" {
				t.Errorf("canary value %q is not 24 random bytes in hex recorded for /m", v)
			}
		})
	}
	if len(shared) != 1 {
		t.Errorf("inject changed the caller's map: %v", shared)
	}
}

func TestCanarySearch(t *testing.T) {
	c := New()
	v := c.Value("/csi.v1.Controller/CreateVolume")
	c.Inspect("/a", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "x", VolumeContext: map[string]string{"k": v}}}, nil)
	c.Inspect("/b", nil, status.Error(codes.InvalidArgument, "bad value "+v))
	c.Inspect("/c", &csi.CreateVolumeResponse{Volume: &csi.Volume{VolumeId: "clean"}}, nil)
	c.Inspect("/d", nil, errors.New("clean"))
	if len(c.leaks) != 4 { // JSON and text of /a; error and status message of /b
		t.Fatalf("leaks = %q, want 4", c.leaks)
	}
	for _, l := range c.leaks {
		if strings.Contains(l, v) || strings.HasSuffix(l, " of /c") || strings.HasSuffix(l, " of /d") {
			t.Errorf("leak report %q names the value or a clean call", l)
		}
	}
	lines := c.LogLeaks("clean line\nrequest " + v + " here\n")
	if len(lines) != 1 || strings.Contains(lines[0], v) || !strings.Contains(lines[0], "<canary>") {
		t.Errorf("logLeaks = %q", lines)
	}
}
