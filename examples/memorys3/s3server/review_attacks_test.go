package s3server

// Tests from an adversarial review of memorys3, each named for the rule
// it holds. Each one failed on the code the review was written against; its comment says what
// an attacker did, what it cost the other tenants, and what holds it now.

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
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
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/johannesboyne/gofakes3"

	"github.com/csikit/csikit/examples/memorys3/sigv4"
)

// secondTenant gives srv another bucket with its own read-write key: the tenant the attacks
// below would deny.
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

// answers reads one answer on each connection, each within wait: a request the server holds
// (its body waits for bytes that never come) sends none, and there is no event that says a
// request is being held, so the wait is bounded instead. It returns how many were answered
// with status and code, and fails the test for any other answer; a connection the server
// closed or reset without an answer counts as answered when closedOK.
func answers(t *testing.T, conns []net.Conn, wait time.Duration, status int, code string, closedOK bool) (answered, held int) {
	t.Helper()
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, conn := range conns {
		wg.Go(func() {
			if err := conn.SetReadDeadline(time.Now().Add(wait)); err != nil {
				t.Error(err)
				return
			}
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			mu.Lock()
			defer mu.Unlock()
			var ne net.Error
			switch {
			case errors.As(err, &ne) && ne.Timeout():
				held++
				return
			case err != nil && closedOK:
				answered++
				return
			case err != nil:
				t.Errorf("no answer: %v", err)
				return
			}
			defer resp.Body.Close()
			if got := codeOf(t, resp); resp.StatusCode != status || got != code {
				t.Errorf("answered %d %s, want %d %s", resp.StatusCode, got, status, code)
				return
			}
			answered++
		})
	}
	wg.Wait()
	return answered, held
}

// TestSignedChunksAreHeldWithinTheDeclaredLengthAndTheBudget (was HIGH): a signed aws-chunked
// chunk is held whole until its signature checks, and it was read into a buffer of its own
// whatever the request's x-amz-decoded-content-length, up to sigv4.MaxSignedChunk (16 MiB, in
// a bytes.Buffer that doubled to 32 MiB), charged to nothing. A write key declaring 10-byte
// objects on MaxConnections (256) connections, each sending a 16 MiB chunk header and all
// but the last byte of its data, held 4 to 8 GiB: the process (and every tenant's COSI socket
// with it) was OOM-killed. Now a chunk larger than what the declared length leaves is refused
// at its header, unread; and a chunk's buffer grows as its bytes arrive, each growth charged
// first to the key's share and the server's budget, so a chunk as large as a body may be is
// held within them (past them: 503 SlowDown).
//
// Here MaxObjectSize is 1 MiB and the budget 2 MiB; 8 such requests pinned over 250 MiB.
func TestSignedChunksAreHeldWithinTheDeclaredLengthAndTheBudget(t *testing.T) {
	const limit = 1 << 20
	const conns = 8
	for _, tc := range []struct {
		rule     string
		declared int
		chunk    int
		status   int
		code     string
	}{
		{"a chunk longer than the declared length is refused at its header", 10, sigv4.MaxSignedChunk, http.StatusBadRequest, "IncompleteBody"},
		{"a chunk as long as the declared length is held within the budget", limit, limit, http.StatusServiceUnavailable, "SlowDown"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			_, addr, c := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 2 * limit, IdleTimeout: 30 * time.Second})
			hdr := http.Header{"X-Amz-Content-Sha256": {"STREAMING-AWS4-HMAC-SHA256-PAYLOAD"}, "Content-Encoding": {"aws-chunked"},
				"X-Amz-Decoded-Content-Length": {fmt.Sprint(tc.declared)}}
			// The signature does not matter: it is checked only at the chunk's end.
			chunk := append([]byte(fmt.Sprintf("%x;chunk-signature=%s\r\n", tc.chunk, strings.Repeat("0", 64))),
				bytes.Repeat([]byte("c"), tc.chunk-1)...)
			heads := make([][]byte, conns)
			for i := range heads {
				heads[i] = rawSigned(t, c, http.MethodPut, addr, fmt.Sprintf("/bkt/chunk%d", i), int64(len(chunk))+1000, hdr)
			}
			before := heapNow()
			held := make([]net.Conn, conns)
			var wg sync.WaitGroup
			for i := range conns {
				conn, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { conn.Close() })
				held[i] = conn
				wg.Go(func() {
					// A refused chunk's connection is closed: the write may then fail.
					_ = conn.SetWriteDeadline(time.Now().Add(10 * time.Second))
					if _, err := conn.Write(heads[i]); err == nil {
						_, _ = conn.Write(chunk)
					}
				})
			}
			// A refused request is answered at once (and its connection closed, maybe before
			// the answer is read); one that is held waits for its chunk's last byte.
			answered, waiting := answers(t, held, 2*time.Second, tc.status, tc.code, true)
			wg.Wait()
			if tc.declared < tc.chunk && waiting > 0 {
				t.Errorf("%d requests with a chunk longer than their declared length are held, want none", waiting)
			}
			if grew := liveHeapGrowth(before); grew > 4*limit {
				t.Fatalf("%d requests declaring %d bytes, each holding one signed chunk of %d bytes short of its last byte (%d answered), pin %d MiB of heap; MaxObjectSize is %d MiB and MaxBufferedBytes %d MiB",
					conns, tc.declared, tc.chunk, answered, grew>>20, limit>>20, 2*limit>>20)
			}
		})
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

