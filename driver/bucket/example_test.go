package bucket_test

import (
	"encoding/json"
	"fmt"

	"github.com/csikit/csikit/driver/bucket"
)

// A backend that keeps keys across restarts stores their fields in a type of its own: the
// credential types JSON-encode redacted, so that no log can leak them.
func ExampleCredentials_persist() {
	granted := bucket.Credentials{S3: &bucket.S3Credentials{AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "wJalrXUtnFEMI"}}

	type storedKey struct{ ID, Secret string }
	state, _ := json.Marshal(storedKey{ID: granted.S3.AccessKeyID, Secret: granted.S3.SecretAccessKey})

	// After a restart, a repeated grant answers the same key.
	var rec storedKey
	if err := json.Unmarshal(state, &rec); err != nil {
		fmt.Println(err)
		return
	}
	again := bucket.Credentials{S3: &bucket.S3Credentials{AccessKeyID: rec.ID, SecretAccessKey: rec.Secret}}
	fmt.Println(*again.S3 == *granted.S3, again)

	// What encoding/json makes of the credentials themselves: no key, and an error on the way back.
	redacted, _ := json.Marshal(granted)
	fmt.Println(string(redacted), json.Unmarshal(redacted, &bucket.Credentials{}) != nil)
	// Output:
	// true {S3:***stripped***}
	// "{S3:***stripped***}" true
}
