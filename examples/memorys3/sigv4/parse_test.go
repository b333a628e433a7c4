package sigv4

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"

	"github.com/csikit/csikit/examples/memorys3/s3err"
)

const sig64 = "fe5f80f77d5fa3beca038a248ff027d0445342fe2855ddc963176630326f1024"

func TestParseAuthorization(t *testing.T) {
	good := "AWS4-HMAC-SHA256 Credential=AKID/20240102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig64
	cases := []struct {
		rule string
		in   string
		ok   bool
	}{
		{"the aws-sdk-go-v2 form with comma-space parses", good, true},
		{"the minio-go form with bare commas parses", strings.ReplaceAll(good, ", ", ","), true},
		{"another algorithm is refused", strings.Replace(good, "AWS4-HMAC-SHA256", "AWS4-ECDSA-P256-SHA256", 1), false},
		{"a missing signature is refused", strings.Split(good, ", Signature")[0], false},
		{"a repeated field is refused", good + ", Signature=" + sig64, false},
		{"an unknown field is refused", good + ", Extra=1", false},
		{"a short signature is refused", strings.TrimSuffix(good, "24"), false},
		{"a non-hex signature is refused", strings.Replace(good, "fe5f", "zz5f", 1), false},
		{"unsorted signed headers are refused", strings.Replace(good, "host;x-amz-date", "x-amz-date;host", 1), false},
		{"duplicate signed headers are refused", strings.Replace(good, "host;x-amz-date", "host;host", 1), false},
		{"upper-case signed headers are refused", strings.Replace(good, "host;x-amz-date", "Host;x-amz-date", 1), false},
		{"a field without a value is refused", "AWS4-HMAC-SHA256 Credential", false},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			a, err := ParseAuthorization(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseAuthorization(%q) = %v, %v", tc.in, a, err)
			}
			if err != nil && !errors.Is(err, s3err.ErrAuthorizationHeaderInvalid) {
				t.Errorf("error %v is not AuthorizationHeaderMalformed", err)
			}
			if tc.ok && (a.Credential.AccessKeyID != "AKID" || len(a.Signature) != 32 || len(a.SignedHeaders) != 2) {
				t.Errorf("parsed %+v", a)
			}
		})
	}
}

func TestParseCredential(t *testing.T) {
	cases := []struct {
		rule string
		in   string
		ok   bool
	}{
		{"a full scope parses", "AKID/20240102/us-east-1/s3/aws4_request", true},
		{"a missing terminator is refused", "AKID/20240102/us-east-1/s3/aws5_request", false},
		{"too few parts are refused", "AKID/20240102/us-east-1/aws4_request", false},
		{"a key with a slash is refused", "AK/ID/20240102/us-east-1/s3/aws4_request", false},
		{"a bad date is refused", "AKID/20241302/us-east-1/s3/aws4_request", false},
		{"a long date is refused", "AKID/202401020/us-east-1/s3/aws4_request", false},
		{"an empty region is refused", "AKID/20240102//s3/aws4_request", false},
		{"an empty key is refused", "/20240102/us-east-1/s3/aws4_request", false},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			c, err := ParseCredential(tc.in)
			if (err == nil) != tc.ok {
				t.Fatalf("ParseCredential(%q) = %+v, %v", tc.in, c, err)
			}
			if tc.ok && c.Scope() != strings.SplitN(tc.in, "/", 2)[1] {
				t.Errorf("Scope() = %q", c.Scope())
			}
		})
	}
}

func TestParseChunkHeader(t *testing.T) {
	cases := []struct {
		rule   string
		in     string
		signed bool
		size   int64
		ok     bool
	}{
		{"a signed chunk header parses", "10000;chunk-signature=" + sig64, true, 0x10000, true},
		{"the final signed chunk parses", "0;chunk-signature=" + sig64, true, 0, true},
		{"an unsigned chunk header parses", "400", false, 0x400, true},
		{"unsigned chunk extensions are ignored", "400;ext=1", false, 0x400, true},
		{"a signed chunk without signature is refused", "400", true, 0, false},
		{"a signed chunk with another extension is refused", "400;chunk-signatur=" + sig64, true, 0, false},
		{"a short chunk signature is refused", "400;chunk-signature=abc", true, 0, false},
		{"a negative size is refused", "-1", false, 0, false},
		{"a plus sign is refused", "+1", false, 0, false},
		{"an empty size is refused", ";chunk-signature=" + sig64, true, 0, false},
		{"a size of 16 hex digits is refused", "ffffffffffffffff", false, 0, false},
		{"non-hex is refused", "xyz", false, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			size, sig, err := ParseChunkHeader([]byte(tc.in), tc.signed)
			if (err == nil) != tc.ok || (tc.ok && size != tc.size) || (tc.ok && tc.signed && len(sig) != 32) {
				t.Fatalf("ParseChunkHeader(%q) = %d, %x, %v", tc.in, size, sig, err)
			}
		})
	}
}

