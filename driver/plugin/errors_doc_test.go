package plugin

import (
	"cmp"
	"errors"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	"github.com/csikit/csikit/driver"
)

// sentinels are package driver's errors by name, as its godoc names them.
var sentinels = []struct {
	name string
	err  error
}{
	{"ErrNotFound", driver.ErrNotFound},
	{"ErrAlreadyExists", driver.ErrAlreadyExists},
	{"ErrInUse", driver.ErrInUse},
	{"ErrFailedPrecondition", driver.ErrFailedPrecondition},
	{"ErrUnsupported", driver.ErrUnsupported},
	{"ErrInvalidArgument", driver.ErrInvalidArgument},
	{"ErrOutOfRange", driver.ErrOutOfRange},
	{"ErrResourceExhausted", driver.ErrResourceExhausted},
	{"ErrGroupMember", driver.ErrGroupMember},
	{"ErrPending", driver.ErrPending},
	{"ErrUnauthenticated", driver.ErrUnauthenticated},
	{"ErrPermissionDenied", driver.ErrPermissionDenied},
	{"ErrUnavailable", driver.ErrUnavailable},
}

// TestSentinelDocsMatchTheErrorTable derives from rpcTable (through codeFor, which mapError uses)
// what each sentinel is answered with in each RPC family, and checks that the godoc says exactly
// that: package driver's doc of each sentinel for CSI, the package docs of bucket and
// volumegroup for theirs. A change to the table that the docs do not follow fails here, and the
// message is the sentence to write.
func TestSentinelDocsMatchTheErrorTable(t *testing.T) {
	csiDocs := varDocs(t, filepath.Join("..", "errors.go"))
	families := []struct {
		name     string
		services []service
		// doc returns the text that must carry the claim for a sentinel, and the words that
		// introduce it there ("CSI: NOT_FOUND, but OK from ...").
		doc func(sentinel string) (text, lead string)
		// skip lists sentinels that mean nothing to the family.
		skip []string
	}{
		{
			name:     "CSI",
			services: []service{svcIdentity, svcController, svcNode, svcGroupController, svcSnapshotMetadata},
			doc:      func(s string) (string, string) { return csiDocs[s], "CSI: " },
		},
		{
			name:     "volume groups",
			services: []service{svcVolumeGroup},
			doc: func(s string) (string, string) {
				return packageDoc(t, filepath.Join("..", "volumegroup", "doc.go")), "driver." + s + ": "
			},
			skip: []string{"ErrGroupMember"},
		},
		{
			name:     "COSI",
			services: []service{svcCOSIIdentity, svcCOSIProvisioner},
			doc: func(s string) (string, string) {
				return packageDoc(t, filepath.Join("..", "bucket", "doc.go")), "driver." + s + ": "
			},
			skip: []string{"ErrGroupMember"},
		},
	}
	for _, f := range families {
		var rpcs []rpc
		for name, spec := range rpcTable {
			if slices.Contains(f.services, spec.service) {
				rpcs = append(rpcs, name)
			}
		}
		if len(rpcs) == 0 {
			t.Fatalf("%s: no RPC in the table", f.name)
		}
		for _, s := range sentinels {
			if slices.Contains(f.skip, s.name) {
				continue
			}
			text, lead := f.doc(s.name)
			want := lead + claim(rpcs, s.err)
			if !containsClaim(text, want) {
				t.Errorf("%s: the doc of %s does not say what the table does; it should say:\n\t%s.", f.name, s.name, want)
			}
		}
	}
}

