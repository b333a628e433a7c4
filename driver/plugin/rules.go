package plugin

import (
	"fmt"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/middleware/validation"
)

// The rules validation enforces beyond csi.v1, which is the validation package's own contract.
// The services beside CSI (the volume-group spec, both COSI versions) are named here, as data:
// their REQUIRED fields, and COSI's names, IDs, long strings, known enums and driver name. New
// builds one validation.Rules value from them and hands it to every check the server runs.

// requiredFields lists, per proto message, the fields (or oneofs) that must be set.
var requiredFields = map[string][]string{
	// The volume-group spec ("This field is REQUIRED").
	"volumegroup.CreateVolumeGroupRequest":            {"name"},
	"volumegroup.DeleteVolumeGroupRequest":            {"volume_group_id"},
	"volumegroup.ModifyVolumeGroupMembershipRequest":  {"volume_group_id"},
	"volumegroup.ControllerGetVolumeGroupRequest":     {"volume_group_id"},
	"volumegroup.CreateVolumeGroupResponse":           {"volume_group"},
	"volumegroup.ModifyVolumeGroupMembershipResponse": {"volume_group"},
	"volumegroup.ControllerGetVolumeGroupResponse":    {"volume_group"},
	"volumegroup.VolumeGroup":                         {"volume_group_id"},
	"volumegroup.VgVolume":                            {"volume_id"},
	// COSI v1alpha1 (sigs.k8s.io/container-object-storage-interface/proto v0.2.2).
	"cosi.v1alpha1.DriverCreateBucketRequest":       {"name"},
	"cosi.v1alpha1.DriverDeleteBucketRequest":       {"bucket_id"},
	"cosi.v1alpha1.DriverGrantBucketAccessRequest":  {"bucket_id", "name", "authentication_type"},
	"cosi.v1alpha1.DriverRevokeBucketAccessRequest": {"bucket_id", "account_id"},
	"cosi.v1alpha1.DriverGetInfoResponse":           {"name"},
	"cosi.v1alpha1.DriverCreateBucketResponse":      {"bucket_id"},
	"cosi.v1alpha1.DriverGrantBucketAccessResponse": {"account_id"},
	// COSI v1alpha2 (the draft spec, driver/bucket/cosiv1alpha2).
	"sigs.k8s.io.cosi.v1alpha2.DriverCreateBucketRequest":                      {"name"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGetExistingBucketRequest":                 {"existing_bucket_id"},
	"sigs.k8s.io.cosi.v1alpha2.DriverDeleteBucketRequest":                      {"bucket_id"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessRequest":                 {"account_name", "protocol", "authentication_type", "buckets"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessRequest.AccessedBucket":  {"bucket_id", "access_mode"},
	"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessRequest":                {"account_id", "protocol", "authentication_type", "buckets"},
	"sigs.k8s.io.cosi.v1alpha2.DriverRevokeBucketAccessRequest.AccessedBucket": {"bucket_id"},
	"sigs.k8s.io.cosi.v1alpha2.ObjectProtocol":                                 {"type"},
	"sigs.k8s.io.cosi.v1alpha2.AuthenticationType":                             {"type"},
	"sigs.k8s.io.cosi.v1alpha2.AccessMode":                                     {"mode"},
	"sigs.k8s.io.cosi.v1alpha2.S3AddressingStyle":                              {"style"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGetInfoResponse":                          {"name", "supported_protocols"},
	"sigs.k8s.io.cosi.v1alpha2.DriverCreateBucketResponse":                     {"bucket_id", "protocols"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGetExistingBucketResponse":                {"bucket_id", "protocols"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessResponse":                {"account_id", "buckets"},
	"sigs.k8s.io.cosi.v1alpha2.DriverGrantBucketAccessResponse.BucketInfo":     {"bucket_id", "bucket_info"},
}

const (
	cosiV1 = "cosi.v1alpha1."
	cosiV2 = "sigs.k8s.io.cosi.v1alpha2."

	maxCOSIEndpoint = 2048 // an S3 endpoint is a URL
	maxCOSIToken    = 64 << 10
	maxCOSIObjectID = 2048 // as the COSI sidecar validates bucket and account IDs
)

// cosiNameFields hold names the CO chose from Kubernetes object names (DNS subdomains, at most
// 253 characters).
var cosiNameFields = []protoreflect.FullName{
	cosiV1 + "DriverCreateBucketRequest.name",
	cosiV1 + "DriverGrantBucketAccessRequest.name",
	cosiV2 + "DriverCreateBucketRequest.name",
	cosiV2 + "DriverGrantBucketAccessRequest.account_name",
}

// cosiIDFields hold bucket and account IDs, in requests and in answers. The sidecar accepts up
// to 2048 characters of [A-Za-z0-9._/-] and stores them as immutable.
var cosiIDFields = []protoreflect.FullName{
	cosiV1 + "DriverCreateBucketResponse.bucket_id",
	cosiV1 + "DriverDeleteBucketRequest.bucket_id",
	cosiV1 + "DriverGrantBucketAccessRequest.bucket_id",
	cosiV1 + "DriverGrantBucketAccessResponse.account_id",
	cosiV1 + "DriverRevokeBucketAccessRequest.bucket_id",
	cosiV1 + "DriverRevokeBucketAccessRequest.account_id",
	cosiV2 + "DriverCreateBucketResponse.bucket_id",
	cosiV2 + "DriverGetExistingBucketRequest.existing_bucket_id",
	cosiV2 + "DriverGetExistingBucketResponse.bucket_id",
	cosiV2 + "DriverDeleteBucketRequest.bucket_id",
	cosiV2 + "DriverGrantBucketAccessRequest.AccessedBucket.bucket_id",
	cosiV2 + "DriverRevokeBucketAccessRequest.AccessedBucket.bucket_id",
	cosiV2 + "DriverGrantBucketAccessResponse.BucketInfo.bucket_id",
	cosiV2 + "DriverGrantBucketAccessResponse.account_id",
	cosiV2 + "DriverRevokeBucketAccessRequest.account_id",
}

// cosiMaxLen are COSI strings that are longer by nature than the general 128-byte limit.
var cosiMaxLen = map[protoreflect.FullName]int{
	cosiV2 + "S3BucketInfo.endpoint":              maxCOSIEndpoint,
	cosiV2 + "S3BucketInfo.bucket_id":             maxCOSIObjectID,
	cosiV2 + "GcsBucketInfo.bucket_name":          maxCOSIObjectID,
	cosiV2 + "AzureCredentialInfo.access_token":   maxCOSIToken,
	cosiV2 + "GcsCredentialInfo.private_key_name": maxCOSIToken,
}

// cosiKnownEnums must hold a value their enum declares.
var cosiKnownEnums = []protoreflect.FullName{
	cosiV1 + "DriverGrantBucketAccessRequest.authentication_type",
	cosiV2 + "ObjectProtocol.type",
	cosiV2 + "AuthenticationType.type",
	cosiV2 + "AccessMode.mode",
	cosiV2 + "S3AddressingStyle.style",
}

// cosiPluginNameFields hold the driver's name.
var cosiPluginNameFields = []protoreflect.FullName{
	cosiV1 + "DriverGetInfoResponse.name",
	cosiV2 + "DriverGetInfoResponse.name",
}

// newRules compiles the tables above with csi.v1's rules. An error means a table names a message
// or field the linked bindings do not have: a build mismatch that TestRulesBuild catches first.
func newRules() (*validation.Rules, error) {
	req := make(map[protoreflect.FullName][]protoreflect.Name, len(requiredFields))
	for msg, fields := range requiredFields {
		names := make([]protoreflect.Name, len(fields))
		for i, f := range fields {
			names[i] = protoreflect.Name(f)
		}
		req[protoreflect.FullName(msg)] = names
	}
	r, err := validation.NewRules(validation.Config{
		Required:    req,
		MaxLen:      cosiMaxLen,
		DNSNames:    cosiNameFields,
		ObjectIDs:   cosiIDFields,
		KnownEnums:  cosiKnownEnums,
		PluginNames: cosiPluginNameFields,
	})
	if err != nil {
		return nil, fmt.Errorf("validation rules: %w", err)
	}
	return r, nil
}
