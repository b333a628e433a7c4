package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

// body prepares the checks of r's body for the payload mode x-amz-content-sha256 names. It
// returns nil when there is nothing to check.
func (v *Verifier) body(r *http.Request, payload string, a *Authorization, key *Key, t time.Time) (*Body, bool, error) {
	sum, err := headerChecksum(r.Header)
	if err != nil {
		return nil, false, err
	}
	switch {
	case payload == UnsignedPayload:
		if sum == nil {
			return nil, false, nil
		}
		if r.Body == nil || r.Body == http.NoBody {
			return nil, false, checkEmpty(sum)
		}
		return &Body{src: r.Body, closer: r.Body, sum: sum, length: -1}, false, nil
	case payload == StreamingSignedPayload, payload == StreamingSignedPayloadTrailer, payload == StreamingUnsignedPayloadTrailer:
		return v.chunkedBody(r, payload, a, key, t, sum)
	case strings.HasPrefix(payload, streamingECDSAPrefix):
		return nil, false, s3err.ErrNotImplemented.With("SigV4A (ECDSA) streaming signatures are not supported")
	}
	var want [sha256.Size]byte
	if len(payload) != hex.EncodedLen(len(want)) {
		return nil, false, s3err.ErrInvalidArgument.With("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING- mode or a hex SHA-256")
	}
	if _, err := hex.Decode(want[:], []byte(payload)); err != nil {
		return nil, false, s3err.ErrInvalidArgument.With("x-amz-content-sha256 must be UNSIGNED-PAYLOAD, a STREAMING- mode or a hex SHA-256")
	}
	if r.Body == nil || r.Body == http.NoBody {
		if payload != emptySHA256 {
			return nil, false, s3err.ErrContentSHA256Mismatch
		}
		return nil, false, checkEmpty(sum)
	}
	return newHexBody(r.Body, want, sum), false, nil
}

// chunkedBody prepares the decoding and checks of an aws-chunked body.
func (v *Verifier) chunkedBody(r *http.Request, payload string, a *Authorization, key *Key, t time.Time, sum *checksum) (*Body, bool, error) {
	decoded, err := strconv.ParseInt(r.Header.Get("X-Amz-Decoded-Content-Length"), 10, 64)
	if err != nil || decoded < 0 {
		return nil, false, s3err.ErrMissingContentLength.With("aws-chunked uploads need x-amz-decoded-content-length")
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil, false, s3err.ErrIncompleteBody
	}
	var trailers []string
	for _, v := range r.Header.Values("X-Amz-Trailer") {
		for n := range strings.SplitSeq(v, ",") {
			if n = strings.ToLower(strings.TrimSpace(n)); n != "" {
				trailers = append(trailers, n)
			}
		}
	}
	wantTrailer := payload != StreamingSignedPayload
	switch {
	case wantTrailer && len(trailers) == 0:
		return nil, false, s3err.ErrInvalidRequest.With("%s needs an x-amz-trailer header", payload)
	case !wantTrailer && len(trailers) > 0:
		return nil, false, s3err.ErrInvalidRequest.With("x-amz-trailer needs a -TRAILER payload mode")
	case len(trailers) > 1:
		return nil, false, s3err.ErrInvalidRequest.With("expecting a single trailer checksum")
	case len(trailers) == 1:
		if sum != nil {
			return nil, false, s3err.ErrInvalidRequest.With("a checksum may come in a header or a trailer, not both")
		}
		if sum, err = newChecksum(trailers[0], ""); err != nil {
			return nil, false, err
		}
	}
	cr := newChunkReader(r.Body, trailers, decoded)
	if payload != StreamingUnsignedPayloadTrailer {
		// The seed is the request's own signature: the first chunk chains from it.
		cr.signer = newChunkSigner(key.signingKey(t, v.Region, service), t, v.Region, service, a.Signature)
	}
	if payload == StreamingSignedPayloadTrailer {
		cr.trailerSig = newTrailerSigner(key.signingKey(t, v.Region, service), t, v.Region, service)
	}
	return &Body{src: cr, chunks: cr, closer: r.Body, sum: sum, trailer: cr.trailerValues, length: decoded}, true, nil
}

// checkEmpty checks the checksum header of a request without a body, if it has one.
func checkEmpty(sum *checksum) error {
	if sum == nil {
		return nil
	}
	return (&Body{sum: sum, length: -1}).finish()
}
