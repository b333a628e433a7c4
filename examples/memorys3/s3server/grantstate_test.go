package s3server

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	bolt "go.etcd.io/bbolt"
)

// TestRevokeAccessBuckets: RevokeAccess takes out the buckets it names; the account and its
// keys go with the last granted one, or at once when no bucket is named.
func TestRevokeAccessBuckets(t *testing.T) {
	ctx := context.Background()
	all := map[string]Mode{"rv-a": ReadWrite, "rv-b": ReadOnly, "rv-c": WriteOnly}
	cases := []struct {
		name     string
		revokes  [][]string
		wantLeft map[string]Mode // nil: the account is gone
	}{
		{"one bucket", [][]string{{"rv-a"}}, map[string]Mode{"rv-b": ReadOnly, "rv-c": WriteOnly}},
		{"two buckets", [][]string{{"rv-a", "rv-c"}}, map[string]Mode{"rv-b": ReadOnly}},
		{"a bucket never granted changes nothing", [][]string{{"rv-other"}}, all},
		{"every bucket, one call at a time", [][]string{{"rv-a"}, {"rv-b"}, {"rv-c"}}, nil},
		{"every bucket at once", [][]string{{"rv-c", "rv-b", "rv-a"}}, nil},
		{"no bucket named: the whole account", [][]string{{}}, nil},
		{"the same bucket twice", [][]string{{"rv-b"}, {"rv-b"}}, map[string]Mode{"rv-a": ReadWrite, "rv-c": WriteOnly}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, false, Config{})
			for b := range all {
				if err := f.srv.CreateBucket(ctx, b); err != nil {
					t.Fatal(err)
				}
			}
			acc, err := f.srv.GrantAccess(ctx, "ba-revoke", all)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range tc.revokes {
				if err := f.srv.RevokeAccess(ctx, acc.ID, r...); err != nil {
					t.Fatalf("RevokeAccess(%v): %v", r, err)
				}
			}
			got, err := f.srv.Account(ctx, acc.ID)
			code := listCode(f, acc.Credentials)
			if tc.wantLeft == nil {
				if !errors.Is(err, ErrAccountNotFound) || code != "InvalidAccessKeyId" {
					t.Errorf("account after the revokes: %v, ListBuckets %q; want it gone and InvalidAccessKeyId", err, code)
				}
				return
			}
			if err != nil || !maps.Equal(got.Granted, tc.wantLeft) || !maps.Equal(got.Buckets, tc.wantLeft) || code != "" {
				t.Fatalf("account after the revokes: %+v, %v, ListBuckets %q; want buckets %v in force", got, err, code, tc.wantLeft)
			}
			for b, m := range all {
				_, kept := tc.wantLeft[b]
				if allowed := putCode(f, acc.Credentials, b) == ""; allowed != (kept && m.allows(needWrite)) {
					t.Errorf("put to %s after the revokes: allowed %v, want %v", b, allowed, kept && m.allows(needWrite))
				}
			}
		})
	}
}

// TestEmptiedAccountAcrossRestart: an account whose only bucket was deleted keeps its grant
// (for a repeat) but not its key, after a restart too; the repeated grant brings the key back.
func TestEmptiedAccountAcrossRestart(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := newFixture(t, false, Config{StateDir: dir})
	creds := f.bucketWithAccount("gone", "ba-emptied", ReadWrite)
	if err := f.srv.DeleteBucket(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	f.hs.Close()
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}

	f = newFixture(t, false, Config{StateDir: dir})
	if code := listCode(f, creds); code != "InvalidAccessKeyId" {
		t.Errorf("ListBuckets with the emptied account's key after a restart: %q, want InvalidAccessKeyId", code)
	}
	acc, err := f.srv.Account(ctx, AccountID("ba-emptied"))
	if err != nil || acc.Granted["gone"] != ReadWrite || len(acc.Buckets) != 0 {
		t.Fatalf("emptied account after a restart: %+v, %v; want gone granted, nothing in force", acc, err)
	}
	if _, err := f.srv.GrantAccess(ctx, "ba-emptied", map[string]Mode{"gone": ReadWrite}); !errors.Is(err, ErrBucketNotFound) {
		t.Errorf("the grant repeated while its bucket is gone: %v, want ErrBucketNotFound", err)
	}
	if err := f.srv.CreateBucket(ctx, "gone"); err != nil {
		t.Fatal(err)
	}
	again, err := f.srv.GrantAccess(ctx, "ba-emptied", map[string]Mode{"gone": ReadWrite})
	if err != nil || again.Credentials != creds {
		t.Fatalf("the grant repeated once the bucket is back: %v, %v; want the same keys", again, err)
	}
	if code := putCode(f, creds, "gone"); code != "" {
		t.Errorf("put with the regranted key: %q", code)
	}
}

