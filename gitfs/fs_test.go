package gitfs

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"
	"testing"
	"testing/fstest"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
)

var plainFiles = []string{
	"README.md", "bin/run.sh", "catalog/etcd.json", "catalog/etcd/index.yaml",
	"catalog/etcd/nested/deep/file.json", "empty.txt",
}

func treeFS(t *testing.T, r *Repo, commit string, lim Limits) *FS {
	t.Helper()
	f, err := r.TreeFS(context.Background(), plumbing.NewHash(commit), lim)
	if err != nil {
		t.Fatalf("TreeFS(%s): %v", commit, err)
	}
	return f
}

// TestTreeFSIsAnFS runs the standard io/fs conformance test. It uses the
// commit without links or submodules, because fstest expects Open to follow
// links and gitfs deliberately refuses to.
func TestTreeFSIsAnFS(t *testing.T) {
	fx := newFixture(t)
	for _, packed := range []bool{false, true} {
		name := "loose"
		if packed {
			name = "packed"
		}
		t.Run(name, func(t *testing.T) {
			if packed {
				runGit(t, fx.dir, "gc", "-q", "--aggressive")
			}
			f := treeFS(t, openRepo(t, fx.dir), fx.plain, Limits{})
			if err := fstest.TestFS(f, plainFiles...); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestTreeFSContent(t *testing.T) {
	fx := newFixture(t)
	f := treeFS(t, openRepo(t, fx.dir), fx.plain, Limits{})
	got, err := f.ReadFile("catalog/etcd/index.yaml")
	if err != nil || string(got) != "schema: olm.package\nname: etcd\n" {
		t.Errorf("ReadFile = %q, %v, want the committed content", got, err)
	}
	fi, err := f.Stat("bin/run.sh")
	if err != nil || fi.Mode() != 0o755 {
		t.Errorf("Stat(bin/run.sh) = %v, %v, want mode 0755", fi, err)
	}
	want := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if !fi.ModTime().Equal(want) {
		t.Errorf("ModTime = %v, want the committer time %v", fi.ModTime(), want)
	}
	var walked []string
	err = fs.WalkDir(f, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			walked = append(walked, p)
		}
		return nil
	})
	// Lexical order: the directory catalog/etcd comes before catalog/etcd.json
	// (git's own tree order puts it after).
	wantWalk := []string{"README.md", "bin/run.sh", "catalog/etcd/index.yaml", "catalog/etcd/nested/deep/file.json", "catalog/etcd.json", "empty.txt"}
	if err != nil || !slices.Equal(walked, wantWalk) {
		t.Errorf("WalkDir = %v, %v, want %v", walked, err, wantWalk)
	}
}

func TestTreeFSLinksAndSubmodules(t *testing.T) {
	fx := newFixture(t)
	f := treeFS(t, openRepo(t, fx.dir), fx.links, Limits{})

	es, err := f.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	types := map[string]fs.FileMode{}
	for _, e := range es {
		types[e.Name()] = e.Type()
	}
	for name, want := range map[string]fs.FileMode{"evil": fs.ModeSymlink, "dirlink": fs.ModeSymlink, "sub": fs.ModeIrregular, "catalog": fs.ModeDir, "big.bin": 0} {
		if got, ok := types[name]; !ok || got != want {
			t.Errorf("ReadDir(.): %s has type %v (listed %v), want %v", name, got, ok, want)
		}
	}

	tests := []struct {
		name    string
		op      func() error
		wantErr error
	}{
		{"open link out of repo", func() error { _, err := f.Open("evil"); return err }, ErrSymlink},
		{"read link out of repo", func() error { _, err := f.ReadFile("evil"); return err }, ErrSymlink},
		{"stat link", func() error { _, err := f.Stat("evil"); return err }, ErrSymlink},
		{"open link to dir", func() error { _, err := f.Open("dirlink"); return err }, ErrSymlink},
		{"readdir link to dir", func() error { _, err := f.ReadDir("dirlink"); return err }, ErrSymlink},
		{"read through link to dir", func() error { _, err := f.ReadFile("dirlink/etcd/index.yaml"); return err }, ErrSymlink},
		{"open submodule", func() error { _, err := f.Open("sub"); return err }, ErrSubmodule},
		{"read inside submodule", func() error { _, err := f.ReadFile("sub/x"); return err }, ErrSubmodule},
		{"read missing", func() error { _, err := f.ReadFile("catalog/nope"); return err }, fs.ErrNotExist},
		{"read below a file", func() error { _, err := f.ReadFile("README.md/x"); return err }, fs.ErrNotExist},
		{"dot-dot path", func() error { _, err := f.Open("../etc/passwd"); return err }, fs.ErrInvalid},
		{"absolute path", func() error { _, err := f.Open("/etc/passwd"); return err }, fs.ErrInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.op()
			if !errors.Is(err, tt.wantErr) {
				t.Errorf("got error %v, want %v", err, tt.wantErr)
			}
		})
	}

	target, err := f.ReadLink("evil")
	if err != nil || target != "../../etc/passwd" {
		t.Errorf("ReadLink(evil) = %q, %v, want ../../etc/passwd", target, err)
	}
	li, err := f.Lstat("dirlink")
	if err != nil || li.Mode().Type() != fs.ModeSymlink || li.Size() != int64(len("catalog")) {
		t.Errorf("Lstat(dirlink) = %v, %v, want a link of size 7", li, err)
	}
	if _, err := f.ReadLink("README.md"); err == nil {
		t.Errorf("ReadLink(README.md) succeeded, want an error: not a link")
	}
}

func TestTreeFSLimits(t *testing.T) {
	fx := newFixture(t)
	for _, packed := range []bool{false, true} {
		if packed {
			runGit(t, fx.dir, "gc", "-q")
		}
		r := openRepo(t, fx.dir)

		f := treeFS(t, r, fx.links, Limits{MaxFileSize: 1 << 20})
		if _, err := f.ReadFile("big.bin"); !errors.Is(err, ErrTooLarge) {
			t.Errorf("packed=%v: ReadFile(big.bin) over MaxFileSize: got %v, want ErrTooLarge", packed, err)
		}
		if _, err := f.Open("big.bin"); !errors.Is(err, ErrTooLarge) {
			t.Errorf("packed=%v: Open(big.bin) over MaxFileSize: got %v, want ErrTooLarge", packed, err)
		}
		fi, err := f.Stat("big.bin")
		if err != nil || fi.Size() != bigSize {
			t.Errorf("packed=%v: Stat(big.bin) = %v, %v, want size %d (Stat reads no content)", packed, fi, err, bigSize)
		}
		f = treeFS(t, r, fx.links, Limits{})
		if b, err := f.ReadFile("big.bin"); err != nil || len(b) != bigSize {
			t.Errorf("packed=%v: ReadFile(big.bin) with default limits: %d bytes, %v", packed, len(b), err)
		}

		f = treeFS(t, r, fx.plain, Limits{MaxTotalBytes: 10})
		if _, err := f.ReadFile("README.md"); err != nil { // 6 bytes
			t.Errorf("packed=%v: first read within budget: %v", packed, err)
		}
		if _, err := f.ReadFile("catalog/etcd.json"); !errors.Is(err, ErrBudget) { // 7 more
			t.Errorf("packed=%v: read over budget: got %v, want ErrBudget", packed, err)
		}
		if _, err := f.ReadFile("empty.txt"); err != nil {
			t.Errorf("packed=%v: a refused read must not use the budget: %v", packed, err)
		}
	}
}

func TestTreeFSContextCancelled(t *testing.T) {
	fx := newFixture(t)
	r := openRepo(t, fx.dir)
	ctx, cancel := context.WithCancel(context.Background())
	f, err := r.TreeFS(ctx, plumbing.NewHash(fx.plain), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if _, err := f.ReadDir("."); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadDir after cancel: got %v, want context.Canceled", err)
	}
	if _, err := f.ReadFile("README.md"); !errors.Is(err, context.Canceled) {
		t.Errorf("ReadFile after cancel: got %v, want context.Canceled", err)
	}
	if _, err := r.TreeFS(ctx, plumbing.NewHash(fx.plain), Limits{}); !errors.Is(err, context.Canceled) {
		t.Errorf("TreeFS after cancel: got %v, want context.Canceled", err)
	}
}

func TestRepoReadFile(t *testing.T) {
	fx := newFixture(t)
	r := openRepo(t, fx.dir)
	ctx := context.Background()
	b, err := r.ReadFile(ctx, plumbing.NewHash(fx.plain), "README.md", 1024)
	if err != nil || string(b) != "hello\n" {
		t.Errorf("ReadFile(README.md) = %q, %v", b, err)
	}
	if _, err := r.ReadFile(ctx, plumbing.NewHash(fx.plain), ".catalogbot.yaml", 1024); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: got %v, want fs.ErrNotExist", err)
	}
	if _, err := r.ReadFile(ctx, plumbing.NewHash(fx.plain), "README.md", 3); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile over max: got %v, want ErrTooLarge", err)
	}
	if _, err := r.ReadFile(ctx, plumbing.NewHash(fx.links), "evil", 1024); !errors.Is(err, ErrSymlink) {
		t.Errorf("ReadFile of a link: got %v, want ErrSymlink", err)
	}
}

func TestOpenForms(t *testing.T) {
	fx := newFixture(t)
	bare := filepath.Join(t.TempDir(), "bare.git")
	runGit(t, fx.dir, "clone", "-q", "--bare", fx.dir, bare)
	wt := filepath.Join(t.TempDir(), "wt")
	runGit(t, fx.dir, "worktree", "add", "-q", wt, "feature")
	for name, dir := range map[string]string{"work tree": fx.dir, "bare": bare, "linked work tree": wt} {
		t.Run(name, func(t *testing.T) {
			r := openRepo(t, dir)
			h, err := r.Resolve("feature")
			if err != nil || h.String() != fx.feature {
				t.Fatalf("Resolve(feature) = %s, %v, want %s", h, err, fx.feature)
			}
			b, err := r.ReadFile(context.Background(), h, "feature.txt", 100)
			if err != nil || string(b) != "feature\n" {
				t.Errorf("ReadFile(feature.txt) = %q, %v", b, err)
			}
		})
	}
	if _, err := Open(t.TempDir()); err == nil {
		t.Errorf("Open(empty dir) succeeded, want an error")
	}
}
