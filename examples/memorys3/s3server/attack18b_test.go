package s3server

// Attack tests of the third review of memorys3 (issue 18, round "attack18b"). Each one fails on
// the code it was written against; its comment says what an attacker does, what it costs the
// other tenants, and what would fix it.

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// secondTenant gives srv another bucket with its own read-write key: the tenant the attacks
// below deny.
func secondTenant(t *testing.T, srv *Server) Credentials {
	t.Helper()
	ctx := context.Background()
	if err := srv.CreateBucket(ctx, "other"); err != nil {
		t.Fatal(err)
	}
	acc, err := srv.GrantAccess(ctx, "victim", map[string]Mode{"other": ReadWrite})
	if err != nil {
		t.Fatal(err)
	}
	return acc.Credentials
}

// liveHeapGrowth is how much the live heap grew since before, after a collection, less the
// spare body chunks (held by no request).
func liveHeapGrowth(before *runtime.MemStats) int64 {
	var now runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&now)
	return int64(now.HeapAlloc) - int64(before.HeapAlloc) - spareChunkBytes()
}

// heapNow is the live heap after a collection, to measure growth from.
func heapNow() *runtime.MemStats {
	var m runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&m)
	return &m
}

// TestAttackSignedChunksAreHeldOutsideTheBudget (HIGH): a signed aws-chunked chunk is read
// whole into a buffer of its own (sigv4.chunkReader.readChunk) before its signature is
// checked, up to sigv4.MaxSignedChunk (16 MiB) whatever the request's
// x-amz-decoded-content-length, and that buffer is charged to nothing: not to
// MaxBufferedBytes, not to MaxObjectSize. The bytes.Buffer it grows in doubles, so a chunk
// of 16 MiB sits in up to 32 MiB. A write key on any bucket opens MaxConnections (256)
// connections, declares a 10-byte object on each, sends a chunk header of 16 MiB and 16 MiB
// minus one byte of data (the signature does not matter: it is checked only at the chunk's
// end) and trickles nothing more: 4 to 8 GiB of heap for the idle timeout, renewed by one byte
// every 29 s, past the 1 GiB budget and past what a small host has: the process (and the COSI
// socket of every tenant with it) is OOM-killed.
//
// Here MaxObjectSize is 1 MiB and the budget 2 MiB; 8 such requests pin over 100 MiB.
//
// Fix: bound a chunk by what the request may still send (its remaining decoded length, which
// the handler has already checked against MaxObjectSize) before reading it, refusing a chunk
// larger than that at once; and charge the chunk buffer to the server's budget (give the
// verifier a reserve/release hook), or stop buffering: the spool already holds every byte
// until the body's end, where the last chunk signature is checked before the store commits, so
// chunk data can be hashed as it streams into the spool instead of being held twice.
func TestAttackSignedChunksAreHeldOutsideTheBudget(t *testing.T) {
	const limit = 1 << 20
	const conns = 8
	_, addr, c := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 2 * limit, IdleTimeout: 30 * time.Second})
	hdr := http.Header{"X-Amz-Content-Sha256": {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}, "Content-Encoding": {"aws-chunked"},
		"X-Amz-Decoded-Content-Length": {"10"}}
	chunk := append([]byte(fmt.Sprintf("%x;chunk-signature=%s\r\n", sigv4.MaxSignedChunk, strings.Repeat("0", 64))),
		bytes.Repeat([]byte("c"), sigv4.MaxSignedChunk-1)...)
	heads := make([][]byte, conns)
	for i := range heads {
		heads[i] = rawSigned(t, c, http.MethodPut, addr, fmt.Sprintf("/bkt/chunk%d", i), int64(len(chunk))+1000, hdr)
	}
	var before runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	var wg sync.WaitGroup
	for i := range conns {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		wg.Go(func() {
			// A fixed server refuses the chunk header and closes: the write may then fail.
			_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
			if _, err := conn.Write(heads[i]); err == nil {
				_, _ = conn.Write(chunk)
			}
		})
	}
	wg.Wait()
	bound := int64(4 * limit)
	var grew int64
	for deadline := time.Now().Add(3 * time.Second); time.Now().Before(deadline); {
		if grew = liveHeapGrowth(&before); grew > bound {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling the heap: there is no event to wait on
	}
	if grew > bound {
		t.Fatalf("%d requests declaring a 10-byte object, each holding one signed chunk of 16 MiB short of its last byte, pin %d MiB of heap; MaxObjectSize is %d MiB and MaxBufferedBytes %d MiB",
			conns, grew>>20, limit>>20, 2*limit>>20)
	}
}

