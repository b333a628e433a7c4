package secrets

import "unicode/utf8"

// ValidKey reports whether k is a valid CSI secret key: non-empty and made
// only of ASCII letters, digits, '.', '_' and '-'.
func ValidKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !isAlnum(c) && c != '.' && c != '_' && c != '-' {
			return false
		}
	}
	return true
}

// ValidValue reports whether v is a valid CSI secret value: valid UTF-8.
func ValidValue(v string) bool { return utf8.ValidString(v) }

// secretFragments mark a key as secret wherever they occur, ignoring ASCII
// case: "DB_PASSWORD", "clientSecret", "authToken", "privateKeyPem".
var secretFragments = []string{
	"password", "passwd", "passphrase", "secret", "token", "credential", "private",
	"apikey", "api_key", "api-key", "accesskey", "access_key", "access-key",
}

// LooksSecret guesses from a map key whether its value is a secret. It is
// the heuristic behind WithHeuristic and is deliberately generous: showing
// a password in a log is worse than hiding a harmless value.
//
// A key looks secret when, ignoring ASCII case,
//   - it contains password, passwd, passphrase, secret, token, credential,
//     private, apikey, api_key, api-key, accesskey, access_key or access-key
//     anywhere ("userPassword", "tokenFile", "credentials"); or
//   - its last word is "key" or "keys" ("key", "secret-key", "encryptionKey",
//     "ssh.key", "SSHKey", "key1"); or
//   - any word is "pwd" ("db-pwd").
//
// Words are split at every character that is not an ASCII letter or digit,
// between a lower-case and an upper-case letter ("encryptionKey"), before the
// last capital of a capital run followed by a lower-case letter ("SSHKey" is
// "SSH" "Key"), and between letters and digits ("key1" is "key" "1");
// trailing all-digit words are ignored when finding the last word. So
// "keyring", "monkey", "hotkey", "keyId" and "key-file" do not look secret,
// while "publicKey" does.
func LooksSecret(key string) bool {
	return hasSecretFragment(key) || wordsLookSecret(key)
}

// hasSecretFragment reports whether s contains one of secretFragments,
// ignoring ASCII case, in one pass: only the first letters of the fragments
// (p, s, t, c, a) start a comparison.
func hasSecretFragment(s string) bool {
	for i := 0; i < len(s); i++ {
		var frags []string
		switch lower(s[i]) {
		case 'p':
			frags = fragmentsP
		case 's':
			frags = fragmentsS
		case 't':
			frags = fragmentsT
		case 'c':
			frags = fragmentsC
		case 'a':
			frags = fragmentsA
		default:
			continue
		}
		for _, f := range frags {
			if len(s)-i >= len(f) && equalFold(s[i:i+len(f)], f) {
				return true
			}
		}
	}
	return false
}

var fragmentsP, fragmentsS, fragmentsT, fragmentsC, fragmentsA = byFirst('p'), byFirst('s'), byFirst('t'), byFirst('c'), byFirst('a')

func byFirst(c byte) []string {
	var out []string
	for _, f := range secretFragments {
		if f[0] == c {
			out = append(out, f)
		}
	}
	return out
}

func wordsLookSecret(s string) bool {
	var last string
	start := -1
	for i := 0; i <= len(s); i++ {
		if start >= 0 && (i == len(s) || wordBreak(s, i)) {
			w := s[start:i]
			if isLetter(w[0]) {
				last = w
			}
			if equalFold(w, "pwd") {
				return true
			}
			start = -1
		}
		if i < len(s) && start < 0 && isAlnum(s[i]) {
			start = i
		}
	}
	return equalFold(last, "key") || equalFold(last, "keys")
}

// wordBreak reports whether a word that includes s[i-1] ends before s[i].
func wordBreak(s string, i int) bool {
	prev, c := s[i-1], s[i]
	switch {
	case !isAlnum(c):
		return true
	case isDigit(prev) != isDigit(c):
		return true
	case isLower(prev) && isUpper(c):
		return true
	case isUpper(prev) && isUpper(c) && i+1 < len(s) && isLower(s[i+1]):
		return true
	}
	return false
}

func isLower(c byte) bool  { return 'a' <= c && c <= 'z' }
func isUpper(c byte) bool  { return 'A' <= c && c <= 'Z' }
func isDigit(c byte) bool  { return '0' <= c && c <= '9' }
func isLetter(c byte) bool { return isLower(c) || isUpper(c) }
func isAlnum(c byte) bool  { return isLetter(c) || isDigit(c) }

func lower(c byte) byte {
	if isUpper(c) {
		return c + 'a' - 'A'
	}
	return c
}

// equalFold compares s with the lower-case ASCII word w, ignoring case.
func equalFold(s, w string) bool {
	if len(s) != len(w) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if lower(s[i]) != w[i] {
			return false
		}
	}
	return true
}
