package catalog_test

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/catalogtest"
)

// filterFindings keeps what an incremental validation of pkgs must report.
func filterFindings(fs []catalog.Finding, pkgs []string) []catalog.Finding {
	want := map[string]bool{}
	for _, p := range pkgs {
		want[p] = true
	}
	var out []catalog.Finding
	for _, f := range fs {
		if catalog.IsCatalogWide(f) || want[f.Package] {
			out = append(out, f)
		}
	}
	return out
}

// checkIncremental asserts, for many package subsets of c, that incremental
// validation equals full validation filtered to the subset.
func checkIncremental(t *testing.T, name string, c *catalog.Catalog, rng *rand.Rand, rounds int) {
	t.Helper()
	full := catalog.Validate(c, catalog.ValidateOptions{})
	var names []string
	for _, p := range c.Packages {
		names = append(names, p.Name)
	}
	subsets := [][]string{{"no-such-package"}}
	for _, n := range names {
		subsets = append(subsets, []string{n})
	}
	for r := 0; r < rounds && len(names) > 0; r++ {
		k := 1 + rng.IntN(min(4, len(names)))
		var s []string
		for i := 0; i < k; i++ {
			s = append(s, names[rng.IntN(len(names))])
		}
		subsets = append(subsets, s)
	}
	for _, s := range subsets {
		got := catalog.Validate(c, catalog.ValidateOptions{Packages: s})
		want := filterFindings(full, s)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: Validate(Packages=%q) gave %d findings, full validation filtered gives %d\ngot:  %v\nwant: %v", name, s, len(got), len(want), got, want)
		}
	}
}

func TestIncrementalEqualsFilteredFull(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	ctx := context.Background()
	// Synthetic catalogs with planted defects.
	for seed := uint64(1); seed <= 6; seed++ {
		fsys := catalogtest.Generate(catalogtest.Options{Bundles: 300, PerPackage: 12, Seed: seed, ObjectsEvery: 3, Defects: 8})
		c, err := catalog.Load(ctx, fsys, catalog.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		if seed == 1 && !catalog.HasErrors(catalog.Validate(c, catalog.ValidateOptions{})) {
			t.Errorf("synthetic catalog with defects has no error; the generator plants none")
		}
		checkIncremental(t, "synthetic", c, rng, 20)
	}
	// Every golden case, merged into one catalog root per case.
	cases, _ := filepath.Glob(filepath.Join("testdata", "validate", "*", "catalog"))
	for _, dir := range cases {
		c, err := catalog.LoadDir(ctx, dir, catalog.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		checkIncremental(t, dir, c, rng, 3)
	}
	// The real catalogs, when present.
	for _, name := range []string{"community-operators-prod-v4.16", "community-operators-prod-v4.21"} {
		dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
		if _, err := os.Stat(dir); err != nil {
			t.Logf("skipping %s: not found", dir)
			continue
		}
		c, err := catalog.LoadDir(ctx, dir, catalog.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		checkIncremental(t, name, c, rng, 5)
	}
}

// TestSyntheticCatalogValid: without planted defects the generator's
// catalogs are valid, so benchmarks measure the common path.
func TestSyntheticCatalogValid(t *testing.T) {
	fsys := catalogtest.Generate(catalogtest.Options{Bundles: 500, Seed: 3, ObjectsEvery: 2})
	c, err := catalog.Load(context.Background(), fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range catalog.Validate(c, catalog.ValidateOptions{}) {
		t.Errorf("got finding %s, want none", f)
	}
	if got := len(c.Packages); got != 25 {
		t.Errorf("got %d packages, want 25", got)
	}
}

// FuzzValidate: any catalog text loads and validates without panicking, every
// finding is positioned and documented, and incremental validation of each
// package equals the filtered full validation.
func FuzzValidate(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join("testdata", "validate", "*", "catalog", "*", "*"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(string(data), "")
		}
	}
	f.Add("schema: olm.package\nname: a\n", `{"schema":"olm.channel","package":"a","name":"s","entries":[{"name":"b","skips":[""],"skipRange":">=1.x"}]}`)
	rules := map[string]bool{}
	for _, r := range catalog.Rules() {
		rules[r.ID] = true
	}
	f.Fuzz(func(t *testing.T, yamlText, jsonText string) {
		fsys := fstest.MapFS{
			"a/catalog.yaml": {Data: []byte(yamlText)},
			"b/catalog.json": {Data: []byte(jsonText)},
		}
		c, err := catalog.Load(context.Background(), fsys, catalog.Limits{MaxFileSize: 1 << 20})
		if err != nil {
			t.Fatalf("Load: %v", err)
		}
		full := catalog.Validate(c, catalog.ValidateOptions{})
		for _, fd := range full {
			if fd.File == "" || fd.Line < 1 {
				t.Errorf("finding without position: %+v", fd)
			}
			if !rules[fd.Rule] {
				t.Errorf("finding with undocumented rule %q: %+v", fd.Rule, fd)
			}
			if fd.Message == "" {
				t.Errorf("finding without message: %+v", fd)
			}
		}
		for _, p := range c.Packages {
			got := catalog.Validate(c, catalog.ValidateOptions{Packages: []string{p.Name}})
			if want := filterFindings(full, []string{p.Name}); !reflect.DeepEqual(got, want) {
				t.Errorf("incremental for %q differs:\ngot:  %v\nwant: %v", p.Name, got, want)
			}
			for _, b := range p.Bundles {
				c.Predecessors(p.Name, b.Name)
				b.Objects()
				b.Version()
			}
			for _, ch := range p.Channels {
				c.ChannelHead(p.Name, ch.Name)
			}
		}
	})
}
