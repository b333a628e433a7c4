// Package v1alpha2 is where the COSI v1alpha2 bindings used to live; they are public now, in
// github.com/csikit/csikit/driver/bucket/cosiv1alpha2, which drivers can import. This package
// only aliases that one, name for name, so that code still importing the old path
// (examples/memorys3's tests) keeps compiling until its imports move. It is temporary: delete it
// in the change that moves the last import (TestSomethingStillImportsTheOldPath fails once
// nothing does).
//
// Deprecated: import github.com/csikit/csikit/driver/bucket/cosiv1alpha2.
package v1alpha2

import "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"

// Every exported name of package cosiv1alpha2, as it was here (generated from its declarations).
type (
	AccessMode                                     = cosiv1alpha2.AccessMode
	AccessMode_Mode                                = cosiv1alpha2.AccessMode_Mode
	AuthenticationType                             = cosiv1alpha2.AuthenticationType
	AuthenticationType_Type                        = cosiv1alpha2.AuthenticationType_Type
	AzureBucketInfo                                = cosiv1alpha2.AzureBucketInfo
	AzureCredentialInfo                            = cosiv1alpha2.AzureCredentialInfo
	CredentialInfo                                 = cosiv1alpha2.CredentialInfo
	DriverCreateBucketRequest                      = cosiv1alpha2.DriverCreateBucketRequest
	DriverCreateBucketResponse                     = cosiv1alpha2.DriverCreateBucketResponse
	DriverDeleteBucketRequest                      = cosiv1alpha2.DriverDeleteBucketRequest
	DriverDeleteBucketResponse                     = cosiv1alpha2.DriverDeleteBucketResponse
	DriverGetExistingBucketRequest                 = cosiv1alpha2.DriverGetExistingBucketRequest
	DriverGetExistingBucketResponse                = cosiv1alpha2.DriverGetExistingBucketResponse
	DriverGetInfoRequest                           = cosiv1alpha2.DriverGetInfoRequest
	DriverGetInfoResponse                          = cosiv1alpha2.DriverGetInfoResponse
	DriverGrantBucketAccessRequest                 = cosiv1alpha2.DriverGrantBucketAccessRequest
	DriverGrantBucketAccessRequest_AccessedBucket  = cosiv1alpha2.DriverGrantBucketAccessRequest_AccessedBucket
	DriverGrantBucketAccessResponse                = cosiv1alpha2.DriverGrantBucketAccessResponse
	DriverGrantBucketAccessResponse_BucketInfo     = cosiv1alpha2.DriverGrantBucketAccessResponse_BucketInfo
	DriverRevokeBucketAccessRequest                = cosiv1alpha2.DriverRevokeBucketAccessRequest
	DriverRevokeBucketAccessRequest_AccessedBucket = cosiv1alpha2.DriverRevokeBucketAccessRequest_AccessedBucket
	DriverRevokeBucketAccessResponse               = cosiv1alpha2.DriverRevokeBucketAccessResponse
	GcsBucketInfo                                  = cosiv1alpha2.GcsBucketInfo
	GcsCredentialInfo                              = cosiv1alpha2.GcsCredentialInfo
	IdentityClient                                 = cosiv1alpha2.IdentityClient
	IdentityServer                                 = cosiv1alpha2.IdentityServer
	ObjectProtocol                                 = cosiv1alpha2.ObjectProtocol
	ObjectProtocolAndBucketInfo                    = cosiv1alpha2.ObjectProtocolAndBucketInfo
	ObjectProtocol_Type                            = cosiv1alpha2.ObjectProtocol_Type
	ProvisionerClient                              = cosiv1alpha2.ProvisionerClient
	ProvisionerServer                              = cosiv1alpha2.ProvisionerServer
	S3AddressingStyle                              = cosiv1alpha2.S3AddressingStyle
	S3AddressingStyle_Style                        = cosiv1alpha2.S3AddressingStyle_Style
	S3BucketInfo                                   = cosiv1alpha2.S3BucketInfo
	S3CredentialInfo                               = cosiv1alpha2.S3CredentialInfo
	UnimplementedIdentityServer                    = cosiv1alpha2.UnimplementedIdentityServer
	UnimplementedProvisionerServer                 = cosiv1alpha2.UnimplementedProvisionerServer
	UnsafeIdentityServer                           = cosiv1alpha2.UnsafeIdentityServer
	UnsafeProvisionerServer                        = cosiv1alpha2.UnsafeProvisionerServer
)

