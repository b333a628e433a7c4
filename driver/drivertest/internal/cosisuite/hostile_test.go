package cosisuite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
)

// dirBuckets is a COSI backend as a newcomer writes one from the docs: a bucket is a directory
// under root and its ID is its name; get is a stat, delete a RemoveAll, and a grant checks the
// buckets exist and returns the account's keys, minted once per account name. It keeps every
// rule of the contract but one: it takes an ID for a path. Before the suite sent IDs shaped like
// paths it passed every check, while a get of "../../../../etc" answered OK and a grant issued
// keys for it.
type dirBuckets struct {
	root string

	mu       sync.Mutex
	accounts map[string]*dirAccount // by account name
}

type dirAccount struct {
	id, fingerprint string
	buckets         []string
	creds           bucket.S3Credentials
}

func newDirBuckets(root string) *dirBuckets {
	return &dirBuckets{root: root, accounts: map[string]*dirAccount{}}
}

func (d *dirBuckets) bucket(id string) *bucket.Bucket {
	return &bucket.Bucket{ID: id, S3: &bucket.S3Info{Endpoint: "http://127.0.0.1:9000", Region: "us-east-1", AddressingStyle: bucket.S3AddressingPath}}
}

func (d *dirBuckets) CreateBucket(_ context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	dir := filepath.Join(d.root, req.Name)
	err := os.Mkdir(dir, 0o755)
	switch {
	case errors.Is(err, fs.ErrExist):
		fp, rerr := os.ReadFile(filepath.Join(dir, ".fingerprint"))
		if rerr != nil {
			return nil, fmt.Errorf("bucket %q: %w", req.Name, rerr)
		}
		if err := req.CheckExisting(string(fp), d.bucket(req.Name)); err != nil {
			return nil, err
		}
		return d.bucket(req.Name), nil
	case err != nil:
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, ".fingerprint"), []byte(req.Fingerprint()), 0o644); err != nil {
		return nil, err
	}
	return d.bucket(req.Name), nil
}

func (d *dirBuckets) GetBucket(_ context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	if _, err := os.Stat(filepath.Join(d.root, req.ID)); err != nil {
		return nil, fmt.Errorf("bucket %q: %w", req.ID, driver.ErrNotFound)
	}
	return d.bucket(req.ID), nil
}

func (d *dirBuckets) DeleteBucket(_ context.Context, req *bucket.DeleteBucketRequest) error {
	return os.RemoveAll(filepath.Join(d.root, req.ID))
}

func (d *dirBuckets) GrantBucketAccess(_ context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	var ids []string
	for _, b := range req.Buckets {
		if _, err := os.Stat(filepath.Join(d.root, b.BucketID)); err != nil {
			return nil, fmt.Errorf("bucket %q: %w", b.BucketID, driver.ErrNotFound)
		}
		ids = append(ids, b.BucketID)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if a, ok := d.accounts[req.AccountName]; ok {
		existing := d.access(a)
		if err := req.CheckExisting(a.fingerprint, existing); err != nil {
			return nil, err
		}
		return existing, nil
	}
	a := &dirAccount{id: "acct-" + req.AccountName, fingerprint: req.Fingerprint(), buckets: ids,
		creds: bucket.S3Credentials{AccessKeyID: "DIR" + randomText(8), SecretAccessKey: randomText(20)}}
	d.accounts[req.AccountName] = a
	return d.access(a), nil
}

func (d *dirBuckets) access(a *dirAccount) *bucket.Access {
	out := &bucket.Access{AccountID: a.id, Credentials: bucket.Credentials{S3: &a.creds}}
	for _, id := range a.buckets {
		out.Buckets = append(out.Buckets, *d.bucket(id))
	}
	return out
}

func (d *dirBuckets) RevokeBucketAccess(_ context.Context, req *bucket.RevokeBucketAccessRequest) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for name, a := range d.accounts {
		if a.id == req.AccountID {
			delete(d.accounts, name)
			return nil
		}
	}
	return fmt.Errorf("account %q: %w", req.AccountID, driver.ErrNotFound)
}

func (d *dirBuckets) keyLive(keyID string) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, a := range d.accounts {
		if a.creds.AccessKeyID == keyID {
			return true
		}
	}
	return false
}

