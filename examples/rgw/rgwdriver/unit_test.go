package rgwdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/aws/smithy-go"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/ceph/go-ceph/rgw/admin"

	"github.com/csikit/csikit/driver"
	"github.com/csikit/csikit/driver/bucket"
)

func TestBucketName(t *testing.T) {
	for _, tc := range []struct {
		name string
		kept bool
	}{
		{"bc-0b7e5f7a-1c2d-4e5f-8a9b-0c1d2e3f4a5b", true},
		{"abc", true},
		{"my.bucket", true},
		{"cosi-abc", false},              // the hashed names' prefix is reserved
		{BucketName("cosi-abc"), false},  // a hashed name maps elsewhere, never to itself
		{"ab", false},                    // too short
		{strings.Repeat("a", 64), false}, // too long
		{"192.168.0.1", false},           // shaped like an IP address
		{"a..b", false}, {"a.-b", false}, {"a-.b", false}, {"-ab", false}, {"ab-", false},
		{"Upper", false}, {"under_score", false}, {"../../etc", false}, {"", false},
	} {
		got := BucketName(tc.name)
		if !ValidBucketName(got) {
			t.Errorf("BucketName(%q) = %q, not a valid bucket name", tc.name, got)
		}
		if (got == tc.name) != tc.kept {
			t.Errorf("BucketName(%q) = %q, kept as it is: %v, want %v", tc.name, got, got == tc.name, tc.kept)
		}
	}
	if a, b := BucketName("cosi-abc"), BucketName(BucketName("cosi-abc")); a == b {
		t.Errorf("a name and its own hash share bucket %q", a)
	}
}

// FuzzBucketName: every name maps to a valid bucket name, and two names never to the same one.
func FuzzBucketName(f *testing.F) {
	for _, s := range [][2]string{{"bc-1", "bc-2"}, {"cosi-x", BucketName("cosi-x")}, {"a", "ab"}, {"1.2.3.4", "x.y"}} {
		f.Add(s[0], s[1])
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		ba, bb := BucketName(a), BucketName(b)
		if !ValidBucketName(ba) || !ValidBucketName(bb) {
			t.Fatalf("invalid bucket names %q, %q", ba, bb)
		}
		if a != b && ba == bb {
			t.Fatalf("%q and %q both map to %q", a, b, ba)
		}
		if strings.HasPrefix(ba, hashedPrefix) == (ba == a) {
			t.Fatalf("%q -> %q: a kept name has the hashed prefix, or a hashed one has not", a, ba)
		}
	})
}

func TestAccountUID(t *testing.T) {
	u := AccountUID("ba-1")
	if !validAccountUID(u) || u == AccountUID("ba-2") || u != AccountUID("ba-1") {
		t.Errorf("AccountUID: %q", u)
	}
	for _, bad := range []string{"", "cosi-", "cosi-" + strings.Repeat("g", 32), "x" + u, u + "0", "../" + u, strings.ToUpper(u)} {
		if validAccountUID(bad) {
			t.Errorf("validAccountUID(%q) = true", bad)
		}
	}
}

func TestRecord(t *testing.T) {
	r := grantRecord{Account: "ba-1", Buckets: map[string]string{"bc-1": "rw", "bc-2": "ro"}}
	got, err := parseRecord(r.displayName())
	if err != nil || !sameGrant(got, r) || got.Account != r.Account {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	for _, bad := range []string{"", "someone's user", recordPrefix, recordPrefix + "{}", recordPrefix + `{"account":"a","buckets":{"bc-1":"xx"}}`,
		recordPrefix + `{"account":"a","buckets":{"../x":"rw"}}`, recordPrefix + `{"account":"a"`} {
		if _, err := parseRecord(bad); !errors.Is(err, errNotOurs) {
			t.Errorf("parseRecord(%q): %v, want errNotOurs", bad, err)
		}
	}
}

// FuzzParseRecord: any display name is either refused or read back to a record that writes the
// same display name.
func FuzzParseRecord(f *testing.F) {
	f.Add(grantRecord{Account: "ba-1", Buckets: map[string]string{"bc-1": "wo"}}.displayName())
	f.Add(recordPrefix + `{"account":"x","buckets":null}`)
	f.Add("csikit COSI bucket owner")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := parseRecord(s)
		if err != nil {
			return
		}
		again, err := parseRecord(r.displayName())
		if err != nil || again.Account != r.Account || !sameGrant(again, r) {
			t.Fatalf("%q: read %+v, written and read again %+v, %v", s, r, again, err)
		}
	})
}

