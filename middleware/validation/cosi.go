package validation

import (
	"errors"
)

// The syntax of COSI's names and IDs. Which fields hold them is the caller's to say (Config's
// DNSNames and ObjectIDs); no COSI message is checked until a Rules value names its package.

const (
	maxCOSIName     = 253  // a DNS subdomain
	maxCOSIObjectID = 2048 // bucket and account IDs, as the COSI sidecar validates them
)

// COSIDriverName checks a COSI driver name as the COSI sidecar does: at most 63 characters of
// dot-separated DNS-1035 labels (lowercase letters, digits and '-', starting with a letter and
// ending with a letter or digit), e.g. "memorys3.csikit.dev".
func COSIDriverName(name string) error {
	if name == "" {
		return errors.New("COSI driver name: must not be empty")
	}
	if len(name) > maxDNSName {
		return errors.New("COSI driver name: must be 63 characters or less")
	}
	if !isDNSName(name, true) {
		return errors.New("COSI driver name: must be dot-separated labels of lowercase letters, digits and '-'")
	}
	start := 0
	for i := 0; i <= len(name); i++ {
		if i == len(name) || name[i] == '.' {
			if c := name[start]; c < 'a' || c > 'z' {
				return errors.New("COSI driver name: every dot-separated label must start with a lowercase letter (DNS-1035)")
			}
			start = i + 1
		}
	}
	return nil
}

// COSIObjectIDProblem checks a bucket or account ID: non-empty, at most 2048 characters of
// [A-Za-z0-9._/-]. It returns "" for a valid ID, else the problem ("must ..."), without the ID.
func COSIObjectIDProblem(id string) string {
	if id == "" {
		return "must not be empty"
	}
	if len(id) > maxCOSIObjectID {
		return "must be 2048 characters or less"
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !(isAlnum(c) || c == '.' || c == '_' || c == '/' || c == '-') {
			return "must contain only letters, digits, '.', '_', '/' and '-'"
		}
	}
	return ""
}

// cosiNameProblem checks a COSI name: a DNS subdomain (RFC 1123) of at most 253 characters.
func cosiNameProblem(s string) string {
	if len(s) > maxCOSIName {
		return "must be 253 characters or less"
	}
	if !isDNSName(s, true) {
		return "must be a DNS subdomain: lowercase letters, digits, '-' and '.', every dot-separated label beginning and ending with a letter or digit"
	}
	return ""
}

// checkDNSNameOrID checks a field with fDNSName or fObjectID.
func checkDNSNameOrID(s string, flags ruleFlags) *violation {
	p := ""
	if flags&fDNSName != 0 {
		p = cosiNameProblem(s)
	} else {
		p = COSIObjectIDProblem(s)
	}
	if p == "" {
		return nil
	}
	return newViolation(p)
}
