package gitfs

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestResolve(t *testing.T) {
	fx := newFixture(t)
	r := openRepo(t, fx.dir)
	tests := []struct {
		rev  string
		want string
	}{
		{"HEAD", fx.moved},
		{"main", fx.moved},
		{"refs/heads/main", fx.moved},
		{fx.plain, fx.plain},
		{fx.plain[:10], fx.plain},
		{strings.ToUpper(fx.plain), fx.plain},
		{"light", fx.plain},
		{"v1", fx.plain}, // annotated: peeled to its commit
		{"refs/pull/7/head", fx.feature},
		{"main~1", fx.plain},
		{"feature^", fx.plain},
	}
	for _, tt := range tests {
		got, err := r.Resolve(tt.rev)
		if err != nil || got.String() != tt.want {
			t.Errorf("Resolve(%q) = %s, %v, want %s", tt.rev, got, err, tt.want)
		}
	}
	for _, bad := range []string{"", "nope", "-main", "main:README.md", "main^{/plain}", "main@{1}", "a b", strings.Repeat("a", 2000), "0000000000000000000000000000000000000000"} {
		if got, err := r.Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) = %s, want an error", bad, got)
		}
	}
	// An annotated tag's own hash resolves to its commit.
	tagObj := runGit(t, fx.dir, "rev-parse", "v1")
	if got, err := r.Resolve(tagObj); err != nil || got.String() != fx.plain {
		t.Errorf("Resolve(tag object %s) = %s, %v, want %s", tagObj, got, err, fx.plain)
	}
}

func TestChangedPaths(t *testing.T) {
	fx := newFixture(t)
	r := openRepo(t, fx.dir)
	ctx := context.Background()
	got, err := r.ChangedPaths(ctx, plumbing.NewHash(fx.plain), plumbing.NewHash(fx.moved))
	if err != nil {
		t.Fatal(err)
	}
	want := []Change{
		{Path: "README.md", Action: Modified},
		{Path: "catalog/etcd/catalog.yaml", OldPath: "catalog/etcd/index.yaml", Action: Renamed},
		{Path: "empty.txt", Action: Deleted},
		{Path: "new.txt", Action: Added},
	}
	if !slices.Equal(got, want) {
		t.Errorf("ChangedPaths(plain, moved) =\n%v\nwant\n%v", got, want)
	}

	got, err = r.ChangedPaths(ctx, plumbing.NewHash(fx.plain), plumbing.NewHash(fx.links))
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range got {
		if c.Action != Added {
			t.Errorf("ChangedPaths(plain, links): %v, want only additions", c)
		}
		paths = append(paths, c.Path)
	}
	if wantPaths := []string{"big.bin", "dirlink", "evil", "sub"}; !slices.Equal(paths, wantPaths) {
		t.Errorf("ChangedPaths(plain, links) paths = %v, want %v", paths, wantPaths)
	}

	if got, err := r.ChangedPaths(ctx, plumbing.NewHash(fx.plain), plumbing.NewHash(fx.plain)); err != nil || len(got) != 0 {
		t.Errorf("ChangedPaths(x, x) = %v, %v, want nothing", got, err)
	}
}

func TestMergeBase(t *testing.T) {
	fx := newFixture(t)
	r := openRepo(t, fx.dir)
	ctx := context.Background()
	mb, err := r.MergeBase(ctx, plumbing.NewHash(fx.moved), plumbing.NewHash(fx.feature))
	if err != nil || mb.String() != fx.plain {
		t.Errorf("MergeBase(main, feature) = %s, %v, want %s", mb, err, fx.plain)
	}
	// Diffing against the merge base shows only the pull request's own change,
	// where a direct tree diff also shows what main did since.
	direct, _ := r.ChangedPaths(ctx, plumbing.NewHash(fx.moved), plumbing.NewHash(fx.feature))
	viaBase, _ := r.ChangedPaths(ctx, mb, plumbing.NewHash(fx.feature))
	if want := []Change{{Path: "feature.txt", Action: Added}}; !slices.Equal(viaBase, want) {
		t.Errorf("ChangedPaths(merge base, feature) = %v, want %v", viaBase, want)
	}
	if len(direct) <= 1 {
		t.Errorf("ChangedPaths(main, feature) = %v, want main's own changes too", direct)
	}

	orphanDir := t.TempDir()
	runGit(t, orphanDir, "init", "-q", "-b", "main")
	runGit(t, orphanDir, "commit", "-q", "--allow-empty", "-m", "one")
	runGit(t, orphanDir, "checkout", "-q", "--orphan", "other")
	runGit(t, orphanDir, "commit", "-q", "--allow-empty", "-m", "two")
	ro := openRepo(t, orphanDir)
	a, _ := ro.Resolve("main")
	b, _ := ro.Resolve("other")
	if _, err := ro.MergeBase(ctx, a, b); !errors.Is(err, ErrNoMergeBase) {
		t.Errorf("MergeBase of unrelated histories: got %v, want ErrNoMergeBase", err)
	}
}