func TestParseTrailer(t *testing.T) {
	cases := []struct {
		rule   string
		in     string
		fields int
		sig    bool
		ok     bool
	}{
		{"the aws-sdk-go-v2 unsigned trailer parses", "x-amz-checksum-crc32:AAAAAA==\r\n\r\n", 1, false, true},
		{"the minio-go signed trailer parses", "x-amz-checksum-crc32c:AAAAAA==\n\r\nx-amz-trailer-signature:" + sig64 + "\r\n\r\n", 1, true, true},
		{"an empty trailer parses", "\r\n", 0, false, true},
		{"names are lower-cased", "X-Amz-Checksum-CRC32:AAAAAA==\r\n", 1, false, true},
		{"a line without a colon is refused", "x-amz-checksum-crc32\r\n", 0, false, false},
		{"a repeated field is refused", "a:1\r\na:2\r\n", 0, false, false},
		{"a field after the signature is refused", "x-amz-trailer-signature:" + sig64 + "\r\na:1\r\n", 0, false, false},
		{"a short trailer signature is refused", "a:1\r\nx-amz-trailer-signature:abc\r\n", 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			fields, sig, err := ParseTrailer([]byte(tc.in))
			if (err == nil) != tc.ok || (tc.ok && (len(fields) != tc.fields || (sig != nil) != tc.sig)) {
				t.Fatalf("ParseTrailer(%q) = %v, %x, %v", tc.in, fields, sig, err)
			}
		})
	}
}

// TestSigningKeyMatchesSDK: the trailer signature needs the signing key derived here; it must
// be the SDK's, checked by signing a chunk string both ways.
func TestSigningKeyMatchesSDK(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	seed, _ := hex.DecodeString(sig64)
	chunk := []byte("some chunk data")
	creds := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	want, err := v4.NewStreamSigner(creds, "s3", "us-east-1", seed).GetSignature(context.Background(), nil, chunk, at)
	if err != nil {
		t.Fatal(err)
	}
	empty := sha256.Sum256(nil)
	sum := sha256.Sum256(chunk)
	toSign := "AWS4-HMAC-SHA256-PAYLOAD\n20240102T030405Z\n20240102/us-east-1/s3/aws4_request\n" + sig64 + "\n" +
		hex.EncodeToString(empty[:]) + "\n" + hex.EncodeToString(sum[:])
	if got := hmacSHA256(signingKey("secret", at, "us-east-1", "s3"), []byte(toSign)); !bytes.Equal(got, want) {
		t.Fatalf("chunk signature with the local key = %x, SDK's = %x", got, want)
	}
}

// TestChunkSignerMatchesSDK: chunk signatures chained through a stream are the SDK
// StreamSigner's, and so is the trailer signature's key.
func TestChunkSignerMatchesSDK(t *testing.T) {
	at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
	seed, _ := hex.DecodeString(sig64)
	creds := aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "secret"}
	sdk := v4.NewStreamSigner(creds, "s3", "us-east-1", seed)
	ours := newChunkSigner(NewKey("AKID", "secret").signingKey(at, "us-east-1", "s3"), at, "us-east-1", "s3", seed)
	for i, chunk := range [][]byte{bytes.Repeat([]byte("a"), 65536), []byte("tail"), nil} {
		want, err := sdk.GetSignature(context.Background(), nil, chunk, at)
		if err != nil {
			t.Fatal(err)
		}
		if got := ours.next(chunk); !bytes.Equal(got[:], want) {
			t.Fatalf("chunk %d: signature %x, SDK's %x", i, got, want)
		}
	}
}

// TestUnsignedChunkReader decodes an aws-chunked body as aws-sdk-go-v2 writes it.
func TestUnsignedChunkReader(t *testing.T) {
	in := "5\r\nhello\r\n6\r\n world\r\n0\r\nx-amz-checksum-crc32:DUoRhQ==\r\n\r\n"
	cr := &chunkReader{r: bufio.NewReader(strings.NewReader(in)), trailerNames: []string{"x-amz-checksum-crc32"}}
	got, err := io.ReadAll(cr)
	if err != nil || string(got) != "hello world" {
		t.Fatalf("decoded %q, %v", got, err)
	}
	if v, _ := cr.trailerValues(); v["x-amz-checksum-crc32"] != "DUoRhQ==" {
		t.Errorf("trailer = %v", v)
	}
}

