package s3server

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// TestAttackInFlightWriteOutlivesItsGrant: authorisation is decided once, from the headers,
// and the store commits when the body has arrived, however much later. A key whose grant is
// revoked, or whose bucket is deleted and created again for someone else, still writes with a
// request it started before: the client sends its headers with "Expect: 100-continue", waits
// for the 100 (sent when the store starts reading the body, i.e. after authorisation), lets
// the grant go, then sends the body. The object lands in the bucket after RevokeAccess
// returned ("requests signed with its keys lose them from the moment RevokeAccess returns"),
// or in the new bucket of the same name, which "is reachable only through a new grant".
// The idle timeout does not help: a client that trickles the body keeps the request alive
// for as long as it likes.
func TestAttackInFlightWriteOutlivesItsGrant(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		rule string
		// lose takes the grant away while the request waits for its body; it returns the
		// credentials of a key that may look at the bucket afterwards.
		lose func(t *testing.T, f *fixture) Credentials
	}{
		{"the key is revoked", func(t *testing.T, f *fixture) Credentials {
			if err := f.srv.RevokeAccess(ctx, AccountID("old")); err != nil {
				t.Fatal(err)
			}
			acc, err := f.srv.GrantAccess(ctx, "auditor", map[string]Mode{"bkt": ReadOnly})
			if err != nil {
				t.Fatal(err)
			}
			return acc.Credentials
		}},
		{"the bucket is deleted and created again for another tenant", func(t *testing.T, f *fixture) Credentials {
			if err := f.srv.DeleteBucket(ctx, "bkt"); err != nil {
				t.Fatal(err)
			}
			return f.bucketWithAccount("bkt", "new-tenant", ReadWrite)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			f := newFixture(t, false, Config{})
			old := f.bucketWithAccount("bkt", "old", ReadWrite)
			addr := f.hs.Listener.Addr().String()
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if err := conn.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
				t.Fatal(err)
			}
			body := []byte("written after the grant was gone")
			head := rawSigned(t, old, http.MethodPut, addr, "/bkt/planted", int64(len(body)), http.Header{"Expect": {"100-continue"}})
			if _, err := conn.Write(head); err != nil {
				t.Fatal(err)
			}
			br := bufio.NewReader(conn)
			interim, err := http.ReadResponse(br, nil)
			if err != nil || interim.StatusCode != http.StatusContinue {
				t.Fatalf("want 100 Continue once the request is authorised, got %v %v", interim, err)
			}

			looker := tc.lose(t, f)

			if _, err := conn.Write(body); err != nil {
				t.Fatal(err)
			}
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			_, headErr := f.awsClient(looker).HeadObject(ctx, &s3.HeadObjectInput{Bucket: aws.String("bkt"), Key: aws.String("planted")})
			if headErr == nil {
				t.Fatalf("the old key's PUT answered %d and its object is in the bucket after %s", resp.StatusCode, tc.rule)
			}
			if resp.StatusCode == http.StatusOK {
				t.Fatalf("the old key's PUT answered 200 after %s", tc.rule)
			}
		})
	}
}
