package cephtest_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"time"
)

// signV4 signs req for S3 with AWS Signature Version 4, headers form, payload hashed: just
// enough of SigV4 for the tests to talk to RGW with the standard library (the SDK module must
// not depend on an AWS SDK). Paths and query values must need no escaping beyond
// url.PathEscape/QueryEscape's, which the tests' names ensure.
func signV4(req *http.Request, body []byte, accessKey, secretKey, region string, now time.Time) {
	amzDate := now.UTC().Format("20060102T150405Z")
	day := amzDate[:8]
	payload := sha256.Sum256(body)
	payloadHash := hex.EncodeToString(payload[:])
	req.Header.Set("X-Amz-Date", amzDate)
	req.Header.Set("X-Amz-Content-Sha256", payloadHash)

	path := req.URL.EscapedPath()
	if path == "" {
		path = "/"
	}
	var query []string
	for key, values := range req.URL.Query() {
		for _, v := range values {
			query = append(query, awsEscape(key)+"="+awsEscape(v))
		}
	}
	sort.Strings(query)
	const signed = "host;x-amz-content-sha256;x-amz-date"
	canonical := strings.Join([]string{
		req.Method, path, strings.Join(query, "&"),
		"host:" + req.URL.Host, "x-amz-content-sha256:" + payloadHash, "x-amz-date:" + amzDate, "",
		signed, payloadHash,
	}, "\n")
	scope := day + "/" + region + "/s3/aws4_request"
	canonicalHash := sha256.Sum256([]byte(canonical))
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + hex.EncodeToString(canonicalHash[:])
	key := []byte("AWS4" + secretKey)
	for _, part := range []string{day, region, "s3", "aws4_request"} {
		key = hmacSHA256(key, part)
	}
	req.Header.Set("Authorization", fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s",
		accessKey, scope, signed, hex.EncodeToString(hmacSHA256(key, toSign))))
}

func hmacSHA256(key []byte, data string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(data))
	return m.Sum(nil)
}

// awsEscape is SigV4's URI encoding: RFC 3986 unreserved characters as they are, everything
// else %XX (QueryEscape writes a blank as "+" and escapes "~").
func awsEscape(s string) string {
	return strings.NewReplacer("+", "%20", "%7E", "~").Replace(url.QueryEscape(s))
}
