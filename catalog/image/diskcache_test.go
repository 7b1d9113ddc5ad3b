package image

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
)

func writeCatalog(t *testing.T, dir, content string, at time.Time) {
	t.Helper()
	p := filepath.Join(dir, "etcd", "catalog.yaml")
	os.MkdirAll(filepath.Dir(p), 0o755)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(p, at, at)
}

func TestDiskCache(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the layer cache trusts file metadata on Linux only")
	}
	ctx := context.Background()
	cat := t.TempDir()
	writeCatalog(t, cat, "schema: olm.package\nname: etcd\n", time.Unix(1, 0))
	c, err := OpenDiskCache(t.TempDir(), 0)
	if err != nil {
		t.Fatal(err)
	}
	// Just written: the change time is recent, so the metadata cannot be trusted yet.
	if _, ok, err := c.DirKey(ctx, cat, Limits{}); err != nil || ok {
		t.Fatalf("fresh files: ok %v err %v, want not trusted", ok, err)
	}
	c.now = func() time.Time { return time.Now().Add(time.Minute) }
	key, ok, err := c.DirKey(ctx, cat, Limits{})
	if err != nil || !ok {
		t.Fatalf("DirKey: %v %v", ok, err)
	}
	if _, _, hit := c.Load(key); hit {
		t.Fatal("hit on an empty cache")
	}
	layer, err := ConfigsLayer(ctx, os.DirFS(cat), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	warn := []catalog.Finding{{Rule: "x.warning", Severity: catalog.SeverityWarning, Message: "kept"}}
	if err := c.Save(key, layer, warn); err != nil {
		t.Fatal(err)
	}
	got, fs, hit := c.Load(key)
	if !hit || len(fs) != 1 || fs[0].Message != "kept" {
		t.Fatalf("Load: hit %v findings %v", hit, fs)
	}
	wd, _ := layer.Digest()
	gd, _ := got.Digest()
	wdi, _ := layer.DiffID()
	gdi, _ := got.DiffID()
	if wd != gd || wdi != gdi {
		t.Fatalf("cached layer %s/%s, built %s/%s", gd, gdi, wd, wdi)
	}

	// Another content under the same name, size and modification time: another key.
	writeCatalog(t, cat, "schema: olm.package\nname: etcX\n", time.Unix(1, 0))
	if k2, ok, _ := c.DirKey(ctx, cat, Limits{}); !ok || k2 == key {
		t.Fatalf("changed content: key %s ok %v, want a new key", k2, ok)
	}

	// A damaged entry is a miss, never an error or a wrong layer.
	os.WriteFile(filepath.Join(c.dir, key+".json"), []byte("{not json"), 0o600)
	if _, _, hit := c.Load(key); hit {
		t.Fatal("damaged entry answered")
	}
	// Keys never name paths outside the cache.
	if _, _, hit := c.Load("../../etc/passwd"); hit {
		t.Fatal("a path answered as a key")
	}
}

func TestDiskCacheEviction(t *testing.T) {
	ctx := context.Background()
	cat := t.TempDir()
	writeCatalog(t, cat, "schema: olm.package\nname: etcd\n", time.Unix(1, 0))
	layer, err := ConfigsLayer(ctx, os.DirFS(cat), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	size, _ := layer.Size()
	c, err := OpenDiskCache(t.TempDir(), 2*size)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	c.now = func() time.Time { return now }
	keys := []string{}
	for i := 0; i < 3; i++ {
		k := string(rune('a'+i)) + string(make([]byte, 0))
		k = (k + "0000000000000000000000000000000000000000000000000000000000000000")[:64]
		keys = append(keys, k)
		if err := c.Save(k, layer, nil); err != nil {
			t.Fatal(err)
		}
		// Each later entry used later.
		os.Chtimes(filepath.Join(c.dir, k+".json"), now.Add(time.Duration(i)*time.Second), now.Add(time.Duration(i)*time.Second))
	}
	c.evict()
	if _, _, hit := c.Load(keys[0]); hit {
		t.Error("the entry used longest ago was kept past the bound")
	}
	for _, k := range keys[1:] {
		if _, _, hit := c.Load(k); !hit {
			t.Errorf("entry %s evicted", k[:1])
		}
	}
}
