package main

import (
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"log"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/ceph/go-ceph/rgw/admin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/examples/rgw/rgwdriver"
	"github.com/csikit/csikit/internal/cephtest"
)

// runMainEnv makes the test binary run main instead of the tests: the tests start the driver as
// a process of its own, to kill it with SIGKILL.
const runMainEnv = "CSIKIT_RGW_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(runMainEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(cephtest.Main(m))
}

// lockedBuffer collects a process's stderr while the test reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// driverProcess is the driver run as main does, in a process of its own.
type driverProcess struct {
	cmd  *exec.Cmd
	logs *lockedBuffer
	done chan error
}

// startDriver runs the driver against the cluster's RGW, configured from the cluster.env
// ceph-up.sh wrote (as the README's two commands do), logging at debug into logs.
func startDriver(t *testing.T, c *cephtest.Cluster, sock, httpAddr string, logs *lockedBuffer) *driverProcess {
	t.Helper()
	cmd := exec.Command(os.Args[0], "--rgw-config", filepath.Join(c.Dir, "cluster.env"), "--endpoint", "unix://"+sock,
		"--log-level", "debug", "--http-endpoint", httpAddr)
	cmd.Env = append(os.Environ(), runMainEnv+"=1")
	cmd.Stdout, cmd.Stderr = logs, logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &driverProcess{cmd: cmd, logs: logs, done: make(chan error, 1)}
	go func() { p.done <- cmd.Wait() }()
	t.Cleanup(func() { p.kill() })
	return p
}

func (p *driverProcess) kill() {
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
	p.done <- nil // a second kill returns at once
}

// healthz is the status /healthz answers (0 when nothing answers).
func healthz(addr string) int {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/healthz", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0
	}
	resp.Body.Close()
	return resp.StatusCode
}