const (
	AccessMode_READ_ONLY                                = cosiv1alpha2.AccessMode_READ_ONLY
	AccessMode_READ_WRITE                               = cosiv1alpha2.AccessMode_READ_WRITE
	AccessMode_UNKNOWN                                  = cosiv1alpha2.AccessMode_UNKNOWN
	AccessMode_WRITE_ONLY                               = cosiv1alpha2.AccessMode_WRITE_ONLY
	AuthenticationType_KEY                              = cosiv1alpha2.AuthenticationType_KEY
	AuthenticationType_SERVICE_ACCOUNT                  = cosiv1alpha2.AuthenticationType_SERVICE_ACCOUNT
	AuthenticationType_UNKNOWN                          = cosiv1alpha2.AuthenticationType_UNKNOWN
	Identity_DriverGetInfo_FullMethodName               = cosiv1alpha2.Identity_DriverGetInfo_FullMethodName
	ObjectProtocol_AZURE                                = cosiv1alpha2.ObjectProtocol_AZURE
	ObjectProtocol_GCS                                  = cosiv1alpha2.ObjectProtocol_GCS
	ObjectProtocol_S3                                   = cosiv1alpha2.ObjectProtocol_S3
	ObjectProtocol_UNKNOWN                              = cosiv1alpha2.ObjectProtocol_UNKNOWN
	Provisioner_DriverCreateBucket_FullMethodName       = cosiv1alpha2.Provisioner_DriverCreateBucket_FullMethodName
	Provisioner_DriverDeleteBucket_FullMethodName       = cosiv1alpha2.Provisioner_DriverDeleteBucket_FullMethodName
	Provisioner_DriverGetExistingBucket_FullMethodName  = cosiv1alpha2.Provisioner_DriverGetExistingBucket_FullMethodName
	Provisioner_DriverGrantBucketAccess_FullMethodName  = cosiv1alpha2.Provisioner_DriverGrantBucketAccess_FullMethodName
	Provisioner_DriverRevokeBucketAccess_FullMethodName = cosiv1alpha2.Provisioner_DriverRevokeBucketAccess_FullMethodName
	S3AddressingStyle_PATH                              = cosiv1alpha2.S3AddressingStyle_PATH
	S3AddressingStyle_UNKNOWN                           = cosiv1alpha2.S3AddressingStyle_UNKNOWN
	S3AddressingStyle_VIRTUAL                           = cosiv1alpha2.S3AddressingStyle_VIRTUAL
)

var (
	AccessMode_Mode_name                 = cosiv1alpha2.AccessMode_Mode_name
	AccessMode_Mode_value                = cosiv1alpha2.AccessMode_Mode_value
	AuthenticationType_Type_name         = cosiv1alpha2.AuthenticationType_Type_name
	AuthenticationType_Type_value        = cosiv1alpha2.AuthenticationType_Type_value
	File_csikit_cosi_v1alpha2_cosi_proto = cosiv1alpha2.File_csikit_cosi_v1alpha2_cosi_proto
	Identity_ServiceDesc                 = cosiv1alpha2.Identity_ServiceDesc
	ObjectProtocol_Type_name             = cosiv1alpha2.ObjectProtocol_Type_name
	ObjectProtocol_Type_value            = cosiv1alpha2.ObjectProtocol_Type_value
	Provisioner_ServiceDesc              = cosiv1alpha2.Provisioner_ServiceDesc
	S3AddressingStyle_Style_name         = cosiv1alpha2.S3AddressingStyle_Style_name
	S3AddressingStyle_Style_value        = cosiv1alpha2.S3AddressingStyle_Style_value
	NewIdentityClient                    = cosiv1alpha2.NewIdentityClient
	NewProvisionerClient                 = cosiv1alpha2.NewProvisionerClient
	RegisterIdentityServer               = cosiv1alpha2.RegisterIdentityServer
	RegisterProvisionerServer            = cosiv1alpha2.RegisterProvisionerServer
)
