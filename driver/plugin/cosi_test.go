package plugin_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/drivertest"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/secrets"
)

// cosiPlugin is a running bucket driver with clients of both wire versions on one socket.
type cosiPlugin struct {
	id1   cosi1.IdentityClient
	prov1 cosi1.ProvisionerClient
	id2   cosi2.IdentityClient
	prov2 cosi2.ProvisionerClient
	conn  *grpc.ClientConn
	log   *bytes.Buffer
	mem   *memdriver.Buckets
}

type syncBuffer struct {
	mu sync.Mutex
	bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Buffer.Write(p)
}

func (b *syncBuffer) Sync() error { return nil }

func bucketConfig(mem bucket.Provisioner) plugin.Config {
	return plugin.Config{Name: "mem-s3.csikit.dev", VendorVersion: "1.0.0",
		COSI: &plugin.COSIConfig{Provisioner: mem, Protocols: []bucket.Protocol{bucket.S3}}, CheckResponses: true}
}

func startCOSI(t testing.TB, cfg plugin.Config) *cosiPlugin {
	t.Helper()
	buf := &syncBuffer{}
	if cfg.Logger == nil {
		enc := zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig())
		cfg.Logger = zap.New(zapcore.NewCore(enc, buf, zap.DebugLevel))
	}
	conn := drivertest.NewServer(t, cfg).Conn
	p := &cosiPlugin{id1: cosi1.NewIdentityClient(conn), prov1: cosi1.NewProvisionerClient(conn),
		id2: cosi2.NewIdentityClient(conn), prov2: cosi2.NewProvisionerClient(conn), conn: conn, log: &buf.Buffer}
	p.mem, _ = cfg.COSI.Provisioner.(*memdriver.Buckets)
	return p
}

func s3Proto() *cosi2.ObjectProtocol { return &cosi2.ObjectProtocol{Type: cosi2.ObjectProtocol_S3} }

func keyAuth() *cosi2.AuthenticationType {
	return &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_KEY}
}

func rw(id string) *cosi2.DriverGrantBucketAccessRequest_AccessedBucket {
	return &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{BucketId: id,
		AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_WRITE}}
}