func FuzzParseAuthorization(f *testing.F) {
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20240102/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=" + sig64)
	f.Add("AWS4-HMAC-SHA256 Credential=AKID/20240102/us-east-1/s3/aws4_request,SignedHeaders=host,Signature=" + sig64)
	f.Add("AWS4-HMAC-SHA256 ,,,==")
	f.Add("")
	f.Fuzz(func(t *testing.T, s string) {
		a, err := ParseAuthorization(s)
		if err == nil && (len(a.Signature) != 32 || len(a.SignedHeaders) == 0 || a.Credential.AccessKeyID == "") {
			t.Fatalf("accepted %q as %+v", s, a)
		}
		var e *s3err.Error
		if err != nil && !errors.As(err, &e) {
			t.Fatalf("error %v is not an S3 error", err)
		}
	})
}

func FuzzParseCredential(f *testing.F) {
	f.Add("AKID/20240102/us-east-1/s3/aws4_request")
	f.Add("A/B/C/D/E")
	f.Add("////")
	f.Fuzz(func(t *testing.T, s string) {
		c, err := ParseCredential(s)
		if err == nil && (c.AccessKeyID == "" || c.Region == "" || c.Service == "" || !strings.HasSuffix(s, c.Scope())) {
			t.Fatalf("accepted %q as %+v", s, c)
		}
	})
}

func FuzzParseChunkHeader(f *testing.F) {
	f.Add([]byte("10000;chunk-signature="+sig64), true)
	f.Add([]byte("0"), false)
	f.Add([]byte("ffffffffffffff;x"), false)
	f.Fuzz(func(t *testing.T, line []byte, signed bool) {
		size, sig, err := ParseChunkHeader(line, signed)
		if err == nil && (size < 0 || (signed && len(sig) != 32)) {
			t.Fatalf("accepted %q as %d, %x", line, size, sig)
		}
	})
}

func FuzzParseTrailer(f *testing.F) {
	f.Add([]byte("x-amz-checksum-crc32:AAAAAA==\r\n\r\n"))
	f.Add([]byte("x-amz-checksum-crc32c:AAAAAA==\n\r\nx-amz-trailer-signature:" + sig64 + "\r\n\r\n"))
	f.Add([]byte(":\n:\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		fields, sig, err := ParseTrailer(b)
		if err != nil {
			return
		}
		if sig != nil && len(sig) != 32 {
			t.Fatalf("signature of %d bytes", len(sig))
		}
		for _, fl := range fields {
			if fl.Name == "" || fl.Name != strings.ToLower(fl.Name) {
				t.Fatalf("field name %q", fl.Name)
			}
		}
	})
}

// FuzzChunkReader feeds arbitrary bodies to the unsigned and signed decoders: they must end
// in io.EOF or an error, never panic or loop, and never yield more than the body held.
func FuzzChunkReader(f *testing.F) {
	f.Add([]byte("5\r\nhello\r\n0\r\nx-amz-checksum-crc32:AAAAAA==\r\n\r\n"), false)
	f.Add([]byte("5;chunk-signature="+sig64+"\r\nhello\r\n0;chunk-signature="+sig64+"\r\n\r\n"), true)
	f.Add([]byte("fffffff\r\n"), false)
	f.Fuzz(func(t *testing.T, body []byte, signed bool) {
		// 128 bytes: small, to cross buffer boundaries, but a signed chunk header line (~85 bytes)
		// must fit, or no signed chunk would ever reach its signature check.
		cr := &chunkReader{r: bufio.NewReaderSize(bytes.NewReader(body), 128), trailerNames: []string{"x-amz-checksum-crc32"}}
		if signed {
			seed, _ := hex.DecodeString(sig64)
			at := time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)
			cr.signer = newChunkSigner(NewKey("A", "S").signingKey(at, "us-east-1", "s3"), at, "us-east-1", "s3", seed)
		}
		out, _ := io.ReadAll(io.LimitReader(cr, int64(len(body))+1))
		if len(out) > len(body) {
			t.Fatalf("decoded %d bytes from a %d-byte body", len(out), len(body))
		}
		// No chunk here carries a valid signature (the fuzzer does not know the key): a signed
		// stream releases nothing, not even to a caller that reads on past the error.
		if n, _ := cr.Read(make([]byte, 64)); signed && (len(out) > 0 || n > 0) {
			t.Fatalf("released %d unverified bytes", len(out)+n)
		}
	})
}
