package s3server

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3bolt"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
	bolt "go.etcd.io/bbolt"
)

// contractBackends are the two object stores memorys3 serves from, memStore (no state
// directory) and boltStore (a state directory), and gofakes3's in-memory backend, which
// memStore replaced and which the contract was first written from. The contract tests run on
// all three, so that a client sees the same server either way.
func contractBackends(t *testing.T) map[string]gofakes3.Backend {
	t.Helper()
	clock := timeSource{now: time.Now}
	st, err := openBoltStore(t.TempDir(), clock.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.close() })
	return map[string]gofakes3.Backend{"gofakes3-memory": s3mem.New(s3mem.WithTimeSource(clock)), "memory": newMemStore(clock.Now), "bolt": st}
}

func mustPut(t *testing.T, b gofakes3.Backend, bucket, key, body string, meta map[string]string) {
	t.Helper()
	if _, err := b.PutObject(bucket, key, meta, strings.NewReader(body), int64(len(body)), nil); err != nil {
		t.Fatalf("PutObject(%s/%s): %v", bucket, key, err)
	}
}

func readObject(t *testing.T, obj *gofakes3.Object) string {
	t.Helper()
	defer obj.Contents.Close()
	data, err := io.ReadAll(obj.Contents)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func code(err error) gofakes3.ErrorCode {
	var e interface{ ErrorCode() gofakes3.ErrorCode }
	if errors.As(err, &e) {
		return e.ErrorCode()
	}
	return ""
}

// TestBackendContractBuckets: creating, finding, listing and deleting buckets.
func TestBackendContractBuckets(t *testing.T) {
	for name, b := range contractBackends(t) {
		t.Run(name, func(t *testing.T) {
			for _, n := range []string{"bkt-b", "bkt-a"} {
				if err := b.CreateBucket(n); err != nil {
					t.Fatal(err)
				}
			}
			if err := b.CreateBucket("bkt-a"); code(err) != gofakes3.ErrBucketAlreadyExists {
				t.Fatalf("CreateBucket of an existing bucket: %v", err)
			}
			if ok, err := b.BucketExists("bkt-a"); !ok || err != nil {
				t.Fatalf("BucketExists: %v %v", ok, err)
			}
			if ok, err := b.BucketExists("nope"); ok || err != nil {
				t.Fatalf("BucketExists of a missing bucket: %v %v", ok, err)
			}
			list, err := b.ListBuckets()
			if err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, bi := range list {
				names = append(names, bi.Name)
				if bi.CreationDate.IsZero() {
					t.Errorf("bucket %s has no creation date", bi.Name)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, []string{"bkt-a", "bkt-b"}) {
				t.Fatalf("ListBuckets: %v", names)
			}
			mustPut(t, b, "bkt-a", "k", "v", nil)
			if err := b.DeleteBucket("bkt-a"); code(err) != gofakes3.ErrBucketNotEmpty {
				t.Fatalf("DeleteBucket of a bucket with an object: %v", err)
			}
			if err := b.DeleteBucket("nope"); code(err) != gofakes3.ErrNoSuchBucket {
				t.Fatalf("DeleteBucket of a missing bucket: %v", err)
			}
			if err := b.DeleteBucket("bkt-b"); err != nil {
				t.Fatalf("DeleteBucket of an empty bucket: %v", err)
			}
			if err := b.ForceDeleteBucket("bkt-a"); err != nil {
				t.Fatalf("ForceDeleteBucket: %v", err)
			}
			if err := b.ForceDeleteBucket("bkt-a"); code(err) != gofakes3.ErrNoSuchBucket {
				t.Fatalf("ForceDeleteBucket of a missing bucket: %v", err)
			}
			if err := b.CreateBucket("bkt-a"); err != nil {
				t.Fatal(err)
			}
			if _, err := b.HeadObject("bkt-a", "k"); code(err) != gofakes3.ErrNoSuchKey {
				t.Fatalf("an object of a force-deleted bucket in the new bucket of its name: %v", err)
			}
		})
	}
}

// TestBackendContractObjects: bytes, hash, metadata, ranges, conditions, copies and deletes.
func TestBackendContractObjects(t *testing.T) {
	const body = "0123456789"
	sum := md5.Sum([]byte(body))
	for name, b := range contractBackends(t) {
		t.Run(name, func(t *testing.T) {
			for _, n := range []string{"bkt", "dst"} {
				if err := b.CreateBucket(n); err != nil {
					t.Fatal(err)
				}
			}
			mustPut(t, b, "bkt", "k", body, map[string]string{"X-Amz-Meta-Color": "blue", "Content-Type": "text/plain"})
			obj, err := b.GetObject("bkt", "k", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := readObject(t, obj); got != body || obj.Size != 10 || !bytes.Equal(obj.Hash, sum[:]) || obj.Metadata["X-Amz-Meta-Color"] != "blue" {
				t.Fatalf("GetObject: %q size %d hash %x meta %v", got, obj.Size, obj.Hash, obj.Metadata)
			}
			head, err := b.HeadObject("bkt", "k")
			if err != nil {
				t.Fatal(err)
			}
			if got := readObject(t, head); got != "" || head.Size != 10 || !bytes.Equal(head.Hash, sum[:]) || head.Metadata["Content-Type"] != "text/plain" {
				t.Fatalf("HeadObject: %q size %d hash %x meta %v", got, head.Size, head.Hash, head.Metadata)
			}
			if _, err := b.GetObject("bkt", "missing", nil); code(err) != gofakes3.ErrNoSuchKey {
				t.Fatalf("GetObject of a missing key: %v", err)
			}
			if _, err := b.GetObject("nope", "k", nil); code(err) != gofakes3.ErrNoSuchBucket {
				t.Fatalf("GetObject in a missing bucket: %v", err)
			}

			for _, rc := range []struct {
				rng  gofakes3.ObjectRangeRequest
				want string
				err  gofakes3.ErrorCode
			}{
				{gofakes3.ObjectRangeRequest{Start: 2, End: 4}, "234", ""},
				{gofakes3.ObjectRangeRequest{Start: 7, End: gofakes3.RangeNoEnd}, "789", ""},
				{gofakes3.ObjectRangeRequest{FromEnd: true, End: 3}, "789", ""},
				{gofakes3.ObjectRangeRequest{Start: 8, End: 100}, "89", ""},
				{gofakes3.ObjectRangeRequest{Start: 10, End: 12}, "", gofakes3.ErrInvalidRange},
			} {
				obj, err := b.GetObject("bkt", "k", &rc.rng)
				if rc.err != "" {
					if code(err) != rc.err {
						t.Fatalf("range %+v: %v, want %s", rc.rng, err, rc.err)
					}
					continue
				}
				if err != nil {
					t.Fatalf("range %+v: %v", rc.rng, err)
				}
				if got := readObject(t, obj); got != rc.want || obj.Range == nil || obj.Range.Length != int64(len(rc.want)) {
					t.Fatalf("range %+v: %q (%+v), want %q", rc.rng, got, obj.Range, rc.want)
				}
			}

			// A PUT replaces the replaced object's metadata whole, as S3 does; gofakes3's
			// backend keeps the old metadata under the names the PUT does not set.
			mustPut(t, b, "bkt", "k", body, map[string]string{"X-Amz-Meta-Size": "ten"})
			head, err = b.HeadObject("bkt", "k")
			if err != nil {
				t.Fatal(err)
			}
			want := map[string]string{"X-Amz-Meta-Size": "ten"}
			if name == "gofakes3-memory" {
				want = map[string]string{"X-Amz-Meta-Color": "blue", "Content-Type": "text/plain", "X-Amz-Meta-Size": "ten"}
			}
			if !maps.Equal(head.Metadata, want) {
				t.Fatalf("metadata after a second PUT: %v, want %v", head.Metadata, want)
			}

			star, wrong, right := "*", `"0000"`, gofakes3.FormatETag(sum[:])
			for _, cc := range []struct {
				key  string
				cond gofakes3.PutConditions
				err  gofakes3.ErrorCode
			}{
				{"k", gofakes3.PutConditions{IfNoneMatch: &star}, gofakes3.ErrPreconditionFailed},
				{"k", gofakes3.PutConditions{IfMatch: &wrong}, gofakes3.ErrPreconditionFailed},
				{"k", gofakes3.PutConditions{IfMatch: &right}, ""},
				{"new", gofakes3.PutConditions{IfMatch: &right}, gofakes3.ErrPreconditionFailed},
				{"new", gofakes3.PutConditions{IfNoneMatch: &star}, ""},
			} {
				_, err := b.PutObject("bkt", cc.key, map[string]string{}, strings.NewReader(body), 10, &cc.cond)
				if code(err) != cc.err && !(cc.err == "" && err == nil) {
					t.Fatalf("conditional PUT of %s %+v: %v, want %q", cc.key, cc.cond, err, cc.err)
				}
			}

			res, err := b.CopyObject("bkt", "k", "dst", "copy", map[string]string{"X-Amz-Meta-Copied": "yes"})
			if err != nil {
				t.Fatal(err)
			}
			if res.ETag != right {
				t.Fatalf("CopyObject ETag %s, want %s", res.ETag, right)
			}
			obj, err = b.GetObject("dst", "copy", nil)
			if err != nil {
				t.Fatal(err)
			}
			if got := readObject(t, obj); got != body || obj.Metadata["X-Amz-Meta-Copied"] != "yes" {
				t.Fatalf("the copy: %q %v", got, obj.Metadata)
			}
			if _, err := b.CopyObject("bkt", "missing", "dst", "x", nil); code(err) != gofakes3.ErrNoSuchKey {
				t.Fatalf("CopyObject of a missing source: %v", err)
			}

			if _, err := b.DeleteObject("bkt", "missing"); err != nil {
				t.Fatalf("DeleteObject of a missing key: %v", err)
			}
			if _, err := b.DeleteObject("nope", "k"); code(err) != gofakes3.ErrNoSuchBucket {
				t.Fatalf("DeleteObject in a missing bucket: %v", err)
			}
			mustPut(t, b, "bkt", "other", "x", nil)
			multi, err := b.DeleteMulti("bkt", "k", "other", "missing")
			if err != nil {
				t.Fatal(err)
			}
			var deleted []string
			for _, d := range multi.Deleted {
				deleted = append(deleted, d.Key)
			}
			if !slices.Equal(deleted, []string{"k", "other", "missing"}) || len(multi.Error) != 0 {
				t.Fatalf("DeleteMulti: deleted %v, errors %v", deleted, multi.Error)
			}
			list, err := b.ListBucket("bkt", nil, gofakes3.ListBucketPage{})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Contents) != 1 || list.Contents[0].Key != "new" {
				t.Fatalf("after DeleteMulti the bucket lists %+v", list.Contents)
			}
		})
	}
}

// listAll pages through a listing as clients do: from the NextMarker, or after the last key
// when there is none, while the answer is truncated.
func listAll(t *testing.T, b gofakes3.Backend, prefix gofakes3.Prefix, maxKeys int64) (keys, prefixes []string, pages int) {
	t.Helper()
	var page gofakes3.ListBucketPage
	page.MaxKeys = maxKeys
	for {
		pages++
		if pages > 100 {
			t.Fatal("the listing does not end")
		}
		out, err := b.ListBucket("bkt", &prefix, page)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range out.Contents {
			keys = append(keys, c.Key)
		}
		for _, p := range out.CommonPrefixes {
			prefixes = append(prefixes, p.Prefix)
		}
		if !out.IsTruncated {
			return keys, prefixes, pages
		}
		next := out.NextMarker
		if next == "" && len(out.Contents) > 0 {
			next = out.Contents[len(out.Contents)-1].Key
		}
		page.Marker, page.HasMarker = next, true
	}
}

// TestBackendContractListing: prefixes, delimiters and pages.
func TestBackendContractListing(t *testing.T) {
	keys := []string{"a", "b/1", "b/2", "b/3", "c", "d/e/f", "d/g"}
	str := func(s string) *string { return &s }
	cases := []struct {
		rule          string
		prefix        gofakes3.Prefix
		maxKeys       int64
		keys, prefix_ []string
		pages         int // 0: any
		// boltOnly names how gofakes3's in-memory backend departs from the rule (memStore
		// and boltStore keep it).
		boltOnly string
	}{
		{rule: "everything", keys: keys, pages: 1},
		{rule: "a prefix", prefix: gofakes3.NewPrefix(str("b/"), nil), keys: []string{"b/1", "b/2", "b/3"}, pages: 1},
		{rule: "a delimiter", prefix: gofakes3.NewPrefix(nil, str("/")), keys: []string{"a", "c"}, prefix_: []string{"b/", "d/"}, pages: 1},
		{rule: "a prefix and a delimiter", prefix: gofakes3.NewPrefix(str("d/"), str("/")), keys: []string{"d/g"}, prefix_: []string{"d/e/"}, pages: 1},
		{rule: "pages of two", maxKeys: 2, keys: keys, pages: 4},
		{rule: "pages of one under a prefix", prefix: gofakes3.NewPrefix(str("b/"), nil), maxKeys: 1, keys: []string{"b/1", "b/2", "b/3"}},
		{rule: "pages of one with a delimiter list each prefix once", prefix: gofakes3.NewPrefix(nil, str("/")), maxKeys: 1,
			keys: []string{"a", "c"}, prefix_: []string{"b/", "d/"}, pages: 4,
			boltOnly: "it lists a common prefix again on the next page, which starts after the prefix's first key"},
	}
	for name, b := range contractBackends(t) {
		if err := b.CreateBucket("bkt"); err != nil {
			t.Fatal(err)
		}
		for _, k := range keys {
			mustPut(t, b, "bkt", k, "v", nil)
		}
		for _, tc := range cases {
			t.Run(name+"/"+tc.rule, func(t *testing.T) {
				if tc.boltOnly != "" && name == "gofakes3-memory" {
					t.Skip("gofakes3's in-memory backend departs here: " + tc.boltOnly)
				}
				gotKeys, gotPrefixes, pages := listAll(t, b, tc.prefix, tc.maxKeys)
				if !slices.Equal(gotKeys, tc.keys) || !slices.Equal(gotPrefixes, tc.prefix_) {
					t.Fatalf("listed keys %v and prefixes %v, want %v and %v", gotKeys, gotPrefixes, tc.keys, tc.prefix_)
				}
				if tc.pages != 0 && pages != tc.pages {
					t.Fatalf("%d pages, want %d", pages, tc.pages)
				}
			})
		}
	}
}

// TestBoltStoreRangesCannotOverflow: gofakes3's Range computes a range's end as start plus
// length; boltStore keeps whatever it computes within the object.
func TestBoltStoreRangesCannotOverflow(t *testing.T) {
	for _, name := range []string{"bolt", "memory"} {
		b := contractBackends(t)[name]
		if err := b.CreateBucket("bkt"); err != nil {
			t.Fatal(err)
		}
		mustPut(t, b, "bkt", "k", "hello", nil)
		obj, err := b.GetObject("bkt", "k", &gofakes3.ObjectRangeRequest{Start: 1, End: math.MaxInt64})
		if err != nil {
			t.Fatal(err)
		}
		if got := readObject(t, obj); got != "ello" {
			t.Fatalf("%s: got %q, want ello", name, got)
		}
	}
}

// TestLegacyStateDirIsMigrated: a state directory whose objects are in the format of
// gofakes3's bbolt backend (objects.db) is migrated when the server opens it: buckets,
// objects, their bytes and metadata are served from store.db, objects.db is gone, and a
// migration a crash interrupted (a store.db.migrating left behind) starts again.
func TestLegacyStateDirIsMigrated(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	old, err := bolt.Open(filepath.Join(dir, legacyFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	legacy := s3bolt.New(old)
	big := bytes.Repeat([]byte("B"), 3<<20)
	objects := map[string][]byte{"small": []byte("hello"), "dir/big": big}
	for _, bk := range []string{"mig-a", "mig-b"} {
		if err := legacy.CreateBucket(bk); err != nil {
			t.Fatal(err)
		}
		for k, v := range objects {
			if _, err := legacy.PutObject(bk, k, map[string]string{"X-Amz-Meta-From": bk}, bytes.NewReader(v), int64(len(v)), nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := old.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, storeFile+".migrating"), []byte("half a migration"), 0o600); err != nil {
		t.Fatal(err)
	}

	for round := range 2 { // the second start opens the migrated store as it is
		f := newFixture(t, false, Config{StateDir: dir})
		if round == 0 {
			for _, bk := range []string{"mig-a", "mig-b"} {
				if err := f.srv.CreateBucket(ctx, bk); !errors.Is(err, ErrBucketNotOwned) {
					t.Fatalf("a migrated bucket made by another tool: %v, want ErrBucketNotOwned", err)
				}
			}
		}
		acc, err := f.srv.GrantAccess(ctx, "reader", map[string]Mode{"mig-a": ReadOnly, "mig-b": ReadOnly})
		if err != nil {
			t.Fatal(err)
		}
		client := f.awsClient(acc.Credentials)
		for _, bk := range []string{"mig-a", "mig-b"} {
			for k, v := range objects {
				out, err := client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bk), Key: aws.String(k)})
				if err != nil {
					t.Fatalf("round %d: GET %s/%s: %v", round, bk, k, err)
				}
				got, err := io.ReadAll(out.Body)
				out.Body.Close()
				sum := md5.Sum(v)
				if err != nil || !bytes.Equal(got, v) || out.Metadata["from"] != bk || strings.Trim(aws.ToString(out.ETag), `"`) != hexOf(sum[:]) {
					t.Fatalf("round %d: %s/%s: %d bytes, metadata %v, ETag %s, %v", round, bk, k, len(got), out.Metadata, aws.ToString(out.ETag), err)
				}
			}
		}
		for _, gone := range []string{legacyFile, storeFile + ".migrating"} {
			if _, err := os.Stat(filepath.Join(dir, gone)); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("round %d: %s is still there: %v", round, gone, err)
			}
		}
		f.hs.Close()
		if err := f.srv.Close(); err != nil {
			t.Fatal(err)
		}
	}
}

func hexOf(b []byte) string { return hex.EncodeToString(b) }

// TestStoreOfAnotherLayoutIsRefused: a store.db this memorys3 cannot read is refused with
// an error naming the file and its layout, not served as if empty.
func TestStoreOfAnotherLayoutIsRefused(t *testing.T) {
	dir := t.TempDir()
	db, err := bolt.Open(filepath.Join(dir, storeFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucket(storeFormatKey)
		if err != nil {
			return err
		}
		return b.Put(storeVersionKey, []byte("memorys3-objects-99"))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	_, err = New(Config{StateDir: dir})
	if err == nil || !strings.Contains(err.Error(), "memorys3-objects-99") || !strings.Contains(err.Error(), storeFile) {
		t.Fatalf("New on a store of another layout: %v", err)
	}
}

// TestStateFileRecordsObjectsApart pins store.db's layout as boltStore documents it.
func TestStateFileRecordsObjectsApart(t *testing.T) {
	dir := t.TempDir()
	st, err := openBoltStore(dir, time.Now, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.CreateBucket("bkt"); err != nil {
		t.Fatal(err)
	}
	mustPut(t, st, "bkt", "k", "hello", map[string]string{"X-Amz-Meta-A": "b"})
	if err := st.close(); err != nil {
		t.Fatal(err)
	}
	db, err := bolt.Open(filepath.Join(dir, storeFile), 0o600, &bolt.Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		if v := string(tx.Bucket([]byte("format")).Get([]byte("version"))); v != "memorys3-objects-1" {
			t.Errorf("format/version = %q", v)
		}
		bk := tx.Bucket([]byte("buckets")).Bucket([]byte("bkt"))
		if _, err := time.Parse(time.RFC3339Nano, string(bk.Get([]byte("created")))); err != nil {
			t.Errorf("buckets/bkt/created: %v", err)
		}
		var rec map[string]any
		if err := json.Unmarshal(bk.Bucket([]byte("meta")).Get([]byte("k")), &rec); err != nil {
			t.Fatalf("buckets/bkt/meta/k: %v", err)
		}
		sum := md5.Sum([]byte("hello"))
		if rec["size"] != float64(5) || rec["md5"] != hexOf(sum[:]) || rec["metadata"].(map[string]any)["X-Amz-Meta-A"] != "b" || rec["modified"] == nil {
			t.Errorf("buckets/bkt/meta/k = %v", rec)
		}
		if data := string(bk.Bucket([]byte("data")).Get([]byte("k"))); data != "hello" {
			t.Errorf("buckets/bkt/data/k = %q", data)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
