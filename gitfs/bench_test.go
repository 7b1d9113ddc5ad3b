package gitfs

import (
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

// catalogDir is the 20 MB community catalog in ../shared, next to the repository.
func catalogDir(b *testing.B) string {
	dir, err := filepath.Abs(filepath.Join("..", "..", "shared", "testdata", "catalogs", "community-operators-prod-v4.16"))
	if err != nil {
		b.Fatal(err)
	}
	if _, err := os.Stat(dir); err != nil {
		b.Skipf("benchmark catalog not found at %s (it lives in ../shared next to the repository): %v", dir, err)
	}
	return dir
}

// catalogRepo commits the catalog into a new repository, packed as a fetch
// leaves it or loose as a fresh commit does.
func catalogRepo(b *testing.B, packed bool) (string, plumbing.Hash) {
	src := catalogDir(b)
	dir := b.TempDir()
	runGit(b, dir, "init", "-q", "-b", "main")
	runGit(b, dir, "--work-tree", src, "add", "-A")
	runGit(b, dir, "--work-tree", src, "commit", "-q", "-m", "catalog")
	if packed {
		runGit(b, dir, "gc", "-q")
	}
	return dir, plumbing.NewHash(runGit(b, dir, "rev-parse", "HEAD"))
}

// reportCPU adds cpu-ms/op: the process's CPU time per round, since start.
func reportCPU(b *testing.B, start time.Duration) {
	if n := b.N; n > 0 {
		b.ReportMetric(float64(processCPUTime()-start)/float64(time.Millisecond)/float64(n), "cpu-ms/op")
	}
}

func readAll(b *testing.B, fsys fs.FS) int64 {
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := fs.ReadFile(fsys, p)
		total += int64(len(data))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}

// BenchmarkTreeFSReadAll walks the catalog's commit and reads every file, as
// the check engine does for each pull request. cold opens the repository for
// each round (no cache); warm reuses it (decoded trees and delta bases kept;
// blobs are inflated again, as nothing caches them). osDirFS reads the same
// files from disk, for comparison.
func BenchmarkTreeFSReadAll(b *testing.B) {
	for _, packed := range []bool{false, true} {
		layout := "loose"
		if packed {
			layout = "packed"
		}
		b.Run(layout, func(b *testing.B) {
			dir, commit := catalogRepo(b, packed)
			ctx := context.Background()
			b.Run("cold", func(b *testing.B) {
				var n int64
				start := processCPUTime()
				for b.Loop() {
					r, err := Open(dir)
					if err != nil {
						b.Fatal(err)
					}
					f, err := r.TreeFS(ctx, commit, Limits{})
					if err != nil {
						b.Fatal(err)
					}
					n = readAll(b, f)
				}
				reportCPU(b, start)
				b.SetBytes(n)
			})
			b.Run("warm", func(b *testing.B) {
				r, err := Open(dir)
				if err != nil {
					b.Fatal(err)
				}
				var n int64
				start := processCPUTime()
				for b.Loop() {
					f, err := r.TreeFS(ctx, commit, Limits{})
					if err != nil {
						b.Fatal(err)
					}
					n = readAll(b, f)
				}
				reportCPU(b, start)
				b.SetBytes(n)
			})
		})
	}
	b.Run("osDirFS", func(b *testing.B) {
		fsys := os.DirFS(catalogDir(b))
		var n int64
		start := processCPUTime()
		for b.Loop() {
			n = readAll(b, fsys)
		}
		reportCPU(b, start)
		b.SetBytes(n)
	})
}

// BenchmarkTreeFSDeltaChains reads every file of the oldest of 20 commits
// that each rewrote part of 300 files, packed as git packs history (newest
// versions whole, older ones as deltas up to 50 deep): the case of a
// catalog repository with history, where a pull request's base is not the
// newest version of every file. Each round opens the repository afresh, as a
// check does.
func BenchmarkTreeFSDeltaChains(b *testing.B) {
	dir := b.TempDir()
	runGit(b, dir, "init", "-q", "-b", "main")
	const files, commits = 300, 20
	var first string
	for c := range commits {
		for f := range files {
			if c > 0 && (f+c)%3 == 0 {
				continue // a third of the files stay as they were
			}
			var doc strings.Builder
			for i := range 40 {
				fmt.Fprintf(&doc, "---\nschema: olm.bundle\nname: op%d.v0.%d.0\npackage: op%d\nimage: quay.io/acme/op%d@sha256:%064d\n", f, i, f, f, i+c*1000)
			}
			writeFile(b, dir, fmt.Sprintf("catalogs/op%d/catalog.yaml", f), doc.String(), 0o644)
		}
		runGit(b, dir, "add", "-A")
		runGit(b, dir, "commit", "-q", "-m", fmt.Sprintf("c%d", c))
		if c == 0 {
			first = runGit(b, dir, "rev-parse", "HEAD")
		}
	}
	runGit(b, dir, "repack", "-adfq", "--depth=50", "--window=50")
	ctx := context.Background()
	var n int64
	start := processCPUTime()
	for b.Loop() {
		r, err := Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		f, err := r.TreeFS(ctx, plumbing.NewHash(first), Limits{})
		if err != nil {
			b.Fatal(err)
		}
		n = readLikeLoader(b, f)
		r.Close()
	}
	reportCPU(b, start)
	b.SetBytes(n)
}

// readLikeLoader reads every file as catalog/load.ReadFS does: sized while
// walking, then opened, sized again and read.
func readLikeLoader(b *testing.B, fsys fs.FS) int64 {
	var total int64
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if _, err := d.Info(); err != nil {
			return err
		}
		f, err := fsys.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		if _, err := f.Stat(); err != nil {
			return err
		}
		data, err := io.ReadAll(f)
		total += int64(len(data))
		return err
	})
	if err != nil {
		b.Fatal(err)
	}
	return total
}
