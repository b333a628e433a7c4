package plugin

import "unicode/utf8"

// maxString is the CSI size limit of a string field, which binds responses too.
const maxString = 128

// fitString cuts free text (a message field) to the CSI string limit on a character boundary.
func fitString(s string) string {
	if len(s) <= maxString {
		return s
	}
	const ellipsis = "…"
	cut := maxString - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
