package cephfs

import (
	"errors"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver"
)

func TestCephName(t *testing.T) {
	for _, tc := range []struct {
		in, want string
	}{
		{"pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0", "pvc-0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0"},
		{"snapshot-1", "snapshot-1"},
		{"a_b", "a_b"},
		{"csikit-h-0123", "csikit-h-"},      // reserved prefix: hashed
		{"csikit-clone-x", "csikit-h-"},     // likewise
		{"-leading-dash", "csikit-h-"},      // not a safe first character
		{"has space", "csikit-h-"},          // unsafe character
		{"dots.are.not.plain", "csikit-h-"}, // unsafe character
		{"sanity-Node Service-1234", "csikit-h-"},
		{strings.Repeat("a", 64), strings.Repeat("a", 64)},
		{strings.Repeat("a", 65), "csikit-h-"},
	} {
		got := CephName(tc.in)
		if strings.HasSuffix(tc.want, "-h-") {
			if !isHashed(got) {
				t.Errorf("CephName(%q) = %q, want a hashed name", tc.in, got)
			}
		} else if got != tc.want {
			t.Errorf("CephName(%q) = %q, want %q", tc.in, got, tc.want)
		}
		if !issued(got) {
			t.Errorf("CephName(%q) = %q, which parseVolumeID would refuse", tc.in, got)
		}
	}
}

func TestParseIDs(t *testing.T) {
	for _, id := range []string{"", "a/b", "..", "csikit-clone-x", "csikit-h-XYZ", "x@y", strings.Repeat("b", 65)} {
		if _, err := parseVolumeID(id); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("parseVolumeID(%q) = %v, want ErrNotFound", id, err)
		}
	}
	for _, id := range []string{"", "vol", "vol@", "@snap", "vol@csikit-clone-vol2", "a@b@c", "v/x@s"} {
		if _, _, err := parseSnapshotID(id); !errors.Is(err, driver.ErrNotFound) {
			t.Errorf("parseSnapshotID(%q) = %v, want ErrNotFound", id, err)
		}
	}
	sv, snap, err := parseSnapshotID(snapshotID(CephName("pvc-1"), CephName("a snapshot")))
	if err != nil || sv != "pvc-1" || snap != CephName("a snapshot") {
		t.Errorf("round trip: %q %q %v", sv, snap, err)
	}
}

// FuzzCephName: CephName is deterministic and injective on what it keeps plain, always gives a
// name the ID parsers accept, and never one that starts with the reserved prefix unless hashed.
func FuzzCephName(f *testing.F) {
	for _, s := range []string{"pvc-1", "csikit-h-00", "a b", "", "x@y", strings.Repeat("z", 70), "csikit-clone-a", "é"} {
		f.Add(s, "pvc-2")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		na, nb := CephName(a), CephName(b)
		if na != CephName(a) {
			t.Fatalf("not deterministic for %q", a)
		}
		if !issued(na) {
			t.Fatalf("CephName(%q) = %q is refused by the ID parsers", a, na)
		}
		if strings.HasPrefix(na, reservedPrefix) && !isHashed(na) {
			t.Fatalf("CephName(%q) = %q takes the reserved prefix", a, na)
		}
		if a != b && na == nb {
			t.Fatalf("CephName(%q) == CephName(%q) == %q", a, b, na)
		}
		if strings.Contains(na, snapshotIDSeparator) || strings.Contains(na, "/") {
			t.Fatalf("CephName(%q) = %q holds a separator", a, na)
		}
	})
}

