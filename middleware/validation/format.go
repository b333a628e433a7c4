package validation

import (
	"errors"
	"runtime"
	"unicode/utf8"
)

// The small string validators. Each returns "" when the string is valid, else a problem phrased
// to follow a field path ("must ..."); none of them ever includes the string itself.

// PluginName checks a plugin name the way the spec's GetPluginInfo requires it: 63 characters or
// less, domain name notation, alphanumeric at both ends of every label, dashes and alphanumerics
// between. A driver calls it on its own identity at start-up so that a bad name stops the process
// with a clear error instead of failing every GetPluginInfo call.
func PluginName(name string) error {
	if name == "" {
		return errors.New("plugin name: must not be empty")
	}
	if p := pluginNameProblem(name); p != "" {
		return errors.New("plugin name: " + p)
	}
	return nil
}

func pluginNameProblem(s string) string {
	if len(s) > maxDNSName {
		return "must be 63 characters or less"
	}
	if !isDNSName(s, false) {
		return "must follow domain name notation: alphanumerics, '-' and '.', every dot-separated label beginning and ending with an alphanumeric"
	}
	return ""
}

// isDNSName reports whether s is non-empty labels separated by single dots, each label made of
// [-a-zA-Z0-9] and beginning and ending with an alphanumeric. lower restricts letters to a-z.
func isDNSName(s string, lower bool) bool {
	if s == "" {
		return false
	}
	start := 0
	for i := 0; i <= len(s); i++ {
		if i < len(s) && s[i] != '.' {
			c := s[i]
			if !(isLowerAlnum(c) || c == '-' || !lower && isUpper(c)) {
				return false
			}
			continue
		}
		// A label is s[start:i].
		if i == start || s[start] == '-' || s[i-1] == '-' {
			return false
		}
		start = i + 1
	}
	return true
}

func isUpper(c byte) bool      { return c >= 'A' && c <= 'Z' }
func isLowerAlnum(c byte) bool { return c >= 'a' && c <= 'z' || c >= '0' && c <= '9' }
func isAlnum(c byte) bool      { return isLowerAlnum(c) || isUpper(c) }

// isSegmentName reports whether s begins and ends with an alphanumeric and has only
// [-_.a-zA-Z0-9] between: the syntax of a topology key name and of a topology value.
func isSegmentName(s string) bool {
	if s == "" || !isAlnum(s[0]) || !isAlnum(s[len(s)-1]) {
		return false
	}
	for i := 1; i < len(s)-1; i++ {
		c := s[i]
		if !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// topologyKeyProblem checks a Topology key: an optional lower-case DNS prefix and '/', then a
// name.
func topologyKeyProblem(k string) string {
	name := k
	for i := 0; i < len(k); i++ {
		if k[i] == '/' {
			prefix := k[:i]
			name = k[i+1:]
			switch {
			case prefix == "":
				return "topology key prefix before '/' must not be empty"
			case len(prefix) > maxDNSName:
				return "topology key prefix must be 63 characters or less"
			case !isDNSName(prefix, true):
				return "topology key prefix must be a lower-case domain name: [-.a-z0-9], every dot-separated label beginning and ending with [a-z0-9]"
			}
			break
		}
	}
	switch {
	case name == "":
		return "topology key name must not be empty"
	case len(name) > maxDNSName:
		return "topology key name must be 63 characters or less"
	case !isSegmentName(name):
		return "topology key name must begin and end with [a-zA-Z0-9] and contain only [-_.a-zA-Z0-9]"
	}
	return ""
}

func topologyValueProblem(v string) string {
	switch {
	case v == "":
		return "topology value must not be empty"
	case len(v) > maxDNSName:
		return "topology value must be 63 characters or less"
	case !isSegmentName(v):
		return "topology value must begin and end with [a-zA-Z0-9] and contain only [-_.a-zA-Z0-9]"
	}
	return ""
}

// nameProblem checks a suggested name (CreateVolume, CreateSnapshot, CreateVolumeGroupSnapshot):
// any Unicode except the control characters U+0000-U+0008, U+000B, U+000C, U+000E-U+001F and
// U+007F-U+009F.
func nameProblem(s string) string {
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c <= 0x08 || c == 0x0b || c == 0x0c || c >= 0x0e && c <= 0x1f || c == 0x7f {
				return "must not contain control characters U+0000-U+0008, U+000B, U+000C, U+000E-U+001F, U+007F-U+009F"
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			return "must be valid UTF-8"
		}
		if r >= 0x80 && r <= 0x9f {
			return "must not contain control characters U+0000-U+0008, U+000B, U+000C, U+000E-U+001F, U+007F-U+009F"
		}
		i += size
	}
	return ""
}

// isSecretKey reports whether k is a valid secret key: alphanumerics, '-', '_' and '.'.
func isSecretKey(k string) bool {
	if k == "" {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(isAlnum(c) || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// isAbsPath reports whether p is absolute in the root filesystem of the process. CSI paths are
// POSIX paths; on Windows a drive or UNC path is accepted too, as the Windows CSI proxy sends.
func isAbsPath(p string) bool {
	if p == "" {
		return false
	}
	if p[0] == '/' {
		return true
	}
	if runtime.GOOS == "windows" {
		if p[0] == '\\' {
			return true
		}
		return len(p) >= 3 && isAlnum(p[0]) && p[1] == ':' && (p[2] == '\\' || p[2] == '/')
	}
	return false
}
