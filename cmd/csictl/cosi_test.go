package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
	cosi1 "sigs.k8s.io/container-object-storage-interface/proto"

	"github.com/csikit/csikit/driver/bucket"
	cosi2 "github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	"github.com/csikit/csikit/driver/memdriver"
	"github.com/csikit/csikit/driver/plugin"
	"github.com/csikit/csikit/secrets"
)

// bothVersions are the explicit --cosi-version values every COSI test runs under.
var bothVersions = []string{cosiV1Alpha1, cosiV1Alpha2}

// startCOSIPlugin serves memdriver.Buckets as a COSI driver (S3, several buckets per grant) on a
// real unix socket, speaking the given wire versions (both when none is given), with
// COSI_ENDPOINT, and only that, pointing at it.
func startCOSIPlugin(t *testing.T, versions ...bucket.Version) *testPlugin {
	t.Helper()
	p := &testPlugin{t: t, buckets: memdriver.NewBuckets("https://s3.mem.example", "us-east-1")}
	p.serve(plugin.Config{Name: "mem-s3.csikit.dev", VendorVersion: "1.0.0",
		COSI: &plugin.COSIConfig{Provisioner: p.buckets, Protocols: []bucket.Protocol{bucket.S3}, Versions: versions, MultiBucketAccess: true}})
	p.env = map[string]string{envCOSIEndpoint: "unix://" + p.sock}
	return p
}

// grantFile reads a --credentials-file: it must have mode 0600 and hold the whole answer of the
// version's grant. It returns the credential values in it (by the secrets package's definition)
// and the S3 access key ID, for KeyLive.
func grantFile(t *testing.T, path, version string) (values []string, keyID string) {
	t.Helper()
	st, err := os.Stat(path)
	if err != nil {
		t.Fatalf("credentials file: %v", err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("credentials file mode %v, want 0600", st.Mode().Perm())
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var msg proto.Message
	if version == cosiV1Alpha1 {
		r := &cosi1.DriverGrantBucketAccessResponse{}
		msg = r
		err = protojson.Unmarshal(b, r)
		keyID = r.GetCredentials()["s3"].GetSecrets()["accessKeyID"]
	} else {
		r := &cosi2.DriverGrantBucketAccessResponse{}
		msg = r
		err = protojson.Unmarshal(b, r)
		keyID = r.GetCredentials().GetS3().GetAccessKeyId()
	}
	if err != nil {
		t.Fatalf("credentials file is not a %s grant answer: %v\n%s", version, err, b)
	}
	values = secrets.Values(msg)
	if keyID == "" || len(values) < 2 {
		t.Fatalf("credentials file lacks the key: %s", b)
	}
	return values, keyID
}

// noSecret fails when any of values appears in what csictl printed.
func noSecret(t *testing.T, r result, values []string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("credential value printed:\nstdout:\n%s\nstderr:\n%s", r.stdout, r.stderr)
			return
		}
	}
}

