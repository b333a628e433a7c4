package secrets

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"
)

// optionLikeFields are string lists of mount options. The CSI spec says mount_flags MAY contain
// sensitive information and MUST NOT leak; hiding every flag would hide "ro" and "noatime" from
// the operator too, so only the values of key=value options are treated as secret.
var optionLikeFields = map[protoreflect.FullName]bool{
	"csi.v1.VolumeCapability.MountVolume.mount_flags": true,
}

// One element of mount_flags may carry several options ("user=bob,password=x"), because
// mount(8) and COs pass -o lists through unchanged. Every option's value is secret whatever its
// length: a short password is still a password, and scrubbing a few ordinary characters out of
// an error message is the lesser harm. An empty value ("key=", "=") hides nothing and is kept
// as is, so redaction never changes the shape of an option list. A double-quoted section
// (SELinux contexts: context="system_u:object_r:x:s0:c1,c2") is one value: its commas do not
// separate options.

// nextOption splits the first option off s: opt is up to the first comma outside double
// quotes, rest what follows that comma (ok is false when there was no comma).
func nextOption(s string) (opt, rest string, ok bool) {
	quoted := false
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			quoted = !quoted
		case ',':
			if !quoted {
				return s[:i], s[i+1:], true
			}
		}
	}
	return s, "", false
}

// optionParts returns the key (with its '=') and the value of a key=value option; value is ""
// for a bare flag or an empty value, which are shown as they are.
func optionParts(opt string) (key, value string) {
	if i := strings.IndexByte(opt, '='); i >= 0 {
		return opt[:i+1], opt[i+1:]
	}
	return opt, ""
}

// hasOptionValue reports whether s holds an option with a non-empty value, so that the common
// flag without one ("ro", "noatime") is written without building anything.
func hasOptionValue(s string) bool {
	if strings.IndexByte(s, '=') < 0 {
		return false // no option can have a value: the usual flag list, looked at in one scan
	}
	for more := true; more; {
		var opt string
		opt, s, more = nextOption(s)
		if _, v := optionParts(opt); v != "" {
			return true
		}
	}
	return false
}

// appendRedactedOptions appends s to dst with the value of every key=value option replaced by
// Placeholder and everything else (keys, bare flags, empty values, commas) kept.
func appendRedactedOptions(dst []byte, s string) []byte {
	for more, first := true, true; more; first = false {
		var opt string
		opt, s, more = nextOption(s)
		if !first {
			dst = append(dst, ',')
		}
		key, v := optionParts(opt)
		dst = append(dst, key...)
		if v != "" {
			dst = append(dst, Placeholder...)
		}
	}
	return dst
}

// redactOption is appendRedactedOptions as a string: "user=bob,password=x,ro" becomes
// "user=***stripped***,password=***stripped***,ro"; s itself when nothing needs hiding.
func redactOption(s string) string {
	if !hasOptionValue(s) {
		return s
	}
	return string(appendRedactedOptions(make([]byte, 0, len(s)+2*len(Placeholder)), s))
}

// emitOptionValues emits every non-empty option value in s, and the inside of a value in
// double quotes too, since an error message may quote it differently.
func (w *walker) emitOptionValues(s string) {
	for more := true; more; {
		var opt string
		opt, s, more = nextOption(s)
		_, v := optionParts(opt)
		if v == "" {
			continue
		}
		w.emit(v)
		if len(v) > 2 && v[0] == '"' && v[len(v)-1] == '"' {
			w.emit(v[1 : len(v)-1])
		}
	}
}
