package plugin_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"

	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
)

// serveWith starts d on a fresh socket the way serve says and returns a controller client.
func serveWith(t *testing.T, d *plugin.Plugin, serve func(ctx context.Context, lis net.Listener) error) *grpc.ClientConn {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "csi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- serve(ctx, lis) }()
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		cancel()
		<-done
	})
	return conn
}

// plainServe runs a grpc.Server until ctx ends.
func plainServe(s *grpc.Server) func(ctx context.Context, lis net.Listener) error {
	return func(ctx context.Context, lis net.Listener) error {
		go func() {
			<-ctx.Done()
			s.Stop()
		}()
		return s.Serve(lis)
	}
}

// TestEveryWayOfServingValidatesAndLocks: the library's chain lives in the registered methods, so
// a driver served through Register on a server of the user's own, with or without interceptors
// of its own, validates and locks exactly as Serve does.
func TestEveryWayOfServingValidatesAndLocks(t *testing.T) {
	var outerCalls int
	outer := func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		outerCalls++
		return h(ctx, req)
	}
	ways := []struct {
		name  string
		serve func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error
	}{
		{"Serve", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error { return d.Serve }},
		{"NewServer", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error {
			return plainServe(d.NewServer())
		}},
		{"Register on a plain grpc.Server", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error {
			s := grpc.NewServer()
			d.Register(s)
			return plainServe(s)
		}},
		{"Register on a server with interceptors of its own", func(d *plugin.Plugin) func(ctx context.Context, lis net.Listener) error {
			s := grpc.NewServer(grpc.UnaryInterceptor(outer))
			d.Register(s)
			return plainServe(s)
		}},
	}
	for _, way := range ways {
		t.Run(way.name, func(t *testing.T) {
			gate := make(chan struct{})
			b := &blocking{Driver: memdriver.New(memdriver.Options{}), entered: make(chan string, 1), gates: map[string]chan struct{}{"held": gate}}
			cfg := fullConfig(b.Driver)
			cfg.Controller = b
			cfg.Logger = zap.NewNop()
			d, err := plugin.New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			c := csi.NewControllerClient(serveWith(t, d, way.serve(d)))
			ctx := context.Background()

			_, err = c.CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "no-capabilities"})
			if status.Code(err) != codes.InvalidArgument || !strings.Contains(status.Convert(err).Message(), "volume_capabilities") {
				t.Fatalf("CreateVolume without capabilities: %v, want INVALID_ARGUMENT naming volume_capabilities", err)
			}

			req := &csi.CreateVolumeRequest{Name: "held", VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}}
			first := make(chan error, 1)
			go func() {
				_, err := c.CreateVolume(ctx, req)
				first <- err
			}()
			<-b.entered
			if _, err := c.CreateVolume(ctx, req); status.Code(err) != codes.Aborted {
				t.Errorf("duplicate call while the first is in flight: %v, want ABORTED", err)
			}
			close(gate)
			if err := <-first; err != nil {
				t.Fatal(err)
			}
		})
	}
	if outerCalls == 0 {
		t.Error("the server's own interceptor never ran")
	}
}

// rawCodec sends bytes as they are, to put on the wire what a generated client refuses to encode.
type rawCodec struct{}

func (rawCodec) Marshal(v any) ([]byte, error)      { return v.([]byte), nil }
func (rawCodec) Unmarshal(data []byte, v any) error { *(v.(*[]byte)) = data; return nil }
func (rawCodec) Name() string                       { return "proto" }

