package catalog_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// mapKeyedFS names contents by keys computed once (keyedFS hashes on every call).
type mapKeyedFS struct {
	fs.FS
	keys map[string]string
}

func (m mapKeyedFS) ContentKey(name string) (string, bool) { k, ok := m.keys[name]; return k, ok }

// BenchmarkParseCacheBudget replays one-package reads, as the App's checks
// make them, on PARTIAL_CATALOG (a directory; scripts/derive-catalog makes
// large ones, default the community v4.16 catalog), the packages drawn with
// Zipf-like popularity, under several parse cache budgets. It reports the
// hit ratio of the parse cache and the time per read: the figures behind
// the App's default budget (docs/benchmarks.md).
func BenchmarkParseCacheBudget(b *testing.B) {
	dir := os.Getenv("PARTIAL_CATALOG")
	if dir == "" {
		dir = sharedCatalogDir(b, "community-operators-prod-v4.16")
	}
	ctx := context.Background()
	fsys := os.DirFS(dir)
	set, err := load.ListFiles(ctx, fsys, catalog.Limits{})
	if err != nil {
		b.Fatal(err)
	}
	keys := map[string]string{}
	for _, f := range set.Files {
		data, err := fs.ReadFile(fsys, f.Path)
		if err != nil {
			b.Fatal(err)
		}
		sum := sha256.Sum256(data)
		keys[f.Path] = hex.EncodeToString(sum[:])
	}
	keyed := mapKeyedFS{FS: fsys, keys: keys}
	index := load.NewSummaryIndex(0)
	_, out, err := catalog.LoadPartial(ctx, keyed, set, catalog.PartialOptions{}, catalog.Limits{Index: index})
	if err != nil {
		b.Fatal(err)
	}
	var pkgs []string
	seen := map[string]bool{}
	for _, s := range out.Summaries {
		for _, p := range s.Declares {
			if !seen[p] {
				seen[p] = true
				pkgs = append(pkgs, p)
			}
		}
	}
	zipf := rand.NewZipf(rand.New(rand.NewPCG(1, 2)), 1.1, 1, uint64(len(pkgs)-1))
	for _, mib := range []int64{16, 64, 256, 512} {
		b.Run(fmt.Sprintf("budget=%dMiB", mib), func(b *testing.B) {
			cache := load.NewParseCache(mib << 20)
			lim := catalog.Limits{Index: index, Cache: cache}
			for b.Loop() {
				p := pkgs[zipf.Uint64()]
				if _, _, err := catalog.LoadPartial(ctx, keyed, set, catalog.PartialOptions{Packages: []string{p}}, lim); err != nil {
					b.Fatal(err)
				}
			}
			hits, misses := cache.Stats()
			used, _ := cache.Size()
			b.ReportMetric(float64(hits)/float64(max(1, hits+misses)), "hit-ratio")
			b.ReportMetric(float64(used)/(1<<20), "cache-MiB")
		})
	}
}

func sharedCatalogDir(tb testing.TB, name string) string {
	tb.Helper()
	dir := "../../shared/testdata/catalogs/" + name
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("%s is absent: %v", dir, err)
	}
	return dir
}
