package v1alpha2_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/csikit/csikit/driver/bucket/cosiv1alpha2"
	v1alpha2 "github.com/csikit/csikit/internal/cosi/v1alpha2"
)

const oldPath = "github.com/csikit/csikit/internal/cosi/v1alpha2"

// TestSomethingStillImportsTheOldPath keeps this package from outliving its purpose: once no Go
// file of the repository outside this directory imports the old path, it fails, saying to delete
// the package.
func TestSomethingStillImportsTheOldPath(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	self := filepath.Join(root, "internal", "cosi", "v1alpha2")
	var importers []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || name == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || filepath.Dir(path) == self {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return nil // not this test's business
		}
		for _, imp := range f.Imports {
			if p, _ := strconv.Unquote(imp.Path.Value); p == oldPath {
				importers = append(importers, path)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(importers) == 0 {
		t.Fatalf("nothing imports %s any more: delete internal/cosi/v1alpha2", oldPath)
	}
	t.Logf("still importing the old path: %s", strings.Join(importers, ", "))
}

// TestTheAliasesAreTheNewTypes: a value made through the old path is the new package's.
func TestTheAliasesAreTheNewTypes(t *testing.T) {
	var req any = &v1alpha2.DriverCreateBucketRequest{Name: "b"}
	if r, ok := req.(*cosiv1alpha2.DriverCreateBucketRequest); !ok || r.GetName() != "b" {
		t.Fatalf("%T is not *cosiv1alpha2.DriverCreateBucketRequest", req)
	}
	if v1alpha2.AccessMode_READ_ONLY != cosiv1alpha2.AccessMode_READ_ONLY || v1alpha2.File_csikit_cosi_v1alpha2_cosi_proto != cosiv1alpha2.File_csikit_cosi_v1alpha2_cosi_proto {
		t.Fatal("the constants or the file descriptor differ")
	}
}
