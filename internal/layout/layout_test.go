// Package layout holds the tests that keep the product and the lab apart
// (no product package depends on the lab, and the product's command
// reaches the lab only through the demo) and the commands thin.
package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/scout-discovery/scout/internal/peer"
)

const module = "github.com/scout-discovery/scout"

// deps returns every package of the module with its dependencies (go list
// -deps: imports, transitively, tests excluded).
func deps(t *testing.T) map[string][]string { return list(t, "Deps") }

// imports returns every package of the module with its direct imports
// (tests excluded).
func imports(t *testing.T) map[string][]string { return list(t, "Imports") }

// list returns every package of the module with the list go list gives
// as field.
func list(t *testing.T, field string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-f", `{{.ImportPath}} {{join .`+field+` " "}}`, "./...")
	cmd.Dir = peer.ModuleRoot(t)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	m := map[string][]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Fields(line)
		if len(f) > 0 {
			m[f[0]] = f[1:]
		}
	}
	return m
}

func isLab(p string) bool { return strings.HasPrefix(p, module+"/lab/") }

// labDeps returns the lab packages among ds, sorted.
func labDeps(ds []string) []string {
	var out []string
	for _, d := range ds {
		if isLab(d) {
			out = append(out, d)
		}
	}
	slices.Sort(out)
	return out
}

// TestLayout_ProductImportsNoLab: no package outside lab/ (the product's
// command, cmd/scout, aside: its demo runs on the lab's emulated world)
// depends on a lab package.
func TestLayout_ProductImportsNoLab(t *testing.T) {
	all := deps(t)
	if len(all) < 20 {
		t.Fatalf("go list found %d packages", len(all))
	}
	for p, ds := range all {
		if isLab(p) || p == module+"/cmd/scout" {
			continue
		}
		if l := labDeps(ds); len(l) > 0 {
			t.Errorf("%s depends on the lab: %v", p, l)
		}
	}
}

// TestLayout_ScoutReachesLabOnlyThroughDemo: cmd/scout imports lab/demo
// and no other lab package, and the lab packages it depends on are
// exactly lab/demo and what lab/demo depends on.
func TestLayout_ScoutReachesLabOnlyThroughDemo(t *testing.T) {
	all := deps(t)
	scout, demo := module+"/cmd/scout", module+"/lab/demo"
	want := append(labDeps(all[demo]), demo)
	slices.Sort(want)
	if got := labDeps(all[scout]); !slices.Equal(got, want) {
		t.Errorf("cmd/scout's lab dependencies:\n  %v\nwant lab/demo's closure:\n  %v", got, want)
	}
	if got := labDeps(imports(t)[scout]); !slices.Equal(got, []string{demo}) {
		t.Errorf("cmd/scout imports from the lab %v, want lab/demo alone", got)
	}
}

// maxCommandFunc bounds a function's lines in the commands: one longer is
// logic that belongs in a package, the commands only parse, wire and print.
const maxCommandFunc = 80

// TestLayout_CommandsAreThin: no function (or function literal) of
// cmd/scout or lab/cmd/scout-lab, tests aside, is over maxCommandFunc
// lines.
func TestLayout_CommandsAreThin(t *testing.T) {
	root := peer.ModuleRoot(t)
	fset := token.NewFileSet()
	for _, dir := range []string{"cmd/scout", "lab/cmd/scout-lab"} {
		files, err := filepath.Glob(filepath.Join(root, dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v", dir, err)
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			af, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			ast.Inspect(af, func(n ast.Node) bool {
				var body *ast.BlockStmt
				name := "a function literal"
				switch x := n.(type) {
				case *ast.FuncDecl:
					body, name = x.Body, x.Name.Name
				case *ast.FuncLit:
					body = x.Body
				}
				if body != nil {
					start := fset.Position(n.Pos())
					if lines := fset.Position(body.Rbrace).Line - start.Line + 1; lines > maxCommandFunc {
						t.Errorf("%s:%d: %s is %d lines (at most %d: move the logic to a package)", filepath.Join(dir, filepath.Base(f)), start.Line, name, lines, maxCommandFunc)
					}
				}
				return true
			})
		}
	}
}