// runCOSILifecycle runs every COSI command against memdriver.Buckets in both wire versions,
// recording the commands run in ran; TestEveryCommand calls it, so that it fails when a COSI
// command is left out.
func runCOSILifecycle(t *testing.T, ran map[string]bool) {
	root := newRootCmd(&app{})
	for _, v := range bothVersions {
		p := startCOSIPlugin(t)
		do := func(want string, args ...string) result {
			t.Helper()
			c, _, err := root.Find(args)
			if err != nil {
				t.Fatalf("find %v: %v", args, err)
			}
			ran[c.CommandPath()] = true
			r := p.run(append(args, "--cosi-version", v)...)
			if r.code != exitOK {
				t.Fatalf("%s: csictl %s: exit %d\n%s", v, strings.Join(args, " "), r.code, r.stderr)
			}
			if !strings.Contains(r.stdout, want) {
				t.Errorf("%s: csictl %s: output lacks %q:\n%s", v, strings.Join(args, " "), want, r.stdout)
			}
			return r
		}
		do("mem-s3.csikit.dev  "+v, "cosi", "info")
		id := field(t, do("bucket_id", "bucket", "create", "bc-1", "--param", "tier=fast", "-o", "json").stdout, "bucket_id")
		creds := filepath.Join(t.TempDir(), "ba-1.json")
		r := do("acct-ba-1", "bucket", "grant", id, "--account", "ba-1", "--credentials-file", creds)
		values, keyID := grantFile(t, creds, v)
		noSecret(t, r, values)
		if !p.buckets.KeyLive(keyID) {
			t.Errorf("%s: granted key is not live", v)
		}
		do("revoked", "bucket", "revoke", "acct-ba-1", "--bucket", id)
		if p.buckets.KeyLive(keyID) {
			t.Errorf("%s: key still live after revoke", v)
		}
		if v == cosiV1Alpha2 {
			// What only v1alpha2 can say: protocols, static buckets, several buckets with modes.
			id2 := field(t, do("bucket_id", "bucket", "create", "bc-2", "--protocol", "s3", "-o", "json").stdout, "bucket_id")
			do("https://s3.mem.example", "bucket", "get", id2, "--protocol", "s3")
			r := do("acct-ba-2  "+id2, "bucket", "grant", id, id2, "--account", "ba-2", "--mode", "ro", "--bucket-mode", id2+"=rw", "--protocol", "s3")
			if !strings.Contains(r.stdout, "access_key_id,access_secret_key") {
				t.Errorf("credential names missing:\n%s", r.stdout)
			}
			do("revoked", "bucket", "revoke", "acct-ba-2", "--bucket", id, "--bucket", id2, "--protocol", "s3")
			do("deleted", "bucket", "delete", id2)
		}
		do("deleted", "bucket", "delete", id, "--param", "reason=test")
	}
}

// TestCOSIGolden pins the table, json and yaml forms of cosi info, bucket create and bucket grant
// in both versions. Bucket and account IDs come from names, and the credentials (random) are
// printed as placeholders, so the output is the same on every run.
func TestCOSIGolden(t *testing.T) {
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) {
			p := startCOSIPlugin(t)
			create := []string{"bucket", "create", "bc-a", "--param", "tier=fast", "--cosi-version", v}
			grant := []string{"bucket", "grant", "bc-a", "--account", "ba-a", "--cosi-version", v}
			if v == cosiV1Alpha2 {
				create = append(create, "--protocol", "s3")
				grant = append(grant, "--mode", "ro")
			}
			cases := [][]string{{"cosi", "info", "--cosi-version", v}}
			for _, format := range []string{outputTable, outputJSON, outputYAML} {
				cases = append(cases, append(slices.Clone(create), "-o", format), append(slices.Clone(grant), "-o", format))
			}
			cases = append(cases, []string{"cosi", "info", "--cosi-version", v, "-o", "json"})
			for _, args := range cases {
				r := p.run(args...)
				if r.code != exitOK {
					t.Fatalf("csictl %v: exit %d: %s", args, r.code, r.stderr)
				}
				format := outputTable
				if i := slices.Index(args, "-o"); i >= 0 {
					format = args[i+1]
				}
				golden(t, args[0]+"-"+args[1]+"."+v+"."+format, r.stdout)
			}
		})
	}
}

