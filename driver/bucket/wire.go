package bucket

import (
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/internal/reqfmt"
)

// Every request carries the wire request it came as, with credentials and parameters in clear.
// Printed whole, a backend that logs its request would publish a BucketClass's "password". So
// each request prints and JSON-encodes itself from its wire request, with credentials and every
// value whose key looks secret hidden, keys kept; one built without a wire request prints as its
// type name and "{}". The methods are generated into requests_format.go by internal/reqfmt, as
// for package driver. TestFormattersAreGenerated fails until a new request type has them.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .

// Wire is the part of a request that says how it came: the wire Version and the wire request as
// received, typed per version (V1 for cosi.v1alpha1, V2 for sigs.k8s.io.cosi.v1alpha2).
// CreateBucketRequest, DeleteBucketRequest, GrantBucketAccessRequest and
// RevokeBucketAccessRequest embed it, so req.Version, req.RawV1Alpha1 and req.RawV1Alpha2 read
// the same on each. The plugin fills it. A test that builds a request sets the fields after
// construction: req := &bucket.CreateBucketRequest{Name: "b"}; req.Version = bucket.V1Alpha2.
type Wire[V1, V2 proto.Message] struct {
	// Version is the wire version of the call.
	Version Version
	// RawV1Alpha1 is the request as received when it came by v1alpha1 (package cosi.v1alpha1 of
	// sigs.k8s.io/container-object-storage-interface/proto), nil otherwise; read it, never
	// modify it.
	RawV1Alpha1 V1
	// RawV1Alpha2 is the request as received when it came by v1alpha2, nil otherwise; read it,
	// never modify it. Exactly one of the two is set on a request the plugin passes on.
	RawV1Alpha2 V2
}

// String prints the wire request as the request embedding it does, so printing req.Wire alone
// hides credentials and secret-looking parameter values too.
func (w Wire[V1, V2]) String() string {
	return reqfmt.HeuristicString("bucket.Wire", w.RawV1Alpha2, w.RawV1Alpha1)
}

// GoString is String, so %#v does not leak either.
func (w Wire[V1, V2]) GoString() string { return w.String() }

// MarshalJSON encodes the wire request redacted as String.
func (w Wire[V1, V2]) MarshalJSON() ([]byte, error) {
	return reqfmt.HeuristicJSON(w.RawV1Alpha2, w.RawV1Alpha1)
}