// TestEveryPartIsChargedForItsRecord (was MEDIUM): MaxPartBytes and the budget counted the
// bytes of a part's body only. A part of 1 byte (gofakes3 refuses empty parts) was charged 1
// byte, yet each one costs the upload store a part record and its map slot (about 100 bytes):
// 10^7 part records (about 1 GiB, charged 10 MB) for one bucket's write key. Now each part is
// charged partOverhead (1 KiB) besides its bytes, against MaxPartBytes, the bucket's share of
// it and the budget.
//
// Here MaxPartBytes is 64 KiB: three uploads of 10000 one-byte parts were charged 30000
// bytes, within it, and held several MiB.
func TestEveryPartIsChargedForItsRecord(t *testing.T) {
	const partBytes = 64 << 10
	f := newFixture(t, false, Config{Limits: Limits{MaxPartBytes: partBytes}})
	c := f.bucketWithAccount("bkt", "w", WriteOnly)
	ids := []string{f.startUpload(c, "bkt", "a"), f.startUpload(c, "bkt", "b"), f.startUpload(c, "bkt", "c")}
	before := heapNow()
	refused := 0
	for i, id := range ids {
		key := string(rune('a' + i))
		for n := 1; n <= maxPartNumber; n++ {
			q := url.Values{"partNumber": {fmt.Sprint(n)}, "uploadId": {id}}
			req := signedRequest(t, f, c, http.MethodPut, "/bkt/"+key+"?"+q.Encode(), []byte{'p'}, "UNSIGNED-PAYLOAD", time.Now(), nil)
			req.Header.Set("Content-Length", "1") // as it travels on the wire
			rec := httptest.NewRecorder()
			f.srv.ServeHTTP(rec, req)
			switch rec.Code {
			case http.StatusOK:
			case http.StatusServiceUnavailable:
				refused++
			default:
				t.Fatalf("UploadPart %d: %d %s", n, rec.Code, rec.Body)
			}
		}
	}
	grew := liveHeapGrowth(before)
	if grew > 4*partBytes {
		t.Fatalf("%d parts of 1 byte (%d refused) hold %d KiB of heap; MaxPartBytes is %d KiB",
			len(ids)*maxPartNumber, refused, grew>>10, partBytes>>10)
	}
	if held := len(ids)*maxPartNumber - refused; held*(1+partOverhead) > partBytes {
		t.Fatalf("%d parts of 1 byte are held, charged %d bytes each, past MaxPartBytes of %d", held, 1+partOverhead, partBytes)
	}
}

// uploadPartOf stores one part of n bytes with the aws-sdk-go-v2 client, returning its error.
func uploadPartOf(f *fixture, c Credentials, bucket, key, id string, number int32, n int) error {
	_, err := f.awsClient(c).UploadPart(context.Background(), &s3.UploadPartInput{Bucket: aws.String(bucket), Key: aws.String(key),
		UploadId: aws.String(id), PartNumber: aws.Int32(number), Body: bytes.NewReader(bytes.Repeat([]byte("p"), n))})
	return err
}

