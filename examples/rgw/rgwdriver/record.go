package rgwdriver

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/csikit/csikit/driver/bucket"
)

// An account's grant is recorded in its RGW user's display name, written in the same admin call
// that creates the user and its key: so the user, its key and the record of what it was granted
// appear together or not at all, and the driver needs no store of its own. A retried grant
// compares with it (idempotency), a revoke reads which buckets' policies to clean from it, and
// its prefix tells this driver's users from anyone else's.

// recordPrefix starts the display name of every user this driver creates for an account.
const recordPrefix = "csikit COSI account "

// grantRecord is what an account was granted.
type grantRecord struct {
	// Account is the COSI account name: a hash collision of two names is refused, never shared.
	Account string `json:"account"`
	// Buckets maps each granted bucket to its mode: "rw", "ro" or "wo".
	Buckets map[string]string `json:"buckets"`
}

var modeNames = map[bucket.AccessMode]string{bucket.ReadWrite: "rw", bucket.ReadOnly: "ro", bucket.WriteOnly: "wo"}

func modeOf(name string) (bucket.AccessMode, bool) {
	for m, n := range modeNames {
		if n == name {
			return m, true
		}
	}
	return 0, false
}

// errNotOurs is a user whose display name is not a record this driver wrote.
var errNotOurs = errors.New("not a user this driver created")

func (r grantRecord) displayName() string {
	b, _ := json.Marshal(r) // strings and a map of strings: cannot fail
	return recordPrefix + string(b)
}

// parseRecord reads a display name written by displayName; errNotOurs for any other.
func parseRecord(displayName string) (grantRecord, error) {
	body, ok := strings.CutPrefix(displayName, recordPrefix)
	if !ok {
		return grantRecord{}, errNotOurs
	}
	var r grantRecord
	if err := json.Unmarshal([]byte(body), &r); err != nil || r.Account == "" {
		return grantRecord{}, errNotOurs
	}
	for b, m := range r.Buckets {
		if _, ok := modeOf(m); !ok || !ValidBucketName(b) {
			return grantRecord{}, errNotOurs
		}
	}
	return r, nil
}

// sameGrant says whether two records grant the same buckets in the same modes.
func sameGrant(a, b grantRecord) bool { return maps.Equal(a.Buckets, b.Buckets) }

// bucketsOf lists a record's buckets in order, so that policies are always edited in one order.
func (r grantRecord) bucketsOf() []string { return slices.Sorted(maps.Keys(r.Buckets)) }
