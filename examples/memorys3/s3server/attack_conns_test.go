package s3server

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"net/http"
	"runtime"
	"testing"
	"time"
)

// TestAttackAnonymousClientHoldsEveryConnection: MaxConnections is one pool for every client,
// and a connection stays in it while idle for up to IdleTimeout, also after its only request
// failed authentication (refuse closes the connection only when the request had a body). A
// client with no key opens MaxConnections connections, sends one unsigned GET on each (403),
// and repeats that every IdleTimeout minus a moment: every tenant's requests then wait in the
// listen backlog for as long as it goes on (about 9 requests a second hold the default 256
// connections of 30 s each). Here the limit is 4 and a tenant's signed HEAD is not answered
// within 3 s while the 4 refused connections sit idle.
func TestAttackAnonymousClientHoldsEveryConnection(t *testing.T) {
	const slots = 4
	_, addr, c := serveLimited(t, Limits{MaxConnections: slots, IdleTimeout: 30 * time.Second})
	for range slots {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write([]byte("GET /bkt/k HTTP/1.1\r\nHost: " + addr + "\r\n\r\n")); err != nil {
			t.Fatal(err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("anonymous GET: %v", err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Fatalf("anonymous GET answered %d, want 403", resp.StatusCode)
		}
	}
	tenant, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer tenant.Close()
	if _, err := tenant.Write(rawSigned(t, c, http.MethodHead, addr, "/bkt", -1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := tenant.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(tenant), &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("a tenant's signed HEAD was not answered while %d connections refused for want of a key sat idle: %v", slots, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tenant HEAD: %d", resp.StatusCode)
	}
}

// TestAttackConcurrentBodiesHaveNoServerWideBound: each request body is bounded by
// MaxObjectSize and buffered whole before the store commits (spool, then the store's own
// copy), but nothing bounds the bytes buffered across requests: MaxConnections uploads just
// under the limit, each holding back its last byte, pin MaxConnections x MaxObjectSize. With
// the defaults that is 256 x 1 GiB = 256 GiB (and about twice that once the store copies),
// which no host has: one key holder with enough connections takes the process, and the COSI
// socket, down for every tenant. Here 40 uploads of 2 MiB minus one byte are held; the
// server should refuse or hold back bodies past a server-wide budget (asserted: 8 x
// MaxObjectSize).
func TestAttackConcurrentBodiesHaveNoServerWideBound(t *testing.T) {
	const limit = 2 << 20
	const uploads = 40
	_, addr, c := serveLimited(t, Limits{MaxObjectSize: limit})
	body := bytes.Repeat([]byte("z"), limit-1)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for i := range uploads {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		head := rawSigned(t, c, http.MethodPut, addr, fmt.Sprintf("/bkt/held%d", i), limit, nil)
		if _, err := conn.Write(append(head, body...)); err != nil {
			t.Fatal(err)
		}
	}
	// The bodies are on their way; the server reads them as they come. Watch the heap until it
	// holds them or a generous deadline passes.
	budget := int64(8 * limit)
	var grew int64
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); {
		var now runtime.MemStats
		runtime.ReadMemStats(&now)
		if grew = int64(now.HeapAlloc) - int64(before.HeapAlloc); grew > budget {
			break
		}
		runtime.Gosched()
	}
	if grew > budget {
		t.Fatalf("%d uploads held one byte short of MaxObjectSize (%d MiB) pin %d MiB of heap, past a budget of %d MiB; with the defaults this is 256 GiB",
			uploads, limit>>20, grew>>20, budget>>20)
	}
}