// looseStatement reads any statement: Principal and Action may be a string or a list.
type looseStatement struct {
	Sid, Effect                                string
	Principal, NotPrincipal, Action, Condition json.RawMessage
}

func (s looseStatement) actions() string {
	var list []string
	_ = json.Unmarshal(s.Action, &list)
	return strings.Join(list, ",") + ","
}

func statements(t *testing.T, policy string) []looseStatement {
	t.Helper()
	var doc struct{ Statement []looseStatement }
	if err := json.Unmarshal([]byte(policy), &doc); err != nil {
		t.Fatalf("%s: %v", policy, err)
	}
	return doc.Statement
}

// bucketSids are the Sids of the statements every bucket has once, in the order rewrite writes
// them, after every account's.
func bucketSids() string {
	out := []string{strangersSid, aclSid}
	for _, sid := range slices.Sorted(maps.Keys(grantHeaders)) {
		out = append(out, sid)
	}
	out = append(out, ownerACLSid)
	return strings.Join(out, " ")
}

func TestPolicyEdits(t *testing.T) {
	const owner = "owner"
	uid, other := AccountUID("a"), AccountUID("b")
	sids := func(p string) string {
		var out []string
		for _, s := range statements(t, p) {
			out = append(out, s.Sid)
		}
		return strings.Join(out, " ")
	}
	// A bucket no grant has touched is closed all the same.
	p0, changed, err := closed("", "bc-1", owner)
	if err != nil || !changed || sids(p0) != bucketSids() {
		t.Fatalf("closing a bucket with no policy: %s, %v, %v", p0, changed, err)
	}
	if string(statements(t, p0)[0].NotPrincipal) != `{"AWS":["arn:aws:iam:::user/owner"]}` {
		t.Errorf("the strangers' Deny with no grant: %s", p0)
	}
	if again, changed, err := closed(p0, "bc-1", owner); err != nil || changed || again != p0 {
		t.Errorf("closing a closed bucket changed its policy: %v, %v", changed, err)
	}
	p, changed, err := withGrant(p0, "bc-1", owner, uid, bucket.ReadOnly)
	if err != nil || !changed {
		t.Fatalf("first grant: %v, %v", changed, err)
	}
	if fromNothing, _, _ := withGrant("", "bc-1", owner, uid, bucket.ReadOnly); fromNothing != p {
		t.Errorf("a grant on a bucket with no policy: %s, want %s", fromNothing, p)
	}
	st := statements(t, p)
	if sids(p) != allowSid(uid)+" "+denySid(uid)+" "+bucketSids() {
		t.Fatalf("first grant: %s", p)
	}
	if string(st[0].Principal) != `{"AWS":["arn:aws:iam:::user/`+uid+`"]}` || st[0].actions() != strings.Join(readActions, ",")+"," {
		t.Errorf("the account's Allow: %s", p)
	}
	if d := st[1].actions(); strings.Contains(d, "s3:GetObject,") || !strings.Contains(d, "s3:PutObject,") || !strings.Contains(d, "s3:PutObjectAcl,") ||
		!strings.Contains(d, "s3:PutObjectVersionAcl,") {
		t.Errorf("a read-only account's Deny: %s", d)
	}
	if string(st[2].NotPrincipal) != `{"AWS":["arn:aws:iam:::user/owner","arn:aws:iam:::user/`+uid+`"]}` || st[2].actions() != "s3:*," {
		t.Errorf("the strangers' Deny: %s", p)
	}
	last := st[len(st)-1]
	if last.Effect != "Allow" || string(last.Principal) != `{"AWS":["arn:aws:iam:::user/owner"]}` || last.actions() != "s3:PutObjectAcl," {
		t.Errorf("the owner's Allow of ACL writes: %+v", last)
	}
	for _, s := range st[3 : len(st)-1] {
		if string(s.Principal) != `{"AWS":["*"]}` || s.actions() != "s3:PutObject," || len(s.Condition) == 0 {
			t.Errorf("an ACL header's Deny: %+v", s)
		}
	}
	if got := string(st[3].Condition); got != `{"StringNotEquals":{"s3:x-amz-acl":[""]},"StringNotLike":{"s3:x-amz-acl":["private"]}}` {
		t.Errorf("the canned ACL's Deny: %s", got)
	}
	if got := string(st[4].Condition); got != `{"StringLike":{"s3:x-amz-grant-full-control":["*"]}}` {
		t.Errorf("the first grant header's Deny: %s", got)
	}
	if again, changed, err := withGrant(p, "bc-1", owner, uid, bucket.ReadOnly); err != nil || changed || again != p {
		t.Errorf("repeated grant changed the policy: %v, %v", changed, err)
	}
	p2, changed, err := withGrant(p, "bc-1", owner, uid, bucket.WriteOnly)
	if err != nil || !changed || len(statements(t, p2)) != 2+len(statements(t, p0)) || statements(t, p2)[0].actions() != strings.Join(writeActions, ",")+"," ||
		!strings.Contains(statements(t, p2)[1].actions(), "s3:GetObject,") || !strings.Contains(statements(t, p2)[1].actions(), "s3:ListMultipartUploadParts,") {
		t.Errorf("mode change: %s, %v", p2, err)
	}
	if rwp, _, _ := withGrant(p0, "bc-1", owner, uid, bucket.ReadWrite); !strings.Contains(statements(t, rwp)[0].actions(), "s3:ListMultipartUploadParts,") ||
		strings.Contains(statements(t, rwp)[1].actions(), "s3:ListMultipartUploadParts,") {
		t.Errorf("read-write and the listings of uploads: %s", rwp)
	}
	// Another account's statements, and one an administrator wrote, are kept, in a fixed order.
	admin := `{"Version":"2012-10-17","Statement":[{"Sid":"ops","Effect":"Deny","Principal":"*","Action":"s3:DeleteBucket","Resource":"arn:aws:s3:::bc-1"}]}`
	p3, _, err := withGrant(admin, "bc-1", owner, other, bucket.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	p3, _, err = withGrant(p3, "bc-1", owner, uid, bucket.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	first, second := uid, other
	if allowSid(other) < allowSid(uid) {
		first, second = other, uid
	}
	if got, want := sids(p3), "ops "+allowSid(first)+" "+denySid(first)+" "+allowSid(second)+" "+denySid(second)+" "+bucketSids(); got != want {
		t.Fatalf("statements %s, want %s", got, want)
	}
	if !strings.Contains(string(statements(t, p3)[5].NotPrincipal), other) || !strings.Contains(string(statements(t, p3)[5].NotPrincipal), uid) {
		t.Errorf("the strangers' Deny misses an account: %s", p3)
	}
	if again, changed, _ := withGrant(p3, "bc-1", owner, other, bucket.ReadWrite); changed || again != p3 {
		t.Error("repeating the first account's grant reordered the policy")
	}
	if got, err := accountsIn(p3); err != nil || !slices.Equal(got, []string{first, second}) {
		t.Errorf("accountsIn: %v, %v, want %s %s", got, err, first, second)
	}
	p4, changed, err := withoutGrant(p3, "bc-1", owner, uid)
	if err != nil || !changed {
		t.Fatalf("revoke: %v %v", changed, err)
	}
	if got, want := sids(p4), "ops "+allowSid(other)+" "+denySid(other)+" "+bucketSids(); got != want || strings.Contains(p4, uid) {
		t.Errorf("revoke left %s, want %s", got, want)
	}
	if _, changed, _ := withoutGrant(p4, "bc-1", owner, uid); changed {
		t.Error("a second revoke changed the policy")
	}
	// Revoking the last grant leaves the bucket's own statements: never no policy.
	if p5, _, err := withoutGrant(p, "bc-1", owner, uid); err != nil || p5 != p0 {
		t.Errorf("revoking the only account: %s, %v, want %s", p5, err, p0)
	}
	if p6, _, _ := withoutGrant(p4, "bc-1", owner, other); sids(p6) != "ops "+bucketSids() {
		t.Errorf("revoking the last account: %s", p6)
	}
	if p7, changed, _ := withoutGrant("", "bc-1", owner, uid); !changed || p7 != p0 {
		t.Errorf("revoking from a bucket with no policy: %s, want %s", p7, p0)
	}
	if got, err := accountsIn(p0); err != nil || len(got) != 0 {
		t.Errorf("accountsIn of a closed bucket with no grant: %v, %v", got, err)
	}
	for _, bad := range []string{"not json", `{"Statement":[]}`, `{"Version":"2012-10-17","Statement":[1]}`} {
		if _, _, err := withGrant(bad, "bc-1", owner, uid, bucket.ReadOnly); !errors.Is(err, errPolicy) {
			t.Errorf("withGrant(%q): %v, want errPolicy", bad, err)
		}
		if _, err := accountsIn(bad); !errors.Is(err, errPolicy) {
			t.Errorf("accountsIn(%q): %v, want errPolicy", bad, err)
		}
	}
}

// sameJSON says whether two lists of JSON texts hold the same values (re-encoding may escape or
// compact them differently).
func sameJSON(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		var x, y any
		if json.Unmarshal([]byte(a[i]), &x) != nil || json.Unmarshal([]byte(b[i]), &y) != nil || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// FuzzPolicy: whatever policy a bucket has, a grant then a revoke of one account either refuses
// it whole or ends with none of the account's statements, every statement of others as it was,
// and the bucket's own statements, once each, naming every account left.
func FuzzPolicy(f *testing.F) {
	f.Add(`{"Version":"2012-10-17","Statement":[{"Sid":"ops","Effect":"Allow"}]}`, 1)
	f.Add("", 2)
	f.Add(`{"Version":"x","Statement":[{"Sid":"csikitcosi00"},{"Sid":"csikitcosistrangers"}]}`, 3)
	f.Add(`{"Version":"x","Statement":[{"Sid":"`+allowSid(AccountUID("other"))+`"}]}`, 1)
	uid := AccountUID("fuzz")
	f.Fuzz(func(t *testing.T, policy string, mode int) {
		m := bucket.AccessMode((mode%3+3)%3 + 1)
		granted, _, err := withGrant(policy, "bc-1", "owner", uid, m)
		if err != nil {
			return
		}
		revoked, _, err := withoutGrant(granted, "bc-1", "owner", uid)
		if err != nil {
			t.Fatalf("revoke of a policy withGrant wrote: %v", err)
		}
		before, _ := parsePolicy(policy)
		after, _ := parsePolicy(revoked)
		var othersBefore, othersAfter []string
		var accounts []string
		for _, s := range before.Statement {
			if sid, _ := sidOf(s); !ours(sid) {
				othersBefore = append(othersBefore, string(s))
			}
		}
		own := map[string]int{}
		var strangers statement
		for _, s := range after.Statement {
			sid, _ := sidOf(s)
			switch {
			case sid == allowSid(uid) || sid == denySid(uid):
				t.Fatalf("the account's statement survived its revoke: %s", revoked)
			case bucketSid(sid):
				own[sid]++
				if sid == strangersSid {
					_ = json.Unmarshal(s, &strangers)
				}
			case uidOfAllowSid(sid) != "":
				accounts = append(accounts, userARN(uidOfAllowSid(sid)))
			case !ours(sid):
				othersAfter = append(othersAfter, string(s))
			}
		}
		if !sameJSON(othersBefore, othersAfter) {
			t.Fatalf("others' statements changed:\n%v\n%v", othersBefore, othersAfter)
		}
		if len(own) != 3+len(grantHeaders) || slices.ContainsFunc(slices.Collect(maps.Values(own)), func(n int) bool { return n != 1 }) {
			t.Fatalf("the bucket's own statements: %v", own)
		}
		if want := append([]string{userARN("owner")}, accounts...); !slices.Equal(strangers.NotPrincipal["AWS"], want) {
			t.Fatalf("the strangers' Deny admits %v, want %v", strangers.NotPrincipal["AWS"], want)
		}
	})
}

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func TestRGWError(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	live := context.Background()
	const secret = "SECRETSECRETSECRET"
	undecodable := fmt.Errorf("failed to unmarshal radosgw http response. {\"secret_key\":\"%s\". %w", secret, io.ErrUnexpectedEOF)
	resp := func(code int) error {
		return &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: code}}, Err: errors.New("x")}
	}
	for _, tc := range []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"connection refused", live, &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, driver.ErrUnavailable},
		{"reset", live, fmt.Errorf("read: %w", syscall.ECONNRESET), driver.ErrUnavailable},
		{"dial timeout", live, timeoutErr{}, driver.ErrUnavailable},
		{"cut short", live, io.ErrUnexpectedEOF, driver.ErrUnavailable},
		{"admin 503", live, statusError{503}, driver.ErrUnavailable},
		{"S3 500", live, resp(500), driver.ErrUnavailable},
		{"S3 SlowDown", live, &smithy.GenericAPIError{Code: "SlowDown"}, driver.ErrUnavailable},
		{"inner deadline", live, context.DeadlineExceeded, driver.ErrUnavailable},
		{"the call's own deadline", done, context.Canceled, context.Canceled},
		{"undecodable answer", live, undecodable, driver.ErrUnavailable},
		{"driver's key refused", live, &smithy.GenericAPIError{Code: "InvalidAccessKeyId"}, driver.ErrFailedPrecondition},
		{"admin access denied", live, admin.ErrAccessDenied, driver.ErrFailedPrecondition},
	} {
		got := rgwError(tc.ctx, "doing it", tc.err)
		if !errors.Is(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
		if strings.Contains(got.Error(), secret) {
			t.Errorf("%s: the message quotes the answer: %v", tc.name, got)
		}
	}
	if err := rgwError(live, "x", &smithy.GenericAPIError{Code: "NoSuchKey"}); errors.Is(err, driver.ErrUnavailable) || errors.Is(err, driver.ErrFailedPrecondition) {
		t.Errorf("a plain S3 error became a sentinel: %v", err)
	}
}

