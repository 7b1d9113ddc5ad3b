package gitfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackIndexOfAnotherPack: an index is only used with the pack it was
// written for. Here pack-mixed.idx lists blob A at the offset where
// pack-mixed.pack holds blob B, as happens when an index and a pack of one
// name come from different writes (a pack fetched again while a Repo opens
// its packs, an index half written). Both have one object, so the object
// counts agree; only the pack checksum the index records tells them apart.
// The pack reader must not return B's bytes for A.
func TestPackIndexOfAnotherPack(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "--bare")
	packDir := filepath.Join(dir, "objects", "pack")
	pack := func(content string) (hash, base string) {
		h := runGitStdin(t, dir, content, "hash-object", "-w", "--stdin")
		name := runGitStdin(t, dir, h+"\n", "pack-objects", "-q", filepath.Join(packDir, "pack"))
		return h, filepath.Join(packDir, "pack-"+name)
	}
	hashA, baseA := pack("content of blob A\n")
	_, baseB := pack("content of blob B\n") // same size, so B inflates where A is expected
	mixed := filepath.Join(packDir, "pack-mixed")
	copyFile(t, baseA+".idx", mixed+".idx")
	copyFile(t, baseB+".pack", mixed+".pack")
	for _, base := range []string{baseA, baseB} {
		os.Remove(base + ".idx")
		os.Remove(base + ".pack")
	}
	os.RemoveAll(filepath.Join(dir, "objects", hashA[:2]))

	r := openRepo(t, dir)
	t.Cleanup(func() { r.Close() })
	pr := r.packReader()
	if len(pr.packs) != 0 {
		t.Errorf("%d packs opened, want the mismatched one left out", len(pr.packs))
	}
	got, err := pr.read(plumbing.NewHash(hashA), plumbing.BlobObject, func(int64) error { return nil })
	if err == nil {
		t.Fatalf("read(A) = %q from a pack its index was not written for", got)
	}
	if !errors.Is(err, errFallback) {
		t.Errorf("read(A): %v, want it left to go-git", err)
	}
	// Through the Repo, go-git gets the object; it must not give B either.
	if b, err := r.readBlob(plumbing.NewHash(hashA), func(int64) error { return nil }); err == nil && strings.Contains(string(b), "blob B") {
		t.Errorf("readBlob(A) = %q through go-git", b)
	}
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o444); err != nil {
		t.Fatal(err)
	}
}

// TestRepoReadsAcrossRefetch: the App's git cache may delete a repository
// and fetch it again into the same directory while a job reads it (a damaged
// cache is rebuilt from scratch). A Repo whose packs are open keeps reading
// them (the open files outlive their names); one that opens its packs after
// the swap gets errors for what is gone, never another object's content.
func TestRepoReadsAcrossRefetch(t *testing.T) {
	srcA, srcB := t.TempDir(), t.TempDir()
	for i, src := range []string{srcA, srcB} {
		runGit(t, src, "init", "-q", "-b", "main")
		writeFile(t, src, "catalog.yaml", strings.Repeat(string(rune('a'+i)), 100)+"\n", 0o644)
		writeFile(t, src, "other.yaml", "other\n", 0o644)
		runGit(t, src, "add", "-A")
		runGit(t, src, "commit", "-q", "-m", "c")
	}
	headA := runGit(t, srcA, "rev-parse", "HEAD")
	cache := filepath.Join(t.TempDir(), "catalog.git")
	clone := func(src string) {
		t.Helper()
		if err := os.RemoveAll(cache); err != nil {
			t.Fatal(err)
		}
		if _, err := git.PlainClone(cache, true, &git.CloneOptions{URL: src, Tags: git.NoTags}); err != nil {
			t.Fatal(err)
		}
	}
	clone(srcA)
	open := openRepo(t, cache)
	t.Cleanup(func() { open.Close() })
	f := treeFS(t, open, headA, Limits{})
	if _, err := f.ReadFile("other.yaml"); err != nil { // opens the packs
		t.Fatal(err)
	}
	lazy := openRepo(t, cache) // packs not opened yet
	t.Cleanup(func() { lazy.Close() })
	lazyFS := treeFS(t, lazy, headA, Limits{})

	clone(srcB)
	want := strings.Repeat("a", 100) + "\n"
	if b, err := f.ReadFile("catalog.yaml"); err != nil || string(b) != want {
		t.Errorf("open Repo after the refetch: %q, %v; want A's content", b, err)
	}
	if b, err := lazyFS.ReadFile("catalog.yaml"); err == nil && string(b) != want {
		t.Errorf("Repo opening its packs after the refetch read %q for A's blob", b)
	}
}
