package s3server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestNamesThatAreNotBucketNamesAreNoBuckets: a name that is not a valid S3 bucket name is
// never found, granted or listed, whatever the store holds under it (gofakes3's bbolt backend
// kept its bucket table as "_meta", which BucketExists found and a grant covered).
func TestNamesThatAreNotBucketNamesAreNoBuckets(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false, Config{StateDir: t.TempDir()})
	c := f.bucketWithAccount("good", "a", ReadWrite)
	for _, name := range []string{"_meta", "Bad..Name"} {
		if err := f.srv.backend.CreateBucket(name); err != nil {
			t.Fatal(err)
		}
		if _, err := f.srv.Bucket(ctx, name); !errors.Is(err, ErrBucketNotFound) {
			t.Errorf("Bucket(%q): %v, want ErrBucketNotFound", name, err)
		}
		if _, err := f.srv.GrantAccess(ctx, "b", map[string]Mode{name: ReadWrite}); !errors.Is(err, ErrBucketNotFound) {
			t.Errorf("GrantAccess(%q): %v, want ErrBucketNotFound", name, err)
		}
		if err := f.srv.DeleteBucket(ctx, name); err != nil {
			t.Errorf("DeleteBucket(%q): %v, want nil (no bucket has the name)", name, err)
		}
		if ok, _ := f.srv.backend.BucketExists(name); !ok {
			t.Errorf("DeleteBucket(%q) deleted what the store holds under it", name)
		}
	}
	// A grant of such a name from state written before it was refused reaches nothing.
	f.srv.mu.Lock()
	acc := f.srv.accounts[AccountID("a")].clone()
	acc.Buckets["_meta"], acc.Granted["_meta"] = ReadWrite, ReadWrite
	f.srv.accounts[AccountID("a")] = acc
	f.srv.publish()
	f.srv.mu.Unlock()
	out, err := f.awsClient(c).ListBuckets(ctx, &s3.ListBucketsInput{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, b := range out.Buckets {
		names = append(names, *b.Name)
	}
	if strings.Join(names, ",") != "good" {
		t.Fatalf("ListBuckets: %v, want only good", names)
	}
}
