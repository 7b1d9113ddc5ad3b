package load

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
)

// keyedMapFS names each file by the hash of its content, as a git tree does.
type keyedMapFS struct{ fstest.MapFS }

func (k keyedMapFS) ContentKey(name string) (string, bool) {
	f, ok := k.MapFS[name]
	if !ok {
		return "", false
	}
	sum := sha256.Sum256(f.Data)
	return hex.EncodeToString(sum[:]), true
}

func TestParseCacheReusesContent(t *testing.T) {
	pkg := []byte("---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n")
	bad := []byte("schema: olm.bundle\npackage: etcd\nname: [\n")
	first := keyedMapFS{fstest.MapFS{"a/catalog.yaml": {Data: pkg}, "a/bad.yaml": {Data: bad}}}
	cache := NewParseCache(1 << 20)
	lim := Limits{Cache: cache}
	ctx := context.Background()

	docs1, fs1, err := ReadFS(ctx, first, lim)
	if err != nil {
		t.Fatal(err)
	}
	want, wantF, _ := ReadFS(ctx, first.MapFS, Limits{}) // no keys: parsed as usual
	if !sameDocs(docs1, want) || !reflect.DeepEqual(fs1, wantF) {
		t.Fatal("a cold cache changed what ReadFS returns")
	}
	if h, m := cache.Stats(); h != 0 || m != 2 {
		t.Fatalf("cold: hits %d misses %d, want 0 and 2", h, m)
	}
	// The same contents under other names: served from the cache, positions renamed.
	moved := keyedMapFS{fstest.MapFS{"b/catalog.yaml": {Data: pkg}, "b/bad.yaml": {Data: bad}}}
	docs2, fs2, err := ReadFS(ctx, moved, lim)
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := cache.Stats(); h != 2 {
		t.Fatalf("hits = %d, want 2", h)
	}
	wantMoved, wantMovedF, _ := ReadFS(ctx, moved.MapFS, Limits{})
	if !sameDocs(docs2, wantMoved) || !reflect.DeepEqual(fs2, wantMovedF) {
		t.Errorf("cached parse under another name differs from a fresh parse:\n got %v\nwant %v", fs2, wantMovedF)
	}
	// The cached entry is not changed by the caller renaming.
	docs3, _, _ := ReadFS(ctx, first, lim)
	if docs3[0].Pos.File != "a/catalog.yaml" {
		t.Errorf("cached docs were modified: %s", docs3[0].Pos.File)
	}
	var _ fs.FS = moved
}

func TestParseCacheEvicts(t *testing.T) {
	c := NewParseCache(1000)
	for i := range 10 {
		c.put(int64(i+1), string(rune('a'+i)), "f", 100, Result{}) // one read each
	}
	if c.used > 1000 || len(c.entries) > 2 {
		t.Errorf("used %d with %d entries, want at most 1000 bytes", c.used, len(c.entries))
	}
	if _, ok := c.get(11, "j", "f"); !ok {
		t.Error("the newest entry was evicted")
	}
}

// A catalog larger than the cache is read twice: the second read finds what
// the first could keep (plain LRU evicted each file just before the second
// read needed it, and found none), and a later read of another tree still
// replaces what no read uses any more.
func TestParseCacheDoesNotThrash(t *testing.T) {
	tree := func(tag string) keyedMapFS {
		fsys := keyedMapFS{fstest.MapFS{}}
		for i := range 20 {
			name := fmt.Sprintf("p%02d", i)
			fsys.MapFS[name+"/catalog.yaml"] = &fstest.MapFile{Data: []byte(fmt.Sprintf("schema: olm.package\nname: %s\ndescription: %s %s\n", name, tag, strings.Repeat("x", 900)))}
		}
		return fsys
	}
	const fileCost = parsedPerFileByte*966 + 256 // about: the estimate of one file
	cache := NewParseCache(8 * fileCost)
	lim := Limits{Cache: cache, Concurrency: 1}
	ctx := context.Background()
	a := tree("a")
	for range 3 {
		if _, _, err := ReadFS(ctx, a, lim); err != nil {
			t.Fatal(err)
		}
	}
	hits, misses := cache.Stats()
	if hits < 2*6 {
		t.Errorf("three reads of a catalog 2.5 times the cache: %d hits, %d misses; want at least 6 hits on each re-read", hits, misses)
	}
	if used, max := cache.Size(); used > max {
		t.Errorf("cache holds %d, over its budget %d", used, max)
	}
	// Another catalog: what the old reads used gives way to it.
	b := tree("b")
	ReadFS(ctx, b, lim)
	h0, _ := cache.Stats()
	ReadFS(ctx, b, lim)
	if h1, _ := cache.Stats(); h1-h0 < 6 {
		t.Errorf("re-read of a new catalog: %d hits, want at least 6 (stale entries should have been evicted)", h1-h0)
	}
}
