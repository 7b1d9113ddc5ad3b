package catalog

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"reflect"
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
		c.put(string(rune('a'+i)), "f", 100, fileResult{})
	}
	if c.used > 1000 || len(c.entries) > 2 {
		t.Errorf("used %d with %d entries, want at most 1000 bytes", c.used, len(c.entries))
	}
	if _, ok := c.get("j", "f"); !ok {
		t.Error("the newest entry was evicted")
	}
}
