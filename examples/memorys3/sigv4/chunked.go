package sigv4

import (
	"bufio"
	"bytes"
	"context"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strconv"
	"time"

	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

const (
	// MaxSignedChunk bounds one chunk of a signed aws-chunked upload. A signed chunk is held in
	// memory until its signature checks, so the store never sees bytes that were not signed;
	// clients send 64 KiB (minio-go) or 8 KiB..1 MiB chunks, and 16 MiB leaves room for others
	// while keeping one upload's memory bounded.
	MaxSignedChunk = 16 << 20
	// maxChunkLine bounds a chunk header line: "<16 hex>;chunk-signature=<64 hex>" is under 100
	// bytes; extensions of unsigned chunks get the rest.
	maxChunkLine = 4 << 10
	// maxTrailer bounds the trailer block (a checksum and a signature are ~150 bytes).
	maxTrailer = 16 << 10

	chunkSignatureField  = "chunk-signature="
	trailerSignatureName = "x-amz-trailer-signature"
)

// chunkReader decodes an aws-chunked body ("<hex size>[;chunk-signature=<sig>]\r\n<data>\r\n"
// ... "0...\r\n" [trailer] "\r\n") into the plain object bytes.
//
// Signed chunks are read whole, checked with aws-sdk-go-v2's StreamSigner (whose string to sign
// for an empty header block is exactly the chunk string to sign of SigV4 streaming: algorithm,
// time, scope, previous signature, hash of nothing, hash of the chunk), and only then released,
// so a forged chunk never reaches the store. Unsigned chunks stream through: their integrity
// is the trailer checksum's job.
type chunkReader struct {
	r *bufio.Reader

	signer *v4.StreamSigner // nil for unsigned chunks
	t      time.Time
	prev   []byte // the previous signature: the seed, then each chunk's

	trailerSig *trailerSigner // non-nil when the trailer is signed

	buf    []byte // signed: the verified chunk being handed out
	off    int
	remain int64 // unsigned: bytes left in the current chunk

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
	// Grow the buffer as the data arrives rather than by the announced size: a header alone
	// must not make the server allocate MaxSignedChunk.
	buf := bytes.NewBuffer(c.buf[:0])
	n, err := buf.ReadFrom(io.LimitReader(c.r, size))
	if err != nil {
		return bodyErr(err)
	}
	if n < size {
		return s3err.ErrIncompleteBody
	}
	c.buf, c.off = buf.Bytes(), 0
	want, err := c.signer.GetSignature(context.Background(), nil, c.buf, c.t)
	if err != nil {
		return fmt.Errorf("sign chunk: %w", err)
	}
	if subtle.ConstantTimeCompare(want, sig) != 1 {
		return s3err.ErrSignatureDoesNotMatch.With("a chunk signature does not match")
	}
	c.prev = want
	if size == 0 {
		c.done = true
		return c.readTrailer()
	}
	return nil
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
	rest, err := io.ReadAll(io.LimitReader(c.r, maxTrailer+1))
	if err != nil {
		return bodyErr(err)
	}
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
	if subtle.ConstantTimeCompare(c.trailerSig.sign(c.prev, fields), sig) != 1 {
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
