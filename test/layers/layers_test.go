// Package layers holds the test that keeps the repository's packages in their layers: no package imports one
// above it (see the README's layout table and each package's doc.go).
package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

const module = "github.com/catalogbot/catalogbot"

// imports maps every package of the module (by path relative to the module root) to the module's packages
// its non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, ".go") || strings.HasSuffix(p, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), p, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, filepath.Dir(p))
		if err != nil {
			return err
		}
		pkg := filepath.ToSlash(rel)
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		for _, is := range f.Imports {
			ip := strings.Trim(is.Path.Value, `"`)
			if ip == module || strings.HasPrefix(ip, module+"/") {
				dep := strings.TrimPrefix(strings.TrimPrefix(ip, module), "/")
				out[pkg] = append(out[pkg], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range out {
		sort.Strings(v)
		out[k] = slicesCompact(v)
	}
	return out
}

func slicesCompact(s []string) []string {
	var out []string
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// under reports whether pkg is dir or a package below it.
func under(pkg, dir string) bool { return pkg == dir || strings.HasPrefix(pkg, dir+"/") }

// rule says that packages matching from must not import packages matching to, and why.
type rule struct {
	from, to func(string) bool
	why      string
}

func in(dirs ...string) func(string) bool {
	return func(p string) bool {
		for _, d := range dirs {
			if under(p, d) {
				return true
			}
		}
		return false
	}
}

func exactly(pkgs ...string) func(string) bool {
	return func(p string) bool {
		for _, q := range pkgs {
			if p == q {
				return true
			}
		}
		return false
	}
}

// checksRoom is a subpackage of checks (a room below the registry and runner).
func checksRoom(p string) bool { return strings.HasPrefix(p, "checks/") }

var rules = []rule{
	{in("catalog"), in("checks", "app", "cmd", "policy", "registry", "promote", "sign", "gitfs", "internal/githubfake"),
		"catalog and catalog/* are the bottom layer: they import nothing of ours above them"},
	{in("checks"), in("app", "cmd"), "checks sits below the App and the commands"},
	{checksRoom, exactly("checks"), "a room of checks must not import package checks, which lists the checks and imports the rooms"},
	{exactly("checks/change"), func(p string) bool { return checksRoom(p) && p != "checks/change" && p != "checks/verdict" },
		"checks/change is the room below every check: it imports no other room but verdict"},
	{exactly("checks/verdict"), in("checks/change", "checks/render", "checks/gitpr"), "verdict is what a check run says, below every room"},
	{in("app"), in("cmd"), "app is below the commands"},
	{func(p string) bool { return !under(p, "cmd") }, in("cmd"), "commands are programs: nothing imports them"},
	{in("internal/githubfake"), in("app", "checks", "cmd", "catalog"), "the GitHub simulator knows nothing of what it serves"},
	{func(p string) bool { return strings.HasPrefix(p, "internal/githubfake/") }, exactly("internal/githubfake"),
		"githubfake's rooms (fakegit, checkrun) must not import it back"},
}

// Each package imports only packages of its layer or below: a change that makes one import up fails here with
// the import and the rule.
func TestNoUpwardImports(t *testing.T) {
	graph := imports(t)
	if len(graph["checks"]) == 0 || len(graph["catalog"]) == 0 {
		t.Fatalf("read no imports of checks or catalog: is the test run from test/layers? (%d packages)", len(graph))
	}
	for pkg, deps := range graph {
		for _, dep := range deps {
			for _, r := range rules {
				if r.from(pkg) && r.to(dep) && !under(dep, pkg) {
					t.Errorf("%s imports %s: %s", pkg, dep, r.why)
				}
			}
		}
	}
}

// The import graph of the module has no cycle (the compiler refuses one between packages; this also names
// it, and holds for build tags the compiler did not see).
func TestNoImportCycles(t *testing.T) {
	graph := imports(t)
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var stack []string
	var visit func(p string)
	visit = func(p string) {
		colour[p] = grey
		stack = append(stack, p)
		for _, d := range graph[p] {
			switch colour[d] {
			case grey:
				t.Errorf("import cycle: %s -> %s", strings.Join(stack, " -> "), d)
			case white:
				visit(d)
			}
		}
		stack = stack[:len(stack)-1]
		colour[p] = black
	}
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		if colour[p] == white {
			visit(p)
		}
	}
}

// TestPrintGraph lists each package's in-repo imports with -v (a record for the layout docs).
func TestPrintGraph(t *testing.T) {
	if !testing.Verbose() {
		t.Skip("run with -v to list the import graph")
	}
	graph := imports(t)
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	sort.Strings(pkgs)
	for _, p := range pkgs {
		t.Logf("%s: %s", p, strings.Join(graph[p], " "))
	}
}
