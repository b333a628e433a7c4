package metrics_test

import (
	"context"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/csikit/csikit/internal/testenv"
	"github.com/csikit/csikit/middleware/metrics"
)

// csiLibUtils is the release whose metric names dashboards are written against.
const csiLibUtils = "github.com/kubernetes-csi/csi-lib-utils@v0.25.0"

// csiLibUtilsMetrics finds csi-lib-utils' metrics.go in the module cache, downloading the module
// when the network allows. The SDK does not depend on csi-lib-utils; the test only reads its
// source.
func csiLibUtilsMetrics(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMODCACHE").Output()
	if err != nil {
		testenv.Skip(t, "cannot ask the go command for GOMODCACHE: %v", err)
	}
	path := filepath.Join(strings.TrimSpace(string(out)), filepath.FromSlash(csiLibUtils), "metrics", "metrics.go")
	if _, err := os.Stat(path); err == nil {
		return path
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	// Run outside the module so that the download cannot touch the SDK's go.mod or go.sum.
	cmd := exec.CommandContext(ctx, "go", "mod", "download", csiLibUtils)
	cmd.Dir = t.TempDir()
	if out, err := cmd.CombinedOutput(); err != nil {
		testenv.Skip(t, "%s is not in the module cache and cannot be downloaded (%v: %s); run `go mod download %s` to check metric names against it",
			csiLibUtils, err, strings.TrimSpace(string(out)), csiLibUtils)
	}
	if _, err := os.Stat(path); err != nil {
		testenv.Skip(t, "%s downloaded but %s is missing: %v", csiLibUtils, path, err)
	}
	return path
}

// TestMatchesCSILibUtils reads the constants csi-lib-utils builds its plugin histogram from and
// checks that ours are the same, so that dashboards keyed on its names read our metrics.
func TestMatchesCSILibUtils(t *testing.T) {
	path := csiLibUtilsMetrics(t)
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", path, err)
	}
	strs := map[string]string{}
	var bucketLits []ast.Expr
	var codeString bool
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ValueSpec:
			for i, name := range n.Names {
				if i >= len(n.Values) {
					continue
				}
				switch v := n.Values[i].(type) {
				case *ast.BasicLit:
					if s, err := strconv.Unquote(v.Value); err == nil && v.Kind == token.STRING {
						strs[name.Name] = s
					}
				case *ast.CompositeLit:
					if name.Name == "operationsLatencyBuckets" {
						bucketLits = v.Elts
					}
				}
			}
		case *ast.FuncDecl:
			// getErrorCode labels a status error with st.Code().String().
			if n.Name.Name == "getErrorCode" {
				ast.Inspect(n.Body, func(n ast.Node) bool {
					if sel, ok := n.(*ast.SelectorExpr); ok && sel.Sel.Name == "String" {
						if call, ok := sel.X.(*ast.CallExpr); ok {
							if inner, ok := call.Fun.(*ast.SelectorExpr); ok && inner.Sel.Name == "Code" {
								codeString = true
							}
						}
					}
					return true
				})
			}
		}
		return true
	})

	for _, tc := range []struct{ theirs, ours string }{
		{"SubsystemPlugin", metrics.SubsystemCSI},
		{"operationsLatencyMetricName", metrics.OperationsName},
		{"operationsLatencyHelp", metrics.OperationsHelp},
		{"labelCSIDriverName", metrics.LabelDriverName},
		{"labelCSIOperationName", metrics.LabelMethodName},
		{"labelGrpcStatusCode", metrics.LabelStatusCode},
		{"unknownCSIDriverName", metrics.UnknownDriverName},
	} {
		t.Run(tc.theirs, func(t *testing.T) {
			theirs, ok := strs[tc.theirs]
			if !ok {
				t.Fatalf("csi-lib-utils no longer defines %s; re-check the metric names by hand", tc.theirs)
			}
			if theirs != tc.ours {
				t.Errorf("csi-lib-utils %s = %q, ours = %q", tc.theirs, theirs, tc.ours)
			}
		})
	}

	t.Run("operationsLatencyBuckets", func(t *testing.T) {
		var theirs []float64
		for _, e := range bucketLits {
			lit, ok := e.(*ast.BasicLit)
			if !ok {
				t.Fatalf("bucket %T is not a literal", e)
			}
			v, err := strconv.ParseFloat(lit.Value, 64)
			if err != nil {
				t.Fatal(err)
			}
			theirs = append(theirs, v)
		}
		if len(theirs) == 0 || !slices.Equal(theirs, metrics.Buckets()) {
			t.Errorf("csi-lib-utils buckets %v, ours %v", theirs, metrics.Buckets())
		}
	})

	t.Run("status code label is Code().String()", func(t *testing.T) {
		if !codeString {
			t.Error("csi-lib-utils' getErrorCode no longer labels with Code().String(); re-check grpc_status_code values")
		}
	})
}
