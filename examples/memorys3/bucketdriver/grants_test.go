package bucketdriver_test

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
	"github.com/csikit/csikit/examples/memorys3/bucketdriver"
	"github.com/csikit/csikit/examples/memorys3/s3server"
)

// TestGrantAfterBucketDelete: a grant whose bucket was deleted keeps what was granted apart
// from what is in force. Repeating it is NOT_FOUND while the bucket is gone and OK (same
// account, same keys) once the bucket is created again; the key of an account left with no
// bucket does not authenticate until that repeated grant, and then reaches the new bucket.
func TestGrantAfterBucketDelete(t *testing.T) {
	srv := s3Fixture(t)
	for _, w := range cosiWires(t, srv) {
		t.Run(w.name(), func(t *testing.T) {
			ctx := context.Background()
			bucket, err := w.create(ctx, "bc-regrant-"+w.name())
			if err != nil {
				t.Fatal(err)
			}
			account := "ba-regrant-" + w.name()
			id, keys, err := w.grant(ctx, account, bucket)
			if err != nil {
				t.Fatal(err)
			}
			k := keyProbe{srv, keys}
			if code := k.put(bucket); code != "" {
				t.Fatalf("put with the granted key: %s", code)
			}
			if err := w.remove(ctx, bucket); err != nil {
				t.Fatal(err)
			}

			if code := k.listBuckets(); code != "InvalidAccessKeyId" {
				t.Errorf("ListBuckets with the key of an account whose only bucket was deleted: %q, want InvalidAccessKeyId", code)
			}
			if _, _, err := w.grant(ctx, account, bucket); status.Code(err) != codes.NotFound {
				t.Errorf("the same grant repeated after its bucket was deleted: %v, want NOT_FOUND", err)
			}

			if _, err := w.create(ctx, "bc-regrant-"+w.name()); err != nil {
				t.Fatal(err)
			}
			if code := k.put(bucket); code != "InvalidAccessKeyId" {
				t.Errorf("put with the old key to the bucket created again, before any grant: %q, want InvalidAccessKeyId", code)
			}
			againID, againKeys, err := w.grant(ctx, account, bucket)
			if err != nil || againID != id || againKeys != keys {
				t.Fatalf("the same grant repeated after the bucket was created again: %v (same account %v, same keys %v); want OK with both the same",
					err, againID == id, againKeys == keys)
			}
			if code := k.put(bucket); code != "" {
				t.Errorf("put with the regranted key to the bucket created again: %q, want OK", code)
			}

			// Compatibility is still checked against what was granted.
			other, err := w.create(ctx, "bc-regrant-other-"+w.name())
			if err != nil {
				t.Fatal(err)
			}
			if _, _, err := w.grant(ctx, account, other); status.Code(err) != w.incompatible() {
				t.Errorf("a grant of another bucket under the same account name: %v, want %v", err, w.incompatible())
			}
		})
	}
}

