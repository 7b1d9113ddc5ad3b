package gitfs

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// historyRepo makes a repository whose packs hold long delta chains: a
// catalog-like file rewritten over many commits, a second file derived from
// it, and a few small files.
func historyRepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	runGit(t, dir, "init", "-q", "-b", "main")
	var doc strings.Builder
	for i := range 400 {
		fmt.Fprintf(&doc, "---\nschema: olm.bundle\nname: op.v0.%d.0\npackage: op\nimage: quay.io/acme/op@sha256:%064d\n", i, i)
	}
	base := doc.String()
	for c := range 30 {
		// Each commit edits a few lines and appends one, so each version is
		// a good delta against the previous one.
		content := strings.Replace(base, fmt.Sprintf("name: op.v0.%d.0", c*7), fmt.Sprintf("name: op.v0.%d.1", c*7), 1)
		content += fmt.Sprintf("---\nschema: olm.channel\nname: c%d\npackage: op\n", c)
		base = content
		writeFile(t, dir, "catalog/op/catalog.yaml", content, 0o644)
		writeFile(t, dir, "catalog/op2/catalog.yaml", strings.ReplaceAll(content, "package: op\n", "package: op2\n"), 0o644)
		writeFile(t, dir, fmt.Sprintf("notes/%d.txt", c), fmt.Sprintf("note %d\n", c), 0o644)
		runGit(t, dir, "add", "-A")
		runGit(t, dir, "commit", "-q", "-m", fmt.Sprintf("c%d", c))
	}
	return dir
}

// gitObject is what git cat-file says of an object.
type gitObject struct {
	name Hash
	typ  plumbing.ObjectType
	data []byte
}

// allObjects lists every object of the repository with its content, from git.
func allObjects(t *testing.T, dir string) []gitObject {
	t.Helper()
	cmd := exec.Command("git", "cat-file", "--batch-all-objects", "--batch")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git cat-file: %v", err)
	}
	var objs []gitObject
	r := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := r.ReadString('\n')
		if err == io.EOF {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		f := strings.Fields(line)
		size, _ := strconv.Atoi(f[2])
		typ, err := plumbing.ParseObjectType(f[1])
		if err != nil {
			t.Fatal(err)
		}
		data := make([]byte, size+1)
		if _, err := io.ReadFull(r, data); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, gitObject{name: plumbing.NewHash(f[0]), typ: typ, data: data[:size]})
	}
}

// TestPackReaderMatchesGit reads every object of real packs (OFS_DELTA and
// REF_DELTA chains, 64-bit offsets, several packs) with the pack reader and
// compares with git cat-file.
func TestPackReaderMatchesGit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a 30-commit history")
	}
	dir := historyRepo(t)
	packDir := filepath.Join(dir, ".git", "objects", "pack")
	for _, tc := range []struct {
		name  string
		setup func(t *testing.T)
	}{
		{"ofs-delta", func(t *testing.T) { runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50") }},
		{"ref-delta", func(t *testing.T) {
			runGit(t, dir, "-c", "repack.useDeltaBaseOffset=false", "repack", "-adfq", "--depth=50", "--window=50")
		}},
		{"64-bit-offsets", func(t *testing.T) {
			runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
			packs, _ := filepath.Glob(filepath.Join(packDir, "*.pack"))
			idx := strings.TrimSuffix(packs[0], ".pack") + ".idx"
			os.Chmod(idx, 0o644)
			// Entries past offset 64 (all but the first few) go through
			// the 64-bit table. (With 0, git itself refuses the index.)
			runGit(t, dir, "index-pack", "--index-version=2,64", "-o", idx, packs[0])
		}},
		{"two-packs", func(t *testing.T) {
			runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
			writeFile(t, dir, "catalog/op/catalog.yaml", "schema: olm.package\nname: op\n", 0o644)
			runGit(t, dir, "commit", "-qam", "more")
			runGit(t, dir, "repack", "-dq") // a second pack for the new objects only
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.setup(t)
			objs := allObjects(t, dir)
			r := openRepo(t, dir)
			t.Cleanup(func() { r.Close() })
			pr := r.packReader()
			if tc.name == "two-packs" && len(pr.packs) != 2 {
				t.Fatalf("%d packs open, want 2", len(pr.packs))
			}
			if tc.name == "64-bit-offsets" && len(pr.packs[0].idx.large) < 8*100 {
				t.Fatalf("%d 64-bit offsets, want most entries there", len(pr.packs[0].idx.large)/8)
			}
			if len(objs) < 100 {
				t.Fatalf("git lists %d objects", len(objs))
			}
			deltas, deepest := 0, 0
			for _, o := range objs {
				chain, err := pr.chain(o.name)
				if err != nil {
					t.Fatalf("%s: chain: %v", o.name, err)
				}
				if len(chain) > 1 {
					deltas++
					if tc.name == "ref-delta" && chain[0].typ != plumbing.REFDeltaObject {
						t.Errorf("%s is a %s, want REF_DELTA", o.name, chain[0].typ)
					}
				}
				deepest = max(deepest, len(chain)-1)
			}
			if deltas < 20 || deepest < 5 {
				t.Fatalf("%d deltas, deepest chain %d: the fixture no longer exercises delta chains", deltas, deepest)
			}
			// Every object, read concurrently (run with -race), twice: the
			// second round finds delta bases in the cache.
			var wg sync.WaitGroup
			for g := range 4 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for round := range 2 {
						for i := g; i < len(objs); i += 4 {
							checkObject(t, pr, objs[i], round)
						}
					}
				}()
			}
			wg.Wait()
		})
	}
}

