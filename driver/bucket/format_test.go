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