// TestCOSIUsageErrors checks that a wrong COSI command line, including what the chosen wire
// version cannot express, exits 2 with the usage and never reaches the plugin.
func TestCOSIUsageErrors(t *testing.T) {
	p := startCOSIPlugin(t)
	v1 := []string{"--cosi-version", cosiV1Alpha1}
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string // replaces the plugin's environment when set
		want string
	}{
		{"no bucket subcommand", []string{"bucket"}, nil, "missing subcommand"},
		{"unknown cosi subcommand", []string{"cosi", "inf"}, nil, "did you mean info?"},
		{"info argument", []string{"cosi", "info", "x"}, nil, "takes 0 argument(s)"},
		{"bad version", []string{"cosi", "info", "--cosi-version", "v1"}, nil, `invalid --cosi-version "v1"`},
		{"CSI endpoint only", []string{"cosi", "info"}, map[string]string{envEndpoint: "unix:///tmp/csi.sock"}, "set --endpoint or COSI_ENDPOINT"},
		{"create without name", []string{"bucket", "create"}, nil, "takes 1 argument(s) (NAME), got 0"},
		{"unknown protocol", []string{"bucket", "create", "b", "--protocol", "ftp"}, nil, `invalid --protocol "ftp": use azure, gcs, s3`},
		{"protocol twice", []string{"bucket", "create", "b", "--protocol", "s3", "--protocol", "S3"}, nil, "given twice"},
		{"bad param", []string{"bucket", "create", "b", "--param", "x"}, nil, "want key=value"},
		{"v1alpha1 create protocol", append([]string{"bucket", "create", "b", "--protocol", "s3"}, v1...), nil, "names no protocol (COSI v1alpha1: as --cosi-version says)"},
		{"v1alpha1 get", append([]string{"bucket", "get", "b"}, v1...), nil, "needs COSI v1alpha2"},
		{"delete without ID", []string{"bucket", "delete"}, nil, "(BUCKET_ID), got 0"},
		{"grant without bucket", []string{"bucket", "grant", "--account", "a"}, nil, "at least 1 argument"},
		{"grant without account", []string{"bucket", "grant", "b"}, nil, `required flag(s) "account" not set`},
		{"grant bucket twice", []string{"bucket", "grant", "b", "b", "--account", "a"}, nil, `bucket "b" given twice`},
		{"bad auth", []string{"bucket", "grant", "b", "--account", "a", "--auth", "password"}, nil, `invalid --auth "password"`},
		{"bad mode", []string{"bucket", "grant", "b", "--account", "a", "--mode", "rx"}, nil, `invalid --mode "rx"`},
		{"mode of another bucket", []string{"bucket", "grant", "b", "--account", "a", "--bucket-mode", "c=ro"}, nil, `bucket "c" is not among the buckets granted`},
		{"bad bucket mode", []string{"bucket", "grant", "b", "--account", "a", "--bucket-mode", "b=all"}, nil, `invalid --bucket-mode "all"`},
		{"service account with key", []string{"bucket", "grant", "b", "--account", "a", "--service-account", "sa"}, nil, "for --auth service-account only"},
		{"service account missing", []string{"bucket", "grant", "b", "--account", "a", "--auth", "service-account", "--cosi-version", cosiV1Alpha2}, nil, "needs --service-account"},
		{"v1alpha1 two buckets", append([]string{"bucket", "grant", "b", "c", "--account", "a"}, v1...), nil, "takes one BUCKET_ID, got 2"},
		{"v1alpha1 read-only", append([]string{"bucket", "grant", "b", "--account", "a", "--mode", "ro"}, v1...), nil, "no access modes"},
		{"v1alpha1 grant protocol", append([]string{"bucket", "grant", "b", "--account", "a", "--protocol", "s3"}, v1...), nil, "names no protocol"},
		{"v1alpha1 service account", append([]string{"bucket", "grant", "b", "--account", "a", "--auth", "service-account", "--service-account", "sa"}, v1...), nil, "names no service account"},
		{"revoke without bucket", []string{"bucket", "revoke", "acct"}, nil, `required flag(s) "bucket" not set`},
		{"revoke empty bucket", []string{"bucket", "revoke", "acct", "--bucket", ""}, nil, "empty bucket ID"},
		{"v1alpha1 revoke two buckets", append([]string{"bucket", "revoke", "acct", "--bucket", "b", "--bucket", "c"}, v1...), nil, "takes one --bucket, got 2"},
		{"v1alpha1 revoke auth", append([]string{"bucket", "revoke", "acct", "--bucket", "b", "--auth", "key"}, v1...), nil, "names none of them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := p.reached()
			if tc.env != nil {
				env := p.env
				p.env = tc.env
				defer func() { p.env = env }()
			}
			r := p.run(tc.args...)
			if r.code != exitUsage {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, exitUsage, r.stderr)
			}
			if !strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, "Usage:") {
				t.Errorf("stderr lacks %q and the usage:\n%s", tc.want, r.stderr)
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty:\n%s", r.stdout)
			}
			if got := p.reached(); got != before {
				t.Errorf("a bad command line reached the plugin (%d calls)", got-before)
			}
		})
	}
}

