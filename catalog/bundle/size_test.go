package bundle

import (
	"compress/gzip"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
)

// TestSizeScreenBoundsTheExactCount: the quick estimate of the compressed size (screenSize) may skip the exact
// count only when the exact count cannot reach the warning line, so the exact count must stay below
// estimate/0.8 (what screenLine leaves) on the inputs where S2 does best against deflate (random text over a
// few letters, in runs, small and large; long matches, which S2 writes for next to nothing, with and without
// random bytes between) and on every bundle of the shared test data. A new version of either compressor that
// breaks this fails here.
func TestSizeScreenBoundsTheExactCount(t *testing.T) {
	check := func(name string, files []readFile) float64 {
		t.Helper()
		exact, _ := compressedSize(files, gzip.DefaultCompression)
		screen := screenSize(files)
		if exact*80 >= screen*100 {
			t.Errorf("%s: exact compressed size %d, estimate %d: the estimate no longer bounds it with the margin screenLine assumes", name, exact, screen)
		}
		return float64(exact) / float64(screen)
	}
	rnd := rand.New(rand.NewPCG(5, 6))
	worst := 0.0
	for k := 2; k <= 256; k = k*5/4 + 1 {
		for _, run := range []int{1, 2, 3, 5, 8, 13} {
			for _, n := range []int{3 << 10, 40 << 10, 300 << 10} {
				if n > 40<<10 && (testing.Short() || k > 16) {
					continue // the weakest cases are few letters; large inputs of many cost time and add nothing
				}
				data := make([]byte, n)
				for i := 0; i < n; {
					c := byte(rnd.IntN(k))
					if k <= 64 {
						c = 'A' + c
					}
					for j := 0; j < run && i < n; j++ {
						data[i] = c
						i++
					}
				}
				worst = max(worst, check("random text", []readFile{{name: "f", data: data}}))
			}
		}
	}
	t.Logf("random text: exact/estimate at most %.3f", worst)
	// Where S2 is strongest against deflate: long matches (runs of one byte, short and long periods, within
	// and beyond a piece), alone and between random bytes, so that deflate's length codes are not the only
	// symbols and cost more.
	worst = 0
	for _, period := range []int{1, 2, 3, 7, 64, 257, 1000, 20000, 40000} {
		for _, noise := range []int{0, 1, 16, 256} {
			for _, n := range []int{3 << 10, 300 << 10, 2 << 20} {
				if n > 300<<10 && testing.Short() {
					continue
				}
				pattern := make([]byte, period)
				for i := range pattern {
					pattern[i] = byte(rnd.IntN(256))
				}
				data := make([]byte, n)
				for i := range data {
					data[i] = pattern[i%period]
					if noise > 0 && i%(4096/noise) == 0 {
						data[i] = byte(rnd.IntN(256))
					}
				}
				worst = max(worst, check("long matches", []readFile{{name: "f", data: data}}))
			}
		}
	}
	t.Logf("long matches: exact/estimate at most %.3f", worst)
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if testing.Short() {
		anns = nil
	}
	worst = 0
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		var files []readFile
		raw := 0
		err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return err
			}
			data, err := os.ReadFile(p)
			files = append(files, readFile{name: p, data: data})
			raw += len(data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if raw*4/3+1024 < maxBundleSize*85/100 {
			continue // never estimated: even uncompressed it is below the line
		}
		worst = max(worst, check(dir, files))
	}
	if len(anns) > 0 {
		t.Logf("community bundles the estimate is made for: exact/estimate at most %.3f", worst)
	}
}
