package rgwdriver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/internal/testenv"
)

// awsCLI runs the aws command line against RGW with a configuration of its own: the user's
// ~/.aws files and AWS_* variables never reach it.
type awsCLI struct {
	t             *testing.T
	bin, endpoint string
	env           []string
}

func newAWSCLI(t *testing.T, endpoint string) *awsCLI {
	t.Helper()
	bin := testenv.Tool(t, "aws", "awscli")
	dir := t.TempDir()
	config := filepath.Join(dir, "config")
	if err := os.WriteFile(config, []byte("[default]\nregion = us-east-1\ns3 =\n    addressing_style = path\n    signature_version = s3v4\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "AWS_") {
			env = append(env, kv)
		}
	}
	env = append(env, "AWS_CONFIG_FILE="+config, "AWS_SHARED_CREDENTIALS_FILE="+filepath.Join(dir, "credentials"),
		"AWS_EC2_METADATA_DISABLED=true", "AWS_MAX_ATTEMPTS=1", "AWS_PAGER=",
		// Pacific's RGW predates the CLI's default CRC checksums.
		"AWS_REQUEST_CHECKSUM_CALCULATION=when_required", "AWS_RESPONSE_CHECKSUM_VALIDATION=when_required")
	return &awsCLI{t: t, bin: bin, endpoint: endpoint, env: env}
}

// run runs one aws command with keys and returns its stderr and whether it succeeded. The
// secret travels in the child's environment only, and never into a failure report.
func (c *awsCLI) run(keys bucket.S3Credentials, args ...string) (stdout, stderr string, ok bool) {
	c.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.bin, append(args, "--endpoint-url", c.endpoint)...)
	cmd.Env = append(c.env, "AWS_ACCESS_KEY_ID="+keys.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+keys.SecretAccessKey)
	var o, e bytes.Buffer
	cmd.Stdout, cmd.Stderr = &o, &e
	err := cmd.Run()
	if ctx.Err() != nil {
		c.t.Fatalf("aws %s: no answer in time", strings.Join(args, " "))
	}
	hide := strings.NewReplacer(keys.SecretAccessKey, "[secret]", keys.AccessKeyID, "[key id]")
	return hide.Replace(o.String()), hide.Replace(e.String()), err == nil
}

func (c *awsCLI) must(keys bucket.S3Credentials, args ...string) string {
	c.t.Helper()
	out, errOut, ok := c.run(keys, args...)
	if !ok {
		c.t.Errorf("aws %s failed:\n%s", strings.Join(args, " "), errOut)
	}
	return out
}

// refused runs a command that has to fail with the S3 error code (or HTTP status) code. It
// reads the code from the CLI's debug log: aws CLI v1 fails with "argument of type 'NoneType' is
// not iterable" instead of printing the code when RGW's error has an empty <Message>.
func (c *awsCLI) refused(code string, keys bucket.S3Credentials, args ...string) {
	c.t.Helper()
	_, errOut, ok := c.run(keys, append(args, "--debug")...)
	if ok || !(strings.Contains(errOut, "<Code>"+code+"</Code>") || strings.Contains(errOut, "("+code+")")) {
		c.t.Errorf("aws %s: succeeded=%v, want refused with %s:\n%s", strings.Join(args, " "), ok, code, lastLines(errOut, 15))
	}
}

// lastLines keeps a failure report short.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

// TestAWSCLI proves the granted keys with the real aws command line against RGW: read-write
// copies up, lists, copies down and removes; read-only lists and reads but cannot copy up;
// write-only copies up but cannot read or list; a key never reaches another account's bucket;
// a revoked key is refused at once.
func TestAWSCLI(t *testing.T) {
	b, c := newBackend(t)
	_, w, _ := served(t, b)
	cli := newAWSCLI(t, c.RGW.Endpoint)
	// The deadline spans every CLI run below, each starting a Python interpreter: seconds apiece
	// on a loaded machine, more than callCtx's minute for the lot.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	bk, err := w.create(ctx, "bc-cli")
	if err != nil {
		t.Fatal(err)
	}
	other, err := w.create(ctx, "bc-cli-other")
	if err != nil {
		t.Fatal(err)
	}
	grant := func(account, bucketID string, mode cosi2.AccessMode_Mode) (string, bucket.S3Credentials) {
		id, k, err := w.grant(ctx, account, map[string]cosi2.AccessMode_Mode{bucketID: mode})
		if err != nil {
			t.Fatal(err)
		}
		return id, k
	}
	rwID, rwKey := grant("ba-cli-rw", bk, rw)
	roID, roKey := grant("ba-cli-ro", bk, ro)
	woID, woKey := grant("ba-cli-wo", bk, wo)
	otherID, otherKey := grant("ba-cli-other", other, rw)

	dir := t.TempDir()
	src := filepath.Join(dir, "hello.txt")
	if err := os.WriteFile(src, []byte("hello from the aws CLI\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	s3url := "s3://" + bk + "/hello.txt"
	cli.must(rwKey, "s3", "cp", src, s3url)
	if out := cli.must(rwKey, "s3", "ls", "s3://"+bk+"/"); !strings.Contains(out, "hello.txt") {
		t.Errorf("read-write ls: %q", out)
	}
	if out := cli.must(roKey, "s3", "cp", s3url, "-"); out != "hello from the aws CLI\n" {
		t.Errorf("read-only cp down: %q", out)
	}
	cli.refused("AccessDenied", roKey, "s3api", "put-object", "--bucket", bk, "--key", "ro.txt", "--body", src)
	cli.refused("AccessDenied", roKey, "s3api", "delete-object", "--bucket", bk, "--key", "hello.txt")
	cli.must(woKey, "s3api", "put-object", "--bucket", bk, "--key", "wo.txt", "--body", src)
	cli.refused("403", woKey, "s3api", "head-object", "--bucket", bk, "--key", "hello.txt")
	cli.refused("AccessDenied", woKey, "s3api", "get-object", "--bucket", bk, "--key", "hello.txt", filepath.Join(dir, "out"))
	cli.refused("AccessDenied", woKey, "s3api", "list-objects-v2", "--bucket", bk)
	cli.refused("AccessDenied", otherKey, "s3api", "list-objects-v2", "--bucket", bk)
	cli.refused("AccessDenied", otherKey, "s3api", "get-object", "--bucket", bk, "--key", "hello.txt", filepath.Join(dir, "out"))
	cli.refused("AccessDenied", rwKey, "s3api", "put-object", "--bucket", other, "--key", "x", "--body", src)
	cli.must(rwKey, "s3", "rm", s3url)
	cli.must(rwKey, "s3", "rm", "s3://"+bk+"/wo.txt")

	// A fresh bound for the calls below: the CLI runs above (a Python start-up each, seconds
	// apiece on a loaded machine) must not use up the one the calls above had.
	ctx = callCtx(t)
	if err := w.revoke(ctx, rwID, bk); err != nil {
		t.Fatal(err)
	}
	cli.refused("InvalidAccessKeyId", rwKey, "s3", "ls", "s3://"+bk+"/")
	for id, bucketID := range map[string]string{roID: bk, woID: bk, otherID: other} {
		if err := w.revoke(ctx, id, bucketID); err != nil {
			t.Fatal(err)
		}
	}
	for _, id := range []string{bk, other} {
		if err := w.remove(ctx, id); err != nil {
			t.Fatal(err)
		}
	}
}