// holdBody opens a connection to addr and sends the head of a PUT of declared bytes and the
// first sent bytes of its body.
func holdBody(t *testing.T, addr string, c Credentials, key string, declared, sent int) net.Conn {
	t.Helper()
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := conn.Write(append(rawSigned(t, c, http.MethodPut, addr, "/bkt/"+key, int64(declared), nil), bytes.Repeat([]byte("a"), sent)...)); err != nil {
		t.Fatal(err)
	}
	return conn
}

// TestOneKeyHoldsAtMostItsShareOfTheBodyBudget (was MEDIUM): MaxBufferedBytes was one pool
// for every tenant, a body is charged as it arrives and held until it ends: a write key sent
// bodies just short of their end until the budget was spent (four 256 MiB bodies with the
// defaults, sent in seconds on a local network), and every other tenant's PutObject,
// UploadPart, DeleteObjects and CreateMultipartUpload (with a state directory, every
// GetObject) was 503 SlowDown for as long as it held them. Now the requests of one key hold
// at most MaxBufferedBytesPerKey (a quarter of the budget, but at least one body of
// MaxObjectSize with its chunk buffer): its bodies past it are refused, and the other tenants
// are served meanwhile.
//
// Here MaxObjectSize is 1 MiB and the budget 8 MiB, of which one key may hold 2 MiB: the
// attacker sends eight bodies of 1 MiB less 4 KiB and holds them.
func TestOneKeyHoldsAtMostItsShareOfTheBodyBudget(t *testing.T) {
	const limit = 1 << 20
	const bodies = 8
	srv, addr, attacker := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 8 * limit})
	victim := secondTenant(t, srv)
	conns := make([]net.Conn, bodies)
	for i := range conns {
		conns[i] = holdBody(t, addr, attacker, fmt.Sprintf("held%d", i), limit, limit-4096)
	}
	refused, held := answers(t, conns, 2*time.Second, http.StatusServiceUnavailable, "SlowDown", false)
	if share := srv.limits.MaxBufferedBytesPerKey; int64(held*limit) > share {
		t.Fatalf("one key holds %d bodies of 1 MiB (%d refused), past its share of %d bytes", held, refused, share)
	}
	if _, err := awsClientAt(addr, victim).PutObject(context.Background(),
		&s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"), Body: strings.NewReader("mine")}); err != nil {
		t.Fatalf("another tenant's 4-byte PUT, while one key holds %d bodies: %v (%s)", held, err, apiCode(err))
	}
}