// TestOneBucketsUploadsHoldAtMostItsShareOfPartBytes (was MEDIUM): MaxPartBytes was one pool
// for the whole server and nothing bounded what one bucket's uploads held of it: a write-only
// key started an upload, stored parts up to MaxPartBytes and never completed it, and from
// then on every other tenant's UploadPart was 503 SlowDown (until the attacker's bucket was
// deleted). Now one bucket's uploads hold at most MaxPartBytesPerBucket (a quarter of
// MaxPartBytes by default, but at least the parts of one object of MaxObjectSize): the
// attacker's part past it is refused, and another tenant's parts are stored.
//
// Here MaxObjectSize is 1 MiB and MaxPartBytes 4 MiB (so a bucket may hold 2 MiB).
func TestOneBucketsUploadsHoldAtMostItsShareOfPartBytes(t *testing.T) {
	const limit = 1 << 20
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: limit, MaxPartBytes: 4 * limit}})
	attacker := f.bucketWithAccount("bkt", "attacker", WriteOnly)
	victim := secondTenant(t, f.srv)
	id := f.startUpload(attacker, "bkt", "hoard")
	stored := 0
	for n := int32(1); n <= 4; n++ {
		err := uploadPartOf(f, attacker, "bkt", "hoard", id, n, limit)
		if err != nil {
			if apiCode(err) != "SlowDown" || httpStatus(err) != http.StatusServiceUnavailable {
				t.Fatalf("the attacker's part %d: %v, want 503 SlowDown", n, err)
			}
			break
		}
		stored++
	}
	if stored*(limit+partOverhead) > int(f.srv.limits.MaxPartBytesPerBucket) {
		t.Fatalf("one bucket's upload holds %d parts of 1 MiB, past the %d bytes a bucket may hold", stored, f.srv.limits.MaxPartBytesPerBucket)
	}
	vid := f.startUpload(victim, "other", "mine")
	if err := uploadPartOf(f, victim, "other", "mine", vid, 1, limit); err != nil {
		t.Fatalf("another tenant's 1 MiB part, while one write-only key holds an upload it never completes: %v (%s)", err, apiCode(err))
	}
}

// TestUploadsIdleForUploadIdleTimeoutAreAborted (was MEDIUM): multipart uploads never
// expired, so the parts of an upload its client abandoned held their bytes (and blocked every
// part past MaxPartBytes) for as long as the server ran. Now an upload in which no part was
// stored for UploadIdleTimeout is aborted as soon as the store is used, and gives its bytes
// back; storing a part keeps an upload alive. The server's clock is moved, not waited for.
func TestUploadsIdleForUploadIdleTimeoutAreAborted(t *testing.T) {
	const part = 1000 << 10
	const idle = time.Minute
	// The pool holds two parts of the attacker's, and not a third part.
	pool := int64(2 * (part + partOverhead))
	f := newFixture(t, false, Config{Limits: Limits{MaxObjectSize: 1 << 20, MaxPartBytes: pool, MaxPartBytesPerBucket: pool, UploadIdleTimeout: idle}})
	attacker := f.bucketWithAccount("bkt", "attacker", WriteOnly)
	victim := secondTenant(t, f.srv)
	id := f.startUpload(attacker, "bkt", "hoard")
	if err := uploadPartOf(f, attacker, "bkt", "hoard", id, 1, part); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(idle * 5 / 6)
	if err := uploadPartOf(f, attacker, "bkt", "hoard", id, 2, part); err != nil {
		t.Fatal(err)
	}
	f.clock.Advance(idle / 3) // the upload began longer ago than the timeout, but its last part did not
	vid := f.startUpload(victim, "other", "mine")
	if err := uploadPartOf(f, victim, "other", "mine", vid, 1, 64<<10); apiCode(err) != "SlowDown" {
		t.Fatalf("a part past MaxPartBytes while an upload used within the timeout holds it: %v, want SlowDown", err)
	}
	f.clock.Advance(idle)
	vid = f.startUpload(victim, "other", "mine") // its first upload is as idle as the attacker's
	if err := uploadPartOf(f, victim, "other", "mine", vid, 1, 64<<10); err != nil {
		t.Fatalf("another tenant's part once the upload holding the pool was idle for %v: %v (%s)", idle, err, apiCode(err))
	}
	if err := uploadPartOf(f, attacker, "bkt", "hoard", id, 3, 1); apiCode(err) != "NoSuchUpload" {
		t.Fatalf("a part of the aborted upload: %v, want NoSuchUpload", err)
	}
	// Only the victim's part is held: its bytes and its record.
	if used := f.srv.budget.used.Load(); used != 64<<10+partOverhead {
		t.Fatalf("%d buffered bytes counted after the idle upload was aborted, want %d", used, 64<<10+partOverhead)
	}
}

