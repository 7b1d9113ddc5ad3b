package gitfs

import (
	"bytes"
	"compress/zlib"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestLooseHeaderCheckedFirst stores a loose object whose header claims
// 1 TiB: the size limit must refuse it from the header, before allocating or
// inflating anything. A header claiming more than the content holds is an
// error, never a short read.
func TestLooseHeaderCheckedFirst(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	huge := writeLoose(t, dir, "1111111111111111111111111111111111111111", "blob 1099511627776\x00tiny")
	short := writeLoose(t, dir, "2222222222222222222222222222222222222222", "blob 100\x00only this")
	bad := writeLoose(t, dir, "3333333333333333333333333333333333333333", "blob twelve\x00x")
	tree := mktree(t, dir, "100644 blob "+huge+"\thuge\n100644 blob "+short+"\tshort\n100644 blob "+bad+"\tbad\n")
	commit := runGit(t, dir, "commit-tree", tree, "-m", "crafted")

	r := openRepo(t, dir)
	f := treeFS(t, r, commit, Limits{})
	fi, err := f.Stat("huge")
	if err != nil || fi.Size() != 1<<40 {
		t.Errorf("Stat(huge) = %v, %v, want the claimed size 1 TiB", fi, err)
	}
	if _, err := f.ReadFile("huge"); !errors.Is(err, ErrTooLarge) {
		t.Errorf("ReadFile(huge) error = %v, want ErrTooLarge", err)
	}
	if _, err := f.ReadFile("short"); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Errorf("ReadFile(short) error = %v, want a truncated-object error", err)
	}
	if _, err := f.ReadFile("bad"); err == nil || !strings.Contains(err.Error(), "malformed") {
		t.Errorf("ReadFile(bad) error = %v, want a malformed-header error", err)
	}
	if _, err := f.ReadFile("short"); err == nil {
		t.Errorf("second ReadFile(short) succeeded")
	}
	if spent := f.spent.Load(); spent != 0 {
		t.Errorf("failed reads left %d bytes charged to the budget, want 0", spent)
	}
}

// TestLooseObjectEndChecked: content beyond the declared size, and a zlib
// stream whose checksum does not match, are errors rather than data.
func TestLooseObjectEndChecked(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	long := writeLoose(t, dir, "4444444444444444444444444444444444444444", "blob 3\x00abcdef")
	good := writeLoose(t, dir, "5555555555555555555555555555555555555555", "blob 3\x00abc")
	p := filepath.Join(dir, ".git", "objects", "55", good[2:])
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)-1] ^= 0xff // the Adler-32 checksum's last byte
	os.Chmod(p, 0o644)
	if err := os.WriteFile(p, data, 0o444); err != nil {
		t.Fatal(err)
	}
	tree := mktree(t, dir, "100644 blob "+long+"\tlong\n100644 blob "+good+"\tsum\n")
	commit := runGit(t, dir, "commit-tree", tree, "-m", "crafted")
	f := treeFS(t, openRepo(t, dir), commit, Limits{})
	if _, err := f.ReadFile("long"); err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Errorf("ReadFile(long) error = %v, want an object-longer-than-declared error", err)
	}
	if _, err := f.ReadFile("sum"); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Errorf("ReadFile(sum) error = %v, want a checksum error", err)
	}
}

func writeLoose(t *testing.T, dir, hex, raw string) string {
	t.Helper()
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	z.Write([]byte(raw))
	z.Close()
	p := filepath.Join(dir, ".git", "objects", hex[:2], hex[2:])
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, b.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return hex
}

func mktree(t *testing.T, dir, listing string) string {
	t.Helper()
	cmd := exec.Command("git", "mktree", "--missing")
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(listing)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git mktree: %v", err)
	}
	return strings.TrimSpace(string(out))
}

