package grpcmethod

import "testing"

func TestShort(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"/csi.v1.Controller/CreateVolume", "CreateVolume"},
		{"/sigs.k8s.io.cosi.v1alpha2.Provisioner/DriverCreateBucket", "DriverCreateBucket"},
		{"CreateVolume", "CreateVolume"},
		{"", ""},
		{"/", ""},
	} {
		if got := Short(tc.in); got != tc.want {
			t.Errorf("Short(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	if got := Message("/csi.v1.Node/NodeStageVolume", "internal error"); got != "NodeStageVolume: internal error" {
		t.Errorf("Message = %q", got)
	}
}

func TestShortDoesNotAllocate(t *testing.T) {
	if n := testing.AllocsPerRun(100, func() { _ = Short("/csi.v1.Controller/CreateVolume") }); n != 0 {
		t.Errorf("Short allocates %v times", n)
	}
}
