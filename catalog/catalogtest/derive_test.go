package catalogtest

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

func writeFS(t *testing.T, dir string, opt Options) {
	t.Helper()
	for name, f := range Generate(opt) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, f.Data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func findingRules(t *testing.T, dir string) []string {
	t.Helper()
	cat, err := catalog.LoadDir(context.Background(), dir, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var rules []string
	for _, f := range catalog.Validate(cat, catalog.ValidateOptions{}) {
		rules = append(rules, f.Rule)
	}
	sort.Strings(rules)
	return rules
}

// Two catalogs with the same package names merge, renamed, into one that
// validates as they do, repeated until it reaches the size asked for.
func TestDeriveMergesRenamedPackages(t *testing.T) {
	tmp := t.TempDir()
	a, b := filepath.Join(tmp, "a"), filepath.Join(tmp, "b")
	writeFS(t, a, Options{Bundles: 60, PerPackage: 20, Seed: 1, ObjectsEvery: 2})
	writeFS(t, b, Options{Bundles: 40, PerPackage: 20, Seed: 2})
	if rules := findingRules(t, a); len(rules) != 0 {
		t.Fatalf("source a has findings %v", rules)
	}
	var srcBytes int64
	filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			info, _ := d.Info()
			srcBytes += info.Size()
		}
		return err
	})
	dst := filepath.Join(tmp, "derived")
	n, err := Derive(context.Background(), dst, []Source{{Dir: a, Tag: "v4.16"}, {Dir: b, Tag: "v4.17"}}, 2*srcBytes)
	if err != nil {
		t.Fatal(err)
	}
	if n < 2*srcBytes {
		t.Errorf("wrote %d bytes, want at least %d", n, 2*srcBytes)
	}
	if rules := findingRules(t, dst); len(rules) != 0 {
		t.Errorf("the derived catalog has findings %v; the sources had none", rules)
	}
	cat, err := catalog.LoadDir(context.Background(), dst, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range cat.Packages {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	for _, want := range []string{"operator-00000-v4-16", "operator-00001-v4-17", "operator-00000-v4-16-r2"} {
		if i := sort.SearchStrings(names, want); i == len(names) || names[i] != want {
			t.Errorf("package %s missing from %s", want, strings.Join(names, " "))
		}
	}
}
