package s3server

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestAnonymousClientsHoldNoConnection: MaxConnections is one pool for every client, and a
// connection stayed in it while idle for up to IdleTimeout, also after its only request
// failed authentication (refuse closed the connection only when the request had a body). A
// client with no key opens MaxConnections connections, sends one unsigned GET on each (403),
// and repeats that every IdleTimeout minus a moment: every tenant's requests then wait in the
// listen backlog for as long as it goes on (about 9 requests a second hold the default 256
// connections of 30 s each). Here the limit is 4 and a tenant's signed HEAD is not answered
// within 3 s while the 4 refused connections sit idle. Now every refusal of a request without
// a valid key closes its connection (and a quiet connection makes room at the limit anyway:
// TestQuietConnectionsMakeRoom).
func TestAnonymousClientsHoldNoConnection(t *testing.T) {
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
		if resp.StatusCode != http.StatusForbidden || !resp.Close {
			t.Fatalf("anonymous GET answered %d (Connection: close %v), want 403 closing the connection", resp.StatusCode, resp.Close)
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

// TestBufferedBodiesStayWithinTheServerBudget: each request body is bounded by MaxObjectSize
// and buffered whole before the store commits, and nothing bounded the bytes buffered across
// requests: MaxConnections uploads just under the limit, each holding back its last byte,
// pinned MaxConnections x MaxObjectSize (256 GiB with the defaults of the time). Here 40
// uploads of 2 MiB minus one byte are held against a budget of 8 MiB of buffered bytes: the
// bodies past it are refused with 503 SlowDown as soon as they would pass it, unread and
// with the connection closed, and the heap grows by no more than 8 x MaxObjectSize.
func TestBufferedBodiesStayWithinTheServerBudget(t *testing.T) {
	const limit = 2 << 20
	const uploads = 40
	_, addr, c := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 4 * limit})
	body := bytes.Repeat([]byte("z"), limit-1)
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	conns := make([]net.Conn, uploads)
	for i := range uploads {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		conns[i] = conn
		head := rawSigned(t, c, http.MethodPut, addr, fmt.Sprintf("/bkt/held%d", i), limit, nil)
		if _, err := conn.Write(append(head, body...)); err != nil {
			t.Fatal(err)
		}
	}
	// The refused uploads are answered at once; the held ones wait for their last byte until
	// the deadline.
	var refused atomic.Int32
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Go(func() {
			if err := conn.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
				t.Error(err)
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				return // held
			}
			defer resp.Body.Close()
			if code := codeOf(t, resp); resp.StatusCode != http.StatusServiceUnavailable || code != "SlowDown" || !resp.Close {
				t.Errorf("an upload past the budget answered %d %s (Connection: close %v), want 503 SlowDown closing the connection", resp.StatusCode, code, resp.Close)
				return
			}
			refused.Add(1)
		})
	}
	wg.Wait()
	var now runtime.MemStats
	runtime.ReadMemStats(&now)
	// Spare chunks kept for the next bodies (at most 4 MiB of each size) are held by no
	// request.
	grew := int64(now.HeapAlloc) - int64(before.HeapAlloc) - spareChunkBytes()
	if budget := int64(8 * limit); grew > budget {
		t.Fatalf("%d uploads held one byte short of MaxObjectSize (%d MiB) pin %d MiB of heap, past %d MiB",
			uploads, limit>>20, grew>>20, budget>>20)
	}
	// Each held body is charged 2 MiB, and one tenant's requests may hold 4 MiB of the 8 MiB
	// (MaxBufferedBytesPerTenant: one body and a chunk buffer as large as it): at most two fit.
	if n := refused.Load(); n < uploads-2 {
		t.Fatalf("%d of %d uploads were refused; one tenant's 4 MiB of the budget hold at most 2 bodies of 2 MiB", n, uploads)
	}
}

// spareChunkBytes is what the free lists of body chunks hold.
func spareChunkBytes() int64 {
	var n int64
	for i, c := range chunkFree {
		n += int64(len(c)) << (minChunkShift + i)
	}
	return n
}

// TestStateDirReadsStayWithinTheServerBudget: with a state directory, a GET answers a copy of
// the object made inside the read transaction, held until the answer is sent: a reader that
// stalls holds it. Copies are charged to the budget of buffered bytes like bodies, and to the
// reader's share of it, and a GET past that is refused with 503 SlowDown.
//
// The object is twice MaxObjectSize (stored before the limit was lowered: a GET answers any
// object the store holds), so that the budget, which must let one tenant alone hold a body of
// MaxObjectSize and its chunk buffer, holds one copy of the object for a tenant and not two.
func TestStateDirReadsStayWithinTheServerBudget(t *testing.T) {
	const size = 16 << 20
	f := newFixture(t, false, Config{StateDir: t.TempDir(), Limits: Limits{MaxObjectSize: size / 2, MaxBufferedBytes: 2 * size}})
	c := f.bucketWithAccount("bkt", "rw", ReadWrite)
	if _, err := f.srv.backend.PutObject("bkt", "big", map[string]string{}, bytes.NewReader(bytes.Repeat([]byte("b"), size)), size, nil); err != nil {
		t.Fatal(err)
	}
	addr := f.hs.Listener.Addr().String()
	stalled, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer stalled.Close()
	if err := stalled.SetDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := stalled.Write(rawSigned(t, c, http.MethodGet, addr, "/bkt/big", -1, nil)); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(stalled)
	first, err := http.ReadResponse(br, nil)
	if err != nil || first.StatusCode != http.StatusOK {
		t.Fatalf("first GET: %v %v", first, err)
	}
	// The first answer's copy is held while its reader stalls (more than the socket buffers
	// take); a second GET does not fit beside it.
	resp := do(t, signedRequest(t, f, c, http.MethodGet, "/bkt/big", nil, "", time.Now(), nil))
	if resp.StatusCode != http.StatusServiceUnavailable || s3Code([]byte(resp.body)) != "SlowDown" {
		t.Fatalf("a GET past the budget: %d %.200s, want 503 SlowDown", resp.StatusCode, resp.body)
	}
	if n, err := io.Copy(io.Discard, first.Body); err != nil || n != size {
		t.Fatalf("the stalled GET read on: %d bytes, %v", n, err)
	}
}
