package main

import (
	"bytes"
	"context"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/internal/testenv"
)

// awsCLI runs the aws command line against one memorys3 endpoint, with a configuration of its
// own: the user's ~/.aws files and AWS_* variables never reach it.
type awsCLI struct {
	t        *testing.T
	bin      string
	endpoint string
	env      []string // the environment without AWS_*, plus the configuration
}

// newAWSCLI finds aws on PATH, or skips (fails under CI: internal/testenv). Its commands go to
// endpoint, which the caller sets.
func newAWSCLI(t *testing.T) *awsCLI {
	t.Helper()
	bin := testenv.Tool(t, "aws", "awscli")
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	// Path-style addressing and SigV4 (aws CLI v1 presigns with SigV2 unless told), and parts
	// small enough that a 6 MiB file is a two-part multipart upload.
	if err := os.WriteFile(config, []byte(`[default]
region = us-east-1
s3 =
    addressing_style = path
    signature_version = s3v4
    multipart_threshold = 5MB
    multipart_chunksize = 5MB
`), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env,
		"AWS_CONFIG_FILE="+config,
		"AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"), // absent: keys come from the environment
		"AWS_EC2_METADATA_DISABLED=true",
		"AWS_MAX_ATTEMPTS=1", // a refusal is the answer, not something to retry
		"AWS_PAGER=",         // aws CLI v2 pipes output through less otherwise
	)
	t.Logf("using %s", bin)
	return &awsCLI{t: t, bin: bin, env: env}
}

// run runs one aws command with the key keyID/secret and returns its output and whether it
// succeeded. The secret travels in the child's environment only.
func (c *awsCLI) run(keyID, secret string, args ...string) (stdout, stderr string, ok bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--endpoint-url", c.endpoint)...)
	cmd.Env = append(c.env, "AWS_ACCESS_KEY_ID="+keyID, "AWS_SECRET_ACCESS_KEY="+secret)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("aws %s: no answer in time", strings.Join(args, " "))
	}
	// What the CLI printed may end up in a failure report: never with the secret in it.
	hide := strings.NewReplacer(secret, "[secret]")
	return hide.Replace(o.String()), hide.Replace(e.String()), err == nil
}

// must runs a command that has to succeed.
func (c *awsCLI) must(keyID, secret string, args ...string) string {
	c.t.Helper()
	out, errOut, ok := c.run(keyID, secret, args...)
	if !ok {
		c.t.Fatalf("aws %s failed:\n%s", strings.Join(args, " "), errOut)
	}
	return out
}

// refused runs a command that has to fail with the S3 error code code.
func (c *awsCLI) refused(code, keyID, secret string, args ...string) {
	c.t.Helper()
	_, errOut, ok := c.run(keyID, secret, args...)
	if ok || !strings.Contains(errOut, "("+code+")") {
		c.t.Errorf("aws %s: succeeded=%v, want refused with %s:\n%s", strings.Join(args, " "), ok, code, errOut)
	}
}