func TestCOSIBothVersionsOneSocket(t *testing.T) {
	p := startCOSI(t, bucketConfig(memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")))
	ctx := context.Background()

	info1, err := p.id1.DriverGetInfo(ctx, &cosi1.DriverGetInfoRequest{})
	if err != nil || info1.GetName() != "mem-s3.csikit.dev" {
		t.Fatalf("v1alpha1 DriverGetInfo = %v, %v", info1, err)
	}
	info2, err := p.id2.DriverGetInfo(ctx, &cosi2.DriverGetInfoRequest{})
	if err != nil || len(info2.GetSupportedProtocols()) != 1 || info2.GetSupportedProtocols()[0].GetType() != cosi2.ObjectProtocol_S3 {
		t.Fatalf("v1alpha2 DriverGetInfo = %v, %v", info2, err)
	}
	// A COSI-only plugin is not a CSI plugin.
	if _, err := csi.NewIdentityClient(p.conn).GetPluginInfo(ctx, &csi.GetPluginInfoRequest{}); status.Code(err) != codes.Unimplemented {
		t.Errorf("csi GetPluginInfo on a COSI-only plugin: %v, want UNIMPLEMENTED", err)
	}

	// The same bucket through both versions: same ID, since the name is the key.
	c2, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "bc-1", Protocols: []*cosi2.ObjectProtocol{s3Proto()},
		Parameters: map[string]string{"tier": "gold"}})
	if err != nil {
		t.Fatalf("v1alpha2 create: %v", err)
	}
	s3 := c2.GetProtocols().GetS3()
	if c2.GetBucketId() != "bc-1" || s3.GetEndpoint() == "" || s3.GetRegion() != "us-east-1" || s3.GetAddressingStyle().GetStyle() != cosi2.S3AddressingStyle_PATH {
		t.Fatalf("v1alpha2 create answer %v", c2)
	}
	c1, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "bc-1", Parameters: map[string]string{"tier": "gold"}})
	if err != nil || c1.GetBucketId() != "bc-1" || c1.GetBucketInfo().GetS3().GetRegion() != "us-east-1" {
		t.Fatalf("v1alpha1 create of the same name = %v, %v", c1, err)
	}
	if _, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "bc-1", Parameters: map[string]string{"tier": "lead"}}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("incompatible re-create: %v, want ALREADY_EXISTS", err)
	}

	// Grants: the same account, the same keys, every time (the sidecar rewrites the Secret
	// on every reconcile).
	g := &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-1", Protocol: s3Proto(), AuthenticationType: keyAuth(),
		Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("bc-1")}}
	a, err := p.prov2.DriverGrantBucketAccess(ctx, g)
	if err != nil {
		t.Fatalf("grant: %v", err)
	}
	again, err := p.prov2.DriverGrantBucketAccess(ctx, g)
	if err != nil || again.GetAccountId() != a.GetAccountId() || again.GetCredentials().GetS3().GetAccessSecretKey() != a.GetCredentials().GetS3().GetAccessSecretKey() {
		t.Fatalf("repeated grant changed the account or keys: %v", err)
	}
	if len(a.GetBuckets()) != 1 || a.GetBuckets()[0].GetBucketInfo().GetS3().GetEndpoint() == "" || a.GetBuckets()[0].GetBucketInfo().GetAzure() != nil {
		t.Errorf("grant buckets = %v", a.GetBuckets())
	}
	secret := a.GetCredentials().GetS3().GetAccessSecretKey()
	keyID := a.GetCredentials().GetS3().GetAccessKeyId()
	if secret == "" || keyID == "" {
		t.Fatal("grant without keys")
	}
	// v1alpha1: one entry keyed s3 with the four keys its sidecar copies.
	a1, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "bc-1", Name: "ba-2",
		AuthenticationType: cosi1.AuthenticationType_Key})
	if err != nil {
		t.Fatalf("v1alpha1 grant: %v", err)
	}
	s3creds := a1.GetCredentials()["s3"].GetSecrets()
	for _, k := range []string{"accessKeyID", "accessSecretKey", "endpoint", "region"} {
		if s3creds[k] == "" {
			t.Errorf("v1alpha1 grant credentials lack %q", k)
		}
	}
	if len(a1.GetCredentials()) != 1 {
		t.Errorf("v1alpha1 grant credentials have %d entries, want exactly one", len(a1.GetCredentials()))
	}
	// The bucket is in use while granted.
	if _, err := p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: "bc-1"}); status.Code(err) != codes.FailedPrecondition {
		t.Errorf("delete of a granted bucket: %v, want FAILED_PRECONDITION", err)
	}
	for _, id := range []string{a.GetAccountId(), a1.GetAccountId()} {
		if _, err := p.prov2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: id, Protocol: s3Proto(),
			AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: "bc-1"}}}); err != nil {
			t.Fatalf("revoke %s: %v", id, err)
		}
	}
	if p.mem.KeyLive(keyID) {
		t.Error("the key still works after revoke")
	}
	// Gone is done: revoke and delete again answer OK.
	if _, err := p.prov1.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: "bc-1", AccountId: a.GetAccountId()}); err != nil {
		t.Errorf("revoke of a revoked account: %v", err)
	}
	for i := 0; i < 2; i++ {
		if _, err := p.prov1.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: "bc-1"}); err != nil {
			t.Errorf("delete #%d: %v", i+1, err)
		}
	}
	if _, err := p.prov2.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "bc-1"}); status.Code(err) != codes.NotFound {
		t.Errorf("get of a deleted bucket: %v, want NOT_FOUND", err)
	}

	// No credential value in any log line, at debug.
	for _, v := range []string{secret, keyID, s3creds["accessSecretKey"], s3creds["accessKeyID"]} {
		if strings.Contains(p.log.String(), v) {
			t.Errorf("a credential reached the log")
		}
	}
}