func TestKeyedMutex(t *testing.T) {
	var k keyedMutex
	unlock, err := k.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := k.lock(context.Background(), "b") // another key does not wait
	if err != nil {
		t.Fatal(err)
	}
	other()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := k.lock(ctx, "a"); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("waiting on a held key past the deadline: %v", err)
	}
	unlock()
	again, err := k.lock(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	again()
	if len(k.m) != 0 {
		t.Errorf("%d entries left", len(k.m))
	}
}

func TestSecretPrints(t *testing.T) {
	cfg := Config{Endpoint: "http://x", AdminAccessKey: "AKIDCANARY", AdminSecretKey: "SECRETCANARY"}
	b, err := json.Marshal(struct{ Access, Secret Secret }{cfg.AdminAccessKey, cfg.AdminSecretKey})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%s|%q|%x", cfg.AdminSecretKey, cfg.AdminSecretKey, cfg.AdminSecretKey), string(b)} {
		if strings.Contains(s, "CANARY") {
			t.Errorf("a key printed: %s", s)
		}
	}
}

func TestNewRefusesBadEndpoints(t *testing.T) {
	for _, ep := range []string{"", "127.0.0.1:8000", "ftp://rgw", "http://", "http://rgw?x=1", "http://rgw#f",
		"http://admin:USERINFOCANARY@rgw:8000", "::"} {
		_, err := New(Config{Endpoint: ep, AdminAccessKey: "a", AdminSecretKey: "s"})
		if err == nil {
			t.Errorf("endpoint %q: accepted", ep)
		} else if strings.Contains(err.Error(), "USERINFOCANARY") {
			t.Errorf("endpoint %q: the error quotes its user information: %v", ep, err)
		}
	}
	for _, ep := range []string{"http://127.0.0.1:8000", "https://rgw.example/", "http://[::1]:80"} {
		if _, err := New(Config{Endpoint: ep, AdminAccessKey: "a", AdminSecretKey: "s"}); err != nil {
			t.Errorf("endpoint %q: %v", ep, err)
		}
	}
	if _, err := New(Config{Endpoint: "http://rgw", AdminAccessKey: "a", AdminSecretKey: "s", OwnerUID: AccountUID("x")}); err == nil {
		t.Error("an owner shaped like an account's user: accepted")
	}
}
