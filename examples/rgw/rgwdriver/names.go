package rgwdriver

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// hashedPrefix starts every bucket name and every account user ID this driver derives by
// hashing, and no name it keeps as it is: so a COSI name can never map onto another name's hash.
const hashedPrefix = "cosi-"

// BucketName is the RGW bucket name (and COSI bucket ID) of a COSI bucket name: the name itself
// when it is a valid S3 bucket name (ValidBucketName) not starting with "cosi-", as Kubernetes'
// "bc-<uid>" names are, else "cosi-" and 32 hex digits of its SHA-256. Distinct names give
// distinct bucket names short of a 128-bit hash collision: names kept as they are never start
// with the prefix every hashed name has. The same name always gives the same bucket, after a
// restart too, so the driver needs no table of its own.
func BucketName(cosiName string) string {
	if !strings.HasPrefix(cosiName, hashedPrefix) && ValidBucketName(cosiName) {
		return cosiName
	}
	return hashedPrefix + hexDigest(cosiName)
}

// AccountUID is the RGW user ID of a COSI account name: "cosi-" and 32 hex digits of its
// SHA-256, whatever the name. RGW user IDs have rules of their own ("$" names a tenant), and a
// fixed shape lets RevokeBucketAccess tell at a glance an ID this driver could have issued.
func AccountUID(accountName string) string {
	return hashedPrefix + hexDigest("account\x00"+accountName)
}

func hexDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// validAccountUID says whether id has the shape AccountUID gives. Anything else was never
// issued by this driver and is never sent to RGW.
func validAccountUID(id string) bool {
	hexPart, ok := strings.CutPrefix(id, hashedPrefix)
	if !ok || len(hexPart) != 32 {
		return false
	}
	for _, c := range hexPart {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// ValidBucketName says whether name is a bucket name RGW takes with its default (strict,
// DNS-compatible) rules, the rules of S3: 3 to 63 characters of lower-case letters, digits,
// dots and hyphens, beginning and ending with a letter or digit, no two dots or a dot next to a
// hyphen, and not shaped like an IPv4 address. The driver sends RGW no bucket ID that fails it,
// so an ID such as "../admin/user" never reaches a URL.
func ValidBucketName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c >= 'a' && c <= 'z', c >= '0' && c <= '9':
		case c == '.' || c == '-':
			if i == 0 || i == len(name)-1 {
				return false
			}
			if p := name[i-1]; p == '.' || (p == '-' && c == '.') {
				return false
			}
			if c == '-' && name[i-1] == '.' {
				return false
			}
		default:
			return false
		}
	}
	return !looksLikeIPv4(name)
}

// looksLikeIPv4 says whether name is four dot-separated groups of digits.
func looksLikeIPv4(name string) bool {
	parts := strings.Split(name, ".")
	if len(parts) != 4 {
		return false
	}
	for _, p := range parts {
		if p == "" || strings.Trim(p, "0123456789") != "" {
			return false
		}
	}
	return true
}
