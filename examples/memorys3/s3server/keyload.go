package s3server

import (
	"errors"
	"io"
	"sync/atomic"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// keyLoad is what the requests of one access key in progress hold of the server: how many
// there are (against MaxRequestsPerKey) and the bytes their bodies hold (against
// MaxBufferedBytesPerKey, its share of the server's budget). The server-wide bounds keep the
// process alive; these keep one tenant from spending them all, so that the others are
// served meanwhile. It outlives keyring swaps (publish carries it over), so a change of
// grants does not forget what the key's requests hold.
type keyLoad struct {
	requests atomic.Int64
	share    budget  // body bytes, limit MaxBufferedBytesPerKey
	server   *budget // the server's budget, which Take charges with the share
}

func newKeyLoad(l Limits, server *budget) *keyLoad {
	return &keyLoad{share: budget{limit: l.MaxBufferedBytesPerKey}, server: server}
}

// enter counts a request in, unless the key has max in progress already.
func (l *keyLoad) enter(max int) bool {
	if l.requests.Add(1) > int64(max) {
		l.requests.Add(-1)
		return false
	}
	return true
}

// leave counts a request out.
func (l *keyLoad) leave() { l.requests.Add(-1) }

// Take implements sigv4.Charge for the buffers of signed chunks: n bytes of the key's share
// and of the server's budget, or neither.
func (l *keyLoad) Take(n int64) bool {
	if !l.share.take(n) {
		return false
	}
	if !l.server.take(n) {
		l.share.give(n)
		return false
	}
	return true
}

// Give implements sigv4.Charge.
func (l *keyLoad) Give(n int64) {
	l.server.give(n)
	l.share.give(n)
}

// shareStep is the unit in which body bytes are charged to a key's share: one read's worth
// of the spool's smallest chunk.
const shareStep = 64 << 10

// errKeyShare refuses a body that would take its key past its share of the budget.
var errKeyShare = s3err.ErrSlowDown.With("the requests of this access key hold as many body bytes as one key may; retry later")

// keyBody is a request body on its way in: the bytes that arrive are charged to the key's
// share, in shareSteps, until the request ends (release). The spool or the store they go to
// charges the server's budget for the memory itself. It also keeps the first S3 error the
// body failed with (a verification, the key's share, a timeout, a body cut short), which the
// store would answer as an internal error.
type keyBody struct {
	io.ReadCloser
	load    *keyLoad
	n       int64
	charged int64
	err     error
}

func (b *keyBody) Read(p []byte) (int, error) {
	if b.err != nil {
		return 0, b.err
	}
	n, err := b.ReadCloser.Read(p)
	b.n += int64(n)
	if b.n > b.charged {
		step := roundUp(b.n, shareStep) - b.charged
		if !b.load.share.take(step) {
			b.err = errKeyShare
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
func (b *keyBody) Close() error { return nil }

// failed is the error the body failed with, if any.
func (b *keyBody) failed() error { return b.err }

// release gives back what the body was charged; the request has ended.
func (b *keyBody) release() {
	b.load.share.give(b.charged)
	b.charged = 0
}
