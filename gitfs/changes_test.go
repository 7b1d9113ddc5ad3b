package gitfs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"slices"
	"sort"
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

// ChangedPaths agrees with git itself (diff-tree with exact renames) on random
// histories: files added, edited, deleted, moved, folders replaced by files
// and back, links, many untouched folders.
func TestChangedPathsMatchesGit(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	rng := rand.New(rand.NewPCG(5, 9))
	files := map[string]string{}
	serial := 0
	content := func() string { serial++; return fmt.Sprintf("content %d\n", serial) }
	write := func(p, body string) {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		files[p] = body
	}
	remove := func(p string) {
		if err := os.Remove(filepath.Join(dir, filepath.FromSlash(p))); err != nil {
			t.Fatal(err)
		}
		delete(files, p)
	}
	for i := range 60 {
		write(fmt.Sprintf("pkg%02d/catalog.json", i), content())
	}
	write("README.md", content())
	runGit(t, dir, "add", "-A")
	runGit(t, dir, "commit", "-q", "-m", "c0")
	commits := []string{runGit(t, dir, "rev-parse", "HEAD")}
	for c := 1; c <= 12; c++ {
		for range 1 + rng.IntN(6) {
			var paths []string
			for p := range files {
				paths = append(paths, p)
			}
			slices.Sort(paths)
			p := paths[rng.IntN(len(paths))]
			switch rng.IntN(5) {
			case 0:
				write(p, content())
			case 1:
				remove(p)
			case 2: // move, same content
				body := files[p]
				remove(p)
				write(fmt.Sprintf("moved%d/%s", c, path.Base(p)), body)
			case 3:
				write(fmt.Sprintf("new%d/sub/f%d.yaml", c, rng.IntN(100)), content())
			case 4: // a file where a folder was, or the other way round
				if strings.Contains(p, "/") {
					d := path.Dir(p)
					for q := range files {
						if strings.HasPrefix(q, d+"/") {
							remove(q)
						}
					}
					if err := os.RemoveAll(filepath.Join(dir, filepath.FromSlash(d))); err != nil {
						t.Fatal(err)
					}
					write(d, content())
				} else {
					remove(p)
					write(p+"/inner.json", content())
				}
			}
		}
		if len(files) == 0 {
			write("keep", content())
		}
		runGit(t, dir, "add", "-A")
		runGit(t, dir, "commit", "-q", "--allow-empty", "-m", fmt.Sprint("c", c))
		commits = append(commits, runGit(t, dir, "rev-parse", "HEAD"))
	}
	r := openRepo(t, dir)
	ctx := context.Background()
	for i := 0; i < len(commits); i++ {
		for _, j := range []int{i, min(i+1, len(commits)-1), min(i+4, len(commits)-1)} {
			a, b := commits[i], commits[j]
			got, err := r.ChangedPaths(ctx, plumbing.NewHash(a), plumbing.NewHash(b))
			if err != nil {
				t.Fatal(err)
			}
			var want []Change
			out := runGit(t, dir, "diff-tree", "-r", "--find-renames=100%", "--name-status", "--no-commit-id", a, b)
			for _, line := range strings.Split(out, "\n") {
				if line == "" {
					continue
				}
				f := strings.Split(line, "\t")
				switch f[0][0] {
				case 'A':
					want = append(want, Change{Path: f[1], Action: Added})
				case 'D':
					want = append(want, Change{Path: f[1], Action: Deleted})
				case 'M', 'T':
					want = append(want, Change{Path: f[1], Action: Modified})
				case 'R':
					want = append(want, Change{Path: f[2], OldPath: f[1], Action: Renamed})
				}
			}
			sort.Slice(want, func(x, y int) bool { return want[x].Path < want[y].Path })
			if !slices.Equal(got, want) {
				t.Errorf("ChangedPaths(c%d, c%d) =\n%v\ngit diff-tree says\n%v", i, j, got, want)
			}
		}
	}
}

