package aggregator

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// layers is the package map of the package documentation: every package under aggregator/, by
// its path below it ("" for this package), and its layer. A package may import only packages of
// lower layers.
var layers = map[string]int{
	"internal/rules":             0,
	"internal/testutil":          0,
	"internal/pacing":            1,
	"internal/echo":              1,
	"internal/resources":         1,
	"internal/itscache":          1,
	"internal/index":             1,
	"internal/metrics":           2,
	"internal/report":            2,
	"internal/writer":            3,
	"internal/inputs":            3,
	"internal/controllers":       3,
	"internal/luaconfig":         3,
	"internal/inputs/inputstest": 4,
	"internal/combined":          5,
	"internal/statusreturn":      5,
	"internal/objects":           6,
	"internal/policies":          6,
	"internal/kinds":             6,
	"internal/fanout":            7,
	"":                           8,
}

const aggregatorPath = "github.com/statusfold/statusfold/aggregator"

// TestLayers parses the imports of every package under aggregator/ (its tests included) and
// fails when one imports a package of its own layer or a higher one, or is not in the map.
func TestLayers(t *testing.T) {
	imports, err := aggregatorImports(".")
	if err != nil {
		t.Fatal(err)
	}
	for pkg, imported := range imports {
		layer, ok := layers[pkg]
		if !ok {
			t.Errorf("package %q is not in the layer map (layers_test.go, doc.go)", pkg)
			continue
		}
		for dep, file := range imported {
			depLayer, ok := layers[dep]
			switch {
			case !ok:
				t.Errorf("%s imports %q, which is not in the layer map", file, dep)
			case depLayer >= layer:
				t.Errorf("%s (layer %d) imports %q (layer %d): only lower layers may be imported", file, layer, dep, depLayer)
			}
		}
	}
	for pkg := range layers {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("package %q of the layer map does not exist", pkg)
		}
	}
}

// aggregatorImports returns, for every package below root (by its path below root), the
// packages below root it imports, each with a file that imports it.
func aggregatorImports(root string) (map[string]map[string]string, error) {
	out := map[string]map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.Contains(path, "testdata") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(filepath.Dir(path))
		if pkg == "." {
			pkg = ""
		}
		if out[pkg] == nil {
			out[pkg] = map[string]string{}
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if p == aggregatorPath {
				out[pkg][""] = path
			} else if rest, ok := strings.CutPrefix(p, aggregatorPath+"/"); ok {
				out[pkg][rest] = path
			}
		}
		return nil
	})
	return out, err
}
