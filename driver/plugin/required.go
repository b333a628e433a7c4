package plugin

import (
	"fmt"
	"sync"

	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/csikit/csikit/middleware/validation"
)

// validation checks csi.v1 from the start, with its REQUIRED fields generated from the spec. The
// services beside CSI join it here: their fields marked REQUIRED in their protos (the
// volume-group spec, both COSI versions) are registered with validation.RegisterRequired, which also
// turns on its generic rules (size limits, secret maps, no negative integers) for their packages.
// This is set-up code run by New, once per process, rather than an init function writing into
// validation's tables whenever this package is linked.

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

// registerRequiredFields registers requiredFields with validation, once. An error means the
// table names a message or field the linked bindings do not have: a build mismatch that
// TestRequiredFieldsAreRegistered catches first.
var registerRequiredFields = sync.OnceValue(func() error {
	for msg, fields := range requiredFields {
		names := make([]protoreflect.Name, len(fields))
		for i, f := range fields {
			names[i] = protoreflect.Name(f)
		}
		if err := validation.RegisterRequired(protoreflect.FullName(msg), names...); err != nil {
			return fmt.Errorf("required fields of %s: %w", msg, err)
		}
	}
	return nil
})
