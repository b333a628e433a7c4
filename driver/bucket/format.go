package bucket

import (
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/secrets"
)

// The requests print and JSON-encode from their wire request as the plugin logs a COSI call:
// credentials and every value whose key looks secret hidden, keys kept. Printed whole, a request
// would show its Parameters map and its wire request in clear, and a backend that logs the
// request it was given would publish a BucketClass's "password". A logger that takes a
// fmt.Stringer or a json.Marshaler (zap.Any, zap.Stringer, zap.Reflect) gets the redacted form
// too. A request without a wire request, one a backend built itself, prints as its type name and
// "{}".

// requestRedactor always applies the secret-looking-key heuristic: COSI marks no field secret.
var requestRedactor = secrets.NewRedactor(secrets.WithHeuristic(true))

func describe(name string, raw proto.Message) string {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return name + "{}"
	}
	return name + requestRedactor.String(raw)
}

func redactedJSON(raw proto.Message) ([]byte, error) {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return []byte("{}"), nil
	}
	return []byte(requestRedactor.String(raw)), nil
}

// raw is the wire request the request came as, or nil for one built without it (a nil
// pointer of either type would print as an empty message of that type).
func (r *CreateBucketRequest) raw() proto.Message {
	switch {
	case r.RawV1Alpha2 != nil:
		return r.RawV1Alpha2
	case r.RawV1Alpha1 != nil:
		return r.RawV1Alpha1
	}
	return nil
}

// raw is the wire request, or nil for a request built without it.
func (r *GetBucketRequest) raw() proto.Message {
	if r.RawV1Alpha2 == nil {
		return nil
	}
	return r.RawV1Alpha2
}

// raw is the wire request the request came as, or nil for one built without it (a nil
// pointer of either type would print as an empty message of that type).
func (r *DeleteBucketRequest) raw() proto.Message {
	switch {
	case r.RawV1Alpha2 != nil:
		return r.RawV1Alpha2
	case r.RawV1Alpha1 != nil:
		return r.RawV1Alpha1
	}
	return nil
}

// raw is the wire request the request came as, or nil for one built without it (a nil
// pointer of either type would print as an empty message of that type).
func (r *GrantBucketAccessRequest) raw() proto.Message {
	switch {
	case r.RawV1Alpha2 != nil:
		return r.RawV1Alpha2
	case r.RawV1Alpha1 != nil:
		return r.RawV1Alpha1
	}
	return nil
}

// raw is the wire request the request came as, or nil for one built without it (a nil
// pointer of either type would print as an empty message of that type).
func (r *RevokeBucketAccessRequest) raw() proto.Message {
	switch {
	case r.RawV1Alpha2 != nil:
		return r.RawV1Alpha2
	case r.RawV1Alpha1 != nil:
		return r.RawV1Alpha1
	}
	return nil
}

// String prints the wire request, with credentials and secret-looking parameter values hidden.
func (r CreateBucketRequest) String() string { return describe("CreateBucketRequest", r.raw()) }

// GoString is String, so %#v does not leak either.
func (r CreateBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the wire request, with credentials and secret-looking parameter values
// hidden.
func (r CreateBucketRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.raw()) }

// String prints the wire request, with credentials and secret-looking parameter values hidden.
func (r GetBucketRequest) String() string { return describe("GetBucketRequest", r.raw()) }

// GoString is String, so %#v does not leak either.
func (r GetBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the wire request, with credentials and secret-looking parameter values
// hidden.
func (r GetBucketRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.raw()) }

// String prints the wire request, with credentials and secret-looking parameter values hidden.
func (r DeleteBucketRequest) String() string { return describe("DeleteBucketRequest", r.raw()) }

// GoString is String, so %#v does not leak either.
func (r DeleteBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the wire request, with credentials and secret-looking parameter values
// hidden.
func (r DeleteBucketRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.raw()) }

// String prints the wire request, with credentials and secret-looking parameter values hidden.
func (r GrantBucketAccessRequest) String() string {
	return describe("GrantBucketAccessRequest", r.raw())
}

// GoString is String, so %#v does not leak either.
func (r GrantBucketAccessRequest) GoString() string { return r.String() }

// MarshalJSON encodes the wire request, with credentials and secret-looking parameter values
// hidden.
func (r GrantBucketAccessRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.raw()) }

// String prints the wire request, with credentials and secret-looking parameter values hidden.
func (r RevokeBucketAccessRequest) String() string {
	return describe("RevokeBucketAccessRequest", r.raw())
}

// GoString is String, so %#v does not leak either.
func (r RevokeBucketAccessRequest) GoString() string { return r.String() }

// MarshalJSON encodes the wire request, with credentials and secret-looking parameter values
// hidden.
func (r RevokeBucketAccessRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.raw()) }
