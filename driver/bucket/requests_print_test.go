package bucket_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// TestRequestsPrintRedacted: every request type, with a wire request of either version or none,
// hides a secret-looking parameter's value in every form a log line may take, keeps its key, and
// names its type; so does its Wire printed alone.
func TestRequestsPrintRedacted(t *testing.T) {
	const canary = "hunter2-canary"
	params := map[string]string{"password": canary, "tier": "gold"}
	create1, create2 := &bucket.CreateBucketRequest{}, &bucket.CreateBucketRequest{}
	create1.RawV1Alpha1 = &cosi1.DriverCreateBucketRequest{Name: "b", Parameters: params}
	create2.RawV1Alpha2 = &cosi2.DriverCreateBucketRequest{Name: "b", Parameters: params}
	del1, del2 := &bucket.DeleteBucketRequest{}, &bucket.DeleteBucketRequest{}
	del1.RawV1Alpha1 = &cosi1.DriverDeleteBucketRequest{BucketId: "b", DeleteContext: params}
	del2.RawV1Alpha2 = &cosi2.DriverDeleteBucketRequest{BucketId: "b", Parameters: params}
	grant1, grant2 := &bucket.GrantBucketAccessRequest{}, &bucket.GrantBucketAccessRequest{}
	grant1.RawV1Alpha1 = &cosi1.DriverGrantBucketAccessRequest{Name: "ba", Parameters: params}
	grant2.RawV1Alpha2 = &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba", Parameters: params}
	revoke1, revoke2 := &bucket.RevokeBucketAccessRequest{}, &bucket.RevokeBucketAccessRequest{}
	revoke1.RawV1Alpha1 = &cosi1.DriverRevokeBucketAccessRequest{AccountId: "a", RevokeAccessContext: params}
	revoke2.RawV1Alpha2 = &cosi2.DriverRevokeBucketAccessRequest{AccountId: "a", Parameters: params}
	get := &bucket.GetBucketRequest{RawV1Alpha2: &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "b", Parameters: params}}

	for _, tc := range []struct {
		name string
		req  any
		want string // the printed prefix
	}{
		{"create v1alpha1", create1, "CreateBucketRequest{"},
		{"create v1alpha2", create2, "CreateBucketRequest{"},
		{"create v1alpha1 wire", create1.Wire, "bucket.Wire{"},
		{"get", get, "GetBucketRequest{"},
		{"delete v1alpha1", del1, "DeleteBucketRequest{"},
		{"delete v1alpha2", del2, "DeleteBucketRequest{"},
		{"grant v1alpha1", grant1, "GrantBucketAccessRequest{"},
		{"grant v1alpha2", grant2, "GrantBucketAccessRequest{"},
		{"grant v1alpha2 wire", grant2.Wire, "bucket.Wire{"},
		{"revoke v1alpha1", revoke1, "RevokeBucketAccessRequest{"},
		{"revoke v1alpha2", revoke2, "RevokeBucketAccessRequest{"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			js, err := json.Marshal(tc.req)
			if err != nil {
				t.Fatal(err)
			}
			if got := fmt.Sprint(tc.req); !strings.HasPrefix(got, tc.want) {
				t.Errorf("printed %s, want it to start with %s", got, tc.want)
			}
			for _, form := range []string{fmt.Sprintf("%v", tc.req), fmt.Sprintf("%+v", tc.req), fmt.Sprintf("%#v", tc.req), string(js)} {
				if strings.Contains(form, canary) {
					t.Errorf("leaked a secret-looking value: %s", form)
				}
				if !strings.Contains(form, "password") || !strings.Contains(form, "gold") {
					t.Errorf("lost the keys or the harmless values: %s", form)
				}
			}
		})
	}
}

// TestRequestsBuiltByHandPrintEmpty: a request without a wire request prints as its type name and
// "{}", not as an empty message of one version's type.
func TestRequestsBuiltByHandPrintEmpty(t *testing.T) {
	for _, tc := range []struct {
		req  any
		want string
	}{
		{bucket.CreateBucketRequest{Name: "b", Parameters: map[string]string{"password": "x"}}, "CreateBucketRequest{}"},
		{bucket.GetBucketRequest{ID: "b"}, "GetBucketRequest{}"},
		{bucket.DeleteBucketRequest{ID: "b"}, "DeleteBucketRequest{}"},
		{bucket.GrantBucketAccessRequest{AccountName: "ba"}, "GrantBucketAccessRequest{}"},
		{bucket.RevokeBucketAccessRequest{AccountID: "a"}, "RevokeBucketAccessRequest{}"},
	} {
		if got := fmt.Sprint(tc.req); got != tc.want {
			t.Errorf("printed %s, want %s", got, tc.want)
		}
		if js, err := json.Marshal(tc.req); err != nil || string(js) != "{}" {
			t.Errorf("%s: JSON %s (%v), want {}", tc.want, js, err)
		}
	}
}
