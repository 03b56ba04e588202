// Package layout checks the shape of the repository's Go code: every hand-written file is short
// enough to read in one sitting and every function short enough to hold in mind — at most
// maxFileLines lines per file and maxFuncLines per function (from `func` to its closing brace),
// tests included. Generated code (zz_generated*, files marked "Code generated … DO NOT EDIT") is
// exempt. ARCHITECTURE.md lists it among the checks that keep the code's shape.
package layout

import (
	"bufio"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const (
	maxFileLines = 400
	maxFuncLines = 80
)

// root is the repository's root, two folders up from this package.
const root = "../.."

// generated is Go's marker of generated code (https://go.dev/s/generatedcode).
var generated = regexp.MustCompile(`^// Code generated .* DO NOT EDIT\.$`)

func TestFileAndFunctionSizes(t *testing.T) {
	files := goFiles(t)
	if len(files) < 100 {
		t.Fatalf("found %d Go files under %s: the walk is wrong", len(files), root)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		lines, gen := countLines(t, path)
		if gen {
			continue
		}
		if lines > maxFileLines {
			t.Errorf("%s: %d lines, more than %d: split it by what its parts do", rel, lines, maxFileLines)
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if n := fset.Position(fd.End()).Line - fset.Position(fd.Pos()).Line + 1; n > maxFuncLines {
				t.Errorf("%s: func %s: %d lines, more than %d", rel, funcName(fd), n, maxFuncLines)
			}
		}
	}
}

// goFiles lists the repository's .go files, outside .git, bin/ and testdata/ folders.
func goFiles(t *testing.T) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "bin", "testdata", "node_modules":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".go") && !strings.HasPrefix(d.Name(), "zz_generated") {
			out = append(out, path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// countLines returns a file's number of lines and whether it is marked as generated.
func countLines(t *testing.T, path string) (int, bool) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n, gen := 0, false
	s := bufio.NewScanner(f)
	s.Buffer(make([]byte, 0, 64*1024), 1<<20)
	for s.Scan() {
		n++
		if generated.MatchString(s.Text()) {
			gen = true
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	return n, gen
}

func funcName(fd *ast.FuncDecl) string {
	if fd.Recv == nil || len(fd.Recv.List) == 0 {
		return fd.Name.Name
	}
	typ := fd.Recv.List[0].Type
	for {
		switch x := typ.(type) {
		case *ast.StarExpr:
			typ = x.X
			continue
		case *ast.IndexExpr:
			typ = x.X
			continue
		case *ast.IndexListExpr:
			typ = x.X
			continue
		case *ast.Ident:
			return x.Name + "." + fd.Name.Name
		}
		return fd.Name.Name
	}
}
