package sigv4

import (
	"bufio"
	"bytes"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"io"
	"strconv"
	"sync"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

const (
	// chunkBufferSize is the read buffer for aws-chunked bodies; chunk headers are parsed from
	// it and large chunk reads bypass it.
	chunkBufferSize = 32 << 10
	// chunkPrealloc is the largest signed chunk whose buffer is allocated before its data
	// arrives: minio-go and aws-sdk-go-v2 send 64 KiB chunks.
	chunkPrealloc = 64 << 10
	// MaxSignedChunk bounds one chunk of a signed aws-chunked upload. A signed chunk is held in
	// memory until its signature checks, so the store never sees bytes that were not signed;
	// clients send 64 KiB (minio-go) or 8 KiB..1 MiB chunks, and 16 MiB leaves room for others
	// while keeping one upload's memory bounded. A chunk is also never larger than what
	// x-amz-decoded-content-length leaves, and its buffer is charged to the Body's Charge.
	MaxSignedChunk = 16 << 20
	// maxChunkLine bounds a chunk header line: "<16 hex>;chunk-signature=<64 hex>" is under 100
	// bytes; extensions of unsigned chunks get the rest.
	maxChunkLine = 4 << 10
	// maxTrailer bounds the trailer block (a checksum and a signature are ~150 bytes).
	maxTrailer = 16 << 10

	chunkSignatureField  = "chunk-signature="
	trailerSignatureName = "x-amz-trailer-signature"
)

// readers are the read buffers of aws-chunked bodies, taken for one body and given back when
// it ends: allocating 32 KiB for each upload was most of the memory a small one cost.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, chunkBufferSize) }}

// newChunkReader decodes body with a pooled read buffer; trailers are the names x-amz-trailer
// announced, decoded the length it announced: no chunk may carry more than what is left of it.
func newChunkReader(body io.Reader, trailers []string, decoded int64) *chunkReader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(body)
	return &chunkReader{r: br, pooled: true, trailerNames: trailers, bounded: true, left: decoded}
}

// Charge is what the buffer of a signed chunk is charged to while it is held: the server's
// budget of buffered bytes. Take reserves n bytes and reports whether there was room; Give
// returns n bytes taken before.
type Charge interface {
	Take(n int64) bool
	Give(n int64)
}

// errNoRoom: the Charge had no room for the next part of a chunk's buffer.
var errNoRoom = s3err.ErrSlowDown.With("the server is holding as many request bodies as it may; retry later")

// releaseReader gives the read buffer back once the body has ended; nothing reads it after
// (every Read past the end returns io.EOF before touching it).
func (c *chunkReader) releaseReader() {
	if c.pooled {
		c.r.Reset(nil)
		readers.Put(c.r)
		c.pooled = false
	}
	c.r = nil
}

// chunkReader decodes an aws-chunked body ("<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n"
// ... "0...\r\n" [trailer] "\r\n") into the plain object bytes.
//
// Signed chunks are read whole, checked (chunkSigner), and only then released, so a forged
// chunk never reaches the store. Unsigned chunks stream through: their integrity
// is the trailer checksum's job. A chunk larger than what the declared decoded length leaves
// is refused at its header, before any of it is read; the buffer a signed chunk is read into
// grows as its bytes arrive, each growth charged to charge first.
type chunkReader struct {
	r      *bufio.Reader
	pooled bool // r came from readers

	signer *chunkSigner // nil for unsigned chunks; holds the previous signature

	trailerSig *trailerSigner // non-nil when the trailer is signed

	buf    []byte // signed: the verified chunk being handed out
	off    int
	remain int64 // unsigned: bytes left in the current chunk

	bounded bool  // left bounds the chunks (false only in tests that build a reader by hand)
	left    int64 // decoded bytes the chunks not yet begun may carry

	charge  Charge // nil: buf is charged to nothing
	charged int64  // what buf's capacity holds of charge

	started, done bool
	trailer       map[string]string
	trailerNames  []string // the names x-amz-trailer announced
}

// Read implements io.Reader.
func (c *chunkReader) Read(p []byte) (int, error) {
	if c.signer != nil {
		return c.readSigned(p)
	}
	return c.readUnsigned(p)
}

func (c *chunkReader) readSigned(p []byte) (int, error) {
	for c.off == len(c.buf) {
		if c.done {
			return 0, io.EOF
		}
		if err := c.nextSignedChunk(); err != nil {
			return 0, err
		}
	}
	n := copy(p, c.buf[c.off:])
	c.off += n
	return n, nil
}

