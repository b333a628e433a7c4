package sigv4

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// chunkSigner computes the chunk signatures of a signed aws-chunked stream (SigV4 streaming):
// each is the HMAC, with the request's signing key, of
//
//	AWS4-HMAC-SHA256-PAYLOAD \n <x-amz-date> \n <scope> \n <previous signature> \n
//	<SHA-256 of nothing> \n <SHA-256 of the chunk>
//
// chained from the seed, the request's own signature. It is the string aws-sdk-go-v2's
// StreamSigner signs for a chunk with an empty header block (TestChunkSignerMatchesSDK holds
// the two equal); this one uses the Key's cached signing key and reuses its buffer, where a
// StreamSigner per request derived the key again (four HMACs) and allocated ~30 times per
// chunk.
type chunkSigner struct {
	key  *derivedKey
	head []byte // "AWS4-HMAC-SHA256-PAYLOAD\n<date>\n<scope>\n"
	prev [sha256.Size]byte
	buf  []byte
}

// emptySHA256Hex is the hex SHA-256 of nothing: the hash of a chunk's (empty) header block.
const emptySHA256Hex = emptySHA256

func newChunkSigner(key *derivedKey, t time.Time, region, service string, seed []byte) *chunkSigner {
	s := &chunkSigner{key: key}
	h := append(make([]byte, 0, 96), "AWS4-HMAC-SHA256-PAYLOAD\n"...)
	h = t.UTC().AppendFormat(h, amzDateFormat)
	h = append(h, '\n')
	h = t.UTC().AppendFormat(h, dateFormat)
	h = append(h, "/"+region+"/"+service+"/aws4_request\n"...)
	s.head = h
	copy(s.prev[:], seed)
	return s
}

// next returns the signature of the next chunk and makes it the previous one.
func (s *chunkSigner) next(chunk []byte) [sha256.Size]byte {
	sum := sha256.Sum256(chunk)
	b := append(s.buf[:0], s.head...)
	b = hex.AppendEncode(b, s.prev[:])
	b = append(b, "\n"+emptySHA256Hex+"\n"...)
	b = hex.AppendEncode(b, sum[:])
	n := len(b)
	b = s.key.appendMAC(b, b)
	copy(s.prev[:], b[n:])
	s.buf = b
	return s.prev
}