// TestAttackOneTenantHoldsTheBodyBudget (MEDIUM): MaxBufferedBytes is one pool for every
// tenant, a body is charged as it arrives and held until it ends, and a body may take as long
// as it likes as long as a byte moves every IdleTimeout. A write key sends bodies just short
// of their end until the budget is spent (four 256 MiB bodies with the defaults, sent at
// local-network speed in seconds) and then trickles one byte per connection every 29 s:
// every other tenant's PutObject, UploadPart, DeleteObjects and CreateMultipartUpload (and,
// with a state directory, every GetObject) is 503 SlowDown for as long as it goes on, days for
// a 1 MiB tail. The refusal is immediate by design (take never waits), so retries do not help.
//
// Here the budget is 2 MiB: the attacker holds it with two bodies, trickling past several idle
// timeouts, and another tenant's 4-byte PUT is refused.
//
// Fix: give each access key a share of the budget (e.g. at most half of it, or budget divided
// by the keys with bodies in flight, never less than one MaxObjectSize body), so that one key
// cannot refuse every other; and bound how long a body may take (a minimum average rate after
// a grace period, or a deadline from its declared length), so a held body costs its sender
// bandwidth rather than one byte per idle timeout.
func TestAttackOneTenantHoldsTheBodyBudget(t *testing.T) {
	const limit = 1 << 20
	const idle = 300 * time.Millisecond
	srv, addr, attacker := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 2 * limit, IdleTimeout: idle})
	victim := secondTenant(t, srv)
	hold := func(key string, declared, sent int) net.Conn {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(append(rawSigned(t, attacker, http.MethodPut, addr, "/bkt/"+key, int64(declared), nil), bytes.Repeat([]byte("a"), sent)...)); err != nil {
			t.Fatal(err)
		}
		return conn
	}
	held := []net.Conn{hold("one", limit, limit-4096), hold("two", 100<<10, 60<<10)}
	// Wait until the server has taken the attacker's bytes into the budget (polled: the
	// budget has no event to wait on).
	for deadline := time.Now().Add(5 * time.Second); srv.budget.used.Load() < srv.budget.limit; {
		if time.Now().After(deadline) {
			t.Fatalf("the attacker's bodies took %d of %d budget bytes", srv.budget.used.Load(), srv.budget.limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// One byte per connection every third of the idle timeout keeps both bodies going.
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(idle / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, c := range held {
					_, _ = c.Write([]byte("a"))
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	time.Sleep(4 * idle) // the hold outlives the idle timeout several times over
	_, err := awsClientAt(addr, victim).PutObject(context.Background(),
		&s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"), Body: strings.NewReader("mine")})
	if err != nil {
		t.Fatalf("another tenant's 4-byte PUT, while one key trickles two bodies for %v (idle timeout %v): %v (%s)", 4*idle, idle, err, apiCode(err))
	}
}

// awsClientAt is awsClient for a server reached at addr (Serve, not httptest).
func awsClientAt(addr string, c Credentials) *s3.Client {
	return s3.New(s3.Options{
		Region:       DefaultRegion,
		BaseEndpoint: aws.String("http://" + addr),
		UsePathStyle: true,
		Retryer:      aws.NopRetryer{},
		Credentials: aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{AccessKeyID: c.AccessKeyID, SecretAccessKey: c.SecretAccessKey}, nil
		}),
	})
}

// TestAttackOneTenantHoldsEveryConnection (MEDIUM): MaxConnections is one pool for every
// tenant, and the limiter makes room only by closing quiet connections: one with a request in
// progress is never closed. A key with any write grant opens MaxConnections (256) connections,
// each a PUT of a small declared length whose body it trickles a byte every IdleTimeout minus
// a moment (256 bytes every 29 s): every other tenant's connection waits in the listen
// backlog for as long as it goes on. A read key does the same with GETs of an object it reads
// at a crawl.
//
// Here the limit is 4: four trickled PUTs hold every slot and another tenant's HEAD is not
// answered within 3 s.
//
// Fix: bound the connections (or requests in progress) of one access key to a share of
// MaxConnections (say a quarter, a flag), refusing its next request with 503 SlowDown; at the
// limit, prefer closing a connection of the key holding the most slots; and a minimum body
// rate (see TestAttackOneTenantHoldsTheBodyBudget).
func TestAttackOneTenantHoldsEveryConnection(t *testing.T) {
	const slots = 4
	const idle = 300 * time.Millisecond
	srv, addr, attacker := serveLimited(t, Limits{MaxConnections: slots, IdleTimeout: idle})
	victim := secondTenant(t, srv)
	var held []net.Conn
	for i := range slots {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(rawSigned(t, attacker, http.MethodPut, addr, fmt.Sprintf("/bkt/slow%d", i), 1000, http.Header{"Expect": {"100-continue"}})); err != nil {
			t.Fatal(err)
		}
		// The 100 Continue says the request is in progress.
		if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("attacker's connection %d: %v %v, want 100 Continue", i, resp, err)
		}
		held = append(held, conn)
	}
	stop := make(chan struct{})
	trickled := make(chan struct{})
	go func() {
		defer close(trickled)
		tick := time.NewTicker(idle / 3)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				for _, c := range held {
					_, _ = c.Write([]byte("a"))
				}
			}
		}
	}()
	defer func() { close(stop); <-trickled }()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write(rawSigned(t, victim, http.MethodHead, addr, "/other", -1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("another tenant's HEAD was not answered in 3 s while one key trickles %d PUTs (idle timeout %v): %v", slots, idle, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("another tenant's HEAD: %d", resp.StatusCode)
	}
}

// TestAConnectFloodDoesNotStarveTenants (was MEDIUM, no key needed): at MaxConnections the
// limiter made room by closing a quiet connection, but spared one that had sent nothing for
// up to a second; a client that opened connections faster than MaxConnections a second and
// sent nothing on them kept every slot held by connections younger than that and the listen
// backlog full of its own, and a tenant's connection waited behind them all. Now the limiter
// closes the connection quiet the longest whatever its age, once the server has begun
// reading it: the flood closes its own connections, and a tenant's, whose request is in the
// socket as it connects, is served at once.
//
// Here the limit is 4 and the flood 100 connections a second.
func TestAConnectFloodDoesNotStarveTenants(t *testing.T) {
	const slots = 4
	const flood = 150 // 1.5 s of the flood: the slots, and any backlog behind them, are its
	srv, addr, _ := serveLimited(t, Limits{MaxConnections: slots})
	victim := secondTenant(t, srv)
	stop := make(chan struct{})
	flooded := make(chan struct{})
	going := make(chan struct{})
	var mu sync.Mutex
	var opened []net.Conn
	go func() {
		defer close(flooded)
		// One connection every 10 ms: the pace of the attack.
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				d := net.Dialer{Timeout: 100 * time.Millisecond}
				if conn, err := d.Dial("tcp", addr); err == nil {
					mu.Lock()
					opened = append(opened, conn)
					if len(opened) == flood {
						close(going)
					}
					mu.Unlock()
				}
			}
		}
	}()
	defer func() {
		close(stop)
		<-flooded
		mu.Lock()
		defer mu.Unlock()
		for _, c := range opened {
			c.Close()
		}
	}()
	select {
	case <-going:
	case <-time.After(30 * time.Second):
		t.Fatalf("the flood opened fewer than %d connections in 30 s", flood)
	}
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatalf("a tenant could not connect during a connect flood: %v", err)
	}
	defer conn.Close()
	if _, err := conn.Write(rawSigned(t, victim, http.MethodHead, addr, "/other", -1, nil)); err != nil {
		t.Fatal(err)
	}
	if err := conn.SetReadDeadline(time.Now().Add(3 * time.Second)); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodHead})
	if err != nil {
		t.Fatalf("a tenant's HEAD was not answered in 3 s while a client with no key opens 100 connections a second and sends nothing (limit %d): %v", slots, err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("tenant HEAD during the flood: %d", resp.StatusCode)
	}
}