// TestConcurrentReads reads one FS, and two FS of one Repo, from many
// goroutines; run with -race.
func TestConcurrentReads(t *testing.T) {
	fx := newFixture(t)
	for _, packed := range []bool{false, true} {
		if packed {
			runGit(t, fx.dir, "gc", "-q")
		}
		r := openRepo(t, fx.dir)
		a := treeFS(t, r, fx.plain, Limits{})
		b, err := r.TreeFS(context.Background(), plumbing.NewHash(fx.moved), Limits{})
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for i := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				f, name, want := a, "catalog/etcd/index.yaml", "schema: olm.package\nname: etcd\n"
				if i%2 == 1 {
					f, name, want = b, "catalog/etcd/catalog.yaml", "schema: olm.package\nname: etcd\n"
				}
				for range 20 {
					got, err := f.ReadFile(name)
					if err != nil || string(got) != want {
						t.Errorf("packed=%v: concurrent ReadFile(%s) = %q, %v", packed, name, got, err)
						return
					}
					if _, err := f.ReadDir("catalog/etcd"); err != nil {
						t.Errorf("packed=%v: concurrent ReadDir: %v", packed, err)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

// TestCraftedTree: names io/fs cannot show ("..", "a/b", "") and repeated
// names are dropped from listings; nothing escapes the tree.
func TestCraftedTree(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	blob := runGitStdin(t, dir, "ok\n", "hash-object", "-w", "--stdin")
	raw := treeEntry("100644", "..", blob) + treeEntry("100644", "a/b", blob) + treeEntry("100644", "", blob) +
		treeEntry("100644", "good", blob) + treeEntry("100644", "good", blob) + treeEntry("100644", "bad\x80", blob)
	tree := writeLoose(t, dir, "4444444444444444444444444444444444444444", "tree "+strconv.Itoa(len(raw))+"\x00"+raw)
	commit := runGit(t, dir, "commit-tree", tree, "-m", "crafted")

	f := treeFS(t, openRepo(t, dir), commit, Limits{})
	es, err := f.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	if len(es) != 2 || es[0].Name() != "bad\x80" || es[1].Name() != "good" {
		t.Errorf("ReadDir(.) = %v, want bad\\x80 and good", es)
	}
	// A name git allows but io/fs cannot open stays visible and fails loudly.
	if _, err := f.ReadFile("bad\x80"); !errors.Is(err, fs.ErrInvalid) {
		t.Errorf("ReadFile(non-UTF-8 name) error = %v, want fs.ErrInvalid", err)
	}
	if b, err := f.ReadFile("good"); err != nil || string(b) != "ok\n" {
		t.Errorf("ReadFile(good) = %q, %v", b, err)
	}
}

func treeEntry(mode, name, hexHash string) string {
	h := plumbing.NewHash(hexHash)
	return mode + " " + name + "\x00" + string(h[:])
}

func runGitStdin(t *testing.T, dir, stdin string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(string(out))
}

func TestDecodeMalformed(t *testing.T) {
	for _, raw := range []string{"100644", "100644 name", "100644 name\x00short", "99x name\x00" + strings.Repeat("a", 20), " name\x00" + strings.Repeat("a", 20)} {
		if es, err := decodeTree([]byte(raw)); err == nil {
			t.Errorf("decodeTree(%q) = %v, want an error", raw, es)
		}
	}
	for _, raw := range []string{"", "parent 1234\n", "tree xyz\n", "\ntree " + strings.Repeat("a", 40) + "\n"} {
		if ci, err := decodeCommit([]byte(raw)); err == nil {
			t.Errorf("decodeCommit(%q) = %v, want an error", raw, ci)
		}
	}
	ci, err := decodeCommit([]byte("tree " + strings.Repeat("a", 40) + "\nauthor A <a@b> 1 +0000\ncommitter C D <c@d> 1700000000 +0100\n\nmsg\ncommitter X <x> 5 +0000\n"))
	if err != nil || ci.when.Unix() != 1700000000 {
		t.Errorf("decodeCommit = %v, %v, want committer time 1700000000", ci, err)
	}
}

func FuzzDecodeTree(f *testing.F) {
	f.Add([]byte(treeEntry("100644", "a", strings.Repeat("ab", 20))))
	f.Add([]byte("40000 d\x00" + strings.Repeat("x", 20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		es, err := decodeTree(data)
		if err != nil {
			return
		}
		for _, e := range sortEntries(es) {
			// Names that are not UTF-8 stay listed (io/fs cannot open them,
			// so the caller reports them); names that break paths go.
			if e.name == "" || e.name == "." || e.name == ".." || strings.ContainsAny(e.name, "/\x00") {
				t.Fatalf("sortEntries kept %q", e.name)
			}
		}
	})
}

// TestResolveAmbiguousShortHash: an abbreviated hash that matches two
// commits is refused, not resolved to whichever comes first; a ref with a
// hex-looking name wins over a hash prefix, as in git.
func TestResolveAmbiguousShortHash(t *testing.T) {
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	runGit(t, dir, "commit", "-q", "--allow-empty", "-m", "one")
	tree := runGit(t, dir, "rev-parse", "HEAD^{tree}")
	body := "tree " + tree + "\nauthor A <a@b> 1 +0000\ncommitter A <a@b> 1 +0000\n\nx\n"
	raw := "commit " + strconv.Itoa(len(body)) + "\x00" + body
	writeLoose(t, dir, "abcd111111111111111111111111111111111111", raw)
	writeLoose(t, dir, "abcd222222222222222222222222222222222222", raw)
	r := openRepo(t, dir)
	if h, err := r.Resolve("abcd"); err == nil || !strings.Contains(err.Error(), "ambiguous") {
		t.Errorf("Resolve(abcd) = %s, %v, want an ambiguity error", h, err)
	}
	if h, err := r.Resolve("abcd1"); err != nil || h.String() != "abcd111111111111111111111111111111111111" {
		t.Errorf("Resolve(abcd1) = %s, %v, want the one match", h, err)
	}
	runGit(t, dir, "branch", "abcd")
	head := runGit(t, dir, "rev-parse", "HEAD")
	if h, err := r.Resolve("abcd"); err != nil || h.String() != head {
		t.Errorf("Resolve(abcd) with a branch abcd = %s, %v, want the branch's commit %s", h, err, head)
	}
}
