package main

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// The values of the COSI flags. They parse into v1alpha2's enums, the richer of the two versions;
// the v1alpha1 commands translate the little that version can say.

var objectProtocols = map[string]cosi2.ObjectProtocol_Type{
	"s3":    cosi2.ObjectProtocol_S3,
	"azure": cosi2.ObjectProtocol_AZURE,
	"gcs":   cosi2.ObjectProtocol_GCS,
}

var authTypes = map[string]cosi2.AuthenticationType_Type{
	"key":             cosi2.AuthenticationType_KEY,
	"service-account": cosi2.AuthenticationType_SERVICE_ACCOUNT,
}

// bucketModes has the short forms first in bucketModeNames, the ones completion offers.
var bucketModes = map[string]cosi2.AccessMode_Mode{
	"rw": cosi2.AccessMode_READ_WRITE, "read-write": cosi2.AccessMode_READ_WRITE,
	"ro": cosi2.AccessMode_READ_ONLY, "read-only": cosi2.AccessMode_READ_ONLY,
	"wo": cosi2.AccessMode_WRITE_ONLY, "write-only": cosi2.AccessMode_WRITE_ONLY,
}

var bucketModeNames = []string{"rw", "ro", "wo"}

// lookup finds a flag value in one of the tables above, case-insensitively, and names the
// accepted values when it is not there.
func lookup[V any](flag string, table map[string]V, value string) (V, error) {
	if v, ok := table[strings.ToLower(strings.TrimSpace(value))]; ok {
		return v, nil
	}
	var zero V
	return zero, fmt.Errorf("invalid --%s %q: use %s", flag, value, strings.Join(slices.Sorted(maps.Keys(table)), ", "))
}

func parseProtocol(value string) (*cosi2.ObjectProtocol, error) {
	t, err := lookup("protocol", objectProtocols, value)
	if err != nil {
		return nil, err
	}
	return &cosi2.ObjectProtocol{Type: t}, nil
}

// parseProtocols parses repeated --protocol flags. A repeat is refused here because the plugin
// would refuse it too, after the call.
func parseProtocols(values []string) ([]*cosi2.ObjectProtocol, error) {
	var out []*cosi2.ObjectProtocol
	for _, v := range values {
		p, err := parseProtocol(v)
		if err != nil {
			return nil, err
		}
		if slices.ContainsFunc(out, func(q *cosi2.ObjectProtocol) bool { return q.GetType() == p.GetType() }) {
			return nil, fmt.Errorf("--protocol: %q given twice", v)
		}
		out = append(out, p)
	}
	return out, nil
}

func parseAuth(value string) (*cosi2.AuthenticationType, error) {
	t, err := lookup("auth", authTypes, value)
	if err != nil {
		return nil, err
	}
	return &cosi2.AuthenticationType{Type: t}, nil
}

// checkBucketIDs refuses an empty or repeated bucket ID of flag (a name such as "--bucket", or
// "BUCKET_ID" for arguments).
func checkBucketIDs(what string, ids []string) error {
	for i, id := range ids {
		if id == "" {
			return fmt.Errorf("%s: empty bucket ID", what)
		}
		if slices.Contains(ids[:i], id) {
			return fmt.Errorf("%s: bucket %q given twice", what, id)
		}
	}
	return nil
}

// parseBucketModes gives every bucket of a grant its access mode: --mode for all, overridden per
// bucket by --bucket-mode ID=MODE. An override for a bucket that is not granted is refused
// rather than ignored: it is a typo in a bucket ID, and the mode meant for it would silently not
// apply.
func parseBucketModes(buckets []string, mode string, perBucket []string) (map[string]cosi2.AccessMode_Mode, error) {
	all, err := lookup("mode", bucketModes, mode)
	if err != nil {
		return nil, err
	}
	out := make(map[string]cosi2.AccessMode_Mode, len(buckets))
	for _, b := range buckets {
		out[b] = all
	}
	overrides, err := parseMap("bucket-mode", perBucket)
	if err != nil {
		return nil, err
	}
	for id, m := range overrides {
		if _, granted := out[id]; !granted {
			return nil, fmt.Errorf("--bucket-mode %s=%s: bucket %q is not among the buckets granted (%s)", id, m, id, strings.Join(buckets, " "))
		}
		if out[id], err = lookup("bucket-mode", bucketModes, m); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// checkServiceAccount: a service account means something only to service-account
// authentication. (Whether that authentication needs one depends on the wire version.)
func checkServiceAccount(auth *cosi2.AuthenticationType, sa string) error {
	if auth.GetType() == cosi2.AuthenticationType_KEY && sa != "" {
		return errors.New("--service-account is for --auth service-account only")
	}
	return nil
}