func (c *chunkReader) nextSignedChunk() error {
	if c.started {
		if err := c.expectCRLF(); err != nil {
			return err
		}
	}
	c.started = true
	line, err := c.line()
	if err != nil {
		return err
	}
	size, sig, err := ParseChunkHeader(line, true)
	if err != nil {
		return err
	}
	if size > MaxSignedChunk {
		return s3err.ErrInvalidRequest.With("a signed chunk may be at most %d bytes", MaxSignedChunk)
	}
	if err := c.fits(size); err != nil {
		return err
	}
	if err := c.readChunk(size); err != nil {
		return err
	}
	if want := c.signer.next(c.buf); subtle.ConstantTimeCompare(want[:], sig) != 1 {
		c.buf = c.buf[:0] // never handed out, even to a caller that reads past the error
		return s3err.ErrSignatureDoesNotMatch.With("a chunk signature does not match")
	}
	if size == 0 {
		c.done = true
		return c.readTrailer()
	}
	return nil
}

// fits refuses a chunk larger than what the declared decoded length leaves, before any of it
// is read, and counts it against that length.
func (c *chunkReader) fits(size int64) error {
	if !c.bounded {
		return nil
	}
	if size > c.left {
		return s3err.ErrIncompleteBody.With("a chunk of %d bytes is longer than the %d bytes x-amz-decoded-content-length leaves", size, c.left)
	}
	c.left -= size
	return nil
}

// readChunk reads the size bytes of a signed chunk into c.buf. The buffer is kept for the
// next chunks; when it is too small it grows as the data arrives, doubling from
// chunkPrealloc up to the chunk's size, so that a header alone does not make the server
// allocate (or reserve) its size.
func (c *chunkReader) readChunk(size int64) error {
	c.off = 0
	c.buf = c.buf[:0]
	for int64(len(c.buf)) < size {
		if len(c.buf) == cap(c.buf) {
			if err := c.grow(min(size, max(2*int64(cap(c.buf)), chunkPrealloc))); err != nil {
				c.buf = c.buf[:0]
				return err
			}
		}
		n, err := io.ReadFull(c.r, c.buf[len(c.buf):min(int64(cap(c.buf)), size)])
		c.buf = c.buf[:len(c.buf)+n]
		if err != nil {
			c.buf = c.buf[:0]
			return bodyErr(err)
		}
	}
	return nil
}

// grow gives c.buf a capacity of n, keeping its bytes: the new buffer is charged before it is
// allocated, and the old one given back once its bytes are copied.
func (c *chunkReader) grow(n int64) error {
	if c.charge != nil {
		if !c.charge.Take(n) {
			return errNoRoom
		}
		c.charged += n
	}
	old := int64(cap(c.buf))
	nb := make([]byte, len(c.buf), n)
	copy(nb, c.buf)
	c.buf = nb
	if c.charge != nil && old > 0 {
		c.charged -= old
		c.charge.Give(old)
	}
	return nil
}

// release drops the chunk buffer and gives back what it was charged; nothing reads it after.
func (c *chunkReader) release() {
	c.buf, c.off = nil, 0
	if c.charged > 0 {
		c.charge.Give(c.charged)
		c.charged = 0
	}
}

func (c *chunkReader) readUnsigned(p []byte) (int, error) {
	for c.remain == 0 {
		if c.done {
			return 0, io.EOF
		}
		if c.started {
			if err := c.expectCRLF(); err != nil {
				return 0, err
			}
		}
		c.started = true
		line, err := c.line()
		if err != nil {
			return 0, err
		}
		size, _, err := ParseChunkHeader(line, false)
		if err != nil {
			return 0, err
		}
		if err := c.fits(size); err != nil {
			return 0, err
		}
		if size == 0 {
			c.done = true
			if err := c.readTrailer(); err != nil {
				return 0, err
			}
			return 0, io.EOF
		}
		c.remain = size
	}
	if int64(len(p)) > c.remain {
		p = p[:c.remain]
	}
	n, err := c.r.Read(p)
	c.remain -= int64(n)
	if errors.Is(err, io.EOF) {
		if c.remain > 0 {
			return n, s3err.ErrIncompleteBody
		}
		err = nil // the chunk's CRLF and the final chunk are still to come
	}
	return n, err
}

