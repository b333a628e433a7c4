package cosisuite

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/csikit/csikit/driver/bucket"
)

// IDs shaped like paths. Bucket and account IDs are any 1 to 2048 characters of
// [A-Za-z0-9._/-], so "../../etc" is a valid ID, and the CO sends IDs the driver never issued
// (an administrator types them for static provisioning). A driver that takes an ID for a path,
// as a directory-per-bucket driver joining it onto its root does, answers OK for directories
// far outside its root, grants keys for them and deletes them.
//
// The check makes a canary directory of its own (a fresh temporary directory holding a file and
// a subdirectory) and sends IDs that lead to it from anywhere: many "../" and then its absolute
// path without the leading slash, the absolute path, "//" and the path, and the same behind "./",
// "a/../.." and with "/sub/.." after it. It asks every RPC that takes an ID: get and grant must
// answer NOT_FOUND or INVALID_ARGUMENT; delete and revoke may also answer OK, the spec's answer
// for "not there"; and after every call the canary directory must be exactly as it was. Other
// names of the suite's own bucket ("./" and "x/../" before its ID) go to get and grant. Bare ".",
// "..", "a/../.." and "/" go to get only: they lead to the driver's root or above it, where a
// conformance suite must not point a destructive call. Every ID a delete or revoke is sent leads
// into the canary (or, for the revoke that takes back a grant the driver should have refused, to
// the suite's own bucket), so a driver that fails the check damages nothing but the canary,
// which is restored after each call.
//
// A driver that runs elsewhere (COSIEndpoint against a container) cannot see the canary; it is
// then only asked, and its answers judged.

// hostileUp climbs from any root less deep than this to "/".
var hostileUp = strings.Repeat("../", 32)

// shownID is an ID as messages print it: the long climb of hostileUp abbreviated.
func shownID(id string) string {
	return strconv.Quote(strings.Replace(id, hostileUp, "../", 1)) + strings.Repeat(" (its first ../ there 32 times)", strings.Count(id, hostileUp))
}

// dirCanary is the directory the hostile IDs lead to, and what it must hold.
type dirCanary struct {
	dir  string            // absolute, in the ID alphabet
	file string            // a file in it
	want map[string]string // relative path -> "dir" or "file:" + content
}

// newDirCanary makes the canary in a fresh temporary directory whose path fits the ID alphabet.
func newDirCanary() (*dirCanary, error) {
	var problems []string
	for _, parent := range []string{"", "/tmp", "/var/tmp"} {
		dir, err := os.MkdirTemp(parent, "csikit-cosi-canary-")
		if err != nil {
			problems = append(problems, err.Error())
			continue
		}
		if abs, err := filepath.Abs(dir); err == nil && filepath.IsAbs(abs) && objectIDProblem(abs) == "" {
			c := &dirCanary{dir: abs, file: filepath.Join(abs, "canary.txt"), want: map[string]string{
				".":            "dir",
				"canary.txt":   "file:the COSI suite's canary; a driver that resolves bucket IDs as paths reached it\n",
				"sub":          "dir",
				"sub/keep.txt": "file:" + cosiUID() + "\n",
			}}
			if err := c.restore(); err != nil {
				_ = os.RemoveAll(abs)
				return nil, err
			}
			return c, nil
		}
		problems = append(problems, fmt.Sprintf("%s does not fit the ID alphabet", dir))
		_ = os.RemoveAll(dir)
	}
	return nil, fmt.Errorf("no temporary directory whose path is a valid bucket ID: %s", strings.Join(problems, "; "))
}

// restore makes the canary exactly as it was first made.
func (c *dirCanary) restore() error {
	if err := os.RemoveAll(c.dir); err != nil {
		return fmt.Errorf("drivertest: restoring the canary directory %s: %w", c.dir, err)
	}
	for _, rel := range slices.Sorted(maps.Keys(c.want)) { // parents sort before their children
		p := filepath.Join(c.dir, rel)
		var err error
		if content, ok := strings.CutPrefix(c.want[rel], "file:"); ok {
			err = os.WriteFile(p, []byte(content), 0o644)
		} else {
			err = os.MkdirAll(p, 0o755)
		}
		if err != nil {
			return fmt.Errorf("drivertest: making the canary directory %s: %w", c.dir, err)
		}
	}
	return nil
}

