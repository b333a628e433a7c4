package validation

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// specPathFields are the path fields of csi.proto v1.13.0, written out by hand. The rules find
// path fields by their name (pathSuffix); this list is what a person read in the spec, so that a
// spec upgrade that adds, renames or removes one fails here instead of changing the rules
// silently.
var specPathFields = []protoreflect.FullName{
	"csi.v1.NodeExpandVolumeRequest.staging_target_path",
	"csi.v1.NodeExpandVolumeRequest.volume_path",
	"csi.v1.NodeGetVolumeHealthRequest.staging_target_path",
	"csi.v1.NodeGetVolumeHealthRequest.volume_publish_path",
	"csi.v1.NodeGetVolumeStatsRequest.staging_target_path",
	"csi.v1.NodeGetVolumeStatsRequest.volume_path",
	"csi.v1.NodePublishVolumeRequest.staging_target_path",
	"csi.v1.NodePublishVolumeRequest.target_path",
	"csi.v1.NodeStageVolumeRequest.staging_target_path",
	"csi.v1.NodeUnpublishVolumeRequest.target_path",
	"csi.v1.NodeUnstageVolumeRequest.staging_target_path",
}

// Paths kubelet really sends: a pod's volume directory (target_path, volume_path,
// volume_publish_path) is 131 bytes with two UIDs, a staging directory 139 bytes for the
// hostpath driver; both are over the general 128-byte string limit.
const (
	kubeletPodVolumePath = "/var/lib/kubelet/pods/6d7c2c6e-1c4e-4d42-9c3a-2f7e0e7c3d11/volumes/kubernetes.io~csi/pvc-0f1e2d3c-4b5a-6978-8a9b-0c1d2e3f4a5b/mount"
	kubeletStagingPath   = "/var/lib/kubelet/plugins/kubernetes.io/csi/hostpath.csi.k8s.io/4f53cda18c2baa0c0354bb5f9a3ecbe5ed12ab4d8e11ba873c2f11161202b945/globalmount"
)

// walkMessages calls f for every message declared in csi.proto, nested ones included.
func walkMessages(mds protoreflect.MessageDescriptors, f func(protoreflect.MessageDescriptor)) {
	for i := 0; i < mds.Len(); i++ {
		md := mds.Get(i)
		f(md)
		walkMessages(md.Messages(), f)
	}
}

func TestPathFieldsPinned(t *testing.T) {
	var derived, mentionsPath []protoreflect.FullName
	walkMessages(csi.File_csi_proto.Messages(), func(md protoreflect.MessageDescriptor) {
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if isPathField(fd) {
				derived = append(derived, fd.FullName())
			}
			// A path field named otherwise ("path", "mount_dir") would escape the suffix rule.
			if strings.Contains(string(fd.Name()), "path") {
				mentionsPath = append(mentionsPath, fd.FullName())
			}
		}
	})
	slices.Sort(derived)
	slices.Sort(mentionsPath)
	if !slices.Equal(derived, specPathFields) {
		t.Errorf("path fields derived from the descriptors:\n%v\nwant (specPathFields, read from csi.proto):\n%v", derived, specPathFields)
	}
	if !slices.Equal(mentionsPath, specPathFields) {
		t.Errorf("fields whose name mentions a path:\n%v\nbut only these get the path rules:\n%v", mentionsPath, specPathFields)
	}
	for n := range relativeIsNotFound {
		if !slices.Contains(specPathFields, n) {
			t.Errorf("relativeIsNotFound names %s, which is not a path field", n)
		}
	}
	// The compiled plans carry the rules.
	r := CSIRules()
	for _, n := range specPathFields {
		md := findMessage(t, n.Parent())
		if md == nil {
			continue
		}
		p := r.plans[md]
		i := p.index(n.Name())
		if i < 0 {
			t.Errorf("%s: no rule compiled", n)
			continue
		}
		rule := p.fields[i]
		if rule.maxLen != maxPath {
			t.Errorf("%s: limit %d, want %d", n, rule.maxLen, maxPath)
		}
		if abs := rule.flags&fAbsPath != 0; abs == relativeIsNotFound[n] {
			t.Errorf("%s: absolute-path rule %v, relativeIsNotFound %v", n, abs, relativeIsNotFound[n])
		}
	}
}

// The spec says what a path is only in prose; the rules must agree with it field by field.
func TestPathFieldsMatchTheSpecComments(t *testing.T) {
	res, _ := parseSpec(t)
	const override = "This field overrides the general CSI size limit."
	const absolute = "MUST be an absolute path"
	for _, m := range res.Messages {
		for _, f := range m.Fields {
			name := protoreflect.FullName(m.FullName + "." + f.Name)
			isPath := slices.Contains(specPathFields, name)
			overrides := strings.Contains(f.Comment, override)
			switch {
			case isPath && !overrides:
				t.Errorf("%s is a path field, but csi.proto does not say it overrides the general size limit", name)
			case !isPath && overrides && csiMaxLenOverrides[name] == 0:
				t.Errorf("csi.proto says %s overrides the general size limit, and no rule says by how much", name)
			}
			if !isPath {
				continue
			}
			saysAbsolute := strings.Contains(f.Comment, absolute)
			if saysAbsolute && !relativeIsNotFound[name] && !absRule(t, name) {
				t.Errorf("csi.proto says %s must be absolute, and the rule does not check it", name)
			}
			if !saysAbsolute && !relativeIsNotFound[name] {
				t.Errorf("csi.proto does not say %s must be absolute, yet the rule requires it; add it to relativeIsNotFound or review", name)
			}
		}
	}
}

