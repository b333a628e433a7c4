package s3server

import (
	"net/url"
	"strings"
)

// maxFastQuery bounds the '&'s of a query scanned without parsing; longer ones are parsed.
const maxFastQuery = 16

// queryHas reports whether a raw query has a parameter called name, exactly as url.URL.Query
// reads it: gofakes3 routes on that view, so authorisation must classify the same one (a
// parameter it would see but this missed could turn a write into what looks like a read).
// Queries without escapes or semicolons, which is nearly all of them, are scanned in place;
// parsing them into a map for one or two lookups cost allocations on every request.
func queryHas(raw, name string) bool {
	if strings.ContainsAny(raw, "%+;") || strings.Count(raw, "&") >= maxFastQuery {
		q, _ := url.ParseQuery(raw) // as url.URL.Query: malformed pairs are dropped
		_, ok := q[name]
		return ok
	}
	for rest := raw; rest != ""; {
		var pair string
		pair, rest, _ = strings.Cut(rest, "&")
		if k, _, _ := strings.Cut(pair, "="); k == name && pair != "" {
			return true
		}
	}
	return false
}