func TestCOSIErrorTable(t *testing.T) {
	mem := memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")
	mem.AddForeignBucket("admins-bucket")
	p := startCOSI(t, bucketConfig(mem))
	ctx := context.Background()
	if _, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b2"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a", 2049)
	for _, tc := range []struct {
		name string
		call func() error
		want codes.Code
	}{
		{"a bucket name that is not a DNS subdomain is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "Bad_Name"})
			return err
		}, codes.InvalidArgument},
		{"a v1alpha1 bucket name over 253 characters is INVALID_ARGUMENT", func() error {
			_, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: strings.Repeat("a", 254)})
			return err
		}, codes.InvalidArgument},
		{"a name of 253 characters is accepted", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61)})
			return err
		}, codes.OK},
		{"an UNKNOWN protocol is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b3", Protocols: []*cosi2.ObjectProtocol{{}}})
			return err
		}, codes.InvalidArgument},
		{"a protocol the driver does not serve is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b3", Protocols: []*cosi2.ObjectProtocol{{Type: cosi2.ObjectProtocol_GCS}}})
			return err
		}, codes.InvalidArgument},
		{"a bucket that exists but is not ours is never adopted: ALREADY_EXISTS", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "admins-bucket"})
			return err
		}, codes.AlreadyExists},
		{"get of an unknown bucket is NOT_FOUND", func() error {
			_, err := p.prov2.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "nope"})
			return err
		}, codes.NotFound},
		{"get of an administrator's bucket finds it", func() error {
			_, err := p.prov2.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "admins-bucket"})
			return err
		}, codes.OK},
		{"an ID over 2048 characters is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: long})
			return err
		}, codes.InvalidArgument},
		{"an ID with a character outside [A-Za-z0-9._/-] is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: "a b"})
			return err
		}, codes.InvalidArgument},
		{"delete of an unknown bucket is OK", func() error {
			_, err := p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: "never-was"})
			return err
		}, codes.OK},
		{"a grant without buckets is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(), AuthenticationType: keyAuth()})
			return err
		}, codes.InvalidArgument},
		{"a grant without an access mode is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(), AuthenticationType: keyAuth(),
				Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{{BucketId: "b1"}}})
			return err
		}, codes.InvalidArgument},
		{"a grant with an UNKNOWN authentication type is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(), AuthenticationType: &cosi2.AuthenticationType{},
				Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("b1")}})
			return err
		}, codes.InvalidArgument},
		{"a service-account grant without the account name is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(),
				AuthenticationType: &cosi2.AuthenticationType{Type: cosi2.AuthenticationType_SERVICE_ACCOUNT},
				Buckets:            []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("b1")}})
			return err
		}, codes.InvalidArgument},
		{"two buckets behind one access without MultiBucketAccess is OUT_OF_RANGE", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(), AuthenticationType: keyAuth(),
				Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("b2"), rw("b1")}})
			return err
		}, codes.OutOfRange},
		{"a bucket listed twice is INVALID_ARGUMENT", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-x", Protocol: s3Proto(), AuthenticationType: keyAuth(),
				Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("b1"), rw("b1")}})
			return err
		}, codes.InvalidArgument},
		{"a grant to a missing bucket is NOT_FOUND", func() error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-y", Protocol: s3Proto(), AuthenticationType: keyAuth(),
				Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("missing")}})
			return err
		}, codes.NotFound},
		{"revoke of an unknown account is OK", func() error {
			_, err := p.prov2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: "acct-none", Protocol: s3Proto(), AuthenticationType: keyAuth(),
				Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: "b1"}}})
			return err
		}, codes.OK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); status.Code(err) != tc.want {
				t.Errorf("got %v, want code %v", err, tc.want)
			}
		})
	}

	// An incompatible repeated grant: ALREADY_EXISTS in v1alpha2, never in v1alpha1 (its sidecar
	// crashes on it).
	if _, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "b1", Name: "ba-v1", AuthenticationType: cosi1.AuthenticationType_Key}); err != nil {
		t.Fatal(err)
	}
	_, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "b1", Name: "ba-v1", AuthenticationType: cosi1.AuthenticationType_Key,
		Parameters: map[string]string{"other": "x"}})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("v1alpha1 incompatible grant: %v, want FAILED_PRECONDITION (never ALREADY_EXISTS)", err)
	}
	g := &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-v2", Protocol: s3Proto(), AuthenticationType: keyAuth(),
		Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("b1")}}
	if _, err := p.prov2.DriverGrantBucketAccess(ctx, g); err != nil {
		t.Fatal(err)
	}
	g.Parameters = map[string]string{"other": "x"}
	if _, err := p.prov2.DriverGrantBucketAccess(ctx, g); status.Code(err) != codes.AlreadyExists {
		t.Errorf("v1alpha2 incompatible grant: %v, want ALREADY_EXISTS", err)
	}
}

// slowBuckets blocks CreateBucket until released, so a duplicate can arrive while it runs.
type slowBuckets struct {
	*memdriver.Buckets
	entered chan struct{}
	release chan struct{}
}

func (s *slowBuckets) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	s.entered <- struct{}{}
	<-s.release
	return s.Buckets.CreateBucket(ctx, req)
}