// TestUndecodableRequestIsInvalidArgumentAndLogged: invalid UTF-8 in a string field used to get
// INTERNAL from gRPC before any interceptor ran, with nothing logged.
func TestUndecodableRequestIsInvalidArgumentAndLogged(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	cfg := fullConfig(memdriver.New(memdriver.Options{}))
	cfg.Logger = zap.New(core)
	p := start(t, cfg)
	conn, err := grpc.NewClient("unix://"+p.socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()

	tests := []struct {
		name, method string
		wire         []byte
		field        string
	}{
		{"CreateVolume name", "/csi.v1.Controller/CreateVolume",
			protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "pvc-\xff\xfe"), "the request cannot be decoded: name: must be valid UTF-8"},
		{"DeleteVolume volume_id", "/csi.v1.Controller/DeleteVolume",
			protowire.AppendString(protowire.AppendTag(nil, 1, protowire.BytesType), "\xc3\x28"), "the request cannot be decoded: volume_id: must be valid UTF-8"},
		{"nested mount flag", "/csi.v1.Controller/CreateVolume", nestedMountFlag(), "the request cannot be decoded: volume_capabilities[1].mount.mount_flags[0]: must be valid UTF-8"},
		{"secret value, never quoted", "/csi.v1.Controller/DeleteVolume", secretValue(), `the request cannot be decoded: secrets["password"]: must be valid UTF-8`},
		{"truncated message", "/csi.v1.Controller/DeleteVolume", []byte{0x0a, 0x10, 'a'}, "malformed protobuf data"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out []byte
			err := conn.Invoke(context.Background(), tt.method, tt.wire, &out, grpc.ForceCodec(rawCodec{}))
			st := status.Convert(err)
			if st.Code() != codes.InvalidArgument || !strings.Contains(st.Message(), tt.field) {
				t.Fatalf("%s: %v, want INVALID_ARGUMENT naming %s", tt.method, err, tt.field)
			}
			if strings.Contains(st.Message(), "\xff") || strings.Contains(st.Message(), "hunter2") {
				t.Errorf("the message quotes the bad value: %q", st.Message())
			}
			found := false
			for _, e := range logs.TakeAll() {
				if m, _ := e.ContextMap()["method"].(string); strings.HasSuffix(tt.method, "/"+m) || m == tt.method {
					found = true
				}
			}
			if !found {
				t.Errorf("the undecodable call was not logged")
			}
		})
	}
}

// TestUnservedRPCIsUnimplementedEvenWithBadInput: the gate comes before validation, so a plugin
// without snapshots says so instead of complaining about the request.
func TestUnservedRPCIsUnimplementedEvenWithBadInput(t *testing.T) {
	p := start(t, plugin.Config{Name: "min.example.com", VendorVersion: "1", Controller: minimal{}})
	_, err := p.controller.CreateSnapshot(context.Background(), &csi.CreateSnapshotRequest{})
	if status.Code(err) != codes.Unimplemented || !strings.Contains(status.Convert(err).Message(), "driver.Snapshotter") {
		t.Fatalf("CreateSnapshot on a plugin without snapshots: %v, want UNIMPLEMENTED naming driver.Snapshotter", err)
	}
}

// nestedMountFlag is a CreateVolumeRequest whose second capability's first mount flag is not
// UTF-8.
func nestedMountFlag() []byte {
	tag := func(b []byte, n protowire.Number) []byte { return protowire.AppendTag(b, n, protowire.BytesType) }
	mount := protowire.AppendString(tag(nil, 1), "ext4")
	mount = protowire.AppendString(tag(mount, 2), "ro\xff")
	okCap := protowire.AppendBytes(tag(nil, 2), nil)    // mount {}
	badCap := protowire.AppendBytes(tag(nil, 2), mount) // mount {fs_type, mount_flags}
	b := protowire.AppendString(tag(nil, 1), "pvc-1")   // name
	b = protowire.AppendBytes(tag(b, 3), okCap)         // volume_capabilities[0]
	return protowire.AppendBytes(tag(b, 3), badCap)     // volume_capabilities[1]
}

// secretValue is a DeleteVolumeRequest whose secret "password" is "hunter2\xff".
func secretValue() []byte {
	tag := func(b []byte, n protowire.Number) []byte { return protowire.AppendTag(b, n, protowire.BytesType) }
	entry := protowire.AppendString(tag(nil, 1), "password")
	entry = protowire.AppendString(tag(entry, 2), "hunter2\xff")
	b := protowire.AppendString(tag(nil, 1), "vol-1")
	return protowire.AppendBytes(tag(b, 2), entry)
}