// TestRevokeGivenBuckets: a revoke takes out the buckets it names and nothing else (COSI spec:
// "Revokes access to given bucket(s)"); the account and its keys go with its last bucket.
func TestRevokeGivenBuckets(t *testing.T) {
	srv := s3Fixture(t)
	for _, w := range cosiWires(t, srv) {
		t.Run(w.name(), func(t *testing.T) {
			ctx := context.Background()
			a, err := w.create(ctx, "bc-revoke-a-"+w.name())
			if err != nil {
				t.Fatal(err)
			}
			b, err := w.create(ctx, "bc-revoke-b-"+w.name())
			if err != nil {
				t.Fatal(err)
			}
			granted := []string{a, b}
			if w.name() == "v1alpha1" { // one bucket per access
				granted = []string{a}
			}
			account := "ba-revoke-" + w.name()
			id, keys, err := w.grant(ctx, account, granted...)
			if err != nil {
				t.Fatal(err)
			}
			k := keyProbe{srv, keys}

			// A bucket the account was not granted: nothing changes.
			if w.name() == "v1alpha1" {
				if err := w.revoke(ctx, id, b); err != nil {
					t.Fatalf("revoke of a bucket the account was not granted: %v, want OK", err)
				}
				if code := k.put(a); code != "" {
					t.Errorf("put to the granted bucket after a revoke of another bucket: %q, want OK", code)
				}
			} else {
				if err := w.revoke(ctx, id, a); err != nil {
					t.Fatal(err)
				}
				if code := k.put(a); code != "AccessDenied" {
					t.Errorf("put to the revoked bucket: %q, want AccessDenied", code)
				}
				if code := k.put(b); code != "" {
					t.Errorf("put to the bucket still granted: %q, want OK", code)
				}
				// What is left is the account's grant now.
				if againID, againKeys, err := w.grant(ctx, account, b); err != nil || againID != id || againKeys != keys {
					t.Errorf("grant of the remaining bucket: %v (same account %v, same keys %v); want OK with both the same", err, againID == id, againKeys == keys)
				}
			}

			last := granted[len(granted)-1]
			if err := w.revoke(ctx, id, last); err != nil {
				t.Fatal(err)
			}
			if code := k.listBuckets(); code != "InvalidAccessKeyId" {
				t.Errorf("ListBuckets after the last bucket was revoked: %q, want InvalidAccessKeyId", code)
			}
			_, fresh, err := w.grant(ctx, account, last)
			if err != nil || fresh.AccessKeyID == keys.AccessKeyID {
				t.Errorf("a grant after the account was revoked: %v (same key %v); want OK with new keys", err, fresh.AccessKeyID == keys.AccessKeyID)
			}
		})
	}
}

// TestRevokeNamesABucket: both wire versions hand the backend at least one bucket ID; an empty
// list (which only a Go caller could pass, and which revokes the whole account) never comes
// from the wire.
func TestRevokeNamesABucket(t *testing.T) {
	srv := s3Fixture(t)
	for _, w := range cosiWires(t, srv) {
		t.Run(w.name(), func(t *testing.T) {
			if err := w.revoke(context.Background(), "acct-any"); status.Code(err) != codes.InvalidArgument {
				t.Errorf("revoke naming no bucket: %v, want INVALID_ARGUMENT", err)
			}
		})
	}
}

// TestLegacyEmptiedAccount: in state written before grants were recorded apart from what is in
// force, a bucket delete left an account with no bucket and no record of what it was granted.
// Such an account has nothing to conflict with: the next grant under its name is compatible and
// answers its keys.
func TestLegacyEmptiedAccount(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "access.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	keys := s3server.Credentials{AccessKeyID: "MS3KLEGACY0000000000", SecretAccessKey: "legacy-secret-legacy-secret-legacy-secre"}
	err = db.Update(func(tx *bolt.Tx) error {
		if _, err := tx.CreateBucketIfNotExists([]byte("buckets")); err != nil {
			return err
		}
		accounts, err := tx.CreateBucketIfNotExists([]byte("accounts"))
		if err != nil {
			return err
		}
		raw, err := json.Marshal(map[string]any{"name": "ba-legacy", "credentials": keys, "buckets": map[string]int{}})
		if err != nil {
			return err
		}
		return accounts.Put([]byte(s3server.AccountID("ba-legacy")), raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	srv := newS3(t, s3server.Config{StateDir: dir, Endpoint: "http://127.0.0.1:9"})
	be := bucketdriver.New(srv)
	ctx := context.Background()
	if _, err := be.CreateBucket(ctx, &bucket.CreateBucketRequest{Name: "bc-legacy"}); err != nil {
		t.Fatal(err)
	}
	acc, err := be.GrantBucketAccess(ctx, &bucket.GrantBucketAccessRequest{AccountName: "ba-legacy", Protocol: bucket.S3,
		Authentication: bucket.AuthKey, Buckets: []bucket.Grant{{BucketID: "bc-legacy", Mode: bucket.ReadWrite}}})
	if err != nil || acc.Credentials.S3.AccessKeyID != keys.AccessKeyID {
		t.Fatalf("grant under the name of an emptied legacy account: %v; want OK with its keys", err)
	}
}
