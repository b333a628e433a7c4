// Package secrets finds sensitive fields in protobuf messages and keeps
// their values out of logs, error messages and printed requests.
//
// # What is secret
//
// Sensitivity is read from the proto descriptors, so a new RPC or a new
// spec version needs no code change here:
//
//   - CSI marks secret fields with the field option csi.v1.csi_secret
//     (extension 1059 on google.protobuf.FieldOptions), e.g.
//     CreateVolumeRequest.secrets and NodeStageVolumeRequest.secrets.
//   - The volume group extension marks them with volumegroup.vg_csi_secret
//     (extension 1101). Its Go package need not be linked in: the option is
//     recognised as a resolved extension named vg_csi_secret or, when the
//     extension is not registered, as the raw option bytes (field 1101,
//     varint true) that remain as unknown fields on the options message.
//     csi_secret and COSI v1alpha2's cosi_secret (1115) are recognised the
//     same two ways.
//   - COSI does not annotate its credentials, so they are listed by message
//     and field name, in any COSI package (cosi.*, sigs.k8s.io.cosi.*) so a
//     new COSI version is covered too: CredentialDetails.secrets (v1alpha1),
//     S3CredentialInfo.access_key_id and access_secret_key,
//     AzureCredentialInfo.access_token, GcsCredentialInfo.access_id,
//     access_secret and private_key_name (v1alpha2). A Redactor built
//     WithSecretFields adds names for another protocol, for itself alone.
//   - Mount options (csi.v1 mount_flags) are shown, but the value of every
//     key=value option in them is secret, whatever its length; an element
//     may hold a comma-separated list ("user=bob,password=x"), and an empty
//     value stays empty.
//
// IsSecretField is the one definition of a secret field for the whole
// module: request fingerprints use it as the walkers here do.
//   - Optionally (WithHeuristic), values of map<string,string> entries whose
//     key LooksSecret, because users put passwords in StorageClass parameters.
//
// Redaction replaces values and keeps keys: an operator must be able to see
// which secret was sent, never what it was. A secret map keeps its keys with
// Placeholder values, a secret list keeps its length, a secret scalar or
// message becomes Placeholder.
//
// # Computed once per type
//
// Reading options is slow, and logging is on every call's path, so nothing
// is looked up per call. The first time a message type is seen, a plan is
// built for it and every type reachable from it (recursive types included):
// the fields in declaration order, which are secret, which subtrees can hold
// secrets, enum value names. Plans are cached per descriptor, in the
// built-in set or in the Redactor whose WithSecretFields they depend on.
//
// # Use
//
// With zap, log requests through Field or Object; the message is only walked
// when the entry is actually written, straight into the encoder:
//
//	logger.Debug("call", secrets.Field("request", req))
//
// String gives the same redacted JSON for other loggers, Redact a redacted
// copy of the message, and Values and Scrub remove secret values from text
// such as error messages from a backend.
//
// # Public APIs only
//
// Messages are read through protoreflect and written through zap's
// zapcore.ObjectEncoder and zapcore.ArrayEncoder, the same way for generated
// and dynamic messages: nothing depends on how either library lays out its
// own memory, so a release that keeps its API keeps redaction working. The nested objects and arrays handed to the
// encoder come from a pooled walker and are reused as soon as AddObject or
// AddArray returns, which every zap encoder guarantees by calling the
// marshaler before returning; an encoder that kept a nested marshaler to call
// later would see it reused. What protoreflect costs on a generated message
// (a reflect look-up per field read, and for each map or list a view and a
// copy of every entry or string element read) is measured in BENCHMARKS.md.
package secrets
