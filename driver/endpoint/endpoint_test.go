package endpoint

import (
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"
)

func TestParse(t *testing.T) {
	long := func(n int) string { return "/" + strings.Repeat("a", n-1) }
	tcp := ParseOptions{AllowTCP: true}
	sock := ParseOptions{RequireSuffix: ".sock"}
	tests := []struct {
		in      string
		opts    ParseOptions
		want    Endpoint
		wantErr string // substring; empty means success
	}{
		// Accepted unix forms.
		{in: "unix:///var/lib/kubelet/plugins/x/csi.sock", want: Endpoint{"unix", "/var/lib/kubelet/plugins/x/csi.sock"}},
		{in: "unix:/csi/csi.sock", want: Endpoint{"unix", "/csi/csi.sock"}},
		{in: "/csi/csi.sock", want: Endpoint{"unix", "/csi/csi.sock"}},
		{in: "UNIX:///csi/csi.sock", want: Endpoint{"unix", "/csi/csi.sock"}},
		{in: "unix:////csi//a/../csi.sock", want: Endpoint{"unix", "/csi/csi.sock"}},
		{in: "unix:///csi/sock/", want: Endpoint{"unix", "/csi/sock"}},
		{in: "/csi/with space/csi.sock", want: Endpoint{"unix", "/csi/with space/csi.sock"}},
		{in: long(107), want: Endpoint{"unix", long(107)}},
		{in: "/cosi/cosi.sock", opts: sock, want: Endpoint{"unix", "/cosi/cosi.sock"}},
		{in: "unix:///cosi/cosi.sock", opts: sock, want: Endpoint{"unix", "/cosi/cosi.sock"}},

		// A bare path is a file path and is taken literally, as the sidecars
		// take it.
		{in: "/csi/a%41.sock", want: Endpoint{"unix", "/csi/a%41.sock"}},
		{in: "/csi/a?b#c.sock", want: Endpoint{"unix", "/csi/a?b#c.sock"}},

		// Accepted tcp forms, only with AllowTCP.
		{in: "tcp://127.0.0.1:10000", opts: tcp, want: Endpoint{"tcp", "127.0.0.1:10000"}},
		{in: "TCP://localhost:0", opts: tcp, want: Endpoint{"tcp", "localhost:0"}},
		{in: "tcp://[::1]:10000", opts: tcp, want: Endpoint{"tcp", "[::1]:10000"}},
		{in: "tcp://:10000", opts: tcp, want: Endpoint{"tcp", ":10000"}},
		{in: "tcp://127.0.0.1:10000", opts: ParseOptions{AllowTCP: true, RequireSuffix: ".sock"}, want: Endpoint{"tcp", "127.0.0.1:10000"}},

		// Rejections, each with the words that tell the user what to do.
		{in: "", wantErr: "endpoint is empty"},
		{in: "unix://csi/csi.sock", wantErr: "unix:// needs an absolute path, written with three slashes, as in \"unix:///csi/csi.sock\""},
		{in: "unix://", wantErr: "has no socket path"},
		{in: "unix:", wantErr: "unix: needs an absolute path"},
		{in: "unix:csi.sock", wantErr: "unix: needs an absolute path"},
		{in: "csi.sock", wantErr: "neither a URL nor an absolute path"},
		{in: "./csi.sock", wantErr: "neither a URL nor an absolute path"},
		{in: ":10000", wantErr: "neither a URL nor an absolute path"},
		{in: "http://csi/csi.sock", wantErr: `unknown scheme "http"`},
		{in: "unix-abstract:csi", wantErr: `unknown scheme "unix-abstract"`},
		{in: "tcp://127.0.0.1:10000", wantErr: "setting plugin.Config.AllowTCP = true"},
		{in: "unix:///csi/csi.sock?mode=0600", wantErr: `has a URL query ("?mode=0600"), which gRPC clients ignore`},
		{in: "unix:///csi/csi.sock?", wantErr: "has a URL query"},
		{in: "unix:/csi/csi.sock#x", wantErr: `has a URL fragment ("#x")`},
		{in: "unix:///csi/a?b.sock", wantErr: `rename the socket so its path has no "?"`},
		{in: "unix:///csi/a#b.sock", wantErr: `rename the socket so its path has no "#"`},
		{in: "unix://csi?x", wantErr: "has a URL query"},
		// grpc-go decodes %XX in a unix: URL and the sidecars do not: refused
		// whatever follows the '%'.
		{in: "unix:///csi/a%41.sock", wantErr: "grpc-go decodes %XX escapes, the Kubernetes sidecars take them literally"},
		{in: "unix:/csi/a%41.sock", wantErr: "rename the socket so its path has no '%'"},
		{in: "unix:///csi/50%.sock", wantErr: "contains '%'"},
		{in: "unix:///csi/a%3Fb.sock", wantErr: "contains '%'"},
		{in: "unix:///csi/a%00.sock", wantErr: "contains '%'"},
		{in: "unix:///csi/csi.sock\x01", wantErr: "control character"},
		{in: "unix:///csi/csi.sock\u00a0", wantErr: "ends with white space"},
		{in: "tcp://127.0.0.1", opts: tcp, wantErr: "expected tcp://host:port"},
		{in: "tcp://127.0.0.1:", opts: tcp, wantErr: "needs a port"},
		{in: "tcp://127.0.0.1:65536", opts: tcp, wantErr: "not a number from 0 to 65535"},
		{in: "tcp://127.0.0.1:http", opts: tcp, wantErr: "not a number from 0 to 65535"},
		{in: "tcp://127.0.0.1:1/x", opts: tcp, wantErr: "no path"},
		{in: "tcp://user@host:1", opts: tcp, wantErr: "no path, query or user part"},
		{in: "tcp:127.0.0.1:1", opts: tcp, wantErr: "expected tcp://host:port"},
		{in: "tcp://", opts: tcp, wantErr: "expected tcp://host:port"},
		{in: "tcp://ho st:1", opts: tcp, wantErr: "is not a host name or IP address"},
		{in: "/cosi/cosi", opts: sock, wantErr: `must end in ".sock"`},
		{in: "unix:///cosi/cosi.sock/", opts: ParseOptions{RequireSuffix: "/"}, wantErr: `must end in "/"`},
		{in: long(108), wantErr: "socket path is 108 bytes, but a unix socket path can have at most 107 bytes"},
		{in: " /csi/csi.sock", wantErr: "white space"},
		{in: "/csi/csi.sock\n", wantErr: "white space"},
		{in: "/csi/csi.sock /", wantErr: "ends with white space"},
		{in: "/csi/c\x00si.sock", wantErr: "control character"},
		{in: "/csi/c\x1bsi.sock", wantErr: "control character"},
		{in: "/", wantErr: "root directory"},
		{in: "unix:///..", wantErr: "root directory"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in, tt.opts)
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v, want error containing %q", tt.in, got, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse(%q) error = %q, want it to contain %q", tt.in, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Fatalf("Parse(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			again, err := Parse(got.String(), tt.opts)
			if err != nil || again != got {
				t.Fatalf("Parse(%q) = %+v, %v; want %+v (round trip of %q)", got.String(), again, err, got, tt.in)
			}
		})
	}
}