// TestCOSICallErrors checks that a failed COSI call prints "Error: CODE: message" and exits 1.
func TestCOSICallErrors(t *testing.T) {
	p := startCOSIPlugin(t)
	p.ok("bucket", "create", "bc-1", "--param", "tier=fast")
	p.ok("bucket", "grant", "bc-1", "--account", "ba-1", "--cosi-version", cosiV1Alpha1)
	v2only := startCOSIPlugin(t, bucket.V1Alpha2)
	missingDir := filepath.Join(t.TempDir(), "absent", "creds.json")
	for _, tc := range []struct {
		name string
		p    *testPlugin
		args []string
		want string
	}{
		{"get unknown bucket", p, []string{"bucket", "get", "nonexistent"}, "Error: NOT_FOUND: "},
		{"same name, other parameters", p, []string{"bucket", "create", "bc-1", "--param", "tier=slow"}, "Error: ALREADY_EXISTS: "},
		{"same name, other parameters, v1alpha1", p, []string{"bucket", "create", "bc-1", "--cosi-version", cosiV1Alpha1}, "Error: ALREADY_EXISTS: "},
		{"grant unknown bucket", p, []string{"bucket", "grant", "nonexistent", "--account", "ba-2"}, "Error: NOT_FOUND: "},
		{"grant unknown bucket, v1alpha1", p, []string{"bucket", "grant", "nonexistent", "--account", "ba-2", "--cosi-version", cosiV1Alpha1}, "Error: NOT_FOUND: "},
		// v1alpha1 answers FAILED_PRECONDITION where v1alpha2 says ALREADY_EXISTS (see the driver).
		{"regrant other mode", p, []string{"bucket", "grant", "bc-1", "--account", "ba-1", "--mode", "ro"}, "Error: ALREADY_EXISTS: "},
		{"regrant other parameters, v1alpha1", p, []string{"bucket", "grant", "bc-1", "--account", "ba-1", "--param", "x=y", "--cosi-version", cosiV1Alpha1}, "Error: FAILED_PRECONDITION: "},
		{"delete a bucket in use", p, []string{"bucket", "delete", "bc-1"}, "Error: FAILED_PRECONDITION: "},
		// memdriver.Buckets grants keys only; the plugin, not csictl, refuses the rest.
		{"service account not supported", p, []string{"bucket", "grant", "bc-1", "--account", "ba-3", "--auth", "service-account", "--service-account", "sa"}, "Error: INVALID_ARGUMENT: "},
		{"v1alpha1 to a v1alpha2 plugin", v2only, []string{"bucket", "create", "bc-1", "--cosi-version", cosiV1Alpha1}, "Error: UNIMPLEMENTED: "},
		{"auto, plugin not listening", p, []string{"cosi", "info", "--endpoint", filepath.Join(t.TempDir(), "none.sock")}, "Error: UNAVAILABLE: "},
		{"credentials file not writable", p, []string{"bucket", "grant", "bc-1", "--account", "ba-1", "--credentials-file", missingDir}, "Error: credentials file"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.p.run(tc.args...)
			if r.code != exitFail {
				t.Errorf("exit %d, want %d\nstderr:\n%s", r.code, exitFail, r.stderr)
			}
			if !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 {
				t.Errorf("stderr = %q, want one line starting %q", r.stderr, tc.want)
			}
			if r.stdout != "" {
				t.Errorf("a failed call printed:\n%s", r.stdout)
			}
		})
	}
}

// TestCOSIAuto checks --cosi-version auto: v1alpha2 when the plugin serves it, v1alpha1 when
// v1alpha2 is UNIMPLEMENTED, and what v1alpha1 cannot express refused with the reason.
func TestCOSIAuto(t *testing.T) {
	for _, tc := range []struct {
		name   string
		served []bucket.Version
		want   string
	}{
		{"both served", nil, cosiV1Alpha2},
		{"v1alpha2 served", []bucket.Version{bucket.V1Alpha2}, cosiV1Alpha2},
		{"v1alpha1 served", []bucket.Version{bucket.V1Alpha1}, cosiV1Alpha1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := startCOSIPlugin(t, tc.served...)
			if out := p.ok("cosi", "info"); !strings.Contains(out, "mem-s3.csikit.dev  "+tc.want) {
				t.Errorf("cosi info: want version %s:\n%s", tc.want, out)
			}
			// A whole lifecycle in the version found, without naming it.
			id := field(t, p.ok("bucket", "create", "bc-1", "-o", "json"), "bucket_id")
			creds := filepath.Join(t.TempDir(), "creds.json")
			r := p.run("bucket", "grant", id, "--account", "ba-1", "--credentials-file", creds)
			if r.code != exitOK {
				t.Fatalf("grant: exit %d: %s", r.code, r.stderr)
			}
			values, _ := grantFile(t, creds, tc.want)
			noSecret(t, r, values)
			p.ok("bucket", "revoke", "acct-ba-1", "--bucket", id)
			p.ok("bucket", "delete", id)

			r = p.run("bucket", "get", id)
			if tc.want == cosiV1Alpha1 {
				if r.code != exitUsage || !strings.Contains(r.stderr, "the plugin does not serve v1alpha2") {
					t.Errorf("get under detected v1alpha1: exit %d, stderr:\n%s", r.code, r.stderr)
				}
			} else if r.code != exitFail || !strings.HasPrefix(r.stderr, "Error: NOT_FOUND: ") {
				t.Errorf("get of a deleted bucket: exit %d, stderr:\n%s", r.code, r.stderr)
			}
		})
	}
}

