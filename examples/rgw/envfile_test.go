package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// shlexQuote is Python's shlex.quote, which ceph-up.sh writes cluster.env with.
func shlexQuote(s string) string {
	if s == "" {
		return "''"
	}
	safe := true
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("_@%+=:,./-", c)) {
			safe = false
			break
		}
	}
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

func TestParseEnvFile(t *testing.T) {
	in := "# Written by ceph-up.sh\n\nRGW_ENDPOINT=http://127.0.0.1:8000\nCEPH_MON_HOST='[v2:127.0.0.1:3300,v1:127.0.0.1:3301]'\n" +
		"RGW_SECRET_KEY=" + shlexQuote(`a'b"c d$e`) + "\nexport DQ=\"x\\\"y\\\\z\"\nMIXED=ab'c d'\"e\"\n"
	got, err := parseEnvFile(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{"RGW_ENDPOINT": "http://127.0.0.1:8000", "CEPH_MON_HOST": "[v2:127.0.0.1:3300,v1:127.0.0.1:3301]",
		"RGW_SECRET_KEY": `a'b"c d$e`, "DQ": `x"y\z`, "MIXED": "abc de"} {
		if got[k] != want {
			t.Errorf("%s = %q, want %q", k, got[k], want)
		}
	}
	for _, bad := range []string{"NOEQUALS\n", "1KEY=x\n", "K=$HOME\n", "K=sec ret\n", "K='open\n", "K=\"$x\"\n", "K=`id`\n", "K=x;rm\n", "K=a\\"} {
		_, err := parseEnvFile(strings.NewReader("SECRET=hunter2\n" + bad))
		if err == nil {
			t.Errorf("%q: accepted", bad)
			continue
		}
		_, value, _ := strings.Cut(strings.TrimSpace(bad), "=")
		if strings.Contains(err.Error(), "hunter2") || (len(value) >= 3 && strings.Contains(err.Error(), value)) {
			t.Errorf("%q: the error quotes a value: %v", bad, err)
		}
	}
}

// FuzzParseEnvFile: any value shlex.quote writes is read back as it was, and no input panics.
func FuzzParseEnvFile(f *testing.F) {
	for _, s := range []string{"plain", "", "with space", `it's`, `"dq"`, "$HOME", "tab\there", "ünïcode"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		_, _ = parseEnvFile(strings.NewReader(v)) // anything at all: no panic
		if strings.ContainsAny(v, "\n\r") {
			return // one line per assignment
		}
		got, err := parseEnvFile(strings.NewReader("K=" + shlexQuote(v) + "\n"))
		if err != nil || got["K"] != v {
			t.Fatalf("%q quoted as %s: read %q, %v", v, shlexQuote(v), got["K"], err)
		}
	})
}

func TestRGWConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	env := write("cluster.env", "RGW_ENDPOINT=http://a:1\nRGW_ACCESS_KEY=AKFROMENV\nRGW_SECRET_KEY=SKFROMENV\n")
	secret := write("secret", "SKFROMFILE\n")
	cfg, err := rgwConfig(env, "", "", secret)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Endpoint != "http://a:1" || cfg.AdminAccessKey != "AKFROMENV" || cfg.AdminSecretKey != "SKFROMFILE" {
		t.Errorf("the flags do not win over the file: %s %v", cfg.Endpoint, string(cfg.AdminSecretKey) == "SKFROMFILE")
	}
	if _, err := rgwConfig("", "http://a:1", "", ""); err == nil {
		t.Error("no admin key: accepted")
	}
	if _, err := rgwConfig(filepath.Join(dir, "missing"), "", "", ""); err == nil {
		t.Error("a missing config file: accepted")
	}
	if _, err := rgwConfig(write("bad.env", "RGW_SECRET_KEY=SKBAD $x\n"), "", "", ""); err == nil || strings.Contains(err.Error(), "SKBAD") {
		t.Errorf("a bad config file: %v", err)
	}
}