func TestEndpointString(t *testing.T) {
	tests := []struct {
		e    Endpoint
		want string
	}{
		{Endpoint{}, ""},
		{Endpoint{"unix", "/csi/csi.sock"}, "unix:///csi/csi.sock"},
		{Endpoint{"tcp", "127.0.0.1:10000"}, "tcp://127.0.0.1:10000"},
		{Endpoint{"tcp", "[::1]:1"}, "tcp://[::1]:1"},
		// What a unix: URL would refuse comes back as the bare path Parse
		// takes literally.
		{Endpoint{"unix", "/csi/a%41 b?c#d.sock"}, "/csi/a%41 b?c#d.sock"},
		{Endpoint{"unix", "/csi/with space.sock"}, "unix:///csi/with space.sock"},
	}
	for _, tt := range tests {
		if got := tt.e.String(); got != tt.want {
			t.Errorf("%+v.String() = %q, want %q", tt.e, got, tt.want)
		}
	}
}

func FuzzParse(f *testing.F) {
	for _, s := range []string{
		"unix:///csi/csi.sock", "unix:/csi/csi.sock", "/csi/csi.sock", "unix://csi/csi.sock",
		"unix://", "unix:", "tcp://127.0.0.1:10000", "tcp://[::1]:0", "tcp://:1", "http://x",
		"/a/../../b/./c//", "unix:////a", " /a", "/a\x00", "/" + strings.Repeat("x", 120),
		"csi.sock", "tcp://h:99999", "tcp://[fe80::1%eth0]:1", "UNIX:///A.SOCK", "/a\u00a0/",
		"unix:///x/a%41.sock", "unix:/x/a%2541", "unix:///x?y", "unix:///x#y", "unix:///x/%zz",
		"unix:///x/%", "unix:///%2e%2E/x", "unix:///x%2F..%2F..%2Fy", "/x/a%41?b#c", "unix:///x/a%00",
	} {
		f.Add(s, false, "")
		f.Add(s, true, ".sock")
	}
	f.Fuzz(func(t *testing.T, s string, allowTCP bool, suffix string) {
		opts := ParseOptions{AllowTCP: allowTCP, RequireSuffix: suffix}
		e, err := Parse(s, opts)
		if err != nil {
			if e != (Endpoint{}) {
				t.Fatalf("Parse(%q) returned %+v with error %v", s, e, err)
			}
			if !utf8.ValidString(err.Error()) {
				t.Fatalf("Parse(%q) error is not valid UTF-8: %q", s, err)
			}
			return
		}
		switch e.Network {
		case NetworkUnix:
			p := e.Address
			if s[0] != '/' {
				// A unix: URL must name the socket grpc-go would dial.
				u, err := url.Parse(s)
				if err != nil {
					t.Fatalf("Parse(%q) = %q, but url.Parse rejects it: %v", s, p, err)
				}
				dial := u.Path
				if dial == "" {
					dial = u.Opaque
				}
				if u.Host != "" || u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || filepath.Clean(dial) != p {
					t.Fatalf("Parse(%q) = %q, but grpc-go dials host %q path %q (query %q, fragment %q)", s, p, u.Host, dial, u.RawQuery, u.Fragment)
				}
				// ... and the one the Kubernetes sidecars dial: the text after
				// unix:// taken literally.
				if len(s) > len("unix://") && strings.EqualFold(s[:len("unix://")], "unix://") && filepath.Clean(s[len("unix://"):]) != p {
					t.Fatalf("Parse(%q) = %q, but the sidecars dial %q", s, p, s[len("unix://"):])
				}
			}
			if !filepath.IsAbs(p) || filepath.Clean(p) != p || p == "/" {
				t.Fatalf("Parse(%q) = %q, not an absolute clean file path", s, p)
			}
			if len(p) > maxSocketPath() {
				t.Fatalf("Parse(%q) = %q, longer than a socket path can be", s, p)
			}
			if !strings.HasSuffix(p, suffix) {
				t.Fatalf("Parse(%q) = %q, does not end in %q", s, p, suffix)
			}
			if strings.ContainsFunc(p, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
				t.Fatalf("Parse(%q) = %q, contains a control character", s, p)
			}
		case NetworkTCP:
			if !allowTCP {
				t.Fatalf("Parse(%q) = %+v without AllowTCP", s, e)
			}
		default:
			t.Fatalf("Parse(%q) = %+v, unknown network", s, e)
		}
		if r, _ := utf8.DecodeLastRuneInString(e.String()); unicode.IsSpace(r) {
			t.Fatalf("Parse(%q).String() = %q ends in white space", s, e)
		}
		again, err := Parse(e.String(), opts)
		if err != nil || again != e {
			t.Fatalf("round trip: Parse(%q) = %+v, %v; want %+v", e.String(), again, err, e)
		}
	})
}
