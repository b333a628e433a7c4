package plugin_test

import (
	"context"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/plugin"
)

// oversized answers with values past the spec's size limits, by the name asked for.
type oversized struct{ minimal }

func (oversized) CreateVolume(_ context.Context, r *driver.CreateVolumeRequest) (*driver.Volume, error) {
	switch r.Name {
	case "long-id":
		return &driver.Volume{ID: strings.Repeat("v", 300)}, nil
	case "big-context":
		return &driver.Volume{ID: "vol-1", Context: map[string]string{"blob": strings.Repeat("x", 5000)}}, nil
	}
	return &driver.Volume{ID: "vol-1"}, nil
}

func (oversized) NodeGetInfo(context.Context) (*driver.NodeInfo, error) {
	return &driver.NodeInfo{NodeID: strings.Repeat("n", 300)}, nil
}

// TestResponseSizeLimitsAreAlwaysChecked: a response past a size limit of the spec (a 300-byte
// volume ID, a volume context over 4 KiB, a 300-byte node ID) is a plugin bug the CO must never
// receive, so it is answered INTERNAL naming the field and the limit even with
// Config.CheckResponses off, as in production.
func TestResponseSizeLimitsAreAlwaysChecked(t *testing.T) {
	p := start(t, plugin.Config{Name: "oversized.example.com", VendorVersion: "1", Controller: oversized{}, Node: oversized{}})
	ctx := context.Background()
	create := func(name string) func() error {
		return func() error {
			_, err := p.controller.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: name, VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}})
			return err
		}
	}
	tests := []struct {
		name string
		call func() error
		want []string
	}{
		{"a 300-byte volume ID", create("long-id"), []string{"CreateVolumeResponse.volume.volume_id", "300 bytes", "limit is 128"}},
		{"a 5000-byte volume context", create("big-context"), []string{"CreateVolumeResponse.volume.volume_context", "in total", "limit is 4096"}},
		{"a 300-byte node ID", func() error {
			_, err := p.node.NodeGetInfo(ctx, &csi.NodeGetInfoRequest{})
			return err
		}, []string{"NodeGetInfoResponse.node_id", "300 bytes", "limit is 256"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call()
			if status.Code(err) != codes.Internal {
				t.Fatalf("got %v; want INTERNAL", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(status.Convert(err).Message(), w) {
					t.Errorf("message %q does not say %q", status.Convert(err).Message(), w)
				}
			}
		})
	}
	if err := create("fine")(); err != nil {
		t.Errorf("a response within the limits: %v", err)
	}
}
