// Package cosiv1alpha2 holds csikit's Go bindings for COSI v1alpha2, the wire of the
// sigs.k8s.io.cosi.v1alpha2 Identity and Provisioner services spoken by the v1alpha2 COSI
// sidecar. No Go module with these bindings is published, so csikit writes the .proto itself
// (cosi.proto in this directory) from the COSI v1alpha2 specification draft, with the draft's
// TODO messages filled in as kubernetes-sigs/container-object-storage-interface filled them at
// commit ee00c269 (2026-03-05): DriverGetExistingBucket, DriverDeleteBucket,
// DriverGrantBucketAccess (CredentialInfo{s3, azure, gcs}, AuthenticationType, AccessMode) and
// DriverRevokeBucketAccess. Message names, field names and field numbers are wire facts and are
// pinned by this package's tests.
//
// # Who uses it
//
// A bucket backend does not need it: it implements package bucket's version-neutral interfaces,
// and the plugin adapts them to this wire and to v1alpha1. It is public because the requests a
// backend receives keep the wire request they came as (bucket.CreateBucketRequest.RawV1Alpha2
// and the like are of this package's types), for the rare field the neutral request does not
// lift out, and because a test that speaks v1alpha2 to a driver needs the client
// (NewProvisionerClient, NewIdentityClient) and the messages. Read a wire request, never modify
// it.
//
// The package stays this revision of the wire. Upstream has already changed v1alpha2 since
// ee00c269 (DriverGetExistingBucket renamed DriverGetBucket, AccessMode renumbered and split, a
// two-phase DriverGenerateBucketId proposed); csikit will serve such a revision through bindings
// of their own and another adapter in the plugin, leaving this package's types as they are.
//
// # Why no extensions
//
// The draft declares field, message, enum, method and service options (cosi_secret = 1115,
// alpha_* = 1116) in `extend google.protobuf.*Options` blocks. COSI v1alpha1's published
// bindings (sigs.k8s.io/container-object-storage-interface/proto v0.2.2), which csikit serves on
// the same socket, already register cosi_secret = 1115 on google.protobuf.FieldOptions, and a
// second registration of that number panics at start-up ("extension number 1115 is already
// registered"). No v1alpha2 field sets any of these options, so cosi.proto leaves every extend
// block out; the wire format is the same. Credential fields (S3CredentialInfo access_key_id and
// access_secret_key, AzureCredentialInfo access_token, GcsCredentialInfo access_id,
// access_secret and private_key_name) are treated as secret by csikit's secrets package by
// message and field name. The file is registered under csikit's own path,
// "csikit/cosi/v1alpha2/cosi.proto", so it cannot clash with any registration of upstream's
// "cosi.proto".
//
// # Regenerating
//
// cosi.pb.go and cosi_grpc.pb.go are generated and committed, so building and testing need no
// protoc. After editing cosi.proto, run `go generate ./driver/bucket/cosiv1alpha2` with these tools
// on PATH (the versions the committed files were made with):
//
//   - protoc 3.21.12 (Debian bookworm: apt-get install protobuf-compiler)
//   - protoc-gen-go v1.36.12, the google.golang.org/protobuf version in go.mod
//     (go install google.golang.org/protobuf/cmd/protoc-gen-go@v1.36.12)
//   - protoc-gen-go-grpc v1.6.2
//     (go install google.golang.org/grpc/cmd/protoc-gen-go-grpc@v1.6.2)
//
// The --proto_path mapping makes protoc see cosi.proto as csikit/cosi/v1alpha2/cosi.proto, the
// name the file is registered under; module= writes the output into this directory.
// TestGeneratedCodeIsCurrent regenerates and compares when exactly these versions are on PATH.
package cosiv1alpha2

//go:generate protoc --proto_path=csikit/cosi/v1alpha2=. --go_out=. --go_opt=module=github.com/csikit/csikit/driver/bucket/cosiv1alpha2 --go-grpc_out=. --go-grpc_opt=module=github.com/csikit/csikit/driver/bucket/cosiv1alpha2 csikit/cosi/v1alpha2/cosi.proto
