package gitfs

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// A repository that borrows every object through a chain of alternates (a relative path, then an absolute
// one, as git clone --reference and --shared write them) reads commits, trees and blobs, resolves revisions
// and compares commits; an alternates file naming a missing directory is an error, not missing objects.
func TestAlternates(t *testing.T) {
	if testing.Short() {
		t.Skip("builds git repositories")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	runGit(t, root, "init", "-q", "-b", "main", src)
	writeFile(t, src, "catalog/etcd/catalog.yaml", "schema: olm.package\nname: etcd\n", 0o644)
	runGit(t, src, "add", "-A")
	runGit(t, src, "commit", "-q", "-m", "one")
	writeFile(t, src, "catalog/etcd/catalog.yaml", "schema: olm.package\nname: etcd\ndefaultChannel: stable\n", 0o644)
	runGit(t, src, "commit", "-q", "-am", "two")
	runGit(t, src, "repack", "-q", "-a", "-d")

	// middle borrows from src by a relative path; leaf from middle by an absolute one, and has only refs.
	middle := filepath.Join(root, "middle.git")
	runGit(t, root, "init", "-q", "--bare", middle)
	rel, err := filepath.Rel(filepath.Join(middle, "objects"), filepath.Join(src, ".git", "objects"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, middle, "objects/info/alternates", "# borrowed\n"+rel+"\n", 0o644)
	leaf := filepath.Join(root, "leaf.git")
	runGit(t, root, "init", "-q", "--bare", leaf)
	writeFile(t, leaf, "objects/info/alternates", filepath.Join(middle, "objects")+"\n", 0o644)
	head := runGit(t, src, "rev-parse", "HEAD")
	runGit(t, leaf, "update-ref", "refs/heads/main", head)
	if out := runGit(t, leaf, "cat-file", "-p", "main:catalog/etcd/catalog.yaml"); !strings.Contains(out, "stable") {
		t.Fatalf("git itself cannot read through the alternates: %q", out)
	}

	r, err := Open(leaf)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	ctx := context.Background()
	h, err := r.Resolve("main")
	if err != nil {
		t.Fatal(err)
	}
	parent, err := r.Resolve("main~1")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.TreeFS(ctx, h, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	data, err := fs.ReadFile(tree, "catalog/etcd/catalog.yaml")
	if err != nil || !strings.Contains(string(data), "stable") {
		t.Fatalf("read %q, %v", data, err)
	}
	changes, err := r.ChangedPaths(ctx, parent, h)
	if err != nil || len(changes) != 1 || changes[0].Path != "catalog/etcd/catalog.yaml" {
		t.Fatalf("changes %+v, %v", changes, err)
	}
	if mb, err := r.MergeBase(ctx, parent, h); err != nil || mb != parent {
		t.Fatalf("merge base %s, %v", mb, err)
	}

	broken := filepath.Join(root, "broken.git")
	runGit(t, root, "init", "-q", "--bare", broken)
	writeFile(t, broken, "objects/info/alternates", filepath.Join(root, "nowhere")+"\n", 0o644)
	if _, err := Open(broken); err == nil || !strings.Contains(err.Error(), "nowhere") {
		t.Errorf("open with a missing alternate: %v", err)
	}
}

// A partial clone lists every tree; a blob it lacks is ErrObjectMissing, from Stat and from a read.
func TestPartialCloneMissingBlob(t *testing.T) {
	if testing.Short() {
		t.Skip("builds git repositories")
	}
	root := t.TempDir()
	src := filepath.Join(root, "src")
	runGit(t, root, "init", "-q", "-b", "main", src)
	writeFile(t, src, "a/present.yaml", "present\n", 0o644)
	writeFile(t, src, "b/absent.yaml", "absent\n", 0o644)
	runGit(t, src, "add", "-A")
	runGit(t, src, "commit", "-q", "-m", "one")
	runGit(t, src, "config", "uploadpack.allowFilter", "true")
	dst := filepath.Join(root, "dst.git")
	runGit(t, root, "clone", "-q", "--bare", "--filter=blob:none", "file://"+src, dst)
	runGit(t, dst, "cat-file", "blob", runGit(t, src, "rev-parse", "HEAD:a/present.yaml")) // fetched on demand

	r, err := Open(dst)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	h, err := r.Resolve("main")
	if err != nil {
		t.Fatal(err)
	}
	tree, err := r.TreeFS(context.Background(), h, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if data, err := fs.ReadFile(tree, "a/present.yaml"); err != nil || string(data) != "present\n" {
		t.Errorf("present: %q, %v", data, err)
	}
	if _, err := fs.Stat(tree, "b/absent.yaml"); !errors.Is(err, ErrObjectMissing) {
		t.Errorf("stat of an absent blob: %v, want ErrObjectMissing", err)
	}
	if _, err := fs.ReadFile(tree, "b/absent.yaml"); !errors.Is(err, ErrObjectMissing) || errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read of an absent blob: %v, want ErrObjectMissing (and not ErrNotExist)", err)
	}
	if entries, err := fs.ReadDir(tree, "b"); err != nil || len(entries) != 1 {
		t.Errorf("listing: %v, %v", entries, err)
	}
}

func FuzzParseAlternates(f *testing.F) {
	f.Add([]byte("# borrowed\n../../other/objects\n/abs/objects\n\n"))
	f.Add([]byte("\"quoted\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		alts, err := parseAlternates(data, "/repo/objects")
		if err != nil {
			return
		}
		for _, a := range alts {
			if !filepath.IsAbs(a) || filepath.Clean(a) != a {
				t.Fatalf("%q is not a clean absolute path", a)
			}
		}
	})
}