// TestABodyMustArriveByItsDeadline (was MEDIUM): a body could take as long as it liked as
// long as a byte moved every IdleTimeout, so a key holding budget bytes in bodies just short
// of their end held them for days at one byte per connection every 29 s. Now a body of n
// declared bytes must have arrived IdleTimeout plus n/MinBodyRate after its request began,
// however steadily it trickles: then its connection is closed and its bytes given back.
//
// Here the attacker's key may hold the whole budget of 2 MiB (one body of 1 MiB and its chunk
// buffer take that much), holds it with two bodies of 1 MiB less 4 KiB, and trickles a byte
// on each every third of the 3 s idle timeout: another tenant's PUT is refused while it
// does, and served once the bodies' deadline (3 s + 1 MiB at 512 KiB/s) has passed. The idle
// timeout is seconds, not a fraction of one, because the premise needs the server to have
// read the bodies before it: on a loaded machine under the race detector that can take longer.
func TestABodyMustArriveByItsDeadline(t *testing.T) {
	const limit = 1 << 20
	const idle = 3 * time.Second
	srv, addr, attacker := serveLimited(t, Limits{MaxObjectSize: limit, MaxBufferedBytes: 2 * limit, IdleTimeout: idle, MinBodyRate: 512 << 10})
	victim := secondTenant(t, srv)
	held := []net.Conn{holdBody(t, addr, attacker, "one", limit, limit-4096), holdBody(t, addr, attacker, "two", limit, limit-4096)}
	// The budget has no event to wait on: it is polled until the attacker's bytes are in, with
	// a watchdog's bound.
	for deadline := time.Now().Add(time.Minute); srv.budget.used.Load() < srv.budget.limit; {
		if time.Now().After(deadline) {
			t.Fatalf("the attacker's bodies took %d of %d budget bytes", srv.budget.used.Load(), srv.budget.limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	put := func() error {
		_, err := awsClientAt(addr, victim).PutObject(context.Background(),
			&s3.PutObjectInput{Bucket: aws.String("other"), Key: aws.String("k"), Body: strings.NewReader("mine")})
		return err
	}
	if err := put(); apiCode(err) != "SlowDown" {
		t.Fatalf("another tenant's PUT while the attacker holds the budget: %v, want SlowDown (the test's premise)", err)
	}
	// One byte per connection every third of the idle timeout: the pace of the attack, which
	// the idle timeout alone never ends.
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
	start := time.Now()
	for _, c := range held {
		readToEnd(t, c, 10*time.Second)
	}
	if err := put(); err != nil {
		t.Fatalf("another tenant's PUT once the trickled bodies' deadline passed (they lasted %v): %v (%s)", time.Since(start), err, apiCode(err))
	}
}

// TestOneKeyHoldsAtMostItsShareOfRequests (was MEDIUM): MaxConnections is one pool for every
// tenant, and the limiter makes room only by closing quiet connections, never one with a
// request in progress. A key with any write grant opened MaxConnections connections, each a
// PUT whose body it trickled (or a read key, GETs it read at a crawl), and every other
// tenant's connection waited in the listen backlog for as long as it went on. Now the
// requests of one key in progress are bounded by MaxRequestsPerKey (a quarter of
// MaxConnections): its next one is refused with 503 SlowDown at once and its connection
// closed, and the slots left serve the other tenants.
//
// Here the limit is 4, so one key may have one request in progress.
func TestOneKeyHoldsAtMostItsShareOfRequests(t *testing.T) {
	const slots = 4
	srv, addr, attacker := serveLimited(t, Limits{MaxConnections: slots})
	victim := secondTenant(t, srv)
	inProgress := 0
	for i := range slots {
		conn, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { conn.Close() })
		if _, err := conn.Write(rawSigned(t, attacker, http.MethodPut, addr, fmt.Sprintf("/bkt/slow%d", i), 1000, http.Header{"Expect": {"100-continue"}})); err != nil {
			t.Fatal(err)
		}
		if err := conn.SetReadDeadline(time.Now().Add(10 * time.Second)); err != nil {
			t.Fatal(err)
		}
		// A 100 Continue says the request is in progress (its body would be read).
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		switch {
		case err != nil:
			t.Fatalf("attacker's connection %d: %v", i, err)
		case resp.StatusCode == http.StatusContinue:
			inProgress++
		case resp.StatusCode != http.StatusServiceUnavailable || codeOf(t, resp) != "SlowDown" || !resp.Close:
			t.Fatalf("attacker's request %d past its share: %d (Connection: close %v), want 503 SlowDown closing the connection", i, resp.StatusCode, resp.Close)
		}
	}
	if inProgress > srv.limits.MaxRequestsPerKey {
		t.Fatalf("one key has %d requests in progress, past MaxRequestsPerKey of %d", inProgress, srv.limits.MaxRequestsPerKey)
	}
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
		t.Fatalf("another tenant's HEAD was not answered in 3 s while one key holds %d requests in progress: %v", inProgress, err)
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

// chargeProbe is a backend that notes, as each object is stored, what the server's budget
// holds then.
type chargeProbe struct {
	gofakes3.Backend
	used func() int64
	mu   *sync.Mutex
	seen *[][2]int64 // size, budget used
}

func (p chargeProbe) PutObject(bucket, key string, meta map[string]string, input io.Reader, size int64, cond *gofakes3.PutConditions) (gofakes3.PutObjectResult, error) {
	p.mu.Lock()
	*p.seen = append(*p.seen, [2]int64{size, p.used()})
	p.mu.Unlock()
	return p.Backend.PutObject(bucket, key, meta, input, size, cond)
}

// TestTheStoresCopyOfABodyIsCharged (was LOW): the store reads an object's body whole into a
// new buffer (gofakes3.ReadAll: the in-memory store keeps it, boltStore writes it) while the
// spool or the parts it is read from still hold it, and the budget counted only those: peak
// memory was about twice the budget. Now that copy is charged before it is made (and
// MaxBufferedBytes must hold a body of MaxObjectSize and its copy), for a PUT and for a
// completion, and everything is given back once the object is stored.
func TestTheStoresCopyOfABodyIsCharged(t *testing.T) {
	var f *fixture
	var mu sync.Mutex
	var seen [][2]int64
	f = newFixture(t, false, Config{instrument: func(b gofakes3.Backend) gofakes3.Backend {
		return chargeProbe{Backend: b, used: func() int64 { return f.srv.budget.used.Load() }, mu: &mu, seen: &seen}
	}})
	c := f.bucketWithAccount("bkt", "w", ReadWrite)
	ctx := context.Background()
	const size = 256 << 10
	if _, err := f.awsClient(c).PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("bkt"), Key: aws.String("put"),
		Body: bytes.NewReader(bytes.Repeat([]byte("o"), size))}); err != nil {
		t.Fatal(err)
	}
	id := f.startUpload(c, "bkt", "mpu")
	var parts []types.CompletedPart
	for n := int32(1); n <= 2; n++ {
		out, err := f.awsClient(c).UploadPart(ctx, &s3.UploadPartInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"), UploadId: aws.String(id),
			PartNumber: aws.Int32(n), Body: bytes.NewReader(bytes.Repeat([]byte("m"), size/2))})
		if err != nil {
			t.Fatal(err)
		}
		parts = append(parts, types.CompletedPart{PartNumber: aws.Int32(n), ETag: out.ETag})
	}
	if _, err := f.awsClient(c).CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: aws.String("bkt"), Key: aws.String("mpu"),
		UploadId: aws.String(id), MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}}); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 2 {
		t.Fatalf("the store stored %d objects, want 2", len(seen))
	}
	for i, want := range []int64{spoolCharge(size) + size, 2*(size/2+partOverhead) + size} {
		if got := seen[i]; got[0] != size || got[1] < want {
			t.Errorf("object %d: stored %d bytes while the budget held %d, want at least %d (its body and the store's copy)", i+1, got[0], got[1], want)
		}
	}
	if used := f.srv.budget.used.Load(); used != 0 {
		t.Errorf("%d buffered bytes still counted once the objects were stored", used)
	}
}
