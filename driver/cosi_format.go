package driver

import (
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/secrets"
)

// The COSI requests print, JSON-encode and zap-log from Raw as the library logs a COSI call:
// credentials and every value whose key looks secret hidden, keys kept. Printed whole, a
// request would show its Parameters map and Raw in clear, and a backend that logs the request
// it was given would publish a BucketClass's "password". As for the CSI requests (see
// requests_redact.go), a request without Raw, one a backend built itself, prints as its type
// name and "{}".

// cosiRequestRedactor always applies the secret-looking-key heuristic: COSI marks no field secret.
var cosiRequestRedactor = secrets.NewRedactor(secrets.WithHeuristic(true))

func describeCOSI(name string, raw proto.Message) string {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return name + "{}"
	}
	return name + cosiRequestRedactor.String(raw)
}

func redactedCOSIJSON(raw proto.Message) ([]byte, error) {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return []byte("{}"), nil
	}
	return []byte(cosiRequestRedactor.String(raw)), nil
}

func logCOSIRaw(enc zapcore.ObjectEncoder, raw proto.Message) error {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return nil
	}
	return cosiRequestRedactor.Object(raw).MarshalLogObject(enc)
}

// String prints the request from Raw, with secret-looking parameter values hidden.
func (r CreateBucketRequest) String() string { return describeCOSI("CreateBucketRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r CreateBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request from Raw, with secret-looking parameter values hidden.
func (r CreateBucketRequest) MarshalJSON() ([]byte, error) { return redactedCOSIJSON(r.Raw) }

// MarshalLogObject logs the request from Raw, with secret-looking parameter values hidden.
func (r CreateBucketRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logCOSIRaw(enc, r.Raw)
}

// String prints the request from Raw, with secret-looking parameter values hidden.
func (r GetBucketRequest) String() string { return describeCOSI("GetBucketRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r GetBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request from Raw, with secret-looking parameter values hidden.
func (r GetBucketRequest) MarshalJSON() ([]byte, error) { return redactedCOSIJSON(r.Raw) }

// MarshalLogObject logs the request from Raw, with secret-looking parameter values hidden.
func (r GetBucketRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logCOSIRaw(enc, r.Raw)
}

// String prints the request from Raw, with secret-looking parameter values hidden.
func (r DeleteBucketRequest) String() string { return describeCOSI("DeleteBucketRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r DeleteBucketRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request from Raw, with secret-looking parameter values hidden.
func (r DeleteBucketRequest) MarshalJSON() ([]byte, error) { return redactedCOSIJSON(r.Raw) }

// MarshalLogObject logs the request from Raw, with secret-looking parameter values hidden.
func (r DeleteBucketRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logCOSIRaw(enc, r.Raw)
}

// String prints the request from Raw, with secret-looking parameter values hidden.
func (r GrantBucketAccessRequest) String() string {
	return describeCOSI("GrantBucketAccessRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r GrantBucketAccessRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request from Raw, with secret-looking parameter values hidden.
func (r GrantBucketAccessRequest) MarshalJSON() ([]byte, error) { return redactedCOSIJSON(r.Raw) }

// MarshalLogObject logs the request from Raw, with secret-looking parameter values hidden.
func (r GrantBucketAccessRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logCOSIRaw(enc, r.Raw)
}

// String prints the request from Raw, with secret-looking parameter values hidden.
func (r RevokeBucketAccessRequest) String() string {
	return describeCOSI("RevokeBucketAccessRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r RevokeBucketAccessRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request from Raw, with secret-looking parameter values hidden.
func (r RevokeBucketAccessRequest) MarshalJSON() ([]byte, error) { return redactedCOSIJSON(r.Raw) }

// MarshalLogObject logs the request from Raw, with secret-looking parameter values hidden.
func (r RevokeBucketAccessRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logCOSIRaw(enc, r.Raw)
}
