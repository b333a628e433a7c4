package s3server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
)

func TestBucketAPI(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false, Config{})
	s := f.srv
	if err := s.backend.CreateBucket("foreign"); err != nil { // made behind the server's back
		t.Fatal(err)
	}
	cases := []struct {
		rule string
		run  func() error
		want error
	}{
		{"creating a bucket succeeds", func() error { return s.CreateBucket(ctx, "bk1") }, nil},
		{"creating it again is idempotent", func() error { return s.CreateBucket(ctx, "bk1") }, nil},
		{"a bucket that exists but is not ours is never adopted", func() error { return s.CreateBucket(ctx, "foreign") }, ErrBucketNotOwned},
		{"a bad name is an invalid argument", func() error { return s.CreateBucket(ctx, "No_Such") }, ErrInvalidArgument},
		{"looking up our bucket succeeds", func() error { _, err := s.Bucket(ctx, "bk1"); return err }, nil},
		{"looking up a foreign bucket says not owned", func() error { _, err := s.Bucket(ctx, "foreign"); return err }, ErrBucketNotOwned},
		{"looking up a missing bucket says not found", func() error { _, err := s.Bucket(ctx, "nope"); return err }, ErrBucketNotFound},
		{"deleting a foreign bucket is refused", func() error { return s.DeleteBucket(ctx, "foreign") }, ErrBucketNotOwned},
		{"deleting a missing bucket succeeds", func() error { return s.DeleteBucket(ctx, "nope") }, nil},
		{"granting a foreign bucket succeeds (static provisioning)", func() error {
			_, err := s.GrantAccess(ctx, "static", map[string]Mode{"foreign": ReadWrite})
			return err
		}, nil},
		{"granting a missing bucket says not found", func() error {
			_, err := s.GrantAccess(ctx, "a", map[string]Mode{"nope": ReadWrite})
			return err
		}, ErrBucketNotFound},
		{"granting no bucket is an invalid argument", func() error { _, err := s.GrantAccess(ctx, "a", nil); return err }, ErrInvalidArgument},
		{"granting an unknown mode is an invalid argument", func() error {
			_, err := s.GrantAccess(ctx, "a", map[string]Mode{"bk1": 9})
			return err
		}, ErrInvalidArgument},
		{"revoking an unknown account succeeds", func() error { return s.RevokeAccess(ctx, "acct-unknown") }, nil},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			err := tc.run()
			if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Errorf("got %v, want %v", err, tc.want)
			}
		})
	}
	if exists, _ := s.backend.BucketExists("foreign"); !exists {
		t.Error("a foreign bucket was deleted")
	}
}

// TestDeleteBucketDeletesObjectsAndGrants: COSI's Delete policy removes the objects, and a
// bucket recreated under the same name does not inherit the old grants.
func TestDeleteBucketDeletesObjectsAndGrants(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false, Config{})
	creds := f.bucketWithAccount("bkt", "a", ReadWrite)
	c := f.awsClient(creds)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Fatal(err)
	}
	if err := f.srv.DeleteBucket(ctx, "bkt"); err != nil {
		t.Fatalf("DeleteBucket of a bucket with objects: %v", err)
	}
	if err := f.srv.CreateBucket(ctx, "bkt"); err != nil {
		t.Fatal(err)
	}
	// The account's only bucket was deleted: its key no longer authenticates at all.
	if _, err := c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); apiCode(err) != "InvalidAccessKeyId" {
		t.Errorf("old key on a recreated bucket: %v, want InvalidAccessKeyId", err)
	}
	acc, err := f.srv.GrantAccess(ctx, "a", map[string]Mode{"bkt": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.awsClient(acc.Credentials).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k")}); apiCode(err) != "NoSuchKey" {
		t.Errorf("object in a recreated bucket: %v, want NoSuchKey", err)
	}
}