// claim renders what the RPCs answer for err: the code most of them answer, then the others by
// RPC, as "NOT_FOUND, but OK from A, B and C".
func claim(rpcs []rpc, err error) string {
	byCode := map[codes.Code][]string{}
	for _, r := range rpcs {
		c := codeFor(r, err)
		byCode[c] = append(byCode[c], string(r))
	}
	var all []codes.Code
	for c := range byCode {
		all = append(all, c)
	}
	// The most common code first (ties by code number), the exceptions after it by name.
	slices.SortFunc(all, func(a, b codes.Code) int {
		if n := cmp.Compare(len(byCode[b]), len(byCode[a])); n != 0 {
			return n
		}
		return cmp.Compare(a, b)
	})
	rest := all[1:]
	slices.SortFunc(rest, func(a, b codes.Code) int { return strings.Compare(codeName(a), codeName(b)) })
	out := codeName(all[0])
	for i, c := range rest {
		names := byCode[c]
		slices.Sort(names)
		if i == 0 {
			out += ", but "
		} else {
			out += "; "
		}
		out += codeName(c) + " from " + andList(names)
	}
	return out
}

// containsClaim reports whether text (whitespace folded) holds want followed by the end of a
// clause (".", ":", ";" or a parenthesis), so that a claim is never matched by a longer one that
// starts with it.
func containsClaim(text, want string) bool {
	text = strings.Join(strings.Fields(text), " ")
	for i := 0; ; {
		j := strings.Index(text[i:], want)
		if j < 0 {
			return false
		}
		end := i + j + len(want)
		if end == len(text) || strings.ContainsRune(".:;", rune(text[end])) || strings.HasPrefix(text[end:], " (") {
			return true
		}
		i = end
	}
}

// codeName is the code as the gRPC spec spells it (NOT_FOUND).
func codeName(c codes.Code) string {
	if c == codes.Canceled {
		return "CANCELLED"
	}
	var b strings.Builder
	s := c.String()
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' && s[i-1] >= 'a' && s[i-1] <= 'z' {
			b.WriteByte('_')
		}
		b.WriteRune(r)
	}
	return strings.ToUpper(b.String())
}

func andList(names []string) string {
	if len(names) == 1 {
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// varDocs returns the doc comment of every variable declared in file, by name.
func varDocs(t *testing.T, file string) map[string]string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, spec := range g.Specs {
			v := spec.(*ast.ValueSpec)
			for _, n := range v.Names {
				docs[n.Name] = v.Doc.Text()
			}
		}
	}
	if len(docs) == 0 {
		t.Fatal(errors.New(file + " declares no variables"))
	}
	return docs
}

// packageDoc returns the package comment in file.
func packageDoc(t *testing.T, file string) string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		t.Fatal(err)
	}
	return f.Doc.Text()
}

func TestClaim(t *testing.T) {
	table := []rpc{rpcDeleteVolume, rpcCreateVolume, rpcNodeUnpublish, rpcDeleteSnapshot, rpcNodeStage, rpcValidateVolumeCaps}
	for _, tc := range []struct {
		err  error
		want string
	}{
		{driver.ErrNotFound, "NOT_FOUND, but OK from DeleteSnapshot and DeleteVolume"},
		{driver.ErrPending, "ABORTED"},
		{driver.ErrUnsupported, "INVALID_ARGUMENT, but FAILED_PRECONDITION from NodeStageVolume; OK from ValidateVolumeCapabilities"},
	} {
		if got := claim(table, tc.err); got != tc.want {
			t.Errorf("claim(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
	for _, tc := range []struct {
		text string
		ok   bool
	}{
		{"It answers NOT_FOUND.", true},
		{"It answers NOT_FOUND: always", true},
		{"It answers NOT_FOUND", true},
		{"It answers NOT_FOUND (always).", true},
		{"It answers NOT_FOUND, but OK from DeleteVolume.", false},
		{"It answers NOT_FOUND, but OK from X. Also: answers NOT_FOUND.", true},
	} {
		if got := containsClaim(tc.text, "answers NOT_FOUND"); got != tc.ok {
			t.Errorf("containsClaim(%q) = %t, want %t", tc.text, got, tc.ok)
		}
	}
	if got := codeName(codes.FailedPrecondition); got != "FAILED_PRECONDITION" {
		t.Errorf("codeName = %q", got)
	}
}
