package cosisuite

import (
	"crypto/rand"
	"fmt"
	"strings"
)

// The shapes the COSI sidecars demand, written here from their rules rather than taken from
// csikit's own validation: the suite must judge the library too, not agree with it by
// construction.

// driverNameProblem checks a COSI driver name: at most 63 characters of dot-separated DNS-1035
// labels (a lowercase letter first, then lowercase letters, digits and '-', not ending in '-').
// It returns "" for a valid name.
func driverNameProblem(name string) string {
	if name == "" {
		return "is empty"
	}
	if len(name) > 63 {
		return fmt.Sprintf("has %d characters; at most 63 are allowed", len(name))
	}
	for _, label := range strings.Split(name, ".") {
		if label == "" {
			return "has an empty dot-separated label"
		}
		if c := label[0]; c < 'a' || c > 'z' {
			return fmt.Sprintf("has the label %q, which does not start with a lowercase letter (DNS-1035)", label)
		}
		if label[len(label)-1] == '-' {
			return fmt.Sprintf("has the label %q, which ends with '-'", label)
		}
		for i := 0; i < len(label); i++ {
			if c := label[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return fmt.Sprintf("has the label %q with a character other than lowercase letters, digits and '-'", label)
			}
		}
	}
	return ""
}

// objectIDProblem checks a bucket or account ID: non-empty, at most 2048 characters of
// [A-Za-z0-9._/-]. It returns "" for a valid ID; the problem never quotes the ID, which may be
// long.
func objectIDProblem(id string) string {
	if id == "" {
		return "is empty"
	}
	if len(id) > 2048 {
		return fmt.Sprintf("has %d characters; at most 2048 are allowed", len(id))
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '/' || c == '-') {
			return fmt.Sprintf("has the character %q at %d; only [A-Za-z0-9._/-] are allowed", c, i)
		}
	}
	return ""
}

// cosiUID returns a random version-4 UUID, lowercase, as Kubernetes UIDs are: the sidecars name
// accesses "ba-" + UID, and buckets likewise from their claims.
func cosiUID() string {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		panic(fmt.Sprintf("drivertest: no randomness: %v", err)) // crypto/rand never fails on supported platforms
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// bucketName and accountName are fresh names of the form the sidecars send.
func bucketName() string  { return "bc-" + cosiUID() }
func accountName() string { return "ba-" + cosiUID() }
