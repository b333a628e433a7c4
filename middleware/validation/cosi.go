package validation

import (
	"errors"
	"maps"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// COSI's field rules, for both wire versions (cosi.v1alpha1 and sigs.k8s.io.cosi.v1alpha2). They
// take effect once the driver registers a COSI package with RegisterRequired; until then no COSI
// message is checked. The general limits are CSI's (strings 128 bytes, maps 4 KiB); COSI
// overrides them for names, which are Kubernetes object names (DNS subdomains, at most 253
// characters), and for bucket and account IDs, which the sidecar accepts up to 2048 characters of
// [A-Za-z0-9._/-] and stores as immutable.

const (
	maxCOSIName     = 253  // a DNS subdomain
	maxCOSIObjectID = 2048 // bucket and account IDs, as the COSI sidecar validates them
	maxCOSIEndpoint = 2048 // an S3 endpoint is a URL
	maxCOSIToken    = 64 << 10
)

const (
	cosiV1 = "cosi.v1alpha1."
	cosiV2 = "sigs.k8s.io.cosi.v1alpha2."
)

// cosiNameFields hold names the CO chose from Kubernetes object names.
var cosiNameFields = map[protoreflect.FullName]bool{
	cosiV1 + "DriverCreateBucketRequest.name":              true,
	cosiV1 + "DriverGrantBucketAccessRequest.name":         true,
	cosiV2 + "DriverCreateBucketRequest.name":              true,
	cosiV2 + "DriverGrantBucketAccessRequest.account_name": true,
}

// cosiIDFields hold bucket and account IDs, in requests and in answers.
var cosiIDFields = map[protoreflect.FullName]bool{
	cosiV1 + "DriverCreateBucketResponse.bucket_id":                     true,
	cosiV1 + "DriverDeleteBucketRequest.bucket_id":                      true,
	cosiV1 + "DriverGrantBucketAccessRequest.bucket_id":                 true,
	cosiV1 + "DriverGrantBucketAccessResponse.account_id":               true,
	cosiV1 + "DriverRevokeBucketAccessRequest.bucket_id":                true,
	cosiV1 + "DriverRevokeBucketAccessRequest.account_id":               true,
	cosiV2 + "DriverCreateBucketResponse.bucket_id":                     true,
	cosiV2 + "DriverGetExistingBucketRequest.existing_bucket_id":        true,
	cosiV2 + "DriverGetExistingBucketResponse.bucket_id":                true,
	cosiV2 + "DriverDeleteBucketRequest.bucket_id":                      true,
	cosiV2 + "DriverGrantBucketAccessRequest.AccessedBucket.bucket_id":  true,
	cosiV2 + "DriverRevokeBucketAccessRequest.AccessedBucket.bucket_id": true,
	cosiV2 + "DriverGrantBucketAccessResponse.BucketInfo.bucket_id":     true,
	cosiV2 + "DriverGrantBucketAccessResponse.account_id":               true,
	cosiV2 + "DriverRevokeBucketAccessRequest.account_id":               true,
}

// cosiMaxLenOverrides are COSI strings that are longer by nature than the general limit.
var cosiMaxLenOverrides = map[protoreflect.FullName]int{
	cosiV2 + "S3BucketInfo.endpoint":              maxCOSIEndpoint,
	cosiV2 + "S3BucketInfo.bucket_id":             maxCOSIObjectID,
	cosiV2 + "GcsBucketInfo.bucket_name":          maxCOSIObjectID,
	cosiV2 + "AzureCredentialInfo.access_token":   maxCOSIToken,
	cosiV2 + "GcsCredentialInfo.private_key_name": maxCOSIToken,
}

// cosiKnownEnums must hold a value their enum declares.
var cosiKnownEnums = map[protoreflect.FullName]bool{
	cosiV1 + "DriverGrantBucketAccessRequest.authentication_type": true,
	cosiV2 + "ObjectProtocol.type":                                true,
	cosiV2 + "AuthenticationType.type":                            true,
	cosiV2 + "AccessMode.mode":                                    true,
	cosiV2 + "S3AddressingStyle.style":                            true,
}

// cosiPluginNameFields hold the driver's name.
var cosiPluginNameFields = map[protoreflect.FullName]bool{
	cosiV1 + "DriverGetInfoResponse.name": true,
	cosiV2 + "DriverGetInfoResponse.name": true,
}

// The tables the plan compiles from: CSI's rules and COSI's together.
var (
	maxLenOverrides = union(csiMaxLenOverrides, cosiMaxLenOverrides,
		every(cosiNameFields, maxCOSIName), every(cosiIDFields, maxCOSIObjectID))
	knownEnumFields  = union(csiKnownEnumFields, cosiKnownEnums)
	pluginNameFields = union(csiPluginNameFields, cosiPluginNameFields)
)

// union returns one table with the entries of every table given. Where two name a field, the
// later one's value is kept.
func union[V any](tables ...map[protoreflect.FullName]V) map[protoreflect.FullName]V {
	out := map[protoreflect.FullName]V{}
	for _, t := range tables {
		maps.Copy(out, t)
	}
	return out
}

// every maps each field of set to v.
func every[V any](set map[protoreflect.FullName]bool, v V) map[protoreflect.FullName]V {
	out := make(map[protoreflect.FullName]V, len(set))
	for f := range set {
		out[f] = v
	}
	return out
}

// COSIDriverName checks a COSI driver name as the COSI sidecar does: at most 63 characters of
// dot-separated DNS-1035 labels (lowercase letters, digits and '-', starting with a letter and
// ending with a letter or digit), e.g. "memorys3.csikit.dev".
func COSIDriverName(name string) error {
	if name == "" {
		return errors.New("COSI driver name: must not be empty")
	}
	if len(name) > maxDNSName {
		return errors.New("COSI driver name: must be 63 characters or less")
	}
	if !isDNSName(name, true) {
		return errors.New("COSI driver name: must be dot-separated labels of lowercase letters, digits and '-'")
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if c := name[start]; c < 'a' || c > 'z' {
				return errors.New("COSI driver name: every dot-separated label must start with a lowercase letter (DNS-1035)")
			}
			start = i + 1
		}
	}
	return nil
}

// COSIObjectIDProblem checks a bucket or account ID: non-empty, at most 2048 characters of
// [A-Za-z0-9._/-]. It returns "" for a valid ID, else the problem ("must ..."), without the ID.
func COSIObjectIDProblem(id string) string {
	if id == "" {
		return "must not be empty"
	}
	if len(id) > maxCOSIObjectID {
		return "must be 2048 characters or less"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(isAlnum(c) || c == '.' || c == '_' || c == '/' || c == '-') {
			return "must contain only letters, digits, '.', '_', '/' and '-'"
		}
	}
	return ""
}

// cosiNameProblem checks a COSI name: a DNS subdomain (RFC 1123) of at most 253 characters.
func cosiNameProblem(s string) string {
	if len(s) > maxCOSIName {
		return "must be 253 characters or less"
	}
	if !isDNSName(s, true) {
		return "must be a DNS subdomain: lowercase letters, digits, '-' and '.', every dot-separated label beginning and ending with a letter or digit"
	}
	return ""
}

func checkCOSIString(s string, flags ruleFlags) *violation {
	p := ""
	if flags&fCOSIName != 0 {
		p = cosiNameProblem(s)
	} else {
		p = COSIObjectIDProblem(s)
	}
	if p == "" {
		return nil
	}
	return newViolation(p)
}
