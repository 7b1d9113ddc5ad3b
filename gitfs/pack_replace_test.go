package gitfs

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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