// changes lists how the canary differs from what was made, or nil when it is untouched.
func (c *dirCanary) changes() []string {
	got := map[string]string{}
	err := filepath.WalkDir(c.dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.dir, p)
		if d.IsDir() {
			got[rel] = "dir"
			return nil
		}
		if !d.Type().IsRegular() {
			got[rel] = "other"
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		got[rel] = "file:" + string(b)
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) && got["."] == "" {
		return []string{"the directory is gone"}
	}
	var out []string
	if err != nil {
		out = append(out, "it cannot be read: "+err.Error())
	}
	for _, rel := range slices.Sorted(maps.Keys(c.want)) {
		switch g, ok := got[rel]; {
		case !ok:
			out = append(out, rel+" was removed")
		case g != c.want[rel]:
			out = append(out, rel+" was changed")
		}
	}
	for _, rel := range slices.Sorted(maps.Keys(got)) {
		if _, ok := c.want[rel]; !ok {
			out = append(out, rel+" was added")
		}
	}
	return out
}

// hostileID is one ID and what it leads to, for messages.
type hostileID struct {
	id, leadsTo string
}

// pathIDs are IDs that lead to target (an absolute path) from a root at any depth below 32, or
// from nowhere at all.
func pathIDs(target, name string) []hostileID {
	rel := strings.TrimPrefix(target, "/")
	return []hostileID{
		{hostileUp + rel, name + ", from the driver's root up through many ../"},
		{target, name + ", by its absolute path"},
		{"/" + target, name + ", by its absolute path after a second slash"},
		{"./" + hostileUp + rel, name + ", after ./"},
		{"a/../../" + hostileUp + rel, name + ", after a/../.."},
		{hostileUp + rel + "/sub/..", name + ", with /sub/.. after it"},
	}
}

func checkHostileIDs(t reporter, s *cosiSuite) {
	canary, err := newDirCanary()
	var toDir, toFile []hostileID
	if err != nil {
		t.Logf("drivertest: %v; only IDs that lead to the driver's own root are sent, to get", err)
	} else {
		t.Cleanup(func() { _ = os.RemoveAll(canary.dir) })
		toDir = pathIDs(canary.dir, "the canary directory "+canary.dir)
		toFile = pathIDs(canary.file, "the canary file "+canary.file)
	}
	h := &hostileRun{s: s, t: t, canary: canary}

	own := s.mustCreate(t, "DriverCreateBucket of a fresh name", bucketName(), s.opts.BucketParameters)
	if s.c.version() == bucket.V1Alpha2 {
		bare := []hostileID{
			{".", "the driver's root"}, {"..", "the parent of the driver's root"}, {"a/../..", "the parent of the driver's root"},
			{"../", "the parent of the driver's root"}, {"/", "the root directory"}, {"./.", "the driver's root"},
			{"./" + own.ID, "bucket " + own.ID + " by another name"}, {"x/../" + own.ID, "bucket " + own.ID + " by another name"},
		}
		h.gets(slices.Concat(toDir, toFile, bare))
	}
	for _, id := range slices.Concat(toDir, toFile) {
		err := s.c.remove(expectCall(context.Background(), "DriverDeleteBucket of an ID shaped like a path", codes.InvalidArgument), id.id)
		h.judge("DriverDeleteBucket", "bucket_id", id, err, true)
	}
	if !s.canGrant {
		t.Logf("drivertest: the driver does not grant access: grants and revokes were not sent IDs shaped like paths")
		return
	}
	aliases := []hostileID{{"./" + own.ID, "bucket " + own.ID + " by another name"}, {"x/../" + own.ID, "bucket " + own.ID + " by another name"}}
	for _, id := range slices.Concat(toDir, toFile, aliases) {
		a, _, err := s.c.grant(expectCall(context.Background(), "DriverGrantBucketAccess of a bucket ID shaped like a path", codes.InvalidArgument),
			accountName(), []string{id.id}, s.opts.AccessParameters)
		h.judge("DriverGrantBucketAccess", "bucket_id", id, err, false)
		if err == nil {
			// Keys were issued for it: take them back. The revoke names the same ID, so it too
			// can only lead into the canary (or the driver's own bucket).
			rerr := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of an access to an ID shaped like a path", codes.InvalidArgument),
				a.AccountID, []string{id.id})
			h.judge("DriverRevokeBucketAccess", "bucket_id", id, rerr, true)
		}
	}
	for _, id := range slices.Concat(toDir, toFile) {
		err := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of an account ID shaped like a path", codes.InvalidArgument),
			id.id, []string{own.ID})
		h.judge("DriverRevokeBucketAccess", "account_id", id, err, true)
	}
	account := accountName()
	granted := s.mustGrant(t, "DriverGrantBucketAccess of a fresh account", account, []string{own.ID}, s.opts.AccessParameters)
	for _, id := range slices.Concat(toDir, toFile) {
		err := s.c.revoke(expectCall(context.Background(), "DriverRevokeBucketAccess of a bucket ID shaped like a path", codes.InvalidArgument),
			granted.AccountID, []string{id.id})
		h.judge("DriverRevokeBucketAccess", "bucket_id", id, err, true)
	}
}