// lastLines keeps a failure report short: the end of a debug log says what went wrong.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestAWSCLI drives memorys3 with the real aws command line, as the README tells users to:
// the bucket and keys come from the COSI driver (the CLI never creates a bucket), then cp up
// and down (one file large enough for a multipart upload), ls, a presigned URL fetched by
// plain HTTP, and the refusals: sub-resources memorys3 does not offer (ACLs, tagging), an
// empty upload ID, a read-only key's put, a revoked key's anything.
// Each aws command starts a Python interpreter (1 to 4 s here), so the list is kept short.
func TestAWSCLI(t *testing.T) {
	cli := newAWSCLI(t) // first: a skip must not stop memorys3 half started
	dir := t.TempDir()
	endpoint, conn, out, _ := started(t, "--endpoint", "unix://"+filepath.Join(dir, "sock", "cosi.sock"), "--s3-address", freePort(t))
	cli.endpoint = endpoint

	ctx := context.Background()
	p := cosi2.NewProvisionerClient(conn)
	b, err := p.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "bc-awscli",
		Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_S3}}})
	if err != nil {
		t.Fatalf("create bucket: %v", err)
	}
	bucket := b.GetBucketId()
	grant := func(account string, mode cosi2.AccessMode_Mode) (accountID, keyID, secret string) {
		a, err := p.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: account,
			Protocol:           &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3},
			AuthenticationType: &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY},
			Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: bucket,
				AccessMode: &cosi2.AccessMode{Mode: mode}}}})
		if err != nil {
			t.Fatalf("grant %s: %v", account, err)
		}
		s := a.GetCredentials().GetS3()
		return a.GetAccountId(), s.GetAccessKeyId(), s.GetAccessSecretKey()
	}
	rwAccount, rwID, rwSecret := grant("ba-awscli-rw", cosi2.AccessMode_READ_WRITE)
	_, roID, roSecret := grant("ba-awscli-ro", cosi2.AccessMode_READ_ONLY)
	_, woID, woSecret := grant("ba-awscli-wo", cosi2.AccessMode_WRITE_ONLY)

	small := filepath.Join(dir, "small.txt")
	big := filepath.Join(dir, "big.bin")
	bigData := make([]byte, 6<<20)
	for i := range bigData {
		bigData[i] = byte(rand.IntN(256))
	}
	if err := os.WriteFile(small, []byte("hello from the aws CLI\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(big, bigData, 0o600); err != nil {
		t.Fatal(err)
	}
	s3url := "s3://" + bucket + "/"

	// Up, including a multipart upload (--debug names the operations and the CLI's version;
	// it never prints the secret), and down again.
	cli.must(rwID, rwSecret, "s3", "cp", small, s3url+"small.txt")
	_, debug, ok := cli.run(rwID, rwSecret, "s3", "cp", big, s3url+"big.bin", "--debug")
	if !ok {
		t.Fatalf("aws s3 cp of a 6 MiB file failed:\n%s", lastLines(debug, 20))
	}
	for _, line := range strings.Split(debug, "\n") {
		if i := strings.Index(line, "CLI version: "); i >= 0 {
			t.Log(line[i:])
			break
		}
	}
	for _, op := range []string{"CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"} {
		if !strings.Contains(debug, op) {
			t.Errorf("aws s3 cp of a 6 MiB file made no %s call: not a multipart upload", op)
		}
	}
	down := filepath.Join(dir, "down.bin")
	cli.must(rwID, rwSecret, "s3", "cp", s3url+"big.bin", down)
	if got, err := os.ReadFile(down); err != nil || !bytes.Equal(got, bigData) {
		t.Errorf("big.bin came back different (%d bytes, %v)", len(got), err)
	}
	if ls := cli.must(rwID, rwSecret, "s3", "ls", s3url); !strings.Contains(ls, "small.txt") || !strings.Contains(ls, "big.bin") {
		t.Errorf("aws s3 ls does not list both objects:\n%s", ls)
	}

	// A presigned URL works without any key, for plain HTTP.
	url := strings.TrimSpace(cli.must(rwID, rwSecret, "s3", "presign", s3url+"small.txt", "--expires-in", "300"))
	if !strings.Contains(url, "X-Amz-Signature=") {
		t.Fatalf("aws s3 presign did not sign with SigV4: %s", url)
	}
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || string(body) != "hello from the aws CLI\n" {
		t.Errorf("presigned GET: %s %q", resp.Status, body)
	}

	// Sub-resources memorys3 does not offer are refused, not performed as object writes (the
	// review found each of these emptying, replacing or deleting the object), and an empty
	// upload ID is not an object read for a write-only key.
	cli.refused("NotImplemented", rwID, rwSecret, "s3api", "put-object-acl", "--bucket", bucket, "--key", "small.txt", "--acl", "public-read")
	cli.refused("NotImplemented", rwID, rwSecret, "s3api", "put-object-tagging", "--bucket", bucket, "--key", "small.txt",
		"--tagging", "TagSet=[{Key=k,Value=v}]")
	cli.refused("NotImplemented", rwID, rwSecret, "s3api", "delete-object-tagging", "--bucket", bucket, "--key", "small.txt")
	cli.refused("InvalidArgument", woID, woSecret, "s3api", "list-parts", "--bucket", bucket, "--key", "small.txt", "--upload-id", "")

	// A read-only key reads (the object as it was written) but cannot write.
	if got := cli.must(roID, roSecret, "s3", "cp", s3url+"small.txt", "-"); got != "hello from the aws CLI\n" {
		t.Errorf("read-only download = %q", got)
	}
	cli.refused("AccessDenied", roID, roSecret, "s3", "cp", small, s3url+"by-reader.txt")

	// A revoked key is refused at once, for everything.
	if _, err := p.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: rwAccount,
		Protocol:           &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3},
		AuthenticationType: &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY},
		Buckets:            []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: bucket}}}); err != nil {
		t.Fatalf("revoke: %v", err)
	}
	cli.refused("InvalidAccessKeyId", rwID, rwSecret, "s3", "ls", s3url)

	for _, secret := range []string{rwSecret, roSecret, woSecret} {
		if strings.Contains(out.String(), secret) {
			t.Error("a secret key reached memorys3's output")
		}
	}
}