// Parents agrees with git: none for a root commit, the first parent first for a merge.
func TestParents(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "root")
	runGit(t, dir, "checkout", "-q", "-b", "side")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "side")
	runGit(t, dir, "checkout", "-q", "main")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "main")
	runGit(t, dir, "merge", "-q", "--no-ff", "-m", "merge", "side")
	r := openRepo(t, dir)
	ctx := context.Background()
	for _, rev := range []string{"main", "main^1", "side", "main~2"} {
		h, err := r.Resolve(rev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := r.Parents(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		var want []string
		if out := strings.TrimSpace(runGit(t, dir, "rev-list", "--parents", "-n", "1", rev)); out != "" {
			want = strings.Fields(out)[1:]
		}
		var gotS []string
		for _, p := range got {
			gotS = append(gotS, p.String())
		}
		if !slices.Equal(gotS, want) {
			t.Errorf("Parents(%s) = %v, want %v", rev, gotS, want)
		}
	}
}

// TestMergeBaseAndRevisionsAgreeWithGit builds a history with criss-cross merges (two best common ancestors)
// and compares MergeBase with git merge-base, and Resolve's ~N and ^N suffixes with git rev-parse.
func TestMergeBaseAndRevisionsAgreeWithGit(t *testing.T) {
	dir := t.TempDir()
	date := 1700000000
	commit := func(msg string, args ...string) {
		date += 60
		cmd := append([]string{"-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)
		env := fmt.Sprintf("%d +0000", date)
		t.Setenv("GIT_COMMITTER_DATE", env)
		t.Setenv("GIT_AUTHOR_DATE", env)
		runGit(t, dir, append(cmd, "-m", msg)...)
	}
	runGit(t, dir, "init", "-q", "-b", "main")
	commit("root", "commit", "-q", "--allow-empty")
	runGit(t, dir, "branch", "x")
	commit("m1", "commit", "-q", "--allow-empty")
	runGit(t, dir, "checkout", "-q", "x")
	commit("x1", "commit", "-q", "--allow-empty")
	runGit(t, dir, "branch", "y")
	// criss-cross: x merges main, main merges y (=x1), so main and x have two best common ancestors.
	commit("x merges main", "merge", "-q", "--no-ff", "main")
	runGit(t, dir, "checkout", "-q", "main")
	commit("main merges x1", "merge", "-q", "--no-ff", "y")
	commit("m2", "commit", "-q", "--allow-empty")
	runGit(t, dir, "checkout", "-q", "x")
	commit("x2", "commit", "-q", "--allow-empty")
	runGit(t, dir, "checkout", "-q", "--orphan", "alone")
	commit("unrelated", "commit", "-q", "--allow-empty")
	runGit(t, dir, "checkout", "-q", "main")
	runGit(t, dir, "tag", "-a", "-m", "tag", "t1", "main~1")

	r := openRepo(t, dir)
	ctx := context.Background()
	for _, rev := range []string{"main", "main~1", "main~", "main^", "main^0", "main~1^2", "main^^", "x~1^2~1", "t1", "t1~1^1", "x~2", "HEAD~1^1~0"} {
		want := strings.TrimSpace(runGit(t, dir, "rev-parse", rev+"^{commit}"))
		got, err := r.Resolve(rev)
		if err != nil || got.String() != want {
			t.Errorf("Resolve(%q) = %s, %v; git rev-parse: %s", rev, got, err, want)
		}
		// The same with the base spelled as an abbreviated hash.
		base, suffix := rev, ""
		if i := strings.IndexAny(rev, "~^"); i >= 0 {
			base, suffix = rev[:i], rev[i:]
		}
		short := strings.TrimSpace(runGit(t, dir, "rev-parse", base+"^{commit}"))[:8] + suffix
		if got, err := r.Resolve(short); err != nil || got.String() != want {
			t.Errorf("Resolve(%q) = %s, %v, want %s", short, got, err, want)
		}
	}
	for _, bad := range []string{"main~1x", "main^3", "x~99", "~1", "main^99999999999999999999"} {
		if got, err := r.Resolve(bad); err == nil {
			t.Errorf("Resolve(%q) = %s, want an error", bad, got)
		}
	}
	pairs := [][2]string{{"main", "x"}, {"x", "main"}, {"main~1", "x"}, {"x~1", "main"}, {"main", "main~2"}, {"y", "x"}}
	for _, p := range pairs {
		all := strings.Fields(runGit(t, dir, "merge-base", "--all", p[0], p[1]))
		a, _ := r.Resolve(p[0])
		b, _ := r.Resolve(p[1])
		got, err := r.MergeBase(ctx, a, b)
		if err != nil || !slices.Contains(all, got.String()) {
			t.Errorf("MergeBase(%s, %s) = %s, %v; git merge-base --all: %v", p[0], p[1], got, err, all)
		}
		bases, err := r.mergeBases(ctx, a, b)
		var gotAll []string
		for _, h := range bases {
			gotAll = append(gotAll, h.String())
		}
		slices.Sort(gotAll)
		slices.Sort(all)
		if err != nil || !slices.Equal(gotAll, all) {
			t.Errorf("mergeBases(%s, %s) = %v, %v; git merge-base --all: %v", p[0], p[1], gotAll, err, all)
		}
	}
	a, _ := r.Resolve("main")
	b, _ := r.Resolve("alone")
	if got, err := r.MergeBase(ctx, a, b); !errors.Is(err, ErrNoMergeBase) {
		t.Errorf("MergeBase(main, alone) = %s, %v, want ErrNoMergeBase", got, err)
	}
}
