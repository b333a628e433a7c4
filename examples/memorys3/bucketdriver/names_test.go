package bucketdriver_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// hashedName is what S3Name gives a name it hashes, computed here independently.
func hashedName(cosiName string) string {
	sum := sha256.Sum256([]byte(cosiName))
	return "cosi-" + hex.EncodeToString(sum[:16])
}

// TestHashedNameIsNotAnotherClaimsName is a collision a review found: a name that is not a
// valid S3 name maps to "cosi-<hash>", itself a valid COSI name. Claiming that string must give
// another bucket, so the second claimant neither reads nor deletes the first one's objects.
func TestHashedNameIsNotAnotherClaimsName(t *testing.T) {
	ctx := context.Background()
	srv := s3Fixture(t)
	be := bucketdriver.New(srv)
	long := strings.Repeat("a", 64)
	first, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: long})
	if err != nil {
		t.Fatal(err)
	}
	if first.ID != hashedName(long) {
		t.Fatalf("bucket ID of a 64-character name = %q, want %q", first.ID, hashedName(long))
	}
	owner := grantRW(t, be, "ba-owner", first.ID)
	if _, err := awsClient(first.S3.Endpoint, first.S3.Region, owner).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String(first.ID),
		Key: aws.String("private"), Body: strings.NewReader("the first claim's data")}); err != nil {
		t.Fatal(err)
	}

	second, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: first.ID})
	switch {
	case errors.Is(err, driver.ErrAlreadyExists): // refused: also safe
	case err != nil:
		t.Fatalf("CreateBucket of the name %q: %v", first.ID, err)
	case second.ID == first.ID:
		t.Fatalf("CreateBucket of the name %q answered OK with the first claim's bucket", first.ID)
	default:
		intruder := grantRW(t, be, "ba-intruder", second.ID)
		_, err := awsClient(second.S3.Endpoint, second.S3.Region, intruder).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(second.ID), Key: aws.String("private")})
		if s3Code(err) != "NoSuchKey" {
			t.Errorf("the second claim reads key \"private\" in its bucket: %v, want NoSuchKey", err)
		}
		if err := be.DeleteBucket(ctx, &bucket.DeleteBucketRequest{ID: second.ID}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := awsClient(first.S3.Endpoint, first.S3.Region, owner).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String(first.ID),
		Key: aws.String("private")}); err != nil {
		t.Errorf("the first claim's object after the second claim came and went: %v", err)
	}
}

// TestBucketRecordsItsClaim: two names that map to one bucket name (a hash collision, which
// cannot be produced on demand, stands in here as a bucket created for another name) never
// share it; the name a bucket was created for gets it back on every repeat.
func TestBucketRecordsItsClaim(t *testing.T) {
	ctx := context.Background()
	srv := s3Fixture(t)
	be := bucketdriver.New(srv)
	long := strings.Repeat("b", 70)
	if err := srv.CreateBucketFor(ctx, bucketdriver.S3Name(long), "some-other-claim"); err != nil {
		t.Fatal(err)
	}
	if _, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: long}); !errors.Is(err, driver.ErrAlreadyExists) {
		t.Errorf("CreateBucket of a name that maps to a bucket created for another name: %v, want ErrAlreadyExists", err)
	}
	for i := range 2 {
		if b, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: "bc-claimed"}); err != nil || b.ID != "bc-claimed" {
			t.Errorf("CreateBucket of bc-claimed, call %d: %v, %v; want OK with its own name", i+1, b, err)
		}
	}
	if err := srv.CreateBucketFor(ctx, "bc-claimed", "another-claim"); !errors.Is(err, s3server.ErrBucketClaimed) {
		t.Errorf("CreateBucketFor of bc-claimed for another name: %v, want ErrBucketClaimed", err)
	}
}

// namesAround returns seeds and every name reachable from them by S3Name, so that each hashed
// name is also tried as a claim of its own.
func namesAround(seeds []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, n := range seeds {
		for range 3 {
			if n == "" || seen[n] {
				break
			}
			seen[n] = true
			out = append(out, n)
			n = bucketdriver.S3Name(n)
		}
	}
	return out
}