// hostileRun judges the answers to hostile IDs and watches the canary.
type hostileRun struct {
	s      *cosiSuite
	t      reporter
	canary *dirCanary // nil when none could be made
}

func (h *hostileRun) gets(ids []hostileID) {
	for _, id := range ids {
		_, _, err := h.s.c.get(expectCall(context.Background(), "DriverGetExistingBucket of an ID shaped like a path", codes.InvalidArgument, codes.Unimplemented), id.id)
		if status.Code(err) == codes.Unimplemented {
			h.t.Logf("drivertest: the driver does not serve DriverGetExistingBucket (UNIMPLEMENTED): it was not sent IDs shaped like paths")
			return
		}
		h.judge("DriverGetExistingBucket", "existing_bucket_id", id, err, false)
	}
}

// judge reports a wrong answer to a call with a hostile ID, and any change it made to the canary
// (which it then restores, so the next call is judged on its own). goneIsOK is set for the
// deletes and revokes, where OK is the spec's answer for what is not there.
func (h *hostileRun) judge(rpc, field string, id hostileID, err error, goneIsOK bool) {
	code := status.Code(err)
	switch {
	case code == codes.NotFound || code == codes.InvalidArgument:
	case code == codes.OK && goneIsOK:
	case code == codes.OK:
		h.t.Errorf("%s{%s %s} answered OK for an ID the driver never issued, leading to %s: want NOT_FOUND or INVALID_ARGUMENT; an ID is an opaque key, never a path",
			rpc, field, shownID(id.id), id.leadsTo)
	default:
		want := "NOT_FOUND or INVALID_ARGUMENT"
		if goneIsOK {
			want = "OK or INVALID_ARGUMENT"
		}
		h.t.Errorf("%s{%s %s} (an ID the driver never issued, leading to %s): %s; want %s", rpc, field, shownID(id.id), id.leadsTo, cosiCode(err), want)
	}
	if h.canary == nil {
		return
	}
	if changes := h.canary.changes(); len(changes) > 0 {
		h.t.Errorf("%s{%s %s} answered %s and changed the canary directory %s, which lies outside the driver: %s",
			rpc, field, shownID(id.id), code, h.canary.dir, strings.Join(changes, ", "))
		if err := h.canary.restore(); err != nil {
			h.t.Fatalf("%v", err)
		}
	}
}