func TestCOSIConcurrentDuplicateIsAborted(t *testing.T) {
	slow := &slowBuckets{Buckets: memdriver.NewBuckets("http://s3", "r"), entered: make(chan struct{}), release: make(chan struct{})}
	p := startCOSI(t, bucketConfig(slow))
	ctx := context.Background()
	first := make(chan error, 1)
	go func() {
		_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "dup"})
		first <- err
	}()
	<-slow.entered
	_, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "dup"})
	if status.Code(err) != codes.Aborted || !strings.Contains(err.Error(), "bucket name") {
		t.Errorf("duplicate while the first runs: %v, want ABORTED naming the bucket name", err)
	}
	close(slow.release)
	if err := <-first; err != nil {
		t.Errorf("first create: %v", err)
	}
}

// badBuckets answers with what the sidecar would reject.
type badBuckets struct{ bucket *bucket.Bucket }

func (b badBuckets) CreateBucket(context.Context, *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	return b.bucket, nil
}
func (badBuckets) DeleteBucket(context.Context, *bucket.DeleteBucketRequest) error { return nil }

func TestCOSIBackendAnswersAreChecked(t *testing.T) {
	for _, tc := range []struct {
		name   string
		bucket *bucket.Bucket
	}{
		{"no bucket", nil},
		{"an ID the sidecar refuses", &bucket.Bucket{ID: "has space", S3: &bucket.S3Info{Endpoint: "e", Region: "r", AddressingStyle: bucket.S3AddressingPath}}},
		{"no protocol", &bucket.Bucket{ID: "b"}},
		{"S3 without region", &bucket.Bucket{ID: "b", S3: &bucket.S3Info{Endpoint: "e", AddressingStyle: bucket.S3AddressingPath}}},
		{"S3 without addressing style", &bucket.Bucket{ID: "b", S3: &bucket.S3Info{Endpoint: "e", Region: "r"}}},
		{"a protocol the driver does not serve", &bucket.Bucket{ID: "b", S3: &bucket.S3Info{Endpoint: "e", Region: "r", AddressingStyle: bucket.S3AddressingPath},
			Azure: &bucket.AzureInfo{StorageAccount: "a"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCOSI(t, bucketConfig(badBuckets{tc.bucket}))
			_, err := p.prov2.DriverCreateBucket(context.Background(), &cosi2.DriverCreateBucketRequest{Name: "b"})
			if status.Code(err) != codes.Internal || !strings.Contains(err.Error(), "plugin bug") {
				t.Errorf("got %v, want INTERNAL naming a plugin bug", err)
			}
		})
	}
}

func TestCOSIConfigChecks(t *testing.T) {
	mem := memdriver.NewBuckets("e", "r")
	for _, tc := range []struct {
		name string
		cfg  func(*plugin.Config)
		want string
	}{
		{"a bucket backend needs protocols", func(c *plugin.Config) { c.COSI.Protocols = nil }, "COSI.Protocols"},
		{"a protocol listed twice", func(c *plugin.Config) {
			c.COSI.Protocols = []bucket.Protocol{bucket.S3, bucket.S3}
		}, "twice"},
		{"an unknown version", func(c *plugin.Config) { c.COSI.Versions = []bucket.Version{"v1"} }, "unknown COSI version"},
		{"a driver name that is not DNS-1035 labels", func(c *plugin.Config) { c.Name = "9lives.example.com" }, "DNS-1035"},
		{"bucket settings without a bucket backend", func(c *plugin.Config) {
			c.COSI.Provisioner = nil
			c.Controller = memdriver.New(memdriver.Options{})
		}, "Config.COSI.Provisioner"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := bucketConfig(mem)
			tc.cfg(&cfg)
			_, err := plugin.New(cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New: %v, want an error mentioning %q", err, tc.want)
			}
		})
	}
}

func TestCOSIEndpointRules(t *testing.T) {
	cfg := bucketConfig(memdriver.NewBuckets("e", "r"))
	dir := t.TempDir()
	for _, tc := range []struct {
		endpoint, want string
	}{
		{"unix://" + filepath.Join(dir, "cosi"), ".sock"},
		{"tcp://127.0.0.1:0", "unix"},
		{"", "COSI_ENDPOINT"},
	} {
		t.Setenv("COSI_ENDPOINT", tc.endpoint)
		t.Setenv("CSI_ENDPOINT", "unix://"+filepath.Join(dir, "csi.sock"))
		d, err := plugin.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel() // Run must refuse before it serves anything
		err = d.Run(ctx)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("COSI_ENDPOINT=%q: Run = %v, want an error mentioning %q", tc.endpoint, err, tc.want)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "csi.sock")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a COSI-only plugin listened on CSI_ENDPOINT")
	}
}

