// Package sigv4 authenticates S3 requests signed with AWS Signature Version 4, by recomputing
// each signature and comparing in constant time. The canonicalisation rules are those of
// aws-sdk-go-v2's signer (aws/signer/v4), which stays the reference:
//
//   - Presigned URLs are recomputed by the SDK's PresignHTTP on a copy of the request.
//   - Header-signed requests, the path of nearly every request, are recomputed from the request
//     itself (canonical.go), with the signing key cached per key and day and pooled HMACs: a
//     SignHTTP call on a copy cost about 55 allocations and 10 µs a request, more than all the
//     rest of the check. TestHeaderSignatureMatchesSDK and FuzzHeaderSignature hold the two
//     equal, signature for signature.
//   - Chunk signatures of aws-chunked uploads use the same cached key (chunksig.go);
//     TestChunkSignerMatchesSDK holds them equal to the SDK's StreamSigner.
//
// Forms accepted:
//
//   - Authorization header with a hex x-amz-content-sha256: the body is hashed while it
//     streams to the store and the last Read fails with XAmzContentSHA256Mismatch if it
//     differs (Body).
//   - UNSIGNED-PAYLOAD: the headers are signed, the body is not (aws-sdk-go-v2 over TLS for
//     most calls, presigned URLs).
//   - Presigned URLs (X-Amz-Algorithm, -Credential, -Date, -Expires, -SignedHeaders,
//     -Signature in the query), X-Amz-Expires honoured up to 7 days.
//   - STREAMING-AWS4-HMAC-SHA256-PAYLOAD (aws-chunked, as minio-go sends over plain HTTP):
//     every chunk signature is checked in sequence, chained from the seed signature; the
//     store receives the decoded bytes.
//   - STREAMING-AWS4-HMAC-SHA256-PAYLOAD-TRAILER and STREAMING-UNSIGNED-PAYLOAD-TRAILER
//     (aws-sdk-go-v2 and minio-go over TLS): the trailer is parsed, its
//     AWS4-HMAC-SHA256-TRAILER signature checked when signed, and its x-amz-checksum-* value
//     (CRC32, CRC32C, CRC64NVME, SHA1, SHA256) compared with the decoded bytes.
//
// An x-amz-checksum-* header is checked the same way in every form.
//
// Time and replay. A header-signed request is accepted only within 15 minutes of its
// x-amz-date (AWS's limit, DefaultMaxSkew), and a presigned URL only from its X-Amz-Date
// (minus the same skew) to X-Amz-Date + X-Amz-Expires. That window is the replay limit, as
// on AWS. SigV4 carries no nonce, and a cache of seen signatures would refuse legitimate
// traffic: SDK retries re-sign with a one-second clock, so a retry within the same second is
// byte-identical to the attempt whose answer was lost, and a presigned URL is meant to be
// used more than once. What bounds a captured request is the window, TLS (which keeps it from
// being captured), and revocation, which makes every request of a key fail at once.
//
// Secrets. A Key never prints its secret; errors carry S3 codes and messages for the
// client and never a secret, a computed signature or a string to sign.
package sigv4
