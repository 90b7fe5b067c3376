package structure

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// featurePackages are the packages whose exported functions cmd calls as verbs (directory under
// pkg/). Plumbing (cluster, multicluster, output, config, repository clients) is not a verb.
var featurePackages = map[string]bool{
	"authz": true, "cani": true, "convert": true, "cutover": true, "deletion": true, "describe": true, "diagnose": true,
	"fleetupgrade": true, "init": true, "kubeconfig": true, "move": true, "rollout": true,
	"templates": true, "topology": true, "upgrade": true,
}

// notYetOneCall are the verbs cmd calls that do not have the one shape yet,
// `Verb(ctx context.Context, e env.Env, req XRequest) (*XResult, error)`: each moves to it as the
// seam issue proceeds. The list only shrinks: the test fails for a verb that is not in it and
// lacks the shape (a new verb takes the shape), and for one in it that has it now.
var notYetOneCall = map[string]bool{}

// TestEveryVerbHasOneShape lists every feature verb cmd/capctl calls (an exported function of a
// feature package called with ctx first) and holds it to the one shape, or to notYetOneCall.
func TestEveryVerbHasOneShape(t *testing.T) {
	root := filepath.Join("..", "..")
	called := verbsCalled(t, filepath.Join(root, "cmd", "capctl"))
	shaped := map[string]bool{}
	for dir := range featurePackages {
		for name, ok := range oneShaped(t, filepath.Join(root, "pkg", dir)) {
			shaped[name] = ok
		}
	}
	var names []string
	for v := range called {
		names = append(names, v)
	}
	sort.Strings(names)
	for _, v := range names {
		ok, found := shaped[v]
		switch {
		case !found:
			t.Errorf("%s: called by cmd but not found in a feature package", v)
		case ok && notYetOneCall[v]:
			t.Errorf("%s has the one shape now: remove it from notYetOneCall", v)
		case !ok && !notYetOneCall[v]:
			t.Errorf("%s: a verb is Verb(ctx context.Context, e env.Env, req XRequest) (*XResult, error)", v)
		}
	}
	for v := range notYetOneCall {
		if !called[v] {
			t.Errorf("%s is in notYetOneCall but cmd no longer calls it: remove it", v)
		}
	}
	n := 0
	for v := range called {
		if shaped[v] {
			n++
		}
	}
	t.Logf("%d verbs called by cmd, %d with the one shape", len(called), n)
}

// lowerLayers are feature packages other features build on: their verb is a view of a rule home
// the others use (authz: the permissions table every writing command checks, and `auth can-i`
// shows; delete and move fill its placeholders from their own plans).
var lowerLayers = map[string]bool{"authz": true}

// TestNoFeatureRunsAnothersVerb: a feature package calls no verb of another feature package (a
// function cmd calls as a command's one call): what two features share lives in a lower package
// or as a function of the other package that is not a command's verb, and a check one feature
// needs from another is wired by the caller as a function.
func TestNoFeatureRunsAnothersVerb(t *testing.T) {
	root := filepath.Join("..", "..")
	verbs := verbsCalled(t, filepath.Join(root, "cmd", "capctl"))
	dirs := make([]string, 0, len(featurePackages))
	for dir := range featurePackages {
		dirs = append(dirs, dir)
	}
	sort.Strings(dirs)
	for _, dir := range dirs {
		self := dir
		if dir == "init" {
			self = "clusterinit"
		}
		var calls []string
		for v := range verbsCalled(t, filepath.Join(root, "pkg", dir)) {
			if pkg, _, _ := strings.Cut(v, "."); pkg != self && verbs[v] && !lowerLayers[pkg] {
				calls = append(calls, v)
			}
		}
		sort.Strings(calls)
		if len(calls) > 0 {
			t.Errorf("pkg/%s runs another feature's verbs: %s", dir, strings.Join(calls, ", "))
		}
	}
}

// verbsCalled are the pkg.Func calls in dir's non-test files whose first argument is ctx and
// whose package is a feature package (named as the package calls itself).
func verbsCalled(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	out := map[string]bool{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{} // local name → package name
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			rest, ok := strings.CutPrefix(path, "github.com/capctl/capctl/pkg/")
			if !ok || !featurePackages[rest] {
				continue
			}
			pkgName := rest
			if rest == "init" {
				pkgName = "clusterinit"
			}
			local := pkgName
			if imp.Name != nil {
				local = imp.Name.Name
			}
			imports[local] = pkgName
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := sel.X.(*ast.Ident)
			if !ok || imports[pkg.Name] == "" || !ast.IsExported(sel.Sel.Name) {
				return true
			}
			if first, ok := call.Args[0].(*ast.Ident); ok && first.Name == "ctx" {
				out[imports[pkg.Name]+"."+sel.Sel.Name] = true
			}
			return true
		})
	}
	return out
}

// oneShaped maps each exported function of the package in dir to whether it has the one shape.
func oneShaped(t *testing.T, dir string) map[string]bool {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for name, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Recv != nil || !fn.Name.IsExported() {
					continue
				}
				out[name+"."+fn.Name.Name] = hasOneShape(fn.Type)
			}
		}
	}
	return out
}

// hasOneShape: (context.Context, env.Env, *Request or a type named ...Request) (*T, error).
func hasOneShape(ft *ast.FuncType) bool {
	var params []ast.Expr
	for _, f := range ft.Params.List {
		for range max(1, len(f.Names)) {
			params = append(params, f.Type)
		}
	}
	if len(params) != 3 || exprString(params[0]) != "context.Context" || exprString(params[1]) != "env.Env" || !strings.HasSuffix(exprString(params[2]), "Request") {
		return false
	}
	if ft.Results == nil || len(ft.Results.List) != 2 {
		return false
	}
	_, ptr := ft.Results.List[0].Type.(*ast.StarExpr)
	return ptr && exprString(ft.Results.List[1].Type) == "error"
}

func exprString(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.Ident:
		return x.Name
	case *ast.SelectorExpr:
		return exprString(x.X) + "." + x.Sel.Name
	case *ast.StarExpr:
		return "*" + exprString(x.X)
	}
	return ""
}