var nameSeeds = []string{
	strings.Repeat("a", 64), strings.Repeat("a", 63), "bc-2f1a9c3e-8d7b-4c1e-9f0a-1b2c3d4e5f60",
	"bucketclaim.with.dots", "cosi-", "cosi-x", "cosi-" + strings.Repeat("0", 32), "Upper", "ab", "a..b", "192.168.0.1",
	"xn--bucket", "-leading", "trailing-", "under_score", "bc-ns.claim", "cosi", "cos-i", "COSI-abc",
}

// checkDistinct creates every name in one server and fails if two names are answered OK with
// the same bucket ID, or a name's repeat with another ID.
func checkDistinct(t *testing.T, names []string) {
	t.Helper()
	ctx := context.Background()
	srv, err := s3server.New(s3server.Config{Endpoint: "http://127.0.0.1:9"})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	be := bucketdriver.New(srv)
	owner := map[string]string{} // bucket ID -> the name answered with it
	for _, n := range append(names, names...) {
		b, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: n})
		if errors.Is(err, driver.ErrAlreadyExists) {
			continue
		}
		if err != nil {
			t.Fatalf("CreateBucket(%q): %v", n, err)
		}
		if prev, ok := owner[b.ID]; ok && prev != n {
			t.Fatalf("names %q and %q were both answered bucket %q", prev, n, b.ID)
		}
		owner[b.ID] = n
	}
}

// TestDistinctNamesNeverShareABucket is the differential check of the name-to-bucket mapping
// through the backend, over names chosen to collide if anything can.
func TestDistinctNamesNeverShareABucket(t *testing.T) {
	checkDistinct(t, namesAround(nameSeeds))
}

var validS3ID = regexp.MustCompile(`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`)

// FuzzS3Name: S3Name is injective, deterministic, gives a valid S3 bucket name (hence a valid
// COSI bucket ID), and keeps a name as it is only when it is a valid S3 name without the prefix
// reserved for hashed names. Every pair is also created through the backend.
func FuzzS3Name(f *testing.F) {
	long := strings.Repeat("a", 64)
	f.Add(long, hashedName(long)) // the collision a review found
	for i := 0; i+1 < len(nameSeeds); i++ {
		f.Add(nameSeeds[i], nameSeeds[i+1])
	}
	f.Add("bc-a", "bc-a")
	f.Fuzz(func(t *testing.T, a, b string) {
		for _, n := range []string{a, b} {
			got := bucketdriver.S3Name(n)
			if got != bucketdriver.S3Name(n) {
				t.Fatalf("S3Name(%q) is not deterministic", n)
			}
			if gofakes3.ValidateBucketName(got) != nil || !validS3ID.MatchString(got) {
				t.Fatalf("S3Name(%q) = %q, not a valid S3 bucket name", n, got)
			}
			kept := got == n
			wantKept := !strings.HasPrefix(n, "cosi-") && gofakes3.ValidateBucketName(n) == nil
			if kept != wantKept {
				t.Fatalf("S3Name(%q) = %q: kept as is %v, want %v", n, got, kept, wantKept)
			}
			if !kept && got != hashedName(n) {
				t.Fatalf("S3Name(%q) = %q, want %q", n, got, hashedName(n))
			}
		}
		if a != b && bucketdriver.S3Name(a) == bucketdriver.S3Name(b) {
			t.Fatalf("S3Name(%q) == S3Name(%q) == %q", a, b, bucketdriver.S3Name(a))
		}
		checkDistinct(t, namesAround([]string{a, b}))
	})
}

// grantRW grants account read-write access to bucketID and returns its keys.
func grantRW(t *testing.T, be *bucketdriver.Backend, account, bucketID string) *bucket.S3Credentials {
	t.Helper()
	acc, err := be.GrantBucketAccess(context.Background(), &bucket.GrantBucketAccessRequest{AccountName: account, Protocol: bucket.S3,
		Authentication: bucket.AuthKey, Buckets: []bucket.Grant{{BucketID: bucketID, Mode: bucket.ReadWrite}}})
	if err != nil {
		t.Fatal(fmt.Errorf("grant %s on %s: %w", account, bucketID, err))
	}
	return acc.Credentials.S3
}