// readTrailer consumes what follows the final chunk: nothing but line ends, or the trailer
// fields (and, when signed, their signature).
func (c *chunkReader) readTrailer() error {
	// The body ends here: the read buffer goes back to the pool, and the trailer is read into
	// the chunk buffer, which no chunk needs any more and which is given back after.
	defer c.release()
	defer c.releaseReader()
	buf := bytes.NewBuffer(c.buf[:0])
	if _, err := buf.ReadFrom(io.LimitReader(c.r, maxTrailer+1)); err != nil {
		return bodyErr(err)
	}
	rest := buf.Bytes()
	if len(rest) > maxTrailer {
		return s3err.ErrInvalidRequest.With("the trailer is longer than %d bytes", maxTrailer)
	}
	fields, sig, err := ParseTrailer(rest)
	if err != nil {
		return err
	}
	if len(c.trailerNames) == 0 {
		if len(fields) > 0 || sig != nil {
			return s3err.ErrInvalidRequest.With("a trailer was sent but none was announced in x-amz-trailer")
		}
		return nil
	}
	c.trailer = make(map[string]string, len(fields))
	for _, f := range fields {
		if !contains(c.trailerNames, f.Name) {
			return s3err.ErrInvalidRequest.With("trailer %q was not announced in x-amz-trailer", truncate(f.Name))
		}
		c.trailer[f.Name] = f.Value
	}
	if c.trailerSig == nil {
		return nil
	}
	if sig == nil {
		return s3err.ErrSignatureDoesNotMatch.With("the trailer signature is missing")
	}
	if c.signer == nil {
		return s3err.ErrSignatureDoesNotMatch.With("a signed trailer needs signed chunks")
	}
	if subtle.ConstantTimeCompare(c.trailerSig.sign(c.signer.prev[:], fields), sig) != 1 {
		return s3err.ErrSignatureDoesNotMatch.With("the trailer signature does not match")
	}
	return nil
}

// trailerValues is what the body checks the object checksum against once the stream ended.
func (c *chunkReader) trailerValues() (map[string]string, error) {
	if !c.done {
		return nil, s3err.ErrIncompleteBody
	}
	return c.trailer, nil
}

func (c *chunkReader) line() ([]byte, error) {
	line, err := c.r.ReadSlice('\n')
	if errors.Is(err, bufio.ErrBufferFull) || len(line) > maxChunkLine {
		return nil, s3err.ErrInvalidRequest.With("a chunk header line is too long")
	}
	if err != nil {
		return nil, bodyErr(err)
	}
	line, ok := bytes.CutSuffix(line, []byte("\r\n"))
	if !ok {
		return nil, s3err.ErrInvalidRequest.With("a chunk header line must end in CRLF")
	}
	return line, nil
}

func (c *chunkReader) expectCRLF() error {
	var crlf [2]byte
	if _, err := io.ReadFull(c.r, crlf[:]); err != nil {
		return bodyErr(err)
	}
	if crlf != [2]byte{'\r', '\n'} {
		return s3err.ErrInvalidRequest.With("a chunk's data must be followed by CRLF")
	}
	return nil
}

// ParseChunkHeader parses one chunk header line without its CRLF: "<hex size>" for unsigned
// chunks (chunk extensions after ';' are ignored there, as HTTP/1.1 chunking allows) or
// "<hex size>;chunk-signature=<64 hex>" for signed ones. It returns the size and, when
// signed, the raw signature.
func ParseChunkHeader(line []byte, signed bool) (size int64, sig []byte, err error) {
	sizeHex, ext, hasExt := bytes.Cut(line, []byte(";"))
	if len(sizeHex) == 0 || len(sizeHex) > 15 { // 15 hex digits cannot overflow int64
		return 0, nil, s3err.ErrInvalidRequest.With("a chunk size must be 1 to 15 hex digits")
	}
	size, perr := strconv.ParseInt(string(sizeHex), 16, 64)
	if perr != nil || size < 0 || sizeHex[0] == '+' || sizeHex[0] == '-' {
		return 0, nil, s3err.ErrInvalidRequest.With("a chunk size must be hex digits")
	}
	if !signed {
		return size, nil, nil
	}
	if !hasExt {
		return 0, nil, s3err.ErrSignatureDoesNotMatch.With("a chunk of a signed stream has no signature")
	}
	hexSig, ok := bytes.CutPrefix(ext, []byte(chunkSignatureField))
	if !ok || len(hexSig) != 64 {
		return 0, nil, s3err.ErrInvalidRequest.With("a signed chunk header must be <size>;chunk-signature=<64 hex>")
	}
	sig = make([]byte, 32)
	if _, err := hex.Decode(sig, hexSig); err != nil {
		return 0, nil, s3err.ErrInvalidRequest.With("a chunk signature must be 64 hex digits")
	}
	return size, sig, nil
}

// bodyErr turns a transport failure mid-body into IncompleteBody; other errors pass.
func bodyErr(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s3err.ErrIncompleteBody
	}
	return err
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
