package endpoint

import (
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Network names used in [Endpoint.Network]; they are the names [net.Listen]
// understands.
const (
	NetworkUnix = "unix"
	NetworkTCP  = "tcp"
)

// Endpoint is a parsed, validated listen address.
type Endpoint struct {
	// Network is NetworkUnix or NetworkTCP.
	Network string
	// Address is the absolute, clean socket path for NetworkUnix and
	// host:port for NetworkTCP: in both cases what net.Listen expects.
	Address string
}

// String returns the canonical form, unix:///abs/path.sock or
// tcp://host:port, which Parse accepts and maps back to the same Endpoint.
// A unix path holding '%', '?' or '#' is returned as the bare path: Parse
// refuses those characters in a unix: URL (see Parse) but takes a bare path
// literally, as the Kubernetes sidecars do. The zero Endpoint yields "".
func (e Endpoint) String() string {
	if e == (Endpoint{}) {
		return ""
	}
	if e.Network == NetworkUnix && strings.ContainsAny(e.Address, "%?#") {
		return e.Address
	}
	return e.Network + "://" + e.Address
}

// ParseOptions adjusts what Parse accepts. The zero value accepts unix
// sockets only, with any name.
type ParseOptions struct {
	// AllowTCP accepts tcp://host:port. TCP is a debugging extension: nothing
	// but the network stands between the plugin and anyone who can reach the
	// port, so it is never accepted by default.
	AllowTCP bool
	// RequireSuffix, when not empty, is a suffix every unix socket path must
	// end in, e.g. ".sock" for COSI_ENDPOINT. It does not apply to TCP.
	RequireSuffix string
}

// Parse parses an endpoint value such as CSI_ENDPOINT or COSI_ENDPOINT.
//
// Accepted forms are unix:///abs/path, unix:/abs/path, a bare absolute path
// /abs/path, and, with opts.AllowTCP, tcp://host:port (an empty host means
// all interfaces; port 0 picks a free port). Scheme names are
// case-insensitive. Unix paths are cleaned lexically (duplicate and trailing
// slashes, "." and ".." elements), must be short enough for a unix socket
// address, and may not contain control characters or start or end with white
// space. Errors name the value and say how to fix it; callers typically wrap
// them with the variable name, as in fmt.Errorf("CSI_ENDPOINT: %w", err).
//
// The unix: forms are URLs, and the two kinds of client that dial them read a
// URL differently: grpc-go (csi-sanity, csc, csictl) decodes percent escapes,
// while the Kubernetes sidecars (csi-lib-utils) dial the text after unix://
// literally. A '%' in a unix: URL would make the plugin listen on one socket
// while one of them dials another, so it is refused, and so are a query (?...)
// and a fragment (#...), which grpc-go would silently drop. A bare path is a
// file path, not a URL, and is taken literally, as the sidecars take it.
func Parse(s string, opts ParseOptions) (Endpoint, error) {
	if s == "" {
		return Endpoint{}, errors.New("endpoint is empty: expected unix:///absolute/path/to/plugin.sock")
	}
	if hasEdgeSpace(s) {
		return Endpoint{}, fmt.Errorf("endpoint %q starts or ends with white space; remove it (often a stray newline in a manifest)", s)
	}
	if s[0] == '/' {
		return parseUnixPath(s, s, opts)
	}
	scheme, rest, ok := cutScheme(s)
	if !ok {
		return Endpoint{}, fmt.Errorf("endpoint %q is neither a URL nor an absolute path: expected unix:///absolute/path/to/plugin.sock", s)
	}
	switch strings.ToLower(scheme) {
	case "unix":
		return parseUnix(s, rest, opts)
	case "tcp":
		if !opts.AllowTCP {
			// The person reading this set an environment variable or a flag,
			// not ParseOptions: name the knob a driver exposes.
			return Endpoint{}, fmt.Errorf("endpoint %q: tcp endpoints are a debugging extension and are off by default; use unix:///absolute/path/to/plugin.sock, or have the driver opt in by setting plugin.Config.AllowTCP = true (endpoint.ParseOptions.AllowTCP when calling endpoint.Parse directly)", s)
		}
		return parseTCP(s, rest)
	default:
		return Endpoint{}, fmt.Errorf("endpoint %q: unknown scheme %q: expected unix:///absolute/path/to/plugin.sock", s, scheme)
	}
}

// cutScheme splits "scheme:rest" where scheme follows RFC 3986
// (ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )).
func cutScheme(s string) (scheme, rest string, ok bool) {
	i := strings.IndexByte(s, ':')
	if i <= 0 {
		return "", "", false
	}
	for j := 0; j < i; j++ {
		c := s[j]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
		case j > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.'):
		default:
			return "", "", false
		}
	}
	return s[:i], s[i+1:], true
}

