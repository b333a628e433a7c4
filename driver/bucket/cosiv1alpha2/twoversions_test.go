package cosiv1alpha2_test

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"
	v1alpha1 "sigs.k8s.io/container-object-storage-interface/proto"

	v1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// Trivial servers of both wire versions. Each answers from its request so that the test sees
// the request crossed the socket intact.

type identityV1 struct {
	v1alpha1.UnimplementedIdentityServer
}

func (identityV1) DriverGetInfo(context.Context, *v1alpha1.DriverGetInfoRequest) (*v1alpha1.DriverGetInfoResponse, error) {
	return &v1alpha1.DriverGetInfoResponse{Name: "v1alpha1.cosi.example.com"}, nil
}

type provisionerV1 struct {
	v1alpha1.UnimplementedProvisionerServer
}

func (provisionerV1) DriverCreateBucket(_ context.Context, req *v1alpha1.DriverCreateBucketRequest) (*v1alpha1.DriverCreateBucketResponse, error) {
	return &v1alpha1.DriverCreateBucketResponse{
		BucketId: "v1-" + req.GetName(),
		BucketInfo: &v1alpha1.Protocol{Type: &v1alpha1.Protocol_S3{S3: &v1alpha1.S3{
			Region:           req.GetParameters()["region"],
			SignatureVersion: v1alpha1.S3SignatureVersion_S3V4,
		}}},
	}, nil
}

type identityV2 struct {
	v1alpha2.UnimplementedIdentityServer
}

func (identityV2) DriverGetInfo(context.Context, *v1alpha2.DriverGetInfoRequest) (*v1alpha2.DriverGetInfoResponse, error) {
	return &v1alpha2.DriverGetInfoResponse{
		Name: "v1alpha2.cosi.example.com",
		SupportedProtocols: []*v1alpha2.ObjectProtocol{
			{Type: v1alpha2.ObjectProtocol_S3},
			{Type: v1alpha2.ObjectProtocol_GCS},
		},
	}, nil
}

type provisionerV2 struct {
	v1alpha2.UnimplementedProvisionerServer
}

func (provisionerV2) DriverCreateBucket(_ context.Context, req *v1alpha2.DriverCreateBucketRequest) (*v1alpha2.DriverCreateBucketResponse, error) {
	return &v1alpha2.DriverCreateBucketResponse{
		BucketId: "v2-" + req.GetName(),
		Protocols: &v1alpha2.ObjectProtocolAndBucketInfo{S3: &v1alpha2.S3BucketInfo{
			BucketId:        "v2-" + req.GetName(),
			Endpoint:        "http://127.0.0.1:9000",
			Region:          req.GetParameters()["region"],
			AddressingStyle: &v1alpha2.S3AddressingStyle{Style: v1alpha2.S3AddressingStyle_PATH},
		}},
	}, nil
}