// TestGrantIsIdempotentByName: the same name yields the same ID and keys; other buckets or
// modes update the grants and keep the keys; revoke makes them fail at once.
func TestGrantIsIdempotentByName(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false, Config{})
	for _, b := range []string{"bk1", "bk2"} {
		if err := f.srv.CreateBucket(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	first, err := f.srv.GrantAccess(ctx, "ba-uid", map[string]Mode{"bk1": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	again, err := f.srv.GrantAccess(ctx, "ba-uid", map[string]Mode{"bk1": ReadWrite})
	if err != nil || again.ID != first.ID || again.Credentials != first.Credentials {
		t.Fatalf("second grant = %+v, %v; want the first one's ID and keys", again, err)
	}
	changed, err := f.srv.GrantAccess(ctx, "ba-uid", map[string]Mode{"bk1": ReadOnly, "bk2": WriteOnly})
	if err != nil || changed.Credentials != first.Credentials || changed.Buckets["bk1"] != ReadOnly {
		t.Fatalf("changed grant = %+v, %v; want new modes and the same keys", changed, err)
	}
	c := f.awsClient(first.Credentials)
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk1"), Key: aws.String("k"), Body: strings.NewReader("v")}); apiCode(err) != "AccessDenied" {
		t.Errorf("put after the grant became read-only: %v, want AccessDenied", err)
	}
	if _, err := c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bk2"), Key: aws.String("k"), Body: strings.NewReader("v")}); err != nil {
		t.Errorf("put to the newly granted bucket: %v", err)
	}
	other, err := f.srv.GrantAccess(ctx, "ba-other", map[string]Mode{"bk1": ReadWrite})
	if err != nil || other.Credentials.AccessKeyID == first.Credentials.AccessKeyID || other.ID == first.ID {
		t.Fatalf("another account shares keys or ID: %+v, %v", other, err)
	}
	for i := 0; i < 2; i++ { // idempotent
		if err := f.srv.RevokeAccess(ctx, first.ID); err != nil {
			t.Fatalf("RevokeAccess #%d: %v", i+1, err)
		}
	}
	if _, err := c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bk2")}); apiCode(err) != "InvalidAccessKeyId" {
		t.Errorf("request after revoke: %v, want InvalidAccessKeyId", err)
	}
}

// TestRestartKeepsState: with a state directory, buckets, objects and grants survive a
// restart, and the same account name gets the same keys from the new process.
func TestRestartKeepsState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f1 := newFixture(t, false, Config{StateDir: dir})
	creds := f1.bucketWithAccount("kept", "ba-keep", ReadWrite)
	if err := f1.srv.backend.CreateBucket("foreign"); err != nil {
		t.Fatal(err)
	}
	if _, err := f1.awsClient(creds).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("kept"), Key: aws.String("k"), Body: strings.NewReader("survives")}); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Config{StateDir: dir}); err == nil || !strings.Contains(err.Error(), "in use") {
		t.Errorf("a second server on a state dir in use: %v, want an in-use error", err)
	}
	f1.hs.Close()
	if err := f1.srv.Close(); err != nil {
		t.Fatal(err)
	}

	f2 := newFixture(t, false, Config{StateDir: dir})
	out, err := f2.awsClient(creds).GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String("kept"), Key: aws.String("k")})
	if err != nil {
		t.Fatalf("GetObject with the old keys after restart: %v", err)
	}
	got, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if string(got) != "survives" {
		t.Errorf("object after restart = %q", got)
	}
	acc, err := f2.srv.GrantAccess(ctx, "ba-keep", map[string]Mode{"kept": ReadWrite})
	if err != nil || acc.Credentials != creds {
		t.Errorf("grant after restart = %v, %v; want the same keys", acc, err)
	}
	if err := f2.srv.CreateBucket(ctx, "kept"); err != nil {
		t.Errorf("CreateBucket of our bucket after restart: %v", err)
	}
	if err := f2.srv.CreateBucket(ctx, "foreign"); !errors.Is(err, ErrBucketNotOwned) {
		t.Errorf("CreateBucket of a foreign bucket after restart: %v, want ErrBucketNotOwned", err)
	}
}

// TestSecretsNeverLeak is the credential canary: every refusal logged at debug level, every
// API error and every formatting of credentials is searched for the secret.
func TestSecretsNeverLeak(t *testing.T) {
	core, logs := observer.New(zap.DebugLevel)
	f := newFixture(t, false, Config{Logger: zap.New(core)})
	ctx := context.Background()
	creds := f.bucketWithAccount("bkt", "canary", ReadOnly)
	c := f.awsClient(creds)
	_, _ = c.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("k"), Body: bytes.NewReader([]byte("x"))})
	_, _ = f.awsClient(Credentials{creds.AccessKeyID, "wrong"}).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	_, _ = f.awsClient(Credentials{"MS3KUNKNOWN000000000", creds.SecretAccessKey}).ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String("bkt")})
	_, apiErr := f.srv.GrantAccess(ctx, "canary", map[string]Mode{"nope": ReadWrite})
	if logs.Len() < 3 {
		t.Fatalf("expected the refusals to be logged, got %d entries", logs.Len())
	}
	var out strings.Builder
	for _, e := range logs.All() {
		fmt.Fprintf(&out, "%s %v\n", e.Message, e.ContextMap())
	}
	acc, _ := f.srv.GrantAccess(ctx, "canary", map[string]Mode{"bkt": ReadOnly})
	fmt.Fprintf(&out, "%v %+v %#v %s %v %v\n", creds, creds, creds, creds, acc, apiErr)
	if strings.Contains(out.String(), creds.SecretAccessKey) {
		t.Fatalf("the secret key leaked:\n%s", out.String())
	}
	if !strings.Contains(out.String(), creds.AccessKeyID) {
		t.Errorf("the logs do not name the access key, which makes refusals hard to trace:\n%s", out.String())
	}
}