// flakyBuckets is a bucket backend whose storage is unreachable until up is closed.
type flakyBuckets struct {
	*memdriver.Buckets
	up     chan struct{}
	probed chan bool
}

func (f *flakyBuckets) Probe(context.Context) (bool, error) {
	select {
	case <-f.up:
		f.probed <- true
		return true, nil
	default:
		f.probed <- false
		return false, errors.New("storage unreachable")
	}
}

// TestUnreachableBackendIsNotReadyInsteadOfCrashing: a plugin whose storage is down at start-up
// serves (no crash loop), reports not ready on /readyz, and becomes ready once a retried probe
// passes.
func TestUnreachableBackendIsNotReadyInsteadOfCrashing(t *testing.T) {
	f := &flakyBuckets{Buckets: memdriver.NewBuckets("e", "r"), up: make(chan struct{}), probed: make(chan bool)}
	cfg := bucketConfig(f)
	cfg.HTTPEndpoint = freeAddr(t)
	p := startCOSI(t, cfg)
	if ok := <-f.probed; ok {
		t.Fatal("first probe passed")
	}
	if _, err := p.id2.DriverGetInfo(context.Background(), &cosi2.DriverGetInfoRequest{}); err != nil {
		t.Errorf("the plugin does not serve while its storage is down: %v", err)
	}
	if code, _ := get(t, "http://"+cfg.HTTPEndpoint+"/readyz"); code != 503 {
		t.Errorf("/readyz with the storage down: %d, want 503", code)
	}
	close(f.up)
	if ok := <-f.probed; !ok {
		t.Fatal("retried probe failed")
	}
	// The probe has answered; readiness is set right after it returns.
	for i := 0; ; i++ {
		code, _ := get(t, "http://"+cfg.HTTPEndpoint+"/readyz")
		if code == 200 {
			break
		}
		if i == 1000 {
			t.Fatalf("/readyz after the storage came back: %d, want 200", code)
		}
		runtime.Gosched()
	}
}

// paramEcho is memdriver's bucket backend made careless: told so by the "then" parameter, its
// create and grant fail or panic with every parameter in the message, as a backend that quotes
// its input in errors would.
type paramEcho struct{ *memdriver.Buckets }

func echoParameters(op string, params map[string]string) error {
	switch params["then"] {
	case "fail":
		return fmt.Errorf("%s refused with parameters %v (password %s)", op, params, params["password"])
	case "panic":
		panic(fmt.Sprintf("%s: cannot handle parameters %v", op, params))
	}
	return nil
}

func (p paramEcho) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	if err := echoParameters("create", req.Parameters); err != nil {
		return nil, err
	}
	return p.Buckets.CreateBucket(ctx, req)
}

func (p paramEcho) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	if err := echoParameters("grant", req.Parameters); err != nil {
		return nil, err
	}
	return p.Buckets.GrantBucketAccess(ctx, req)
}