// TestBothVersionsOnOneSocket links COSI v1alpha1 (sigs.k8s.io/container-object-storage-interface/proto
// v0.2.2, which registers cosi_secret = 1115 on FieldOptions) and these v1alpha2 bindings into one
// binary, which proves the start-up registration conflict is gone, then serves both versions'
// Identity and Provisioner on one grpc.Server on one unix socket and calls each through it.
func TestBothVersionsOnOneSocket(t *testing.T) {
	// Both files are in the global registry, under different paths and packages.
	for path, pkg := range map[string]protoreflect.FullName{
		"cosi.proto":                      "cosi.v1alpha1",
		"csikit/cosi/v1alpha2/cosi.proto": "sigs.k8s.io.cosi.v1alpha2",
	} {
		fd, err := protoregistry.GlobalFiles.FindFileByPath(path)
		if err != nil {
			t.Fatalf("FindFileByPath(%q): %v", path, err)
		}
		if fd.Package() != pkg {
			t.Errorf("%s: package %s, want %s", path, fd.Package(), pkg)
		}
	}
	if v1alpha1.File_cosi_proto.Path() == v1alpha2.File_csikit_cosi_v1alpha2_cosi_proto.Path() {
		t.Fatal("both versions registered under the same path")
	}
	// v1alpha1's extension is the one and only cosi_secret = 1115 in the process.
	xt, err := protoregistry.GlobalTypes.FindExtensionByNumber("google.protobuf.FieldOptions", 1115)
	if err != nil {
		t.Fatalf("FieldOptions extension 1115 not registered: %v", err)
	}
	if got := xt.TypeDescriptor().ParentFile().Path(); got != "cosi.proto" {
		t.Errorf("FieldOptions extension 1115 comes from %q, want v1alpha1's cosi.proto", got)
	}

	// A short directory: unix socket paths are limited to about 108 bytes, and t.TempDir
	// embeds the test name.
	dir, err := os.MkdirTemp("", "cosi2v")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	sock := filepath.Join(dir, "cosi.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}

	srv := grpc.NewServer()
	v1alpha1.RegisterIdentityServer(srv, identityV1{})
	v1alpha1.RegisterProvisionerServer(srv, provisionerV1{})
	v1alpha2.RegisterIdentityServer(srv, identityV2{})
	v1alpha2.RegisterProvisionerServer(srv, provisionerV2{})
	served := make(chan error, 1)
	go func() { served <- srv.Serve(lis) }()
	t.Cleanup(func() {
		srv.Stop()
		if err := <-served; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})

	var services []string
	for name := range srv.GetServiceInfo() {
		services = append(services, name)
	}
	slices.Sort(services)
	if want := []string{
		"cosi.v1alpha1.Identity",
		"cosi.v1alpha1.Provisioner",
		"sigs.k8s.io.cosi.v1alpha2.Identity",
		"sigs.k8s.io.cosi.v1alpha2.Provisioner",
	}; !slices.Equal(services, want) {
		t.Errorf("services = %q, want %q", services, want)
	}

	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	params := map[string]string{"region": "eu-west-1"}

	t.Run("v1alpha1", func(t *testing.T) {
		info, err := v1alpha1.NewIdentityClient(conn).DriverGetInfo(ctx, &v1alpha1.DriverGetInfoRequest{})
		if err != nil {
			t.Fatalf("DriverGetInfo: %v", err)
		}
		if info.GetName() != "v1alpha1.cosi.example.com" {
			t.Errorf("DriverGetInfo name = %q", info.GetName())
		}
		got, err := v1alpha1.NewProvisionerClient(conn).DriverCreateBucket(ctx,
			&v1alpha1.DriverCreateBucketRequest{Name: "bucket-a", Parameters: params})
		if err != nil {
			t.Fatalf("DriverCreateBucket: %v", err)
		}
		want := &v1alpha1.DriverCreateBucketResponse{
			BucketId: "v1-bucket-a",
			BucketInfo: &v1alpha1.Protocol{Type: &v1alpha1.Protocol_S3{S3: &v1alpha1.S3{
				Region: "eu-west-1", SignatureVersion: v1alpha1.S3SignatureVersion_S3V4,
			}}},
		}
		if !proto.Equal(got, want) {
			t.Errorf("DriverCreateBucket = %v, want %v", got, want)
		}
	})

	t.Run("v1alpha2", func(t *testing.T) {
		info, err := v1alpha2.NewIdentityClient(conn).DriverGetInfo(ctx, &v1alpha2.DriverGetInfoRequest{})
		if err != nil {
			t.Fatalf("DriverGetInfo: %v", err)
		}
		wantInfo := &v1alpha2.DriverGetInfoResponse{
			Name: "v1alpha2.cosi.example.com",
			SupportedProtocols: []*v1alpha2.ObjectProtocol{
				{Type: v1alpha2.ObjectProtocol_S3},
				{Type: v1alpha2.ObjectProtocol_GCS},
			},
		}
		if !proto.Equal(info, wantInfo) {
			t.Errorf("DriverGetInfo = %v, want %v", info, wantInfo)
		}
		got, err := v1alpha2.NewProvisionerClient(conn).DriverCreateBucket(ctx, &v1alpha2.DriverCreateBucketRequest{
			Name:       "bucket-a",
			Protocols:  []*v1alpha2.ObjectProtocol{{Type: v1alpha2.ObjectProtocol_S3}},
			Parameters: params,
		})
		if err != nil {
			t.Fatalf("DriverCreateBucket: %v", err)
		}
		want := &v1alpha2.DriverCreateBucketResponse{
			BucketId: "v2-bucket-a",
			Protocols: &v1alpha2.ObjectProtocolAndBucketInfo{S3: &v1alpha2.S3BucketInfo{
				BucketId:        "v2-bucket-a",
				Endpoint:        "http://127.0.0.1:9000",
				Region:          "eu-west-1",
				AddressingStyle: &v1alpha2.S3AddressingStyle{Style: v1alpha2.S3AddressingStyle_PATH},
			}},
		}
		if !proto.Equal(got, want) {
			t.Errorf("DriverCreateBucket = %v, want %v", got, want)
		}
	})
}