// waitHealthz polls /healthz until it answers want: the probe has no event to wait on.
func waitHealthz(t *testing.T, addr string, want int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for got := healthz(addr); got != want; got = healthz(addr) {
		if time.Now().After(deadline) {
			t.Fatalf("/healthz answers %d, want %d", got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func freeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

type grantAck struct {
	accountID, key, secret string
}

// TestKillDuringCreateLoop kills the driver with SIGKILL while a loop creates buckets and grants
// access to them, restarts it, and checks against RGW itself: every acknowledged bucket and grant
// is there and answered again with the same ID (and key), the one call in flight either left
// nothing or is completed by its retry, and nothing else exists. Readiness follows RGW through the
// driver's /healthz, and the debug log of both runs holds no key.
func TestKillDuringCreateLoop(t *testing.T) {
	c := cephtest.Start(t)
	dir := t.TempDir()
	sock := filepath.Join(dir, "cosi.sock")
	httpAddr := freeAddr(t)
	logs := &lockedBuffer{}
	p := startDriver(t, c, sock, httpAddr, logs)
	conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	cl := cosi2.NewProvisionerClient(conn)
	waitHealthz(t, httpAddr, http.StatusOK)

	prefix := fmt.Sprintf("bc-kill-%d-", rand.Uint32())
	s3p := &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3}
	key := &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
	create := func(ctx context.Context, i int) (string, error) {
		r, err := cl.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: fmt.Sprint(prefix, i), Protocols: []*cosi2.ObjectProtocol{s3p}})
		return r.GetBucketId(), err
	}
	grant := func(ctx context.Context, i int, bucketID string) (grantAck, error) {
		r, err := cl.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: fmt.Sprint("ba-", prefix, i),
			Protocol: s3p, AuthenticationType: key, Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: bucketID,
				AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}}}})
		s := r.GetCredentials().GetS3()
		return grantAck{r.GetAccountId(), s.GetAccessKeyId(), s.GetAccessSecretKey()}, err
	}

	// The loop runs until the kill; it records what was acknowledged, and the call in flight.
	buckets := map[int]string{}
	grants := map[int]grantAck{}
	var mu sync.Mutex
	attempted := 0
	loopDone := make(chan struct{})
	killAfter := 4 + rand.IntN(4) // acknowledged buckets before the kill
	killed := make(chan struct{})
	go func() {
		defer close(loopDone)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		for i := 0; ; i++ {
			mu.Lock()
			attempted = i + 1
			mu.Unlock()
			id, err := create(ctx, i)
			if err != nil {
				return
			}
			mu.Lock()
			buckets[i] = id
			n := len(buckets)
			mu.Unlock()
			if n == killAfter {
				go func() {
					// Somewhere inside the next create or grant, or between them.
					time.Sleep(time.Duration(rand.IntN(150)) * time.Millisecond)
					p.kill()
					close(killed)
				}()
			}
			g, err := grant(ctx, i, id)
			if err != nil {
				return
			}
			mu.Lock()
			grants[i] = g
			mu.Unlock()
		}
	}()
	<-killed
	<-loopDone
	firstRun := logs.String()
	t.Logf("killed after %d acknowledged buckets and %d acknowledged grants; %d creates attempted", len(buckets), len(grants), attempted)

	// What RGW holds now, before the driver is back: every acknowledged bucket and grant, and
	// at most the one call in flight more.
	api, err := admin.New(c.RGW.Endpoint, c.RGW.AccessKey, string(c.RGW.SecretKey), http.DefaultClient)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	inRGW := func() (map[string]bool, map[int]bool) {
		all, err := api.ListBuckets(ctx)
		if err != nil {
			t.Fatal(err)
		}
		bs := map[string]bool{}
		for _, b := range all {
			if strings.HasPrefix(b, prefix) {
				info, err := api.GetBucketInfo(ctx, admin.Bucket{Bucket: b})
				if err != nil || info.Owner != rgwdriver.DefaultOwnerUID {
					t.Errorf("bucket %s: owner %q, %v", b, info.Owner, err)
				}
				bs[b] = true
			}
		}
		us := map[int]bool{}
		for i := range attempted + 1 {
			_, err := api.GetUser(ctx, admin.User{ID: rgwdriver.AccountUID(fmt.Sprint("ba-", prefix, i))})
			switch {
			case err == nil:
				us[i] = true
			case !errors.Is(err, admin.ErrNoSuchUser):
				t.Fatal(err)
			}
		}
		return bs, us
	}
	bs, us := inRGW()
	for i, id := range buckets {
		if !bs[id] {
			t.Errorf("acknowledged bucket %d (%s) is not in RGW", i, id)
		}
	}
	if len(bs) > len(buckets)+1 {
		t.Errorf("%d buckets in RGW for %d acknowledged: more than the one in flight", len(bs), len(buckets))
	}
	for i := range grants {
		if !us[i] {
			t.Errorf("acknowledged grant %d has no user in RGW", i)
		}
	}
	if len(us) > len(grants)+1 {
		t.Errorf("%d users in RGW for %d acknowledged grants", len(us), len(grants))
	}

	// Restart: the same socket, readiness back, and every call answered as before the kill.
	p2 := startDriver(t, c, sock, httpAddr, logs)
	waitHealthz(t, httpAddr, http.StatusOK)
	for i := range attempted {
		id, err := create(ctx, i) // the acknowledged ones again, and the one in flight to completion
		if err != nil {
			t.Fatalf("create %d after the restart: %v", i, err)
		}
		if want, ok := buckets[i]; ok && id != want {
			t.Errorf("bucket %d: %s after the restart, %s before", i, id, want)
		}
		buckets[i] = id
		g, err := grant(ctx, i, id)
		if err != nil {
			t.Fatalf("grant %d after the restart: %v", i, err)
		}
		if want, ok := grants[i]; ok && g != want {
			t.Errorf("grant %d answered another account or key after the restart", i)
		}
		grants[i] = g
	}
	bs, us = inRGW()
	if len(bs) != attempted || len(us) != attempted {
		t.Errorf("after the retries RGW holds %d buckets and %d users for %d names", len(bs), len(us), attempted)
	}
	// The keys work against RGW.
	for i, g := range grants {
		s3c := s3.New(s3.Options{BaseEndpoint: aws.String(c.RGW.Endpoint), Region: rgwdriver.DefaultRegion, UsePathStyle: true,
			Credentials: credentials.NewStaticCredentialsProvider(g.key, g.secret, "")})
		if _, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(buckets[i])}); err != nil {
			t.Errorf("grant %d's key on its bucket: %v", i, err)
		}
	}

	// Readiness follows RGW, with no restart of the driver.
	if err := c.StopDaemons(ctx, cephtest.RGWDaemon); err != nil {
		t.Fatal(err)
	}
	waitHealthz(t, httpAddr, http.StatusInternalServerError)
	_, err = create(ctx, attempted)
	if status.Code(err) != codes.Unavailable {
		t.Errorf("create with RGW down: %v, want UNAVAILABLE", err)
	}
	if err := c.StartDaemons(ctx); err != nil {
		t.Fatal(err)
	}
	waitHealthz(t, httpAddr, http.StatusOK)

	// Clean up through the driver; RGW is left with nothing of this test.
	for i, g := range grants {
		if _, err := cl.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: g.accountID, Protocol: s3p,
			AuthenticationType: key, Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: buckets[i]}}}); err != nil {
			t.Error(err)
		}
	}
	for _, id := range buckets {
		if _, err := cl.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: id}); err != nil {
			t.Error(err)
		}
	}
	if bs, us := inRGW(); len(bs) != 0 || len(us) != 0 {
		t.Errorf("after the clean-up RGW still holds %d buckets and %d users", len(bs), len(us))
	}
	p2.kill()

	// No key in the debug log of either run.
	all := logs.String()
	if !strings.Contains(firstRun, "DriverCreateBucket") || !strings.Contains(all, "DriverGrantBucketAccess") {
		t.Fatal("the debug log has no calls in it: the canary would search nothing")
	}
	owner, err := api.GetUser(ctx, admin.User{ID: rgwdriver.DefaultOwnerUID})
	if err != nil {
		t.Fatal(err)
	}
	secrets := []string{c.RGW.AccessKey, string(c.RGW.SecretKey), owner.Keys[0].AccessKey, owner.Keys[0].SecretKey}
	for _, g := range grants {
		secrets = append(secrets, g.key, g.secret)
	}
	for _, s := range secrets {
		if s == "" || strings.Contains(all, s) {
			t.Errorf("a key is in the driver's debug log (or empty: %v)", s == "")
		}
	}
}