func checkObject(t *testing.T, pr *packReader, o gitObject, round int) {
	typ, size, err := pr.info(o.name)
	if err != nil || typ != o.typ || size != int64(len(o.data)) {
		t.Errorf("round %d: info(%s) = %s, %d, %v, want %s, %d", round, o.name, typ, size, err, o.typ, len(o.data))
		return
	}
	checked := int64(-1)
	got, err := pr.read(o.name, o.typ, func(n int64) error { checked = n; return nil })
	if err != nil || !bytes.Equal(got, o.data) || checked != size {
		t.Errorf("round %d: read(%s) = %d bytes (check saw %d), %v; want git's %d bytes", round, o.name, len(got), checked, err, len(o.data))
		return
	}
	// The caller owns what it got: scribbling on it changes nothing later.
	for i := range got {
		got[i] = 'X'
	}
}

// TestPackReaderThroughFS reads a deltified file through TreeFS and checks
// what goes to go-git: nothing, for objects in the packs.
func TestPackReaderThroughFS(t *testing.T) {
	dir := historyRepo(t)
	runGit(t, dir, "repack", "-adfq", "--depth=50", "--window=50")
	head := runGit(t, dir, "rev-parse", "HEAD")
	want := runGit(t, dir, "show", head+":catalog/op2/catalog.yaml")
	r := openRepo(t, dir)
	f := treeFS(t, r, head, Limits{})
	got, err := f.ReadFile("catalog/op2/catalog.yaml")
	if err != nil || strings.TrimSpace(string(got)) != want {
		t.Fatalf("ReadFile = %d bytes, %v; want git's %d", len(got), err, len(want))
	}
	fi, err := f.Stat("catalog/op2/catalog.yaml")
	if err != nil || fi.Size() != int64(len(got)) {
		t.Errorf("Stat = %v, %v, want size %d", fi, err, len(got))
	}
	// The size limit applies to the delta's result, before it is built.
	small := treeFS(t, r, head, Limits{MaxFileSize: int64(len(got)) - 1})
	if _, err := small.ReadFile("catalog/op2/catalog.yaml"); err == nil || !strings.Contains(err.Error(), "over the size limit") {
		t.Errorf("ReadFile over MaxFileSize: %v, want ErrTooLarge", err)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := f.ReadFile("catalog/op/catalog.yaml"); err == nil {
		t.Errorf("ReadFile after Close succeeded")
	}
}

// TestPackReaderReadsGoGitPacks: the App's git cache fetches with go-git,
// which writes the pack and index itself; the pack reader must read those
// too, and not leave them to go-git.
func TestPackReaderReadsGoGitPacks(t *testing.T) {
	src := historyRepo(t)
	runGit(t, src, "repack", "-adfq", "--depth=50", "--window=50")
	dst := t.TempDir()
	if _, err := git.PlainClone(dst, true, &git.CloneOptions{URL: src, Tags: git.NoTags}); err != nil {
		t.Fatal(err)
	}
	packs, _ := filepath.Glob(filepath.Join(dst, "objects", "pack", "*.idx"))
	if len(packs) != 1 {
		t.Fatalf("go-git wrote %d packs, want 1", len(packs))
	}
	objs := allObjects(t, dst)
	r := openRepo(t, dst)
	t.Cleanup(func() { r.Close() })
	pr := r.packReader()
	if len(pr.packs) != 1 {
		t.Fatalf("%d packs open, want go-git's one", len(pr.packs))
	}
	deltas := 0
	for _, o := range objs {
		chain, err := pr.chain(o.name)
		if err != nil {
			t.Fatalf("%s: %v", o.name, err)
		}
		if len(chain) > 1 {
			deltas++
		}
		checkObject(t, pr, o, 0)
	}
	if deltas == 0 {
		t.Fatalf("no deltas in go-git's pack of %d objects", len(objs))
	}
}