func TestMonAddrs(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want string
	}{
		{"[v2:127.0.0.1:3300,v1:127.0.0.1:6789]", "127.0.0.1:3300 127.0.0.1:6789"},
		{"10.0.0.1:6789/0,10.0.0.2", "10.0.0.1:6789 10.0.0.2:3300 10.0.0.2:6789"},
		{"mon-a mon-b:6789", "mon-a:3300 mon-a:6789 mon-b:6789"},
	} {
		if got := strings.Join(monAddrs(tc.in), " "); got != tc.want {
			t.Errorf("monAddrs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestCredentialsFrom(t *testing.T) {
	for _, tc := range []struct {
		name    string
		secrets driver.Secrets
		ok      bool
	}{
		{"good", driver.Secrets{SecretUserID: "csi", SecretUserKey: "AQBxyz+/=="}, true},
		{"no key", driver.Secrets{SecretUserID: "csi"}, false},
		{"no user", driver.Secrets{SecretUserKey: "AQB="}, false},
		{"client. prefix keeps the dot but is a valid id", driver.Secrets{SecretUserID: "client.csi", SecretUserKey: "AQB="}, true},
		{"newline in key", driver.Secrets{SecretUserID: "csi", SecretUserKey: "AQB=\nkey = other"}, false},
		{"bracket in user", driver.Secrets{SecretUserID: "csi]\n[client.admin", SecretUserKey: "AQB="}, false},
	} {
		_, err := credentialsFrom(tc.secrets)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", tc.name, err)
		}
		if err != nil && (!errors.Is(err, driver.ErrInvalidArgument) || strings.Contains(err.Error(), "AQB")) {
			t.Errorf("%s: %v: want ErrInvalidArgument without the value", tc.name, err)
		}
	}
}

// FuzzParseIDs: the ID parsers never panic, accept only names CephName can return, and a
// snapshot ID they accept is rebuilt exactly from its parts.
func FuzzParseIDs(f *testing.F) {
	for _, s := range []string{"pvc-1", "pvc-1@snap-1", "csikit-h-0123456789abcdef0123456789abcdef", "a@b@c", "@", "", "csikit-clone-x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		if v, err := parseVolumeID(id); err == nil {
			if v != id || !issued(v) {
				t.Fatalf("parseVolumeID(%q) = %q", id, v)
			}
		} else if !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("parseVolumeID(%q): %v, want ErrNotFound", id, err)
		}
		if sv, snap, err := parseSnapshotID(id); err == nil {
			if snapshotID(sv, snap) != id || !issued(sv) || !issued(snap) {
				t.Fatalf("parseSnapshotID(%q) = %q, %q", id, sv, snap)
			}
		} else if !errors.Is(err, driver.ErrNotFound) {
			t.Fatalf("parseSnapshotID(%q): %v, want ErrNotFound", id, err)
		}
	})
}

// FuzzCredentialsFrom: whatever the secrets hold, the error never repeats a value, and an
// accepted identity cannot break out of a keyring line.
func FuzzCredentialsFrom(f *testing.F) {
	f.Add("csi", "AQBxyz==")
	f.Add("csi]\n[client.admin", "AQB=\nkey = x")
	f.Fuzz(func(t *testing.T, id, key string) {
		c, err := credentialsFrom(driver.Secrets{SecretUserID: id, SecretUserKey: key})
		if err != nil {
			// A value that is part of the fixed wording ("userKey", "invalid") proves nothing.
			repeats := func(v string) bool {
				return len(v) >= 4 && strings.Contains(err.Error(), v) && !strings.Contains(credentialsWording, v)
			}
			if repeats(key) || repeats(id) {
				t.Fatalf("the error repeats a secret value: %v", err)
			}
			return
		}
		if strings.ContainsAny(c.id+c.key, "\n\r[] \t") {
			t.Fatalf("accepted %q/%q, which could break a keyring line", c.id, c.key)
		}
	})
}

// credentialsWording is every fixed text credentialsFrom's errors are made of.
var credentialsWording = func() string {
	var b strings.Builder
	for _, s := range []driver.Secrets{{}, {SecretUserID: "!", SecretUserKey: "A"}, {SecretUserID: "a", SecretUserKey: "!"}} {
		_, err := credentialsFrom(s)
		b.WriteString(err.Error())
	}
	return b.String()
}()
