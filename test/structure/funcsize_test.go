// Package structure_test checks rules about the shape of capctl's own code that no compiler or
// vet check enforces.
package structure_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// Limits for production functions (issue 28): orchestration is split into named steps, not
// grown into one long function or one with a long parameter list. Parameters are counted as Go
// counts them (the receiver is not one); function literals count as functions.
const (
	maxLines  = 120
	maxParams = 6
)

// harnesses are the directories of test support packages: not production code, though they are
// not _test.go files.
var harnesses = []string{
	"internal/testing",
}

// knownLong are functions allowed over a limit while a change splits them (directory and
// function, as violations prints them); none is left. The test fails for an entry that is no
// longer over a limit, so the list only ever shrinks.
var knownLong = map[string]bool{}

func TestNoLongFunctions(t *testing.T) {
	root := filepath.Join("..", "..")
	found := violations(t, root)
	var unexpected []string
	for key, what := range found {
		if !knownLong[key] {
			unexpected = append(unexpected, key+": "+what)
		}
	}
	sort.Strings(unexpected)
	for _, v := range unexpected {
		t.Errorf("%s: split it into named steps (at most %d lines, %d parameters)", v, maxLines, maxParams)
	}
	var stale []string
	for key := range knownLong {
		if _, ok := found[key]; !ok {
			stale = append(stale, key)
		}
	}
	sort.Strings(stale)
	for _, key := range stale {
		t.Errorf("%s is no longer over a limit: remove it from knownLong", key)
	}
}

// violations maps "directory function" to what is over a limit, for every production function
// in cmd/, pkg/ and internal/.
func violations(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	fset := token.NewFileSet()
	for _, top := range []string{"cmd", "pkg", "internal"} {
		err := filepath.WalkDir(filepath.Join(root, top), func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if d.Name() == "testdata" || isHarness(rel) {
					return filepath.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") {
				return nil
			}
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				return err
			}
			dir := filepath.ToSlash(filepath.Dir(rel))
			for key, what := range fileViolations(fset, f) {
				out[dir+" "+key] = what
			}
			return nil
		})
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	return out
}

func isHarness(dir string) bool {
	for _, h := range harnesses {
		if dir == h || strings.HasPrefix(dir, h+"/") {
			return true
		}
	}
	return false
}

// fileViolations maps the functions of f over a limit (function literals as "literal in NAME at
// line N") to what is over it.
func fileViolations(fset *token.FileSet, f *ast.File) map[string]string {
	out := map[string]string{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := funcName(fn)
		if what := overLimit(fset, fn, fn.Type); what != "" {
			out[name] = what
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			if lit, ok := n.(*ast.FuncLit); ok {
				if what := overLimit(fset, lit, lit.Type); what != "" {
					out["literal in "+name+" at line "+strconv.Itoa(fset.Position(lit.Pos()).Line)] = what
				}
			}
			return true
		})
	}
	return out
}

func overLimit(fset *token.FileSet, n ast.Node, ft *ast.FuncType) string {
	lines := fset.Position(n.End()).Line - fset.Position(n.Pos()).Line + 1
	params := 0
	for _, p := range ft.Params.List {
		params += max(len(p.Names), 1)
	}
	var over []string
	if lines > maxLines {
		over = append(over, strconv.Itoa(lines)+" lines")
	}
	if params > maxParams {
		over = append(over, strconv.Itoa(params)+" parameters")
	}
	return strings.Join(over, ", ")
}

func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if s, ok := t.(*ast.StarExpr); ok {
		t = s.X
	}
	switch x := t.(type) {
	case *ast.IndexExpr:
		t = x.X
	case *ast.IndexListExpr:
		t = x.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
