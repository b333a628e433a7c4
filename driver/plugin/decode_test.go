package plugin

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/protobuf/proto"
)

// FuzzDescribeDecodeFailure: whatever bytes arrive, describing why they do not decode never
// panics, never quotes bytes that are not valid UTF-8, and names a field only when protobuf
// itself refuses the data.
func FuzzDescribeDecodeFailure(f *testing.F) {
	seed, _ := proto.Marshal(&csi.CreateVolumeRequest{
		Name: "pvc-1", Secrets: map[string]string{"password": "x"},
		VolumeCapabilities: []*csi.VolumeCapability{{AccessType: &csi.VolumeCapability_Mount{
			Mount: &csi.VolumeCapability_MountVolume{FsType: "ext4", MountFlags: []string{"ro"}}}}},
	})
	f.Add(seed)
	f.Add([]byte{0x0a, 0x02, 0xff, 0xfe})
	f.Add([]byte{0x2a, 0x08, 0x0a, 0x01, 'k', 0x12, 0x03, 'v', 0xff, 'x'})
	f.Add([]byte{0x0a, 0x10, 'a'})
	md := (&csi.CreateVolumeRequest{}).ProtoReflect().Descriptor()
	f.Fuzz(func(t *testing.T, b []byte) {
		err := proto.Unmarshal(b, &csi.CreateVolumeRequest{})
		if err == nil {
			return
		}
		reason := describeDecodeFailure(b, md, err)
		if reason == "" || !utf8.ValidString(reason) {
			t.Fatalf("reason %q is empty or not UTF-8", reason)
		}
		if strings.Contains(reason, "\ufffd") {
			t.Fatalf("reason %q quotes bytes that are not UTF-8", reason)
		}
	})
}
