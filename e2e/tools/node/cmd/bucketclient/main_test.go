package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// sidecarJSON is what objectstorage-sidecar v0.2.2 writes into the Secret (its BucketInfo
// marshalled with encoding/json), with a made-up key.
const sidecarJSON = `{"metadata":{"name":"bc-1","creationTimestamp":null},"spec":{"bucketName":"bc-1-abc",` +
	`"authenticationType":"Key","secretS3":{"endpoint":"http://csikit-memorys3.csikit-memorys3.svc:9000",` +
	`"region":"us-east-1","accessKeyID":"MS3KEXAMPLE","accessSecretKey":"s3cr3t-value"},"secretAzure":null,"protocols":["s3"]}}`

func TestParseBucketInfo(t *testing.T) {
	bi, err := parseBucketInfo([]byte(sidecarJSON))
	if err != nil {
		t.Fatal(err)
	}
	s := bi.Spec.S3
	if bi.Spec.BucketName != "bc-1-abc" || s.Endpoint != "http://csikit-memorys3.csikit-memorys3.svc:9000" || s.Region != "us-east-1" ||
		s.AccessKeyID != "MS3KEXAMPLE" || s.AccessSecretKey != "s3cr3t-value" {
		t.Errorf("decoded %+v %+v", bi.Spec, *s)
	}
	for _, tc := range []struct{ name, in, want string }{
		{"not JSON", `{`, "not JSON"},
		{"no bucket", `{"spec":{"secretS3":{"endpoint":"e","region":"r","accessKeyID":"a","accessSecretKey":"s"}}}`, "bucketName"},
		{"azure only", `{"spec":{"bucketName":"b","secretAzure":{"accessToken":"t"}}}`, "no spec.secretS3"},
		{"no secret half", `{"spec":{"bucketName":"b","secretS3":{"endpoint":"e","region":"r","accessKeyID":"a"}}}`, "accessKeyID set true, accessSecretKey set false"},
		{"no endpoint", `{"spec":{"bucketName":"b","secretS3":{"region":"r","accessKeyID":"a","accessSecretKey":"s3cr3t-value"}}}`, "endpoint set false"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBucketInfo([]byte(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v, want one containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), "s3cr3t-value") {
				t.Errorf("the error carries the secret: %v", err)
			}
		})
	}
}

// FuzzParseBucketInfo: any input is decoded or refused, and a refusal never carries the secret.
func FuzzParseBucketInfo(f *testing.F) {
	f.Add([]byte(sidecarJSON))
	f.Add([]byte(`{"spec":{"bucketName":"b","secretS3":{"accessSecretKey":"s3cr3t-value"}}}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		bi, err := parseBucketInfo(raw)
		if err != nil {
			if bytes.Contains(raw, []byte("s3cr3t-value")) && strings.Contains(err.Error(), "s3cr3t-value") {
				t.Errorf("error carries the secret: %v", err)
			}
			return
		}
		if bi.Spec.S3 == nil || bi.Spec.BucketName == "" || bi.Spec.S3.AccessSecretKey == "" {
			t.Errorf("accepted an incomplete BucketInfo: %+v", bi.Spec)
		}
	})
}

// TestRunRefusesUsage: a wrong command line is exit 2 before any request.
func TestRunRefusesUsage(t *testing.T) {
	p := filepath.Join(t.TempDir(), "BucketInfo")
	if err := os.WriteFile(p, []byte(sidecarJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{nil, {"put", "k"}, {"get"}, {"delete", "k"}} {
		code, err := run(context.Background(), p, options{}, args, &bytes.Buffer{})
		if code != 2 || err == nil {
			t.Errorf("args %q: exit %d, %v; want 2 and a usage error", args, code, err)
		}
	}
	if code, err := run(context.Background(), filepath.Join(t.TempDir(), "none"), options{}, []string{"get", "k"}, &bytes.Buffer{}); code != 1 || err == nil {
		t.Errorf("missing file: exit %d, %v", code, err)
	}
}

// TestRunExpectRefused: with -expect-refused a 403 is success and a served request failure;
// without it, the other way round. -bucket and -wrong-secret change what is sent.
func TestRunExpectRefused(t *testing.T) {
	var gotPath, gotAuth string
	status := http.StatusForbidden
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotPath, gotAuth = r.URL.Path, r.Header.Get("Authorization")
		if status != http.StatusOK {
			w.WriteHeader(status)
			fmt.Fprint(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>AccessDenied</Code><Message>no</Message></Error>`)
			return
		}
		fmt.Fprint(w, "the object")
	}))
	defer srv.Close()
	p := filepath.Join(t.TempDir(), "BucketInfo")
	if err := os.WriteFile(p, []byte(strings.Replace(sidecarJSON, "http://csikit-memorys3.csikit-memorys3.svc:9000", srv.URL, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		status   int
		o        options
		wantCode int
		wantOut  string
		wantPath string
	}{
		{"refused as expected", http.StatusForbidden, options{expectRefused: true, wrongSecret: true}, 0, "refused: HTTP 403\n", "/bc-1-abc/k"},
		{"served but refusal expected", http.StatusOK, options{expectRefused: true, bucket: "other"}, 1, "", "/other/k"},
		{"served", http.StatusOK, options{}, 0, "the object", "/bc-1-abc/k"},
		{"refused", http.StatusForbidden, options{}, 1, "", "/bc-1-abc/k"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			status = tc.status
			var out bytes.Buffer
			code, err := run(context.Background(), p, tc.o, []string{"get", "k"}, &out)
			if code != tc.wantCode || out.String() != tc.wantOut || gotPath != tc.wantPath {
				t.Errorf("exit %d (%v), output %q, path %q; want %d, %q, %q", code, err, out.String(), gotPath, tc.wantCode, tc.wantOut, tc.wantPath)
			}
			if !strings.Contains(gotAuth, "Credential=MS3KEXAMPLE/") {
				t.Errorf("request not signed with the BucketInfo's key: %q", gotAuth)
			}
			if err != nil && strings.Contains(err.Error(), "s3cr3t-value") {
				t.Errorf("error carries the secret: %v", err)
			}
		})
	}
}
