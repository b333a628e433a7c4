package cosiv1alpha2_test

import (
	"fmt"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"

	v1alpha2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/secrets"
)

// credentialFields are the credential fields of the v1alpha2 wire, by full name as generated
// here. COSI marks none of them (and this file carries no cosi_secret option at all), so csikit's
// secrets package must recognise each by message and field name.
var credentialFields = []protoreflect.FullName{
	"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_key_id",
	"sigs.k8s.io.cosi.v1alpha2.S3CredentialInfo.access_secret_key",
	"sigs.k8s.io.cosi.v1alpha2.AzureCredentialInfo.access_token",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_id",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.access_secret",
	"sigs.k8s.io.cosi.v1alpha2.GcsCredentialInfo.private_key_name",
}

// TestCredentialFieldsAreSecret checks secrets.IsSecretField on every credential field of
// these bindings, and that every message that can carry credentials is known to.
func TestCredentialFieldsAreSecret(t *testing.T) {
	fd := file()
	for _, name := range credentialFields {
		msg, field := name.Parent(), name.Name()
		md := fd.Messages().ByName(msg.Name())
		if md == nil || md.FullName() != msg {
			t.Errorf("%s: message %s not in the file", name, msg)
			continue
		}
		f := md.Fields().ByName(field)
		if f == nil {
			t.Errorf("%s: no field %s", name, field)
			continue
		}
		if !secrets.IsSecretField(f) {
			t.Errorf("secrets.IsSecretField(%s) = false: the credential would be logged in clear", f.FullName())
		}
	}
	for _, m := range []proto.Message{
		&v1alpha2.S3CredentialInfo{},
		&v1alpha2.AzureCredentialInfo{},
		&v1alpha2.GcsCredentialInfo{},
		&v1alpha2.CredentialInfo{},
		&v1alpha2.DriverGrantBucketAccessResponse{},
	} {
		if d := m.ProtoReflect().Descriptor(); !secrets.HasSecrets(d) {
			t.Errorf("secrets.HasSecrets(%s) = false", d.FullName())
		}
	}
}

// grantResponse is a DriverGrantBucketAccessResponse carrying every credential field of every
// protocol (a real answer carries one protocol's), each with a value that appears nowhere else.
func grantResponse() (*v1alpha2.DriverGrantBucketAccessResponse, []string) {
	values := []string{
		"AKIACANARYKEYID0001",
		"canary/secret+key=0002",
		"sv=2026-01-01&sig=CANARYTOKEN0003",
		"GOOGCANARYHMACID0004",
		"canary-hmac-secret-0005",
		"projects/p/serviceAccounts/sa/keys/CANARYKEYNAME0006",
	}
	resp := &v1alpha2.DriverGrantBucketAccessResponse{
		AccountId: "ba-0b7e3c1e",
		Buckets: []*v1alpha2.DriverGrantBucketAccessResponse_BucketInfo{{
			BucketId: "bucket-1",
			BucketInfo: &v1alpha2.ObjectProtocolAndBucketInfo{S3: &v1alpha2.S3BucketInfo{
				BucketId: "bucket-1",
				Endpoint: "https://s3.example.com",
				Region:   "us-east-1",
				AddressingStyle: &v1alpha2.S3AddressingStyle{
					Style: v1alpha2.S3AddressingStyle_PATH,
				},
			}},
		}},
		Credentials: &v1alpha2.CredentialInfo{
			S3: &v1alpha2.S3CredentialInfo{
				AccessKeyId:     values[0],
				AccessSecretKey: values[1],
			},
			Azure: &v1alpha2.AzureCredentialInfo{
				AccessToken:     values[2],
				ExpiryTimestamp: "2026-12-31T23:59:59Z",
			},
			Gcs: &v1alpha2.GcsCredentialInfo{
				AccessId:       values[3],
				AccessSecret:   values[4],
				PrivateKeyName: values[5],
				ServiceAccount: "sa@p.iam.gserviceaccount.com",
			},
		},
	}
	return resp, values
}

// TestGrantResponseRedacted prints a DriverGrantBucketAccessResponse every way csikit does
// (secrets.String, a zap field through the Redactor, a redacted copy printed with %v, prototext
// and protojson) and checks that no credential value shows while the non-secret fields an
// operator needs still do.
func TestGrantResponseRedacted(t *testing.T) {
	resp, values := grantResponse()
	orig := proto.Clone(resp)

	r := secrets.NewRedactor()
	redacted := r.Redact(resp)
	outputs := map[string]string{
		"secrets.String":        secrets.String(resp),
		"Redactor.String":       r.String(resp),
		"heuristic String":      secrets.NewRedactor(secrets.WithHeuristic(true)).String(resp),
		"Redact %v":             fmt.Sprintf("%v", redacted),
		"Redact prototext":      prototext.Format(redacted),
		"Redact protojson":      protojson.Format(redacted),
		"Scrub of a raw string": secrets.Scrub("backend said: "+prototext.Format(resp), resp),
	}
	for how, out := range outputs {
		for _, v := range values {
			if strings.Contains(out, v) {
				t.Errorf("%s shows credential %q:\n%s", how, v, out)
			}
		}
		if how == "Scrub of a raw string" {
			continue
		}
		for _, keep := range []string{"ba-0b7e3c1e", "bucket-1", "https://s3.example.com", "2026-12-31T23:59:59Z"} {
			if !strings.Contains(out, keep) {
				t.Errorf("%s hides non-secret %q:\n%s", how, keep, out)
			}
		}
		if !strings.Contains(out, secrets.Placeholder) {
			t.Errorf("%s has no %q placeholder:\n%s", how, secrets.Placeholder, out)
		}
	}

	// Values finds exactly the six credentials, so Scrub can remove them from any text.
	got := secrets.Values(resp)
	for _, v := range values {
		found := false
		for _, g := range got {
			if g == v {
				found = true
			}
		}
		if !found {
			t.Errorf("secrets.Values misses credential %q (got %q)", v, got)
		}
	}

	// Redaction copies; the answer that goes on the wire keeps its credentials.
	if !proto.Equal(resp, orig) {
		t.Error("Redact modified the message it was given")
	}
	rc := redacted.(*v1alpha2.DriverGrantBucketAccessResponse).GetCredentials()
	for _, v := range []string{
		rc.GetS3().GetAccessKeyId(), rc.GetS3().GetAccessSecretKey(),
		rc.GetAzure().GetAccessToken(),
		rc.GetGcs().GetAccessId(), rc.GetGcs().GetAccessSecret(), rc.GetGcs().GetPrivateKeyName(),
	} {
		if v != secrets.Placeholder {
			t.Errorf("redacted credential = %q, want %q", v, secrets.Placeholder)
		}
	}
}
