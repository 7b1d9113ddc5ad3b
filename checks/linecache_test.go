package checks_test

import (
	"context"
	"reflect"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
)

// A check of the same contents again (a moved base, /retest) takes the changed lines from the cache instead of
// reading both blobs, and anchors every finding exactly where the first check did.
func TestLineDiffCacheAcrossChecks(t *testing.T) {
	r := newGitRepo(t)
	base := seed(r)
	r.git("checkout", "-q", "-b", "pr")
	// Line 1 unchanged, a second head added further down: the finding is anchored on a changed line.
	r.write("catalogs/v4.16/etcd/catalog.yaml", pkgHeader("etcd", "1.0.0")+"  - name: etcd.v1.1.0\n"+bundle("etcd", "1.0.0", "size", "version")+bundle("etcd", "1.1.0", "size", "version"))
	head := r.commit("two heads")

	ctx := context.Background()
	repo, err := gitfs.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	cache := checks.NewLineDiffCache(0)
	run := func() []string {
		t.Helper()
		pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true, Lines: cache})
		if err != nil {
			t.Fatal(err)
		}
		if err := checks.Prepare(ctx, pr); err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, res := range checks.NewRunner([]checks.Check{checks.Validation{}}).Run(ctx, pr) {
			for _, f := range res.Findings {
				out = append(out, f.String())
			}
		}
		return out
	}
	first := run()
	if h, m, n := cache.Stats(); h != 0 || m == 0 || n == 0 {
		t.Fatalf("first check: hits %d, misses %d, entries %d; want no hit, a miss and an entry", h, m, n)
	}
	second := run()
	if h, _, _ := cache.Stats(); h == 0 {
		t.Fatal("second check of the same contents did not use the cache")
	}
	if len(first) == 0 || !reflect.DeepEqual(first, second) {
		t.Fatalf("findings differ between the check that compared lines and the one that took them from the cache:\n%q\n%q", first, second)
	}
	// Without a cache the findings are the same too: the cache changes the cost, never the verdict.
	repo2, _ := gitfs.Open(r.dir)
	pr, err := gitpr.Build(ctx, repo2, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := checks.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	var plain []string
	for _, res := range checks.NewRunner([]checks.Check{checks.Validation{}}).Run(ctx, pr) {
		for _, f := range res.Findings {
			plain = append(plain, f.String())
		}
	}
	if !reflect.DeepEqual(first, plain) {
		t.Fatalf("findings with and without the cache differ:\n%q\n%q", first, plain)
	}
}
