package s3server

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// faultChildEnv selects the case TestStateDirReadsNeverAliasTheFileChild runs in a child process:
// the crash under test is a SIGSEGV, which no recover() catches and which would end the test
// binary with every other test in it.
const faultChildEnv = "MEMORYS3_ATTACK_FAULT_CASE"

// TestStateDirReadsNeverAliasTheFile: with --state-dir, gofakes3's bbolt backend decoded objects
// with mgo's bson, whose []byte fields are slices of the input: an object's Contents and Hash
// point into bbolt's memory map, valid only inside the read transaction that GetObject has
// already closed. When a write grows the database file, bbolt unmaps the old map, and the next
// touch of such a slice is a SIGSEGV: "fatal error: fault", which net/http cannot recover, so
// the process (and the COSI socket with it) dies for every tenant.
//   - CopyObject of a 16 MiB object with a ReadWrite key: the copy's PutObject grows the file,
//     then gofakes3 hex-encodes the source's Hash. One request (`aws s3api copy-object`
//     against the memorys3 binary with --state-dir kills it the same way).
//   - A GET of a 32 MiB object whose client stops reading after the headers, while a PUT (of
//     anyone) grows the file; the GET's client then reads on.
//   - Without growth the same stale slice reads whatever bbolt stores next in those pages:
//     tenant A starts a GET of its own 16 MiB object and stops reading, deletes the object
//     (its pages are free at the next commit: no read transaction holds them), tenant B
//     stores a secret of the same size in its own bucket, and A reads on: A's answer is
//     mostly B's secret. A key reads other tenants' data.
//
// boltStore copies what it answers inside the transaction that read it; each case must end
// with the process alive and every tenant reading only its own bytes.
func TestStateDirReadsNeverAliasTheFile(t *testing.T) {
	for _, c := range []string{"copy", "stalled-get", "cross-tenant-read"} {
		t.Run(c, func(t *testing.T) {
			// Side by side: each case is a process of its own, mostly waiting on its store's
			// commits, and together they are the longest test of the unit tier.
			t.Parallel()
			cmd := exec.Command(os.Args[0], "-test.run=^TestStateDirReadsNeverAliasTheFileChild$", "-test.count=1")
			cmd.Env = append(os.Environ(), faultChildEnv+"="+c)
			out, err := cmd.CombinedOutput()
			text := string(out)
			if i := strings.Index(text, "fatal error"); i >= 0 {
				t.Fatalf("the server process died (%v):\n%s", err, text[i:min(len(text), i+1500)])
			}
			if err != nil {
				t.Fatalf("the child failed (%v):\n%s", err, text[:min(len(text), 1500)])
			}
		})
	}
}

// TestStateDirReadsNeverAliasTheFileChild is TestStateDirReadsNeverAliasTheFile's child process.
func TestStateDirReadsNeverAliasTheFileChild(t *testing.T) {
	which := os.Getenv(faultChildEnv)
	if which == "" {
		t.Skip("run as a child of TestStateDirReadsNeverAliasTheFile")
	}
	// Two cases stall a GET for as long as a PUT of tens of MiB takes: the idle timeout, which
	// closes a connection on which nothing moves, would end the stall first on a slow machine.
	f := newFixture(t, false, Config{StateDir: t.TempDir(), Limits: Limits{IdleTimeout: time.Hour}})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	client := f.awsClient(c)
	ctx := context.Background()
	put := func(key string, size int) {
		t.Helper()
		if _, err := client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String(key),
			Body: bytes.NewReader(bytes.Repeat([]byte("b"), size))}); err != nil {
			t.Fatal(err)
		}
	}
	switch which {
	case "copy":
		put("big", 16<<20)
		// Each copy grows the file; the one that makes bbolt map it anew faults (the first,
		// usually; the race detector's allocation pattern can move it to a later one).
		for i := range 8 {
			if _, err := client.CopyObject(ctx, &s3.CopyObjectInput{Bucket: aws.String("bkt"), Key: aws.String(fmt.Sprint("copy", i)),
				CopySource: aws.String("bkt/big")}); err != nil {
				t.Fatal(err)
			}
		}
	case "stalled-get":
		put("big", 32<<20)
		addr := f.hs.Listener.Addr().String()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		watchdog(t, conn)
		if _, err := conn.Write(rawSigned(t, c, http.MethodGet, addr, "/bkt/big", -1, nil)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		put("grow", 96<<20) // the store's file grows; bbolt maps it anew
		watchdog(t, conn)
		n, err := io.Copy(io.Discard, resp.Body)
		if err != nil || n != 32<<20 {
			t.Fatalf("GET body: %d bytes, %v", n, err)
		}
	case "cross-tenant-read":
		const size = 16 << 20
		put("x", size) // tenant A's own object, all 'b'
		// Grow the file once beforehand, so that B's write below reuses pages instead of
		// remapping (which would be the SIGSEGV of the case above).
		put("pad", 3*size)
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("pad")}); err != nil {
			t.Fatal(err)
		}
		addr := f.hs.Listener.Addr().String()
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		watchdog(t, conn)
		if _, err := conn.Write(rawSigned(t, c, http.MethodGet, addr, "/bkt/x", -1, nil)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("bkt"), Key: aws.String("x")}); err != nil {
			t.Fatal(err)
		}
		other := f.awsClient(f.bucketWithAccount("other-tenant", "b", ReadWrite))
		if _, err := other.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("other-tenant"), Key: aws.String("secret"),
			Body: bytes.NewReader(bytes.Repeat([]byte("S"), size))}); err != nil {
			t.Fatal(err)
		}
		watchdog(t, conn)
		got, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		if leaked := bytes.Count(got, []byte("S")); leaked > 0 {
			t.Fatalf("tenant A's GET of its own object returned %d bytes of tenant B's secret (of %d)", leaked, len(got))
		}
	}
}

// watchdog bounds the next exchange on conn, so that a server that stops answering fails the
// test instead of hanging it. It is a watchdog, not a measure: generous, and set again before
// each exchange, so that the PUTs between them (96 MiB under the race detector on a loaded
// machine) never count against it.
func watchdog(t *testing.T, conn net.Conn) {
	t.Helper()
	if err := conn.SetDeadline(time.Now().Add(2 * time.Minute)); err != nil {
		t.Fatal(err)
	}
}
