package driver

// Every request type carries Raw, the CSI request with its secrets in clear, so printing or
// logging a request whole would leak them. Each type therefore formats itself from Raw with every
// secret value replaced (the fields the secrets package calls secret, and the values of
// key=value mount options), for fmt (%v, %+v, %s, %#v), encoding/json and zap.
//
// Go has no way to give all these types the methods at once (a promoted method cannot see the
// outer struct's Raw, and a generic wrapper would change the fields users write), so the four
// one-line methods per type are generated into requests_format.go from the struct declarations:
// any struct of this package with a Raw field gets them. A new request type needs only
// `go generate`, and TestFormattersAreGenerated fails until it is run.

//go:generate env CSIKIT_WRITE_FORMATTERS=1 go test -run ^TestFormattersAreGenerated$ .

import (
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/secrets"
)

// describe renders a request as its type name and the redacted JSON of its CSI request.
func describe(name string, raw proto.Message) string {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return name + "{}"
	}
	return name + secrets.String(raw)
}

// redactedJSON is the redacted CSI request as JSON ("{}" without one).
func redactedJSON(raw proto.Message) ([]byte, error) {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return []byte("{}"), nil
	}
	return []byte(secrets.String(raw)), nil
}

// logRaw writes the redacted CSI request's fields.
func logRaw(enc zapcore.ObjectEncoder, raw proto.Message) error {
	if raw == nil || !raw.ProtoReflect().IsValid() {
		return nil
	}
	return secrets.Object(raw).MarshalLogObject(enc)
}
