package s3server

import (
	"bufio"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// TestInFlightWritesDoNotOutliveTheirGrant: authorisation was decided once, from the headers,
// and the store committed when the body had arrived, however much later. A key whose grant
// was revoked, or whose bucket was deleted and created again for someone else, still wrote
// with a request it started before: the client sends its headers with "Expect: 100-continue",
// waits for the 100 (sent when the server starts reading the body, i.e. after authorisation),
// lets the grant go, then sends the body. The object landed in the bucket after RevokeAccess
// returned ("requests signed with its keys lose them from the moment RevokeAccess returns"),
// or in the new bucket of the same name, which "is reachable only through a new grant". The
// idle timeout does not help: a client that trickles the body keeps the request alive for as
// long as it likes.
//
// Every operation that changes the store is now authorised again as it commits: each one
// with a body, sent this way, is refused with 403 AccessDenied and changes nothing, also
// when the same grant is given again on the new bucket (it is another bucket).
func TestInFlightWritesDoNotOutliveTheirGrant(t *testing.T) {
	ctx := context.Background()
	losses := []struct {
		rule string
		lose func(t *testing.T, f *fixture)
	}{
		{"the key is revoked", func(t *testing.T, f *fixture) {
			if err := f.srv.RevokeAccess(ctx, AccountID("old")); err != nil {
				t.Fatal(err)
			}
		}},
		{"the bucket is deleted and created again for another tenant", func(t *testing.T, f *fixture) {
			if err := f.srv.DeleteBucket(ctx, "bkt"); err != nil {
				t.Fatal(err)
			}
			f.bucketWithAccount("bkt", "new-tenant", ReadWrite)
		}},
		{"the bucket is deleted and created again, and the same grant given again", func(t *testing.T, f *fixture) {
			if err := f.srv.DeleteBucket(ctx, "bkt"); err != nil {
				t.Fatal(err)
			}
			f.bucketWithAccount("bkt", "old", ReadWrite)
		}},
	}
	etag := md5.Sum([]byte("part one"))
	ops := []struct {
		op     string
		method string
		target func(uploadID string) string
		body   string
		// changed says what the request would have changed, looked up in the store.
		changed func(f *fixture, uploadID string) string
	}{
		{"PutObject", http.MethodPut, func(string) string { return "/bkt/planted" }, "written after the grant was gone",
			func(f *fixture, _ string) string { return objectThere(f, "planted") }},
		{"DeleteObjects", http.MethodPost, func(string) string { return "/bkt?delete" }, `<Delete><Object><Key>victim</Key></Object></Delete>`,
			func(f *fixture, _ string) string {
				if objectThere(f, "victim") == "" {
					return "victim deleted"
				}
				return ""
			}},
		{"CreateMultipartUpload", http.MethodPost, func(string) string { return "/bkt/started?uploads" }, "<x/>",
			func(f *fixture, _ string) string {
				if ups, _ := f.srv.listUploads("bkt"); len(ups) > 0 && ups[len(ups)-1].Key == "started" {
					return "upload started"
				}
				return ""
			}},
		{"UploadPart", http.MethodPut, func(id string) string { return "/bkt/mpu?partNumber=2&uploadId=" + url.QueryEscape(id) }, "part two",
			func(f *fixture, id string) string {
				if sizes, _ := f.srv.partSizes("bkt", "mpu", id); len(sizes) > 1 {
					return "part stored"
				}
				return ""
			}},
		{"CompleteMultipartUpload", http.MethodPost, func(id string) string { return "/bkt/mpu?uploadId=" + url.QueryEscape(id) },
			fmt.Sprintf(`<CompleteMultipartUpload><Part><PartNumber>1</PartNumber><ETag>"%s"</ETag></Part></CompleteMultipartUpload>`, hex.EncodeToString(etag[:])),
			func(f *fixture, _ string) string { return objectThere(f, "mpu") }},
	}
	for _, loss := range losses {
		for _, o := range ops {
			t.Run(loss.rule+"/"+o.op, func(t *testing.T) {
				f := newFixture(t, false, Config{})
				old := f.bucketWithAccount("bkt", "old", ReadWrite)
				id := f.startUpload(old, "bkt", "mpu")
				uploadRawPart(t, f, old, "bkt", "mpu", id, 1, []byte("part one"))
				addr := f.hs.Listener.Addr().String()
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
					t.Fatal(err)
				}
				head := rawSigned(t, old, o.method, addr, o.target(id), int64(len(o.body)), http.Header{"Expect": {"100-continue"}})
				if _, err := conn.Write(head); err != nil {
					t.Fatal(err)
				}
				br := bufio.NewReader(conn)
				interim, err := http.ReadResponse(br, nil)
				if err != nil || interim.StatusCode != http.StatusContinue {
					t.Fatalf("want 100 Continue once the request is authorised, got %v %v", interim, err)
				}

				loss.lose(t, f)
				if _, err := f.srv.backend.PutObject("bkt", "victim", nil, strings.NewReader("v"), 1, nil); err != nil {
					t.Fatal(err)
				}

				if _, err := conn.Write([]byte(o.body)); err != nil {
					t.Fatal(err)
				}
				resp, err := http.ReadResponse(br, nil)
				if err != nil {
					t.Fatal(err)
				}
				code := codeOf(t, resp)
				if what := o.changed(f, id); what != "" {
					t.Fatalf("the old key's %s answered %d %s and changed the store (%s) after %s", o.op, resp.StatusCode, code, what, loss.rule)
				}
				if resp.StatusCode != http.StatusForbidden || code != "AccessDenied" {
					t.Fatalf("the old key's %s answered %d %s after %s, want 403 AccessDenied", o.op, resp.StatusCode, code, loss.rule)
				}
			})
		}
	}
}

// objectThere is "object <key> stored" when bkt holds key, else "".
func objectThere(f *fixture, key string) string {
	if _, err := f.srv.backend.HeadObject("bkt", key); err == nil {
		return "object " + key + " stored"
	}
	return ""
}