// TestCOSISecretLookingParametersNeverLeak: COSI annotates no field as secret, so the values of
// parameters whose keys look secret are hidden in every COSI call without any setting: in the
// debug log of the request, in error messages and in panic reports, in both wire versions. The
// keys stay visible.
func TestCOSISecretLookingParametersNeverLeak(t *testing.T) {
	const password, token = "hunter2", "t0k3n"
	p := startCOSI(t, bucketConfig(paramEcho{memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")}))
	ctx := context.Background()
	with := func(then string) map[string]string {
		m := map[string]string{"password": password, "token": token}
		if then != "" {
			m["then"] = then
		}
		return m
	}
	type call struct {
		name string
		do   func(params map[string]string) error
	}
	calls := []call{
		{"v1alpha1 DriverCreateBucket", func(params map[string]string) error {
			_, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "sec-v1", Parameters: params})
			return err
		}},
		{"v1alpha2 DriverCreateBucket", func(params map[string]string) error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "sec-v2", Protocols: []*cosi2.ObjectProtocol{s3Proto()}, Parameters: params})
			return err
		}},
		{"v1alpha1 DriverGrantBucketAccess", func(params map[string]string) error {
			_, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "sec-v1", Name: "ba-sec-v1",
				AuthenticationType: cosi1.AuthenticationType_Key, Parameters: params})
			return err
		}},
		{"v1alpha2 DriverGrantBucketAccess", func(params map[string]string) error {
			_, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-sec-v2", Protocol: s3Proto(),
				AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("sec-v2")}, Parameters: params})
			return err
		}},
	}
	for _, c := range calls {
		if err := c.do(with("")); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		for _, then := range []string{"fail", "panic"} {
			err := c.do(with(then))
			if err == nil {
				t.Fatalf("%s told to %s answered OK", c.name, then)
			}
			if msg := status.Convert(err).Message(); strings.Contains(msg, password) || strings.Contains(msg, token) {
				t.Errorf("%s told to %s: the error %q holds a parameter value", c.name, then, msg)
			}
		}
	}
	log := p.log.String()
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, password) || strings.Contains(line, token) {
			t.Errorf("the value of a secret-looking parameter reached the log: %s", line)
		}
	}
	// Redaction keeps the keys: the operator sees which parameters were sent.
	for _, method := range []string{"DriverCreateBucket", "DriverGrantBucketAccess"} {
		n := 0
		for _, line := range strings.Split(log, "\n") {
			if strings.Contains(line, `"msg":"request"`) && strings.Contains(line, `"method":"`+method+`"`) &&
				strings.Contains(line, `"password":"`+secrets.Placeholder+`"`) && strings.Contains(line, `"token":"`+secrets.Placeholder+`"`) {
				n++
			}
		}
		if n != 6 { // three calls in each version
			t.Errorf("%d debug lines of %s requests show the keys password and token with hidden values, want 6", n, method)
		}
	}
}

// recordingBuckets is memdriver's bucket backend keeping every request it receives.
type recordingBuckets struct {
	*memdriver.Buckets
	mu   sync.Mutex
	seen []any
}

func (r *recordingBuckets) keep(req any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seen = append(r.seen, req)
}

func (r *recordingBuckets) CreateBucket(ctx context.Context, req *bucket.CreateBucketRequest) (*bucket.Bucket, error) {
	r.keep(req)
	return r.Buckets.CreateBucket(ctx, req)
}

func (r *recordingBuckets) GetBucket(ctx context.Context, req *bucket.GetBucketRequest) (*bucket.Bucket, error) {
	r.keep(req)
	return r.Buckets.GetBucket(ctx, req)
}

func (r *recordingBuckets) DeleteBucket(ctx context.Context, req *bucket.DeleteBucketRequest) error {
	r.keep(req)
	return r.Buckets.DeleteBucket(ctx, req)
}

func (r *recordingBuckets) GrantBucketAccess(ctx context.Context, req *bucket.GrantBucketAccessRequest) (*bucket.Access, error) {
	r.keep(req)
	return r.Buckets.GrantBucketAccess(ctx, req)
}

func (r *recordingBuckets) RevokeBucketAccess(ctx context.Context, req *bucket.RevokeBucketAccessRequest) error {
	r.keep(req)
	return r.Buckets.RevokeBucketAccess(ctx, req)
}