func parseUnix(s, rest string, opts ParseOptions) (Endpoint, error) {
	// A literal ? or # can only be URL syntax here: grpc-go's url.Parse cuts
	// the string there and dials the part before, so accepting it would mean
	// listening on one path while clients dial another.
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		part := "query"
		if rest[i] == '#' {
			part = "fragment"
		}
		return Endpoint{}, fmt.Errorf("endpoint %q has a URL %s (%q), which gRPC clients ignore: remove it, or rename the socket so its path has no %q", s, part, rest[i:], rest[i:i+1])
	}
	if strings.Contains(rest, "%") {
		return Endpoint{}, fmt.Errorf("endpoint %q contains '%%', which clients read two ways in a unix: URL (grpc-go decodes %%XX escapes, the Kubernetes sidecars take them literally), so they would dial different sockets: rename the socket so its path has no '%%'", s)
	}
	if p, ok := strings.CutPrefix(rest, "//"); ok {
		switch {
		case p == "":
			return Endpoint{}, fmt.Errorf("endpoint %q has no socket path: expected unix:///absolute/path/to/plugin.sock", s)
		case p[0] != '/':
			// unix://csi/csi.sock reads as host "csi" in URL terms, and
			// gRPC and the sidecars would not agree on what it means.
			return Endpoint{}, fmt.Errorf("endpoint %q: unix:// needs an absolute path, written with three slashes, as in %q", s, "unix:///"+p)
		}
		return parseUnixPath(s, p, opts)
	}
	if rest == "" || rest[0] != '/' {
		return Endpoint{}, fmt.Errorf("endpoint %q: unix: needs an absolute path, as in unix:///absolute/path/to/plugin.sock", s)
	}
	return parseUnixPath(s, rest, opts)
}

func parseUnixPath(s, p string, opts ParseOptions) (Endpoint, error) {
	for _, r := range p {
		if r < 0x20 || r == 0x7f {
			return Endpoint{}, fmt.Errorf("endpoint %q: socket path contains a control character", s)
		}
	}
	clean := filepath.Clean(p)
	if clean == "/" {
		return Endpoint{}, fmt.Errorf("endpoint %q names the root directory, not a socket file", s)
	}
	if last, _ := utf8.DecodeLastRuneInString(clean); unicode.IsSpace(last) {
		return Endpoint{}, fmt.Errorf("endpoint %q: socket path ends with white space", s)
	}
	if opts.RequireSuffix != "" && !strings.HasSuffix(clean, opts.RequireSuffix) {
		return Endpoint{}, fmt.Errorf("endpoint %q: socket path must end in %q", s, opts.RequireSuffix)
	}
	if max := maxSocketPath(); len(clean) > max {
		return Endpoint{}, fmt.Errorf("endpoint %q: socket path is %d bytes, but a unix socket path can have at most %d bytes on %s (sun_path); use a shorter directory", s, len(clean), max, runtime.GOOS)
	}
	return Endpoint{Network: NetworkUnix, Address: clean}, nil
}

func parseTCP(s, rest string) (Endpoint, error) {
	hostport, ok := strings.CutPrefix(rest, "//")
	if !ok || hostport == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: expected tcp://host:port", s)
	}
	if strings.ContainsAny(hostport, "/?#@") {
		return Endpoint{}, fmt.Errorf("endpoint %q: expected tcp://host:port with no path, query or user part", s)
	}
	host, port, err := net.SplitHostPort(hostport)
	if err != nil {
		// net's message repeats the address unquoted, which could put invalid UTF-8 or
		// control characters into a log line; keep only its reason.
		reason := "not host:port"
		var ae *net.AddrError
		if errors.As(err, &ae) {
			reason = ae.Err
		}
		return Endpoint{}, fmt.Errorf("endpoint %q: expected tcp://host:port: %s", s, reason)
	}
	if port == "" {
		return Endpoint{}, fmt.Errorf("endpoint %q: tcp endpoint needs a port, as in tcp://127.0.0.1:10000", s)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return Endpoint{}, fmt.Errorf("endpoint %q: port %q is not a number from 0 to 65535", s, port)
	}
	for i := 0; i < len(host); i++ {
		c := host[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte(".-_:%", c) >= 0) {
			return Endpoint{}, fmt.Errorf("endpoint %q: host %q is not a host name or IP address", s, host)
		}
	}
	return Endpoint{Network: NetworkTCP, Address: net.JoinHostPort(host, port)}, nil
}

func hasEdgeSpace(s string) bool {
	first, _ := utf8.DecodeRuneInString(s)
	last, _ := utf8.DecodeLastRuneInString(s)
	return unicode.IsSpace(first) || unicode.IsSpace(last)
}

// maxSocketPath is the longest path a unix socket can be bound to: the size
// of sockaddr_un.sun_path minus its terminating NUL.
func maxSocketPath() int {
	switch runtime.GOOS {
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly":
		return 103
	default:
		return 107
	}
}
