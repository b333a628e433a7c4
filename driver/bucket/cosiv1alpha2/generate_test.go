package cosiv1alpha2_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/csikit/csikit/internal/testenv"
)

// generatorVersions are the tools the committed cosi.pb.go and cosi_grpc.pb.go were generated
// with (see doc.go): the first line each prints for --version.
var generatorVersions = map[string]string{
	"protoc":             "libprotoc 3.21.12",
	"protoc-gen-go":      "protoc-gen-go v1.36.12",
	"protoc-gen-go-grpc": "protoc-gen-go-grpc 1.6.2",
}

// TestGeneratedCodeIsCurrent runs doc.go's go:generate line on a copy of cosi.proto and compares
// the output with the committed files, so an edit of cosi.proto without regeneration (or a hand
// edit of generated code) is caught. Other tool versions would produce different headers or
// code, so it runs only where exactly the documented versions are on PATH and skips otherwise;
// CI installs them, so there it always runs.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	for tool, want := range generatorVersions {
		if _, err := exec.LookPath(tool); err != nil {
			testenv.Skip(t, "%s not on PATH; generated code not checked (protoc: Debian protobuf-compiler; the plugins: go install, versions in doc.go)", tool)
		}
		out, err := exec.Command(tool, "--version").Output()
		if err != nil {
			testenv.Skip(t, "%s --version: %v", tool, err)
		}
		if got, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n"); got != want {
			testenv.Skip(t, "%s is %q, the committed code was generated with %q", tool, got, want)
		}
	}

	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	var args []string
	for line := range strings.Lines(string(doc)) {
		if rest, ok := strings.CutPrefix(line, "//go:generate "); ok {
			if args != nil {
				t.Fatal("doc.go has more than one go:generate line")
			}
			args = strings.Fields(rest)
		}
	}
	if len(args) == 0 {
		t.Fatal("doc.go has no go:generate line")
	}

	dir := t.TempDir()
	proto, err := os.ReadFile("cosi.proto")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "cosi.proto"), proto, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", strings.Join(args, " "), err, out)
	}
	for _, name := range []string{"cosi.pb.go", "cosi_grpc.pb.go"} {
		fresh, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatalf("go:generate did not write %s: %v", name, err)
		}
		committed, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(fresh, committed) {
			t.Errorf("%s is not what go generate makes from cosi.proto: run go generate ./driver/bucket/cosiv1alpha2", name)
		}
	}
}