const hostileCheck = "IDs shaped like paths are NOT_FOUND or INVALID_ARGUMENT and change nothing outside the driver"

// TestCOSISuiteCatchesADriverThatTakesIDsForPaths: the directory-per-bucket driver fails the
// hostile-ID check in both versions (get and grant answered OK, delete removed the canary
// directory), and nothing else: it is exactly the driver the suite passed before it sent such IDs.
func TestCOSISuiteCatchesADriverThatTakesIDsForPaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "buckets")
	if err := os.Mkdir(root, 0o755); err != nil {
		t.Fatal(err)
	}
	d := newDirBuckets(root)
	f, _ := runFake(t, bucketCfg(d), Options{
		BucketParameters:             map[string]string{"tier": "gold"},
		IncompatibleBucketParameters: map[string]string{"tier": "lead"},
		CheckCredentials: func(_ context.Context, _ bucket.Protocol, _ bucket.Bucket, c bucket.Credentials) error {
			if c.S3 == nil || !d.keyLive(c.S3.AccessKeyID) {
				return errors.New("the key is not live")
			}
			return nil
		},
	})
	failures := f.failures()
	if testing.Verbose() {
		for test, msgs := range failures {
			t.Logf("%s:\n\t%s", test, strings.Join(msgs, "\n\t"))
		}
	}
	for test := range failures {
		if !strings.HasSuffix(test, "/"+hostileCheck) && test != "COSI" && test != "COSI/v1alpha1" && test != "COSI/v1alpha2" {
			t.Errorf("the directory-per-bucket driver failed %q too; it should fail only the hostile-ID check", test)
		}
	}
	want := map[string][]string{
		"v1alpha1": {
			"DriverGrantBucketAccess{bucket_id \"../tmp/",
			"answered OK for an ID the driver never issued",
			"DriverDeleteBucket{bucket_id \"../tmp/",
			"changed the canary directory",
			"the directory is gone",
		},
		"v1alpha2": {
			"DriverGetExistingBucket{existing_bucket_id \"../tmp/",
			"DriverGetExistingBucket{existing_bucket_id \"..\"} answered OK",
			"DriverGetExistingBucket{existing_bucket_id \"x/../",
			"DriverGrantBucketAccess{bucket_id \"../tmp/",
			"answered OK for an ID the driver never issued",
			"changed the canary directory",
			"the directory is gone",
		},
	}
	for v, words := range want {
		msgs, ok := failures["COSI/"+v+"/"+hostileCheck]
		if !ok {
			t.Errorf("%s: the suite passed the directory-per-bucket driver on IDs shaped like paths", v)
			continue
		}
		all := strings.Join(msgs, "\n")
		for _, w := range words {
			if !strings.Contains(all, w) {
				t.Errorf("%s: no failure message contains %q; they are:\n%s", v, w, all)
			}
		}
	}
	// The suite's own bucket directories are all that is left under the root: nothing it sent
	// created anything there either.
	entries, err := os.ReadDir(filepath.Dir(root))
	if err != nil || len(entries) != 1 {
		t.Errorf("the driver's parent directory holds %d entries (%v) after the run, want only its root", len(entries), err)
	}
}

// memdriver keys buckets and accounts by ID in maps, so it passes the hostile-ID check in both
// versions, and the check runs there rather than being skipped.
func TestCOSISuitePassesMemdriverOnIDsShapedLikePaths(t *testing.T) {
	s := newSpy()
	f, _ := runFake(t, bucketCfg(s), spyOptions(s))
	if fs := f.failures(); len(fs) > 0 {
		t.Errorf("failures: %v", fs)
	}
	f.root.mu.Lock()
	for _, e := range f.root.events {
		for _, v := range []string{"v1alpha1", "v1alpha2"} {
			if e.test == "COSI/"+v+"/"+hostileCheck && e.kind == "skip" {
				t.Errorf("%s: the hostile-ID check was skipped: %s", v, e.msg)
			}
		}
	}
	f.root.mu.Unlock()
	for _, v := range []string{"v1alpha1", "v1alpha2"} {
		if !f.ranTest("COSI/" + v + "/" + hostileCheck) {
			t.Errorf("%s: the hostile-ID check did not run", v)
		}
	}
}
