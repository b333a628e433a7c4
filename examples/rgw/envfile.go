package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"strings"
)

// parseEnvFile reads shell assignments, one a line (KEY=VALUE; blank lines and lines starting with
// "#" skipped), as ceph-up.sh writes them to DIR/cluster.env with Python's shlex.quote: a value
// is any run of unquoted characters, '...' (literal) and "..." (where \ escapes $ ` " \ and a
// newline) pieces. Anything a shell would expand ($, `) or split (a blank) is refused rather
// than read differently from the shell. Errors name the line, never its value: the file holds
// secrets.
func parseEnvFile(r io.Reader) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		line = strings.TrimPrefix(line, "export ")
		key, raw, ok := strings.Cut(line, "=")
		if !ok || !validEnvKey(key) {
			return nil, fmt.Errorf("line %d: not a KEY=VALUE assignment", n)
		}
		v, err := shellWord(raw)
		if err != nil {
			return nil, fmt.Errorf("line %d (%s): %w", n, key, err)
		}
		out[key] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

func validEnvKey(k string) bool {
	if k == "" || (k[0] >= '0' && k[0] <= '9') {
		return false
	}
	for _, c := range k {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (c < '0' || c > '9') {
			return false
		}
	}
	return true
}

var errShell = errors.New("the value needs a shell (expansion, a blank outside quotes or an unterminated quote)")

// shellWord decodes one shell word made of unquoted, single-quoted and double-quoted pieces.
func shellWord(s string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(s); {
		switch c := s[i]; c {
		case '\'':
			end := strings.IndexByte(s[i+1:], '\'')
			if end < 0 {
				return "", errShell
			}
			b.WriteString(s[i+1 : i+1+end])
			i += end + 2
		case '"':
			i++
			for {
				if i >= len(s) {
					return "", errShell
				}
				c := s[i]
				if c == '"' {
					i++
					break
				}
				if c == '$' || c == '`' {
					return "", errShell
				}
				if c == '\\' && i+1 < len(s) && strings.IndexByte("$`\"\\", s[i+1]) >= 0 {
					i++
					c = s[i]
				}
				b.WriteByte(c)
				i++
			}
		case '\\':
			if i+1 >= len(s) {
				return "", errShell
			}
			b.WriteByte(s[i+1])
			i += 2
		case ' ', '\t', '$', '`', ';', '&', '|', '<', '>', '(', ')', '*', '?', '[', '#', '~':
			return "", errShell
		default:
			b.WriteByte(c)
			i++
		}
	}
	return b.String(), nil
}