// TestCOSIRequestsPrintRedacted: the requests a bucket backend receives print, JSON-encode and
// zap-log with the values of secret-looking parameters hidden and their keys shown, as the
// library's own log does, so a backend that logs its request leaks nothing either.
func TestCOSIRequestsPrintRedacted(t *testing.T) {
	const password = "hunter2-in-a-request"
	rec := &recordingBuckets{Buckets: memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")}
	p := startCOSI(t, bucketConfig(rec))
	ctx := context.Background()
	params := map[string]string{"password": password, "tier": "gold"}
	must := func(_ any, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "fmt-v1", Parameters: params}))
	must(p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "fmt-v2", Parameters: params}))
	must(p.prov2.DriverGetExistingBucket(ctx, &cosi2.DriverGetExistingBucketRequest{ExistingBucketId: "fmt-v2", Parameters: params}))
	a1, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: "fmt-v1", Name: "ba-fmt-v1",
		AuthenticationType: cosi1.AuthenticationType_Key, Parameters: params})
	must(a1, err)
	a2, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-fmt-v2", Protocol: s3Proto(),
		AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw("fmt-v2")}, Parameters: params})
	must(a2, err)
	must(p.prov1.DriverRevokeBucketAccess(ctx, &cosi1.DriverRevokeBucketAccessRequest{BucketId: "fmt-v1", AccountId: a1.GetAccountId(),
		RevokeAccessContext: params}))
	must(p.prov2.DriverRevokeBucketAccess(ctx, &cosi2.DriverRevokeBucketAccessRequest{AccountId: a2.GetAccountId(), Protocol: s3Proto(),
		AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverRevokeBucketAccessRequest_AccessedBucket{{BucketId: "fmt-v2"}}, Parameters: params}))
	must(p.prov1.DriverDeleteBucket(ctx, &cosi1.DriverDeleteBucketRequest{BucketId: "fmt-v1", DeleteContext: params}))
	must(p.prov2.DriverDeleteBucket(ctx, &cosi2.DriverDeleteBucketRequest{BucketId: "fmt-v2", Parameters: params}))

	rec.mu.Lock()
	defer rec.mu.Unlock()
	kinds := map[string]bool{}
	for _, req := range rec.seen {
		kinds[fmt.Sprintf("%T", req)] = true
		var zapped syncBuffer
		zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), &zapped, zap.DebugLevel)).
			Info("backend", zap.Any("request", req))
		js, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("%T: json: %v", req, err)
		}
		for _, form := range []string{fmt.Sprintf("%v", req), fmt.Sprintf("%+v", req), fmt.Sprintf("%#v", req), fmt.Sprintf("%s", req),
			string(js), zapped.String()} {
			if strings.Contains(form, password) {
				t.Errorf("%T printed a secret-looking parameter's value: %s", req, form)
			}
			if !strings.Contains(form, "password") || !strings.Contains(form, "gold") {
				t.Errorf("%T printed without the parameter keys or the harmless values: %s", req, form)
			}
		}
	}
	if len(kinds) != 5 {
		t.Errorf("the backend saw %d request types (%v), want all five", len(kinds), kinds)
	}
}

// TestBucketFingerprintsAgreeAcrossVersions is the differential test of the two wire versions'
// fingerprints: the same create or grant sent once as v1alpha1 and once as v1alpha2 reaches the
// backend with the same Fingerprint (so a CO that moves to the v1alpha2 sidecar finds what it made
// with the v1alpha1 one), and a request that differs in what matters does not.
func TestBucketFingerprintsAgreeAcrossVersions(t *testing.T) {
	rec := &recordingBuckets{Buckets: memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1")}
	p := startCOSI(t, bucketConfig(rec))
	ctx := context.Background()
	last := func() any {
		rec.mu.Lock()
		defer rec.mu.Unlock()
		return rec.seen[len(rec.seen)-1]
	}
	params := map[string]string{"tier": "gold"}

	c1, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "fp-bucket", Parameters: params})
	if err != nil {
		t.Fatal(err)
	}
	create1 := last().(*bucket.CreateBucketRequest)
	c2, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "fp-bucket", Parameters: params,
		Protocols: []*cosi2.ObjectProtocol{s3Proto()}})
	if err != nil || c2.GetBucketId() != c1.GetBucketId() {
		t.Fatalf("the v1alpha1 bucket created again over v1alpha2: %v, %v; want bucket %q", c2, err, c1.GetBucketId())
	}
	create2 := last().(*bucket.CreateBucketRequest)
	if create1.RawV1Alpha1 == nil || create2.RawV1Alpha2 == nil || create1.RawV1Alpha2 != nil || create2.RawV1Alpha1 != nil {
		t.Fatalf("each request must carry exactly its own wire request: %+v / %+v", create1, create2)
	}
	if create1.Fingerprint() != create2.Fingerprint() {
		t.Errorf("CreateBucket fingerprints differ between v1alpha1 (%s) and v1alpha2 (%s)", create1.Fingerprint(), create2.Fingerprint())
	}
	if _, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "fp-bucket",
		Parameters: map[string]string{"tier": "silver"}}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("other parameters over v1alpha2: %v, want ALREADY_EXISTS", err)
	}
	if other := last().(*bucket.CreateBucketRequest); other.Fingerprint() == create1.Fingerprint() {
		t.Error("a create with other parameters has the same fingerprint")
	}

	g1, err := p.prov1.DriverGrantBucketAccess(ctx, &cosi1.DriverGrantBucketAccessRequest{BucketId: c1.GetBucketId(), Name: "ba-fp",
		AuthenticationType: cosi1.AuthenticationType_Key, Parameters: params})
	if err != nil {
		t.Fatal(err)
	}
	grant1 := last().(*bucket.GrantBucketAccessRequest)
	g2, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-fp", Protocol: s3Proto(),
		AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{rw(c1.GetBucketId())},
		Parameters: params})
	if err != nil || g2.GetAccountId() != g1.GetAccountId() {
		t.Fatalf("the v1alpha1 grant repeated over v1alpha2: %v, %v; want account %q", g2, err, g1.GetAccountId())
	}
	grant2 := last().(*bucket.GrantBucketAccessRequest)
	if grant1.Fingerprint() != grant2.Fingerprint() {
		t.Errorf("GrantBucketAccess fingerprints differ between v1alpha1 (%s) and v1alpha2 (%s)", grant1.Fingerprint(), grant2.Fingerprint())
	}
	readOnly := &cosi2.DriverGrantBucketAccessRequest_AccessedBucket{BucketId: c1.GetBucketId(),
		AccessMode: &cosi2.AccessMode{Mode: cosi2.AccessMode_READ_ONLY}}
	if _, err := p.prov2.DriverGrantBucketAccess(ctx, &cosi2.DriverGrantBucketAccessRequest{AccountName: "ba-fp", Protocol: s3Proto(),
		AuthenticationType: keyAuth(), Buckets: []*cosi2.DriverGrantBucketAccessRequest_AccessedBucket{readOnly},
		Parameters: params}); status.Code(err) != codes.AlreadyExists {
		t.Errorf("the grant repeated read-only: %v, want ALREADY_EXISTS", err)
	}
	if other := last().(*bucket.GrantBucketAccessRequest); other.Fingerprint() == grant1.Fingerprint() {
		t.Error("a read-only grant has the same fingerprint as a read-write one")
	}
}

