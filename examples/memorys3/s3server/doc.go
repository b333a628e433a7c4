// Package s3server is the S3 half of the memorys3 example: an S3 endpoint whose object store
// is gofakes3 (on this package's backends: memStore in memory, or boltStore on bbolt in a state
// directory; multipart uploads in this package's upload store either way; PutObject performed
// by this package with gofakes3's checks and answers, hashing each body once) behind this
// example's own authentication (package sigv4: AWS Signature Version 4 recomputed by the
// rules of aws-sdk-go-v2's signer) and per-key, per-bucket authorisation, plus the Go API the
// COSI driver calls.
//
// The COSI side maps onto the API like this:
//
//	DriverCreateBucket        -> CreateBucketFor(ctx, name, cosiName) idempotent per cosiName; another name: ErrBucketClaimed; foreign: ErrBucketNotOwned
//	DriverDeleteBucket        -> DeleteBucket(ctx, name)              grants first, then uploads and objects; missing: nil; foreign: refused
//	DriverGetExistingBucket   -> Bucket(ctx, name)                    ErrBucketNotFound / ErrBucketNotOwned (exists: found)
//	DriverGrantBucketAccess   -> GrantAccess(ctx, accountName, modes) same name: same ID, same keys; foreign buckets too
//	DriverRevokeBucketAccess  -> RevokeAccess(ctx, id, buckets...)    those buckets at once; the last one takes the keys; unknown: nil
//	bucket info               -> Endpoint(), Region(), path-style addressing
//
// What a granted key may do: with ReadOnly, GET/HEAD objects and list; with WriteOnly,
// PUT/DELETE objects, DeleteObjects and its own multipart uploads; ReadWrite both, and it
// alone lists uploads in progress and their parts (they name other writers' keys, and a
// part's ETag is the MD5 of its bytes). Any grant may HEAD the bucket. A key that may not read a bucket may not send a condition on what it holds
// (If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since): the answer would read
// for it. ListBuckets shows only the key's buckets. Nobody creates, deletes or configures
// a bucket through S3: that is the driver's job. A copy needs read on the source bucket too.
//
// A request is authorised when its headers arrive, and a request that changes the store is
// authorised again when the store commits it, after its body has been read whole: a write
// that outlives its grant (revoked, or its bucket deleted and created again) is refused with
// AccessDenied. What one request, one connection and the whole server may hold is bounded
// (Limits), and so is what one tenant (a COSI account, whatever keys and buckets it holds) may
// hold of each server-wide bound: its requests in progress, the bytes they hold (bodies,
// signed chunks, listing pages, GET answers), its multipart uploads and their parts, each
// within a bound of its own and a fair share of what the other tenants leave, so that a party
// holding several accounts still leaves room for the next; a body must keep a minimum rate
// after a grace, an answer of any size reaches a steady reader, and an upload left idle is
// aborted. Past a bound a request is refused with 503 SlowDown. Buckets hold a bounded number
// of objects, and listing pages at most 1,000 keys.
//
// Clients must use path-style addressing (http://host/bucket/key): aws-sdk-go-v2's
// UsePathStyle, minio-go's BucketLookupPath, the aws CLI's addressing_style = path.
//
// Failures are S3 XML errors with S3's codes (AccessDenied, SignatureDoesNotMatch,
// InvalidAccessKeyId, RequestTimeTooSkewed, XAmzContentSHA256Mismatch, BadDigest, ...).
// No secret key reaches an error, a log line or a panic: Credentials print redacted, and
// refusals are logged at debug level with the access key ID and the code only.
package s3server