func absRule(t *testing.T, n protoreflect.FullName) bool {
	t.Helper()
	md := findMessage(t, n.Parent())
	if md == nil {
		return false
	}
	p := CSIRules().plans[md]
	i := p.index(n.Name())
	return i >= 0 && p.fields[i].flags&fAbsPath != 0
}

// TestEveryPathFieldOfEveryRequest sets each path field of each valid request fixture to paths
// of every interesting length. kubelet's own paths are longer than the general 128-byte string
// limit, which once made NodeGetVolumeStats and NodeExpandVolume fail for every pod.
func TestEveryPathFieldOfEveryRequest(t *testing.T) {
	type pathCase struct {
		name string
		path string
		want string // "" means accepted; else the problem after "<Message>.<field>: "
	}
	cases := []pathCase{
		{"kubelet's 131-byte pod volume path is accepted", kubeletPodVolumePath, ""},
		{"kubelet's 139-byte staging path is accepted", kubeletStagingPath, ""},
		{"a 129-byte path, just over the general string limit, is accepted", "/" + rep('p', 128), ""},
		{"a PATH_MAX (4096-byte) path is accepted", "/" + rep('p', maxPath-1), ""},
		{"a 4097-byte path is rejected naming the field", "/" + rep('p', maxPath), "4097 bytes, the limit is 4096"},
		{"a 1 MiB path is rejected naming the field", "/" + rep('p', 1<<20), "1048577 bytes, the limit is 4096"},
	}
	if len(kubeletPodVolumePath) != 131 || len(kubeletStagingPath) != 139 {
		t.Fatalf("fixture paths are %d and %d bytes", len(kubeletPodVolumePath), len(kubeletStagingPath))
	}
	covered := map[protoreflect.FullName]bool{}
	for _, fixture := range validRequests() {
		md := fixture.ProtoReflect().Descriptor()
		fields := md.Fields()
		for i := 0; i < fields.Len(); i++ {
			fd := fields.Get(i)
			if !isPathField(fd) {
				continue
			}
			covered[fd.FullName()] = true
			field := string(md.Name()) + "." + string(fd.Name())
			all := cases
			if !relativeIsNotFound[fd.FullName()] {
				all = append(slices.Clip(all), pathCase{"a relative path is rejected: the spec wants it absolute", "var/lib/kubelet/pods/x/mount", "must be an absolute path"})
			} else {
				all = append(slices.Clip(all), pathCase{"a relative path is left to the driver, which answers NOT_FOUND", "var/lib/kubelet/pods/x/mount", ""})
			}
			for _, tc := range all {
				t.Run(field+"/"+tc.name, func(t *testing.T) {
					m := proto.Clone(fixture)
					m.ProtoReflect().Set(fd, protoreflect.ValueOfString(tc.path))
					for _, msg := range []proto.Message{m, toDynamic(t, m)} {
						err := Request(msg)
						if tc.want == "" {
							if err != nil {
								t.Fatalf("want accepted, got %v", err)
							}
							continue
						}
						st, _ := status.FromError(err)
						if want := strings.Replace(field, "Request.", ": ", 1) + ": " + tc.want; st.Code() != codes.InvalidArgument || st.Message() != want {
							t.Fatalf("got %v %q, want InvalidArgument %q", st.Code(), st.Message(), want)
						}
					}
				})
			}
		}
	}
	for _, n := range specPathFields {
		if !covered[n] {
			t.Errorf("no request fixture exercises %s", n)
		}
	}
}

// kubelet calls NodeGetVolumeStats for every mounted volume and NodeExpandVolume for online
// expansion, always with the pod's volume directory; over gRPC both must reach the plugin.
func TestKubeletPathsOverTheWire(t *testing.T) {
	ctx := context.Background()
	p := &fakePlugin{}
	c := csi.NewNodeClient(serve(t, p))
	t.Run("NodeGetVolumeStats with kubelet's paths reaches the plugin", func(t *testing.T) {
		_, err := c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: kubeletPodVolumePath, StagingTargetPath: kubeletStagingPath})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("NodeExpandVolume with kubelet's paths reaches the plugin", func(t *testing.T) {
		_, err := c.NodeExpandVolume(ctx, &csi.NodeExpandVolumeRequest{VolumeId: volID, VolumePath: kubeletPodVolumePath, StagingTargetPath: kubeletStagingPath, CapacityRange: &csi.CapacityRange{RequiredBytes: 2 << 30}})
		if err != nil {
			t.Fatal(err)
		}
	})
	t.Run("a volume_path over PATH_MAX is INVALID_ARGUMENT naming the field", func(t *testing.T) {
		_, err := c.NodeGetVolumeStats(ctx, &csi.NodeGetVolumeStatsRequest{VolumeId: volID, VolumePath: "/" + rep('p', maxPath)})
		wantStatus(t, err, codes.InvalidArgument, "NodeGetVolumeStats: volume_path: 4097 bytes, the limit is 4096")
	})
	if n := p.calls.Load(); n != 2 {
		t.Errorf("handlers ran %d times, want 2", n)
	}
}
