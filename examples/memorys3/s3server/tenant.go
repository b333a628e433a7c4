package s3server

import (
	"context"
	"errors"
	"io"
	"sync/atomic"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// A tenant is a COSI account: the keys and buckets it was granted. memorys3 gives each account
// one key, and a party that wants to hold more of the server has itself granted more
// accounts, each a tenant. Every server-wide bound is therefore shared out by tenant: the
// requests in progress (of MaxConnections), the bytes their bodies, signed chunks, GET answers,
// listing pages and DeleteObjects answers hold (of MaxBufferedBytes), the multipart uploads (of MaxUploads) and
// their parts' bytes (of MaxPartBytes). A tenant's share of each is the smaller of its own
// bound (MaxRequestsPerTenant, ...) and a fair share of what the others leave (fair); past it
// a request is refused with 503 SlowDown while the other tenants go on.

// fair says whether a tenant holding held units of a bound of limit units, of which used are
// held by every tenant (its own included), may take n more within its own bound cap. It may
// if, after the take, it holds no more than stays free plus floor: a tenant alone may hold
// about half of the bound, one more tenant half of what is left, and so on, so that however
// many accounts one party holds, each further tenant still finds room (a tenant holding less
// than floor, room for floor) until there is none left at all. Shares of a bound set with a
// fixed fraction summed to the whole for a few accounts: four keys of one party each held a
// quarter of the connections.
func fair(limit, used, held, n, cap, floor int64) bool {
	after := held + n
	return after <= cap && used+n <= limit && after <= limit-used-n+floor
}

// byteFloor is the floor of the fair shares of buffered bytes and part bytes: the least a
// tenant holding nothing may always take while the bound has room (a small PUT, a part), and
// the slack that lets a tenant alone hold half a bound and one body or part more.
const byteFloor = 1 << 20

// shares are the server-wide quantities tenants' shares are taken from.
type shares struct {
	limits Limits
	budget *budget      // buffered bytes, of which each tenant's bytes are a share
	busy   atomic.Int64 // requests of tenants in progress
}

// tenant is what the requests of one account in progress hold of the server: how many there
// are and the buffered bytes they hold. Its uploads and their parts are counted by the upload
// store. It outlives keyring swaps (publish carries it over), so a change of grants does not
// forget what the account's requests hold.
type tenant struct {
	id       string // the account ID, for logs
	sh       *shares
	requests atomic.Int64
	bytes    atomic.Int64
}

func newTenant(id string, sh *shares) *tenant { return &tenant{id: id, sh: sh} }

// enter counts a request in, unless the tenant holds its share of requests in progress.
func (t *tenant) enter() bool {
	for {
		held, busy := t.requests.Load(), t.sh.busy.Load()
		if !fair(int64(t.sh.limits.MaxConnections), busy, held, 1, int64(t.sh.limits.MaxRequestsPerTenant), 1) {
			return false
		}
		if t.requests.CompareAndSwap(held, held+1) {
			t.sh.busy.Add(1)
			return true
		}
	}
}

// leave counts a request out.
func (t *tenant) leave() {
	t.requests.Add(-1)
	t.sh.busy.Add(-1)
}

// shareTake takes n bytes of the tenant's share of the buffered bytes, unless that would take
// it past its share; charged says the n bytes are in the budget already (a GET's copy).
func (t *tenant) shareTake(n int64, charged bool) bool {
	for {
		held, used := t.bytes.Load(), t.sh.budget.used.Load()
		if charged {
			used -= n
		}
		if !fair(t.sh.budget.limit, used, held, n, t.sh.limits.MaxBufferedBytesPerTenant, byteFloor) {
			return false
		}
		if t.bytes.CompareAndSwap(held, held+n) {
			return true
		}
	}
}

// shareGive gives back n bytes of the tenant's share.
func (t *tenant) shareGive(n int64) { t.bytes.Add(-n) }

// Take implements sigv4.Charge for the buffers of signed chunks, and charges listing pages:
// n bytes of the tenant's share and of the server's budget, or neither.
func (t *tenant) Take(n int64) bool {
	if !t.shareTake(n, false) {
		return false
	}
	if !t.sh.budget.take(n) {
		t.shareGive(n)
		return false
	}
	return true
}

// Give implements sigv4.Charge.
func (t *tenant) Give(n int64) {
	t.sh.budget.give(n)
	t.shareGive(n)
}

// tenantKey is the request context key of the tenant a request is performed for.
type tenantKey struct{}

// withTenant is ctx for a request performed for t.
func withTenant(ctx context.Context, t *tenant) context.Context {
	return context.WithValue(ctx, tenantKey{}, t)
}

// tenantOf is the tenant a request is performed for; nil for the server's own calls.
func tenantOf(ctx context.Context) *tenant {
	t, _ := ctx.Value(tenantKey{}).(*tenant)
	return t
}

// shareStep is the unit in which body bytes are charged to a tenant's share: one read's worth
// of the spool's smallest chunk.
const shareStep = 64 << 10

// errTenantShare refuses a request that would take its tenant past its share of the buffered
// bytes.
var errTenantShare = s3err.ErrSlowDown.With("the requests of this account hold as many buffered bytes as it may now; retry later")

// tenantBody is a request body on its way in: the bytes that arrive are charged to the
// tenant's share, in shareSteps, until the request ends (release). The spool or the store
// they go to charges the server's budget for the memory itself. It also keeps the first S3
// error the body failed with (a verification, the tenant's share, a timeout, a body cut
// short), which the store would answer as an internal error.
type tenantBody struct {
	io.ReadCloser
	t       *tenant
	n       int64
	charged int64
	err     error
}

func (b *tenantBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.n > b.charged {
		step := roundUp(b.n, shareStep) - b.charged
		if !b.t.shareTake(step, false) {
			b.err = errTenantShare
			return 0, b.err
		}
		b.charged += step
	}
	if err != nil && !errors.Is(err, io.EOF) {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = s3err.ErrIncompleteBody
		}
		if e := (*s3err.Error)(nil); errors.As(err, &e) {
			b.err = err
		}
	}
	return n, err
}

// Close does not close the request body: that is net/http's, after the answer. The store
// closes what it reads as it returns, and closing net/http's body makes it read on to the
// end of the body (up to 256 KiB) before the answer is sent, waiting for bytes a refused
// client need not send.
func (b *tenantBody) Close() error { return nil }

// failed is the error the body failed with, if any.
func (b *tenantBody) failed() error { return b.err }

// release gives back what the body was charged; the request has ended.
func (b *tenantBody) release() {
	b.t.shareGive(b.charged)
	b.charged = 0
}