// TestStateFormat pins the records access.db holds, as the README documents them: a bucket
// records the name it was created for and, while its deletion is under way, "deleting"; an
// account records what was granted ("granted") apart from what is in force ("buckets").
func TestStateFormat(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	f := newFixture(t, false, Config{StateDir: dir})
	for _, b := range []string{"fmt-kept", "fmt-doomed"} {
		if err := f.srv.CreateBucketFor(ctx, b, "claim-"+b); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.srv.GrantAccess(ctx, "ba-format", map[string]Mode{"fmt-kept": ReadOnly, "fmt-doomed": ReadWrite}); err != nil {
		t.Fatal(err)
	}
	StopDeleteAfter(f.srv, deleteBegun)
	if err := f.srv.DeleteBucket(ctx, "fmt-doomed"); !errors.Is(err, errSimulatedCrash) {
		t.Fatalf("DeleteBucket stopped after its first step: %v", err)
	}
	StopDeleteAfter(f.srv, 0)
	f.hs.Close()
	if err := f.srv.Close(); err != nil {
		t.Fatal(err)
	}

	records := readRecords(t, filepath.Join(dir, "access.db"))
	want := map[string]map[string]any{
		"buckets/fmt-kept":   {"created_for": "claim-fmt-kept"},
		"buckets/fmt-doomed": {"created_for": "claim-fmt-doomed", "deleting": true},
		"accounts/" + AccountID("ba-format"): {
			"name":    "ba-format",
			"buckets": map[string]any{"fmt-kept": float64(ReadOnly)},
			"granted": map[string]any{"fmt-kept": float64(ReadOnly), "fmt-doomed": float64(ReadWrite)},
		},
	}
	for key, fields := range want {
		rec, ok := records[key]
		if !ok {
			t.Errorf("access.db has no record %s", key)
			continue
		}
		for k, v := range fields {
			got, _ := json.Marshal(rec[k])
			exp, _ := json.Marshal(v)
			if string(got) != string(exp) {
				t.Errorf("%s: %q = %s, want %s", key, k, got, exp)
			}
		}
	}
	if _, ok := records["buckets/fmt-kept"]["deleting"]; ok {
		t.Error("a bucket not being deleted records \"deleting\"")
	}
}

// TestLegacyState: records written before created_for and granted existed are read as they
// were meant. A bucket without a name is claimed by the first create for a name; an account
// without "granted" counts its grants in force as granted.
func TestLegacyState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, "access.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := openBoltState(db); err != nil {
		t.Fatal(err)
	}
	creds := Credentials{AccessKeyID: "MS3KLEGACY0000000000", SecretAccessKey: "legacy-secret-legacy-secret-legacy-secre"}
	err = db.Update(func(tx *bolt.Tx) error {
		if err := tx.Bucket(bucketsKey).Put([]byte("legacy"), []byte(`{"created":"2024-01-02T03:04:05Z"}`)); err != nil {
			return err
		}
		raw, err := json.Marshal(map[string]any{"name": "ba-legacy", "credentials": creds, "buckets": map[string]Mode{"legacy": ReadWrite}})
		if err != nil {
			return err
		}
		return tx.Bucket(accountsKey).Put([]byte(AccountID("ba-legacy")), raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	f := newFixture(t, false, Config{StateDir: dir})
	acc, err := f.srv.Account(ctx, AccountID("ba-legacy"))
	if err != nil || acc.Granted["legacy"] != ReadWrite || acc.Buckets["legacy"] != ReadWrite {
		t.Fatalf("legacy account: %+v, %v; want legacy granted and in force", acc, err)
	}
	if err := f.srv.CreateBucketFor(ctx, "legacy", "first-claim"); err != nil {
		t.Fatalf("the first create for a name of a legacy bucket: %v", err)
	}
	if err := f.srv.CreateBucketFor(ctx, "legacy", "first-claim"); err != nil {
		t.Errorf("the same create repeated: %v", err)
	}
	if err := f.srv.CreateBucketFor(ctx, "legacy", "second-claim"); !errors.Is(err, ErrBucketClaimed) {
		t.Errorf("a create for another name after the legacy bucket was claimed: %v, want ErrBucketClaimed", err)
	}
	if code := putCode(f, creds, "legacy"); code != "" {
		t.Errorf("the legacy key on its bucket: %q", code)
	}
}

// readRecords decodes every record of access.db as "bucket/key" -> JSON object.
func readRecords(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	out := map[string]map[string]any{}
	err = db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(name []byte, b *bolt.Bucket) error {
			return b.ForEach(func(k, v []byte) error {
				var rec map[string]any
				if err := json.Unmarshal(v, &rec); err != nil {
					return err
				}
				out[string(name)+"/"+string(k)] = rec
				return nil
			})
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// listCode is the S3 error code of ListBuckets with c ("" when it succeeded).
func listCode(f *fixture, c Credentials) string {
	_, err := f.awsClient(c).ListBuckets(context.Background(), &s3.ListBucketsInput{})
	return apiCode(err)
}

// putCode is the S3 error code of a PutObject to bucket with c ("" when it succeeded).
func putCode(f *fixture, c Credentials, bucket string) string {
	_, err := f.awsClient(c).PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String("k"),
		Body: strings.NewReader("v")})
	return apiCode(err)
}
