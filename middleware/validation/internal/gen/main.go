// Command gen writes required_gen.go, the table of REQUIRED fields of the CSI messages, from the
// comments in the csi.proto of the spec module this build depends on.
//
// It runs from `go generate` in the validation package directory:
//
//	//go:generate go run ./internal/gen
//
// csi.proto is found with `go list -m`, so upgrading the spec module in go.mod and running
// `go generate ./middleware/validation` is the whole upgrade. Comments that mention REQUIRED in a
// way the parser does not classify are printed so that a person reviews them (exceptions.go).
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/csikit/csikit/middleware/validation/internal/protoreq"
)

func main() {
	out := flag.String("out", "required_gen.go", "file to write")
	module := flag.String("module", "github.com/container-storage-interface/spec", "module holding csi.proto")
	pkg := flag.String("pkg", "validation", "Go package name of the output")
	flag.Parse()
	if err := run(*out, *module, *pkg); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

func run(out, module, pkg string) error {
	dir, version, err := ModuleDir(module)
	if err != nil {
		return err
	}
	src, err := os.ReadFile(filepath.Join(dir, "csi.proto"))
	if err != nil {
		return fmt.Errorf("read csi.proto: %w", err)
	}
	res, err := protoreq.Parse(src)
	if err != nil {
		return fmt.Errorf("parse csi.proto: %w", err)
	}
	code, err := protoreq.Render(res, pkg, module+"@"+version, version)
	if err != nil {
		return fmt.Errorf("render: %w", err)
	}
	for _, h := range res.Unclear {
		text := h.Text
		if len(text) > 120 {
			text = text[:120] + "..."
		}
		fmt.Fprintf(os.Stderr, "gen: review (exceptions.go reviewedComments): %s %s: %s\n", h.Kind, h.Where, text)
	}
	if old, err := os.ReadFile(out); err == nil && bytes.Equal(old, code) {
		return nil
	}
	if err := os.WriteFile(out, code, 0o644); err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	return nil
}

// ModuleDir returns the directory and version of a module of the current build list.
func ModuleDir(module string) (dir, version string, err error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}\n{{.Version}}", module)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return "", "", fmt.Errorf("go list -m %s: %w: %s", module, err, strings.TrimSpace(stderr.String()))
	}
	parts := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(parts) != 2 || parts[0] == "" {
		return "", "", fmt.Errorf("go list -m %s: module not downloaded (run go mod download)", module)
	}
	return parts[0], parts[1], nil
}
