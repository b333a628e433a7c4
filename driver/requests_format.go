package driver

// Code below keeps the request structs from leaking secrets when someone prints or logs them
// whole: Secrets hides its values, but Raw is the CSI request with the secrets in clear. Each
// request formats itself from its Raw request with every secret value replaced (csi_secret
// fields, and the values of key=value mount options), for fmt (%v, %+v, %s, %#v) and for zap.

import (
	"go.uber.org/zap/zapcore"
	"google.golang.org/protobuf/proto"

	"github.com/csikit/csikit/secrets"
)

// String prints the request with its secrets redacted.
func (r CreateVolumeRequest) String() string { return describe("CreateVolumeRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r CreateVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r CreateVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r CreateVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r DeleteVolumeRequest) String() string { return describe("DeleteVolumeRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r DeleteVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r DeleteVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r DeleteVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ValidateVolumeCapabilitiesRequest) String() string {
	return describe("ValidateVolumeCapabilitiesRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ValidateVolumeCapabilitiesRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ValidateVolumeCapabilitiesRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ValidateVolumeCapabilitiesRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerPublishRequest) String() string { return describe("ControllerPublishRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r ControllerPublishRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerPublishRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerPublishRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerUnpublishRequest) String() string {
	return describe("ControllerUnpublishRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerUnpublishRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerUnpublishRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerUnpublishRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ListVolumesRequest) String() string { return describe("ListVolumesRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r ListVolumesRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ListVolumesRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ListVolumesRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r GetCapacityRequest) String() string { return describe("GetCapacityRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r GetCapacityRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r GetCapacityRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r GetCapacityRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r CreateSnapshotRequest) String() string { return describe("CreateSnapshotRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r CreateSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r CreateSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r CreateSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r DeleteSnapshotRequest) String() string { return describe("DeleteSnapshotRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r DeleteSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r DeleteSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r DeleteSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ListSnapshotsRequest) String() string { return describe("ListSnapshotsRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r ListSnapshotsRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ListSnapshotsRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ListSnapshotsRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r GetSnapshotRequest) String() string { return describe("GetSnapshotRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r GetSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r GetSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r GetSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerExpandVolumeRequest) String() string {
	return describe("ControllerExpandVolumeRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerExpandVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerExpandVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerExpandVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerGetVolumeRequest) String() string {
	return describe("ControllerGetVolumeRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerGetVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerGetVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerGetVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerModifyVolumeRequest) String() string {
	return describe("ControllerModifyVolumeRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerModifyVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerModifyVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerModifyVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerGetVolumeHealthRequest) String() string {
	return describe("ControllerGetVolumeHealthRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerGetVolumeHealthRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerGetVolumeHealthRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerGetVolumeHealthRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r ControllerListVolumeHealthRequest) String() string {
	return describe("ControllerListVolumeHealthRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r ControllerListVolumeHealthRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r ControllerListVolumeHealthRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r ControllerListVolumeHealthRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeStageRequest) String() string { return describe("NodeStageRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r NodeStageRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeStageRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeStageRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeUnstageRequest) String() string { return describe("NodeUnstageRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r NodeUnstageRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeUnstageRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeUnstageRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodePublishRequest) String() string { return describe("NodePublishRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r NodePublishRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodePublishRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodePublishRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeUnpublishRequest) String() string { return describe("NodeUnpublishRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r NodeUnpublishRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeUnpublishRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeUnpublishRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeGetVolumeStatsRequest) String() string {
	return describe("NodeGetVolumeStatsRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r NodeGetVolumeStatsRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeGetVolumeStatsRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeGetVolumeStatsRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeExpandVolumeRequest) String() string { return describe("NodeExpandVolumeRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r NodeExpandVolumeRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeExpandVolumeRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeExpandVolumeRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeGetVolumeHealthRequest) String() string {
	return describe("NodeGetVolumeHealthRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r NodeGetVolumeHealthRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeGetVolumeHealthRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeGetVolumeHealthRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r NodeGetStorageHealthRequest) String() string {
	return describe("NodeGetStorageHealthRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r NodeGetStorageHealthRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r NodeGetStorageHealthRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r NodeGetStorageHealthRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r CreateVolumeGroupSnapshotRequest) String() string {
	return describe("CreateVolumeGroupSnapshotRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r CreateVolumeGroupSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r CreateVolumeGroupSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r CreateVolumeGroupSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r DeleteVolumeGroupSnapshotRequest) String() string {
	return describe("DeleteVolumeGroupSnapshotRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r DeleteVolumeGroupSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r DeleteVolumeGroupSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r DeleteVolumeGroupSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r GetVolumeGroupSnapshotRequest) String() string {
	return describe("GetVolumeGroupSnapshotRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r GetVolumeGroupSnapshotRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r GetVolumeGroupSnapshotRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r GetVolumeGroupSnapshotRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r GetMetadataAllocatedRequest) String() string {
	return describe("GetMetadataAllocatedRequest", r.Raw)
}

// GoString is String, so %#v does not leak either.
func (r GetMetadataAllocatedRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r GetMetadataAllocatedRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r GetMetadataAllocatedRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

// String prints the request with its secrets redacted.
func (r GetMetadataDeltaRequest) String() string { return describe("GetMetadataDeltaRequest", r.Raw) }

// GoString is String, so %#v does not leak either.
func (r GetMetadataDeltaRequest) GoString() string { return r.String() }

// MarshalJSON encodes the request with its secrets redacted.
func (r GetMetadataDeltaRequest) MarshalJSON() ([]byte, error) { return redactedJSON(r.Raw) }

// MarshalLogObject logs the request with its secrets redacted.
func (r GetMetadataDeltaRequest) MarshalLogObject(enc zapcore.ObjectEncoder) error {
	return logRaw(enc, r.Raw)
}

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
