package checks_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
)

// BenchmarkTemplatesCheckGit is the templates check of a pull request on the community's kube-green read
// from a real git repository, as catalog-check reads one: one basic template rendered into seven catalogs
// (v4.15 to v4.21, five of them one blob), a hand edit of one rendered catalog. Each iteration opens the
// repository, builds the pull request and runs the check, so it is the check's cost as one process pays it.
// Besides time and allocations it reports peak-heap-MiB, the most heap in use that a sampler saw during an
// iteration (docs/benchmarks.md).
func BenchmarkTemplatesCheckGit(b *testing.B) {
	root := filepath.Join("..", "..", "shared", "testdata", "templates")
	if _, err := os.Stat(root); err != nil {
		b.Skipf("%s is absent (it ships only beside the project's own checkouts): %v", root, err)
	}
	if _, err := exec.LookPath("git"); err != nil {
		b.Skip("git is not installed")
	}
	dir := b.TempDir()
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	var roots []string
	for _, v := range []string{"v4.15", "v4.16", "v4.17", "v4.18", "v4.19", "v4.20", "v4.21"} {
		if err := os.CopyFS(filepath.Join(dir, "catalogs", v, "kube-green"), os.DirFS(filepath.Join(root, "catalogs", v, "kube-green"))); err != nil {
			b.Fatal(err)
		}
		roots = append(roots, "  - path: catalogs/"+v+"\n")
	}
	if err := os.CopyFS(filepath.Join(dir, "operators", "kube-green"), os.DirFS(filepath.Join(root, "operators", "kube-green"))); err != nil {
		b.Fatal(err)
	}
	pol := "version: 1\nmaintainers: [alice]\ncatalogs:\n" + strings.Join(roots, "") + "bundles:\n  - path: operators\n    ownersFromCIYaml: true\n    templatesFromCIYaml: true\n"
	if err := os.WriteFile(filepath.Join(dir, ".catalogbot.yaml"), []byte(pol), 0o644); err != nil {
		b.Fatal(err)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	edited := filepath.Join(dir, "catalogs", "v4.18", "kube-green", "catalog.yaml")
	data, err := os.ReadFile(edited)
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(edited, []byte(strings.Replace(string(data), "replaces: kube-green.v0.6.0", "replaces: kube-green.v0.5.2", 1)), 0o644); err != nil {
		b.Fatal(err)
	}
	git("commit", "-q", "-am", "hand edit")
	head := git("rev-parse", "HEAD")

	ctx := context.Background()
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // samples the heap in use while the iterations run
		defer wg.Done()
		t := time.NewTicker(time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			select {
			case <-stop:
				return
			case <-t.C:
				runtime.ReadMemStats(&ms)
				if ms.HeapInuse > peak.Load() {
					peak.Store(ms.HeapInuse)
				}
			}
		}
	}()
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		repo, err := gitfs.Open(dir)
		if err != nil {
			b.Fatal(err)
		}
		pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "davidebianchi", DiffFromMergeBase: true})
		if err != nil {
			b.Fatal(err)
		}
		res, err := checks.Templates{}.Run(ctx, pr)
		if err != nil {
			b.Fatal(err)
		}
		if res.Conclusion != checks.Failure || len(res.Findings) != 1 {
			b.Fatalf("%s: %d findings: %v", res.Conclusion, len(res.Findings), res.Findings)
		}
		repo.Close()
	}
	b.StopTimer()
	close(stop)
	wg.Wait()
	b.ReportMetric(float64(peak.Load())/(1<<20), "peak-heap-MiB")
}
