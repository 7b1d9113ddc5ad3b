package catalog_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/catalogtest"
)

// realCatalogDir returns a real catalog kept next to the repository, or skips.
func realCatalogDir(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		tb.Skipf("real catalog %s not found (it lives outside the repository, in ../shared)", dir)
	}
	return dir
}

// BenchmarkLoadValidate is Load + Validate of the real catalogs and of
// synthetic ones of growing size, so the cost curve is visible.
func BenchmarkLoadValidate(b *testing.B) {
	for _, name := range []string{"community-operators-prod-v4.16", "community-operators-prod-v4.21"} {
		b.Run(name, func(b *testing.B) {
			dir := realCatalogDir(b, name)
			fsys := os.DirFS(dir)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				c, err := catalog.Load(context.Background(), fsys, catalog.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				if fs := catalog.Validate(c, catalog.ValidateOptions{}); catalog.HasErrors(fs) {
					b.Fatalf("real catalog has errors: %v", fs[0])
				}
			}
		})
	}
	for _, n := range []int{1_000, 10_000, 100_000} {
		b.Run(fmt.Sprintf("synthetic-%dk", n/1000), func(b *testing.B) {
			if n >= 100_000 && testing.Short() {
				b.Skip("the 100k-bundle catalog takes about 180 MB of YAML and 2 GB of allocations; skipped with -short")
			}
			fsys := catalogtest.Generate(catalogtest.Options{Bundles: n, Seed: 1, ObjectsEvery: 4})
			var size int64
			for _, f := range fsys {
				size += int64(len(f.Data))
			}
			b.SetBytes(size)
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				c, err := catalog.Load(context.Background(), fsys, catalog.Limits{})
				if err != nil {
					b.Fatal(err)
				}
				catalog.Validate(c, catalog.ValidateOptions{})
			}
		})
	}
}

// BenchmarkValidate is Validate alone (the catalog loaded once).
func BenchmarkValidate(b *testing.B) {
	for _, name := range []string{"community-operators-prod-v4.16", "community-operators-prod-v4.21"} {
		b.Run(name, func(b *testing.B) {
			c, err := catalog.LoadDir(context.Background(), realCatalogDir(b, name), catalog.Limits{})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			defer reportCPU(b)()
			for b.Loop() {
				catalog.Validate(c, catalog.ValidateOptions{})
			}
		})
	}
	b.Run("synthetic-10k", func(b *testing.B) {
		c, err := catalog.Load(context.Background(), catalogtest.Generate(catalogtest.Options{Bundles: 10_000, Seed: 1, ObjectsEvery: 4}), catalog.Limits{})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		defer reportCPU(b)()
		for b.Loop() {
			catalog.Validate(c, catalog.ValidateOptions{})
		}
	})
}

// BenchmarkValidateIncremental validates one package of v4.16 (the one with
// the most bundles), the cost of checking a pull request touching it.
func BenchmarkValidateIncremental(b *testing.B) {
	c, err := catalog.LoadDir(context.Background(), realCatalogDir(b, "community-operators-prod-v4.16"), catalog.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var biggest *catalog.Package
	for _, p := range c.Packages {
		if biggest == nil || len(p.Bundles) > len(biggest.Bundles) {
			biggest = p
		}
	}
	opt := catalog.ValidateOptions{Packages: []string{biggest.Name}}
	b.ReportAllocs()
	defer reportCPU(b)()
	for b.Loop() {
		catalog.Validate(c, opt)
	}
}

// reportCPU starts measuring process CPU time; the returned func reports it
// per operation as cpu-ms/op (all goroutines, GC included).
func reportCPU(b *testing.B) func() {
	start := processCPU()
	return func() {
		if b.N > 0 && start > 0 {
			b.ReportMetric(float64(processCPU()-start)/float64(b.N)/1e6, "cpu-ms/op")
		}
	}
}
