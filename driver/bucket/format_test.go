package bucket_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver/bucket"
)

// TestCredentialsNeverPrint: every credential type hides its values in every form a log line,
// an error or a panic report may take.
func TestCredentialsNeverPrint(t *testing.T) {
	s3 := &bucket.S3Credentials{AccessKeyID: "AKIDVALUE123", SecretAccessKey: "SECRETVALUE456"}
	az := &bucket.AzureCredentials{AccessToken: "TOKENVALUE789"}
	gcs := &bucket.GCSCredentials{AccessID: "GOOGVALUE1", AccessSecret: "GSECRETVALUE2", PrivateKeyName: "PKNAMEVALUE3", ServiceAccount: "sa@example"}
	all := bucket.Credentials{S3: s3, Azure: az, GCS: gcs}
	for _, v := range []any{s3, *s3, az, *az, gcs, *gcs, all, &all, bucket.Access{AccountID: "a", Credentials: all}} {
		js, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		for _, form := range []string{fmt.Sprintf("%v", v), fmt.Sprintf("%+v", v), fmt.Sprintf("%#v", v), fmt.Sprintf("%s", v), string(js)} {
			for _, secret := range []string{"AKIDVALUE123", "SECRETVALUE456", "TOKENVALUE789", "GOOGVALUE1", "GSECRETVALUE2", "PKNAMEVALUE3"} {
				if strings.Contains(form, secret) {
					t.Errorf("%T printed a credential: %s", v, form)
				}
			}
		}
	}
}

// TestCredentialsJSONIsRedactedAndRefusedOnTheWayBack is the decision the Credentials doc
// explains: JSON stays redacted (a log or dump that uses encoding/json cannot leak a key), and a
// backend that persists credentials with encoding/json is told so when it reads them back, instead
// of getting empty credentials; a JSON object with the fields still decodes.
func TestCredentialsJSONIsRedactedAndRefusedOnTheWayBack(t *testing.T) {
	secretValues := []string{"AKIDVALUE123", "SECRETVALUE456", "TOKENVALUE789", "GOOGVALUE1", "GSECRETVALUE2", "PKNAMEVALUE3"}
	s3 := bucket.S3Credentials{AccessKeyID: "AKIDVALUE123", SecretAccessKey: "SECRETVALUE456"}
	az := bucket.AzureCredentials{AccessToken: "TOKENVALUE789"}
	gcs := bucket.GCSCredentials{AccessID: "GOOGVALUE1", AccessSecret: "GSECRETVALUE2", PrivateKeyName: "PKNAMEVALUE3", ServiceAccount: "sa@example"}
	type stored struct { // what a careless backend would persist
		S3     bucket.S3Credentials
		Azure  bucket.AzureCredentials
		GCS    bucket.GCSCredentials
		All    bucket.Credentials
		Access bucket.Access
	}
	for name, roundTrip := range map[string]func() (string, error){
		"S3Credentials":    func() (string, error) { return roundTripJSON(s3) },
		"AzureCredentials": func() (string, error) { return roundTripJSON(az) },
		"GCSCredentials":   func() (string, error) { return roundTripJSON(gcs) },
		"Credentials":      func() (string, error) { return roundTripJSON(bucket.Credentials{S3: &s3, Azure: &az, GCS: &gcs}) },
		"*Credentials":     func() (string, error) { return roundTripJSON(&bucket.Credentials{S3: &s3}) },
		"Access": func() (string, error) {
			return roundTripJSON(bucket.Access{AccountID: "a", Credentials: bucket.Credentials{S3: &s3}})
		},
		"a struct of them": func() (string, error) {
			return roundTripJSON(stored{S3: s3, Azure: az, GCS: gcs, All: bucket.Credentials{GCS: &gcs}})
		},
	} {
		t.Run(name, func(t *testing.T) {
			js, err := roundTrip()
			for _, v := range secretValues {
				if strings.Contains(js, v) {
					t.Errorf("JSON-encoded a credential: %s", js)
				}
			}
			if err == nil {
				t.Fatalf("decoding the redacted JSON %s succeeded: a backend would read back empty credentials", js)
			}
			for _, want := range []string{"redacted", "store their fields in a type of your own"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not say %q", err, want)
				}
			}
		})
	}

	var back bucket.Credentials
	if err := json.Unmarshal([]byte(`{"S3":{"AccessKeyID":"id","SecretAccessKey":"key"},"Azure":null}`), &back); err != nil {
		t.Fatalf("a JSON object: %v", err)
	}
	if back.S3 == nil || back.S3.AccessKeyID != "id" || back.S3.SecretAccessKey != "key" || back.Azure != nil {
		t.Errorf("a JSON object decoded to %#v", back.S3)
	}
}

// roundTripJSON encodes v and decodes the result into a new value of v's type.
func roundTripJSON[T any](v T) (string, error) {
	js, err := json.Marshal(v)
	if err != nil {
		return "", err
	}
	var back T
	return string(js), json.Unmarshal(js, &back)
}
