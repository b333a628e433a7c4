package cosisuite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
)

// The recorder sees every call the suite makes, through a client interceptor, so no call can
// escape the two rules that hold for all of them: a terminal code only where the error table
// puts it, and no credential outside the grant's answer.

// cosiTerminalCodes are the codes the COSI sidecars treat as final: they stop retrying. A driver
// that answers one for a transient fault leaves a claim stuck forever.
var cosiTerminalCodes = []codes.Code{codes.InvalidArgument, codes.AlreadyExists, codes.Unimplemented, codes.OutOfRange}

// expectation is what the table allows a call to answer besides OK and non-terminal codes.
type expectation struct {
	what  string       // the call, for messages ("create again with other parameters")
	allow []codes.Code // terminal codes the table allows here
}

type expectKey struct{}

// expect marks the calls made with ctx: what they are, and which terminal codes the error table
// allows them. A call without a mark may answer no terminal code at all.
func expectCall(ctx context.Context, what string, allow ...codes.Code) context.Context {
	return context.WithValue(ctx, expectKey{}, expectation{what: what, allow: allow})
}

// secretValue is one credential value a grant answered.
type secretValue struct {
	label   string // "the access key ID of account ba-..." - never the value
	account string
	kind    string // "access key ID", "secret"...
	value   string
	version bucket.Version
}

// callRecord is what the canary searches: error messages and the answers that must hold no
// credential.
type callRecord struct {
	method string
	what   string
	text   string // error message, or a non-grant answer as text
	isErr  bool
}

// cosiRecorder collects, per wire version, what the rules above need.
type cosiRecorder struct {
	timeout    time.Duration // of each call
	mu         sync.Mutex
	secrets    []secretValue
	records    map[bucket.Version][]callRecord
	violations map[bucket.Version][]string
}

func newCOSIRecorder(timeout time.Duration) *cosiRecorder {
	return &cosiRecorder{timeout: timeout, records: map[bucket.Version][]callRecord{}, violations: map[bucket.Version][]string{}}
}

// versionOf tells the wire version from the full method name.
func versionOf(method string) bucket.Version {
	if strings.HasPrefix(method, "/cosi.v1alpha1.") {
		return bucket.V1Alpha1
	}
	return bucket.V1Alpha2
}

func shortMethod(method string) string { return method[strings.LastIndex(method, "/")+1:] }

func (r *cosiRecorder) unary(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	callCtx, cancel := context.WithTimeout(ctx, r.timeout)
	defer cancel()
	err := invoker(callCtx, method, req, reply, cc, opts...)
	exp, _ := ctx.Value(expectKey{}).(expectation)
	if exp.what == "" {
		exp.what = "a call"
	}
	v, m := versionOf(method), shortMethod(method)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		code := status.Code(err)
		if slices.Contains(cosiTerminalCodes, code) && !slices.Contains(exp.allow, code) {
			r.violations[v] = append(r.violations[v], fmt.Sprintf("%s (%s) answered %s, which the sidecar treats as final; the COSI error table does not put it there (message: %q)",
				m, exp.what, code, status.Convert(err).Message()))
		}
		r.records[v] = append(r.records[v], callRecord{method: m, what: exp.what, text: err.Error(), isErr: true})
		return err
	}
	switch a := reply.(type) {
	case *cosi1.DriverGrantBucketAccessResponse:
		r.addV1Alpha1Secrets(req.(*cosi1.DriverGrantBucketAccessRequest).GetName(), a)
	case *cosi2.DriverGrantBucketAccessResponse:
		r.addV1Alpha2Secrets(req.(*cosi2.DriverGrantBucketAccessRequest).GetAccountName(), a)
	case proto.Message:
		text, _ := prototext.Marshal(a)
		r.records[v] = append(r.records[v], callRecord{method: m, what: exp.what, text: string(text)})
	}
	return nil
}

// addSecret records a value once per (account, kind); mu is held.
func (r *cosiRecorder) addSecret(v bucket.Version, account, kind, value string) {
	if value == "" {
		return
	}
	for _, s := range r.secrets {
		if s.value == value && s.account == account && s.kind == kind {
			return
		}
	}
	r.secrets = append(r.secrets, secretValue{label: fmt.Sprintf("the %s granted to account %s (%s)", kind, account, v),
		account: account, kind: kind, value: value, version: v})
}

func (r *cosiRecorder) addV1Alpha1Secrets(account string, a *cosi1.DriverGrantBucketAccessResponse) {
	for _, d := range a.GetCredentials() {
		for key, value := range d.GetSecrets() {
			if kind, ok := v1alpha1SecretKeys[key]; ok {
				r.addSecret(bucket.V1Alpha1, account, kind, value)
			}
		}
	}
}

// v1alpha1SecretKeys are the keys of a v1alpha1 credentials entry that hold secrets (endpoint,
// region, project and service account do not).
var v1alpha1SecretKeys = map[string]string{
	"accessKeyID": "access key ID", "accessSecretKey": "secret access key",
	"accessToken": "access token",
	"accessId":    "HMAC access ID", "accessSecret": "HMAC secret", "privateKeyName": "private key name",
}

func (r *cosiRecorder) addV1Alpha2Secrets(account string, a *cosi2.DriverGrantBucketAccessResponse) {
	c := a.GetCredentials()
	v := bucket.V1Alpha2
	r.addSecret(v, account, "access key ID", c.GetS3().GetAccessKeyId())
	r.addSecret(v, account, "secret access key", c.GetS3().GetAccessSecretKey())
	r.addSecret(v, account, "access token", c.GetAzure().GetAccessToken())
	r.addSecret(v, account, "HMAC access ID", c.GetGcs().GetAccessId())
	r.addSecret(v, account, "HMAC secret", c.GetGcs().GetAccessSecret())
	r.addSecret(v, account, "private key name", c.GetGcs().GetPrivateKeyName())
}

// scrub replaces every credential value seen so far with a placeholder. Every message the suite
// prints passes through it: a driver's error text or log line may hold a credential, and a
// conformance failure must not publish it in CI logs.
func (r *cosiRecorder) scrub(s string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, v := range r.secrets {
		if len(v.value) >= 4 {
			s = strings.ReplaceAll(s, v.value, "<"+v.kind+">")
		}
	}
	return s
}

// takeViolations returns and forgets the terminal-code violations of a version.
func (r *cosiRecorder) takeViolations(v bucket.Version) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.violations[v]
	r.violations[v] = nil
	return out
}

func (r *cosiRecorder) secretsOf(v bucket.Version) []secretValue {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []secretValue
	for _, s := range r.secrets {
		if s.version == v {
			out = append(out, s)
		}
	}
	return out
}

func (r *cosiRecorder) recordsOf(v bucket.Version) []callRecord {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.records[v])
}