// TestCOSILogLinesNameTheWireVersion: one backend serves both COSI wire versions on one socket,
// and their sidecars behave differently, so every log line of a COSI call says which version the
// call came in on (cosi_version); a CSI call's lines carry no such field.
func TestCOSILogLinesNameTheWireVersion(t *testing.T) {
	mem := memdriver.New(memdriver.Options{})
	cfg := bucketConfig(memdriver.NewBuckets("http://127.0.0.1:9000", "us-east-1"))
	cfg.Controller = mem
	logs := &lockedLog{}
	cfg.Logger = zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), logs, zap.DebugLevel))
	p := startCOSI(t, cfg)
	ctx := context.Background()
	calls := []struct {
		method, version string
		call            func() error
	}{
		{"DriverGetInfo", "v1alpha1", func() error { _, err := p.id1.DriverGetInfo(ctx, &cosi1.DriverGetInfoRequest{}); return err }},
		{"DriverCreateBucket", "v1alpha2", func() error {
			_, err := p.prov2.DriverCreateBucket(ctx, &cosi2.DriverCreateBucketRequest{Name: "b-v2", Protocols: []*cosi2.ObjectProtocol{s3Proto()}})
			return err
		}},
		{"DriverCreateBucket", "v1alpha1", func() error {
			_, err := p.prov1.DriverCreateBucket(ctx, &cosi1.DriverCreateBucketRequest{Name: "b-v1"})
			return err
		}},
		{"CreateVolume", "", func() error {
			_, err := csi.NewControllerClient(p.conn).CreateVolume(ctx, &csi.CreateVolumeRequest{Name: "v",
				VolumeCapabilities: []*csi.VolumeCapability{mountCap(snw)}})
			return err
		}},
	}
	for _, c := range calls {
		before := len(logs.String())
		if err := c.call(); err != nil {
			t.Fatalf("%s (%s): %v", c.method, c.version, err)
		}
		var lines int
		for _, line := range strings.Split(strings.TrimSpace(logs.String()[before:]), "\n") {
			var e map[string]any
			if err := json.Unmarshal([]byte(line), &e); err != nil || e["method"] != c.method {
				continue
			}
			lines++
			if got, _ := e["cosi_version"].(string); got != c.version {
				t.Errorf("%s over %q: a %q line has cosi_version %q", c.method, c.version, e["msg"], got)
			}
		}
		if lines < 2 {
			t.Errorf("%s over %q: %d log lines of the call; want its request and call lines", c.method, c.version, lines)
		}
	}
}

// lockedLog is a log sink the test reads while the server may still write to it.
type lockedLog struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedLog) Sync() error { return nil }

func (l *lockedLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