// TestHTTPSEndpoint runs the driver against RGW behind TLS (a proxy with a certificate of its
// own CA): with --rgw-ca-file naming that CA it creates a bucket, which RGW then has; without it,
// a call answers FAILED_PRECONDITION naming the certificate, not a retry-forever UNAVAILABLE.
func TestHTTPSEndpoint(t *testing.T) {
	c := cephtest.Start(t)
	target, err := url.Parse(c.RGW.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httptest.NewUnstartedServer(httputil.NewSingleHostReverseProxy(target)) // keeps Host: the signature holds
	proxy.Config.ErrorLog = log.New(io.Discard, "", 0)                               // the refused handshakes are the point
	proxy.StartTLS()
	defer proxy.Close()
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: proxy.Certificate().Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		args []string
		want codes.Code
	}{
		{"with the CA", []string{"--rgw-ca-file", caFile}, codes.OK},
		{"without it", nil, codes.FailedPrecondition},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sock := filepath.Join(t.TempDir(), "cosi.sock")
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			started := make(chan struct{})
			args := append([]string{"--rgw-config", filepath.Join(c.Dir, "cluster.env"), "--rgw-endpoint", proxy.URL,
				"--endpoint", "unix://" + sock, "--log-level", "error"}, tc.args...)
			go func() { done <- run(ctx, args, io.Discard, started) }()
			defer func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("run: %v", err)
				}
			}()
			select {
			case <-started:
			case err := <-done:
				t.Fatalf("run stopped at start: %v", err)
			}
			conn, err := grpc.NewClient("unix://"+sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
				grpc.WithDefaultCallOptions(grpc.WaitForReady(true)))
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			cl := cosi2.NewProvisionerClient(conn)
			cctx, ccancel := context.WithTimeout(ctx, time.Minute)
			defer ccancel()
			r, err := cl.DriverCreateBucket(cctx, &cosi2.DriverCreateBucketRequest{Name: "bc-https",
				Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_S3}}})
			if status.Code(err) != tc.want {
				t.Fatalf("create over https %s: %v, want %v", tc.name, err, tc.want)
			}
			if err != nil {
				return
			}
			if got := r.GetProtocols().GetS3(); got == nil || r.GetBucketId() != "bc-https" {
				t.Errorf("answer: %v", r)
			}
			if _, err := cl.DriverDeleteBucket(cctx, &cosi2.DriverDeleteBucketRequest{BucketId: r.GetBucketId()}); err != nil {
				t.Error(err)
			}
		})
	}
}
