package bucket_test

import (
	"errors"
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
)

// TestFingerprintsHashWhatTheirDocsSay: each field the docs name as hashed changes the
// fingerprint, each they name as left out does not.
func TestFingerprintsHashWhatTheirDocsSay(t *testing.T) {
	create := func(change func(r *bucket.CreateBucketRequest)) string {
		r := &bucket.CreateBucketRequest{Name: "b", Protocols: []bucket.Protocol{bucket.S3}, Parameters: map[string]string{"tier": "gold"}}
		r.Version = bucket.V1Alpha2
		change(r)
		return r.Fingerprint()
	}
	base := create(func(*bucket.CreateBucketRequest) {})
	for _, tc := range []struct {
		name   string
		change func(r *bucket.CreateBucketRequest)
		hashed bool
	}{
		{"a parameter value", func(r *bucket.CreateBucketRequest) { r.Parameters = map[string]string{"tier": "silver"} }, true},
		{"a parameter key", func(r *bucket.CreateBucketRequest) { r.Parameters = map[string]string{"class": "gold"} }, true},
		{"Name", func(r *bucket.CreateBucketRequest) { r.Name = "other" }, false},
		{"Protocols", func(r *bucket.CreateBucketRequest) { r.Protocols = nil }, false},
		{"Version", func(r *bucket.CreateBucketRequest) { r.Version = bucket.V1Alpha1 }, false},
	} {
		if got := create(tc.change) != base; got != tc.hashed {
			t.Errorf("CreateBucketRequest: changing %s changes the fingerprint: %t, want %t", tc.name, got, tc.hashed)
		}
	}

	grant := func(change func(r *bucket.GrantBucketAccessRequest)) string {
		r := &bucket.GrantBucketAccessRequest{AccountName: "ba-1", Protocol: bucket.S3, Authentication: bucket.AuthKey,
			Parameters: map[string]string{"k": "v"},
			Buckets:    []bucket.Grant{{BucketID: "a", Mode: bucket.ReadWrite}, {BucketID: "b", Mode: bucket.ReadOnly}}}
		r.Version = bucket.V1Alpha2
		change(r)
		return r.Fingerprint()
	}
	gbase := grant(func(*bucket.GrantBucketAccessRequest) {})
	for _, tc := range []struct {
		name   string
		change func(r *bucket.GrantBucketAccessRequest)
		hashed bool
	}{
		{"Protocol", func(r *bucket.GrantBucketAccessRequest) { r.Protocol = bucket.GCS }, true},
		{"Authentication", func(r *bucket.GrantBucketAccessRequest) { r.Authentication = bucket.AuthServiceAccount }, true},
		{"ServiceAccountName", func(r *bucket.GrantBucketAccessRequest) { r.ServiceAccountName = "sa" }, true},
		{"Parameters", func(r *bucket.GrantBucketAccessRequest) { r.Parameters = nil }, true},
		{"a bucket", func(r *bucket.GrantBucketAccessRequest) { r.Buckets[1].BucketID = "c" }, true},
		{"a mode", func(r *bucket.GrantBucketAccessRequest) { r.Buckets[1].Mode = bucket.ReadWrite }, true},
		{"the order of the buckets", func(r *bucket.GrantBucketAccessRequest) { r.Buckets[0], r.Buckets[1] = r.Buckets[1], r.Buckets[0] }, false},
		{"AccountName", func(r *bucket.GrantBucketAccessRequest) { r.AccountName = "ba-2" }, false},
		{"Version", func(r *bucket.GrantBucketAccessRequest) { r.Version = bucket.V1Alpha1 }, false},
	} {
		if got := grant(tc.change) != gbase; got != tc.hashed {
			t.Errorf("GrantBucketAccessRequest: changing %s changes the fingerprint: %t, want %t", tc.name, got, tc.hashed)
		}
	}
}

// TestCheckExisting: nil when nothing exists under the name (whatever the fingerprint), nil for a
// match, ErrAlreadyExists for a mismatch.
func TestCheckExisting(t *testing.T) {
	c := &bucket.CreateBucketRequest{Name: "b", Parameters: map[string]string{"tier": "gold"}}
	g := &bucket.GrantBucketAccessRequest{AccountName: "ba-1", Protocol: bucket.S3, Authentication: bucket.AuthKey,
		Buckets: []bucket.Grant{{BucketID: "a", Mode: bucket.ReadWrite}}}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"create, nothing existing, any fingerprint", c.CheckExisting("whatever", nil), nil},
		{"create, same fingerprint", c.CheckExisting(c.Fingerprint(), &bucket.Bucket{ID: "b"}), nil},
		{"create, other fingerprint", c.CheckExisting("other", &bucket.Bucket{ID: "b"}), driver.ErrAlreadyExists},
		{"grant, nothing existing, any fingerprint", g.CheckExisting("whatever", nil), nil},
		{"grant, same fingerprint", g.CheckExisting(g.Fingerprint(), &bucket.Access{AccountID: "x"}), nil},
		{"grant, other fingerprint", g.CheckExisting("other", &bucket.Access{AccountID: "x"}), driver.ErrAlreadyExists},
	} {
		if (tc.want == nil && tc.err != nil) || (tc.want != nil && !errors.Is(tc.err, tc.want)) {
			t.Errorf("%s: %v, want %v", tc.name, tc.err, tc.want)
		}
	}
}
