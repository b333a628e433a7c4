package secrets

import (
	"strings"
	"testing"
)

func TestValidKey(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		{"password", true},
		{"csi.storage.k8s.io_user-name.2", true},
		{"A-Z_a-z.0-9", true},
		{"", false},
		{"has space", false},
		{"slash/key", false},
		{"colon:key", false},
		{"ümlaut", false},
		{"tab\tkey", false},
		{"nul\x00", false},
	}
	for _, tt := range tests {
		if got := ValidKey(tt.key); got != tt.want {
			t.Errorf("ValidKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestValidValue(t *testing.T) {
	tests := []struct {
		val  string
		want bool
	}{
		{"", true},
		{"hunter2", true},
		{"pässwörd 密码", true},
		{"\xff\xfe", false},
		{"ok\xc3", false},
	}
	for _, tt := range tests {
		if got := ValidValue(tt.val); got != tt.want {
			t.Errorf("ValidValue(%q) = %v, want %v", tt.val, got, tt.want)
		}
	}
}

func TestLooksSecret(t *testing.T) {
	tests := []struct {
		key  string
		want bool
	}{
		// fragments anywhere
		{"password", true},
		{"DB_PASSWORD", true},
		{"userPassword", true},
		{"passwd", true},
		{"passphrase", true},
		{"secret", true},
		{"clientSecret", true},
		{"csi.storage.k8s.io/provisioner-secret-name", true},
		{"token", true},
		{"authTokenFile", true},
		{"credentials", true},
		{"private", true},
		{"privateKeyPem", true},
		{"apikey", true},
		{"api_key", true},
		{"api-key", true},
		{"X-API-KEY", true},
		{"accesskey", true},
		{"access_key", true},
		{"access-key", true},
		{"accessKeyID", true},
		// last word key/keys
		{"key", true},
		{"KEY", true},
		{"Key", true},
		{"secret-key", true},
		{"encryptionKey", true},
		{"ssh.key", true},
		{"tls.key", true},
		{"SSHKey", true},
		{"APIKey", true},
		{"sshKeys", true},
		{"key1", true},
		{"luks_key_2", true},
		{"publicKey", true}, // generous by design
		// the word pwd
		{"db-pwd", true},
		{"PWD", true},
		// not secret
		{"", false},
		{"keyring", false},
		{"monkey", false},
		{"MONKEY", false},
		{"hotkey", false},
		{"turkey", false},
		{"keyId", false},
		{"key-id", false},
		{"keyfile", false},
		{"key-file", false},
		{"kms-key-name", false},
		{"ssh.key.pem", false},
		{"pool", false},
		{"fsType", false},
		{"replicas", false},
		{"encryption", false},
		{"csi.storage.k8s.io/pvc/name", false},
		{"pwdless", false},
		{"passthrough", false},
	}
	for _, tt := range tests {
		if got := LooksSecret(tt.key); got != tt.want {
			t.Errorf("LooksSecret(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"", "password", "a.b-c_d", "a b", "ü", "\x00", "key/1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		want := k != ""
		for _, c := range []byte(k) {
			ok := 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
			want = want && ok
		}
		if got := ValidKey(k); got != want {
			t.Fatalf("ValidKey(%q) = %v, want %v", k, got, want)
		}
	})
}

func FuzzLooksSecret(f *testing.F) {
	for _, s := range []string{"", "password", "monkey", "SSHKey", "key1", "a-b.c_d", "ü-key", "KeyRing"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, k string) {
		got := LooksSecret(k)
		lk := strings.ToLower(k)
		for _, frag := range secretFragments {
			if strings.Contains(lk, frag) && !got {
				t.Fatalf("LooksSecret(%q) = false, but it contains %q", k, frag)
			}
		}
		// A key that is the last word "key" after any separator looks secret.
		if !LooksSecret(k+".key") || !LooksSecret(k+"-KEY") {
			t.Fatalf("LooksSecret(%q + separator + key) = false", k)
		}
	})
}

// TestSecretFragmentsCovered keeps the one-pass matcher in step with the
// fragment list.
func TestSecretFragmentsCovered(t *testing.T) {
	n := len(fragmentsP) + len(fragmentsS) + len(fragmentsT) + len(fragmentsC) + len(fragmentsA)
	if n != len(secretFragments) {
		t.Fatalf("the matcher covers %d of %d fragments", n, len(secretFragments))
	}
	for _, f := range secretFragments {
		if !hasSecretFragment("x-" + strings.ToUpper(f) + "-y") {
			t.Errorf("fragment %q not matched", f)
		}
	}
}
