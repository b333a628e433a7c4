package bucketdriver_test

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// TestStoreInternalsAreNotABucket: with --state-dir, objects lived in gofakes3's bbolt
// backend, which keeps its bucket metadata in a bbolt bucket of its own named "_meta" (one
// record "bucket/<name>" per S3 bucket of every tenant). The S3 server's "exists in the
// store" test is BucketExists, which is true for "_meta", so the driver treats the store's
// internal table as a statically provisioned bucket: GetExistingBucket finds it and
// GrantBucketAccess issues keys for it. Those keys list every tenant's bucket names (and can
// write and delete the store's records). "_meta" was never issued and is not an S3 bucket
// name: it must be NOT_FOUND (or INVALID_ARGUMENT) for get and grant alike. The object store
// of a state directory is memorys3's own now, with no such table, and the S3 server finds,
// grants and lists no name that is not a valid S3 bucket name.
func TestStoreInternalsAreNotABucket(t *testing.T) {
	ctx := context.Background()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s3Config("http://" + lis.Addr().String())
	cfg.StateDir = filepath.Join(t.TempDir(), "state")
	srv := newS3(t, cfg)
	serveS3(t, lis, srv)
	for _, w := range cosiWires(t, srv) {
		t.Run(w.name(), func(t *testing.T) {
			victim, err := w.create(ctx, "bc-victim-"+w.name())
			if err != nil {
				t.Fatal(err)
			}
			_, keys, err := w.grant(ctx, "ba-meta-"+w.name(), "_meta")
			if code := status.Code(err); code == codes.NotFound || code == codes.InvalidArgument {
				return // refused, as it must be
			}
			if err != nil {
				t.Fatalf("grant of _meta: %v, want NOT_FOUND or INVALID_ARGUMENT", err)
			}
			listing := "(listing failed)"
			out, lerr := awsClient(srv.Endpoint(), srv.Region(), &keys).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("_meta")})
			if lerr == nil {
				var names []string
				for _, o := range out.Contents {
					names = append(names, aws.ToString(o.Key))
				}
				listing = strings.Join(names, ", ")
			}
			t.Fatalf("a grant of the store's internal table \"_meta\" answered OK; its keys list: %s (the other tenant's bucket %s among them: %v)",
				listing, victim, strings.Contains(listing, victim))
		})
	}
	if _, err := srv.Bucket(ctx, "_meta"); err == nil || !strings.Contains(err.Error(), s3server.ErrBucketNotFound.Error()) {
		t.Errorf("Bucket(_meta): %v, want ErrBucketNotFound", err)
	}
}