// TestCOSICredentials checks that grant credentials reach the --credentials-file only: never
// stdout or stderr in any format or version, the file replaced with mode 0600 even when it
// existed with a looser one, and a note on stderr when no file was given.
func TestCOSICredentials(t *testing.T) {
	for _, v := range bothVersions {
		t.Run(v, func(t *testing.T) {
			p := startCOSIPlugin(t)
			p.ok("bucket", "create", "bc-1", "--cosi-version", v)
			creds := filepath.Join(t.TempDir(), "creds.json")
			if err := os.WriteFile(creds, []byte("old"), 0o644); err != nil {
				t.Fatal(err)
			}
			grant := []string{"bucket", "grant", "bc-1", "--account", "ba-1", "--cosi-version", v}
			r := p.run(append(grant, "--credentials-file", creds)...)
			if r.code != exitOK {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			values, _ := grantFile(t, creds, v)
			noSecret(t, r, values)
			if r.stderr != "" {
				t.Errorf("stderr with --credentials-file: %s", r.stderr)
			}
			for _, format := range []string{outputTable, outputJSON, outputYAML} {
				r := p.run(append(grant, "-o", format)...)
				if r.code != exitOK {
					t.Fatalf("-o %s: exit %d: %s", format, r.code, r.stderr)
				}
				noSecret(t, r, values)
				if !strings.Contains(r.stderr, "credentials not saved") {
					t.Errorf("-o %s: no note that the credentials were not saved: %q", format, r.stderr)
				}
				if format != outputTable && !strings.Contains(r.stdout, secrets.Placeholder) {
					t.Errorf("-o %s: credentials not shown as %s:\n%s", format, secrets.Placeholder, r.stdout)
				}
			}
			// A failing grant (the account has other buckets now) prints no value either.
			r = p.run(append(grant, "--param", "x=y")...)
			if r.code != exitFail {
				t.Errorf("incompatible grant: exit %d", r.code)
			}
			noSecret(t, r, values)
		})
	}
}

// TestCOSICompletion checks the completion the COSI commands offer: fixed values for the enum
// flags, ID=MODE for the buckets on the command line, and nothing (and no files) for bucket and
// account IDs, which COSI cannot list.
func TestCOSICompletion(t *testing.T) {
	p := startCOSIPlugin(t)
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"bucket", "create", "b", "--protocol", ""}, []string{"s3", "azure", "gcs"}},
		{[]string{"bucket", "grant", "b", "--auth", ""}, []string{"key", "service-account"}},
		{[]string{"bucket", "grant", "b", "--mode", ""}, []string{"rw", "ro", "wo"}},
		{[]string{"bucket", "grant", "b1", "b2", "--bucket-mode", "b2"}, []string{"b2=rw", "b2=ro", "b2=wo"}},
		{[]string{"cosi", "info", "--cosi-version", ""}, cosiVersions},
		{[]string{"bucket", "delete", ""}, nil},
		{[]string{"bucket", "revoke", "acct", "--bucket", ""}, nil},
	} {
		out := p.ok(append([]string{"__complete"}, tc.args...)...)
		lines := strings.Split(strings.TrimSpace(out), "\n")
		got, directive := lines[:len(lines)-1], lines[len(lines)-1]
		if !slices.Equal(got, tc.want) && !(len(got) == 0 && tc.want == nil) {
			t.Errorf("complete %v = %q, want %q", tc.args, got, tc.want)
		}
		if directive != ":"+strconv.Itoa(int(cobra.ShellCompDirectiveNoFileComp)) {
			t.Errorf("complete %v: directive %s, want no file completion", tc.args, directive)
		}
	}
}
