package crd

import (
	"encoding/base64"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

var (
	update  = flag.Bool("update", false, "rewrite the golden files")
	verbose = flag.Bool("crd.verbose", false, "log every change found in the real catalogs")
)

// render is the text form golden files hold.
func render(changes []Change) string {
	var b strings.Builder
	for _, c := range changes {
		fmt.Fprintf(&b, "%s: %s: %s: %s\n", c.Position, c.Severity, c.Rule, c.Message)
		fmt.Fprintf(&b, "    crd=%s version=%q path=%q old=%q new=%q\n", c.CRD, c.Version, c.Path, c.Old, c.New)
		if m := c.OLMMessage(); m != "" {
			fmt.Fprintf(&b, "    olm: %s\n", m)
		}
	}
	verdict := "safe"
	if Unsafe(changes) {
		verdict = "unsafe"
	}
	fmt.Fprintf(&b, "verdict: %s (%d changes)\n", verdict, len(changes))
	return b.String()
}

func readCRDs(t *testing.T, path, label string) []*CRD {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	crds, fs, err := Parse(label, data)
	if err != nil {
		t.Fatalf("Parse(%s): %v (findings %v)", path, err, fs)
	}
	return crds
}

// TestGolden runs each folder of testdata/cases end to end: old.yaml and
// new.yaml in, expected.txt out. Run with -update to rewrite the golden files.
func TestGolden(t *testing.T) {
	dirs, err := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	if err != nil || len(dirs) == 0 {
		t.Fatalf("no cases: %v", err)
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			old := readCRDs(t, filepath.Join(dir, "old.yaml"), "old.yaml")
			new := readCRDs(t, filepath.Join(dir, "new.yaml"), "new.yaml")
			got := render(Diff(old, new, Options{}))
			golden := filepath.Join(dir, "expected.txt")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("Diff output differs from %s (run go test -update and review the diff):\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
			for _, set := range [][]*CRD{old, new} {
				if self := Diff(set, set, Options{}); len(self) != 0 {
					t.Errorf("Diff of a set with itself = %s, want nothing", render(self))
				}
			}
		})
	}
}

// sharedCatalog finds ../shared/testdata/catalogs/<name> from this package's
// directory (catalog/crd in the repository), or skips.
func sharedCatalog(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "catalogs", name)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real catalogs not found at %s (they live in ../shared next to the repository): %v", dir, err)
	}
	return dir
}

// bundleCRDs maps bundle name to the CRDs among its olm.bundle.object manifests.
type bundleCRDs map[string][]*CRD

// loadBundleCRDs reads one package file of a catalog and returns the CRDs of
// each bundle and the upgrade edges (replaces) of its channels as old → new pairs.
func loadBundleCRDs(tb testing.TB, path string) (bundleCRDs, [][2]string) {
	tb.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	docs, _ := catalog.ParseFile(path, data, catalog.Limits{})
	out := bundleCRDs{}
	var edges [][2]string
	seen := map[[2]string]bool{}
	for i := range docs {
		d := &docs[i]
		switch d.Schema {
		case "olm.bundle":
			props := d.Value.Get("properties")
			if props == nil {
				continue
			}
			items := props.Items()
			for j := range items {
				p := &items[j]
				if str(p.Get("type")) != "olm.bundle.object" {
					continue
				}
				raw, err := base64.StdEncoding.DecodeString(str(p.Get("value").Get("data")))
				if err != nil {
					tb.Errorf("%s bundle %s: bad base64: %v", path, d.Name, err)
					continue
				}
				crds, fs, err := ParseManifests(fmt.Sprintf("%s#%d", d.Name, j), raw)
				if err != nil {
					tb.Errorf("%s bundle %s: %v (%v)", path, d.Name, err, fs)
				}
				out[d.Name] = append(out[d.Name], crds...)
			}
		case "olm.channel":
			entries := d.Value.Get("entries")
			if entries == nil {
				continue
			}
			items := entries.Items()
			for j := range items {
				e := &items[j]
				if r := str(e.Get("replaces")); r != "" {
					k := [2]string{r, str(e.Get("name"))}
					if !seen[k] {
						seen[k] = true
						edges = append(edges, k)
					}
				}
			}
		}
	}
	return out, edges
}

// TestCommunityCatalog diffs the CRDs of every upgrade edge (replaces) of the
// real community catalog: every embedded CRD must parse, diffing a bundle with
// itself must say nothing, and the verdicts are kept in a golden summary.
func TestCommunityCatalog(t *testing.T) {
	root := sharedCatalog(t, "community-operators-prod-v4.16")
	files, err := filepath.Glob(filepath.Join(root, "*", "catalog.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no package files under %s: %v", root, err)
	}
	var summary []string
	pairs := 0
	for _, f := range files {
		pkg := filepath.Base(filepath.Dir(f))
		bundles, edges := loadBundleCRDs(t, f)
		for name, crds := range bundles {
			if self := Diff(crds, crds, Options{}); len(self) != 0 {
				t.Errorf("%s %s: Diff with itself = %s", pkg, name, render(self))
			}
		}
		sort.Slice(edges, func(i, j int) bool { return edges[i][1] < edges[j][1] })
		for _, e := range edges {
			old, okOld := bundles[e[0]]
			new, okNew := bundles[e[1]]
			if !okOld || !okNew {
				continue
			}
			pairs++
			changes := Diff(old, new, Options{})
			counts := map[string]int{}
			for _, c := range changes {
				counts[c.Rule]++
			}
			var parts []string
			for r, n := range counts {
				parts = append(parts, fmt.Sprintf("%s×%d", strings.TrimPrefix(r, "crd."), n))
			}
			sort.Strings(parts)
			verdict := "safe"
			if Unsafe(changes) {
				verdict = "unsafe"
			}
			summary = append(summary, strings.TrimSpace(fmt.Sprintf("%s -> %s: %s %s", e[0], e[1], verdict, strings.Join(parts, " "))))
			if *verbose {
				t.Logf("%s -> %s:\n%s", e[0], e[1], render(changes))
			}
		}
	}
	if pairs < 20 {
		t.Errorf("compared %d upgrade pairs, want at least 20", pairs)
	}
	got := strings.Join(summary, "\n") + "\n"
	golden := filepath.Join("testdata", "community-v4.16.txt")
	if *update {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("verdicts on the community catalog differ from %s (run go test -update and review)", golden)
	}
}
