package driver

import (
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc"
)

// TestRPCTableCoversEveryMethod pins rpcTable to the generated service descriptors in both
// directions: a spec upgrade that adds an RPC fails here until the RPC has an entry, and an entry
// cannot name a method that does not exist.
func TestRPCTableCoversEveryMethod(t *testing.T) {
	descs := []*grpc.ServiceDesc{
		&csi.Identity_ServiceDesc, &csi.Controller_ServiceDesc, &csi.Node_ServiceDesc,
		&csi.GroupController_ServiceDesc, &csi.SnapshotMetadata_ServiceDesc,
	}
	seen := map[rpc]bool{}
	for _, d := range descs {
		for _, m := range d.Methods {
			s, ok := rpcTable[rpc(m.MethodName)]
			if !ok || string(s.service) != d.ServiceName || s.stream {
				t.Errorf("%s/%s: no unary rpcTable entry for this service", d.ServiceName, m.MethodName)
				continue
			}
			seen[s.name] = true
		}
		for _, st := range d.Streams {
			s, ok := rpcTable[rpc(st.StreamName)]
			if !ok || string(s.service) != d.ServiceName || !s.stream {
				t.Errorf("%s/%s: no streaming rpcTable entry for this service", d.ServiceName, st.StreamName)
				continue
			}
			seen[s.name] = true
		}
	}
	for name, s := range rpcTable {
		if !seen[name] {
			t.Errorf("rpcTable entry %s (%s) matches no generated method", name, s.method())
		}
		if s.ctrlCap != 0 && s.service != svcController || s.nodeCap != 0 && s.service != svcNode {
			t.Errorf("rpcTable entry %s names a capability of another service", name)
		}
		for _, it := range s.serves {
			if it.Kind().String() != "interface" {
				t.Errorf("rpcTable entry %s: serves %v, which is not an interface", name, it)
			}
		}
	}
}
