package s3server

import (
	"context"
	"io"
	"os/exec"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/csikit/csikit/internal/testenv"
)

// TestCurlSigV4 drives the server with curl's own SigV4 signer (--aws-sigv4), an implementation
// independent of aws-sdk-go-v2's: it signs headers the SDK never does, such as a zero
// content-length, which must be accepted like any correct signature.
func TestCurlSigV4(t *testing.T) {
	curl := testenv.Tool(t, "curl", "curl")
	f := newFixture(t, false, Config{})
	c := f.bucketWithAccount("bkt", "a", ReadWrite)
	run := func(args ...string) (string, string) {
		t.Helper()
		base := []string{"-sS", "--aws-sigv4", "aws:amz:" + DefaultRegion + ":s3", "--user", c.AccessKeyID + ":" + c.SecretAccessKey,
			"-H", "X-Amz-Content-Sha256: UNSIGNED-PAYLOAD", "-w", "\n%{http_code}"}
		out, err := exec.Command(curl, append(base, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("curl %v: %v\n%s", args, err, strings.ReplaceAll(string(out), c.SecretAccessKey, "[secret]"))
		}
		body, code, _ := strings.Cut(strings.TrimRight(string(out), "\n"), "\n")
		if i := strings.LastIndex(string(out), "\n"); i >= 0 {
			body, code = strings.TrimRight(string(out[:i]), "\n"), string(out[i+1:])
		}
		return body, code
	}
	url := f.hs.URL + "/bkt/"
	for _, tc := range []struct {
		rule string
		args []string
		code string
	}{
		{"an object is written", []string{"-X", "PUT", "--data-binary", "from curl", url + "a"}, "200"},
		{"an empty object is written with a signed zero content-length", []string{"-X", "PUT", "-H", "Content-Length: 0", url + "empty"}, "200"},
		{"an object is read", []string{url + "a"}, "200"},
		{"a bucket is listed", []string{url}, "200"},
		{"an object is deleted with a signed zero content-length", []string{"-X", "DELETE", "-H", "Content-Length: 0", url + "a"}, "204"},
		{"tagging is not offered", []string{"-X", "PUT", "--data-binary", "<Tagging/>", url + "empty?tagging="}, "501"},
	} {
		t.Run(tc.rule, func(t *testing.T) {
			body, code := run(tc.args...)
			if code != tc.code {
				t.Fatalf("got %s %s, want %s", code, body, tc.code)
			}
		})
	}
	out, err := f.awsClient(c).GetObject(context.Background(), &s3.GetObjectInput{Bucket: aws.String("bkt"), Key: aws.String("empty")})
	if err != nil {
		t.Fatalf("the empty object curl wrote: %v", err)
	}
	data, _ := io.ReadAll(out.Body)
	out.Body.Close()
	if len(data) != 0 {
		t.Fatalf("the empty object holds %q", data)
	}
}
