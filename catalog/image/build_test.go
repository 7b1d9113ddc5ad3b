package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

func sampleCatalog(mtime time.Time) fstest.MapFS {
	return fstest.MapFS{
		"etcd/catalog.yaml":  {Data: []byte("schema: olm.package\nname: etcd\n"), ModTime: mtime, Mode: 0o600},
		"redis/catalog.json": {Data: []byte(`{"schema":"olm.package","name":"redis"}`), ModTime: mtime, Mode: 0o755},
		"README.md":          {Data: []byte("hi\n"), ModTime: mtime},
	}
}

func layerDigest(t *testing.T, fsys fstest.MapFS) v1.Hash {
	t.Helper()
	l, err := ConfigsLayer(context.Background(), fsys, Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := l.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func TestConfigsLayerIsDeterministic(t *testing.T) {
	a := layerDigest(t, sampleCatalog(time.Unix(1, 0)))
	b := layerDigest(t, sampleCatalog(time.Now()))
	if a != b {
		t.Errorf("same catalog, other times and modes: digests %s and %s differ", a, b)
	}
	changed := sampleCatalog(time.Now())
	changed["README.md"] = &fstest.MapFile{Data: []byte("ho\n")}
	if c := layerDigest(t, changed); c == a {
		t.Errorf("different content gave the same digest %s", c)
	}
}

func TestConfigsLayerEntries(t *testing.T) {
	l, err := ConfigsLayer(context.Background(), sampleCatalog(time.Now()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		wantMode := int64(0o644)
		if h.Typeflag == tar.TypeDir {
			wantMode = 0o755
		}
		if h.Mode != wantMode || h.Uid != 0 || h.Gid != 0 || !h.ModTime.Equal(epoch) {
			t.Errorf("%s: mode %o uid %d gid %d mtime %v; want mode %o, root, epoch", h.Name, h.Mode, h.Uid, h.Gid, h.ModTime, wantMode)
		}
	}
	want := []string{"configs/", "configs/README.md", "configs/etcd/", "configs/etcd/catalog.yaml", "configs/redis/", "configs/redis/catalog.json"}
	if !reflect.DeepEqual(names, want) {
		t.Errorf("entries = %q, want %q", names, want)
	}
}

func TestConfigsLayerRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.yaml"), []byte("x: 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "b.yaml")); err != nil {
		t.Fatal(err)
	}
	if _, err := ConfigsLayer(context.Background(), os.DirFS(dir), Limits{}); !errors.Is(err, ErrLink) {
		t.Errorf("err = %v, want ErrLink", err)
	}
}

// baseIndex pushes a two-platform base index to the registry and returns its digest reference.
func baseIndex(t *testing.T, host string) (string, v1.ImageIndex) {
	t.Helper()
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, arch := range []string{"amd64", "arm64"} {
		img, err := random.Image(256, 2)
		if err != nil {
			t.Fatal(err)
		}
		cf, err := img.ConfigFile()
		if err != nil {
			t.Fatal(err)
		}
		cf = cf.DeepCopy()
		cf.OS, cf.Architecture = "linux", arch
		cf.Config.User, cf.Config.Env, cf.Config.WorkingDir = "1001", []string{"PATH=/bin"}, "/work"
		cf.Created = v1.Time{Time: time.Date(2024, 1, 2, 3, 4, 5, 0, time.UTC)}
		img, err = mutate.ConfigFile(img, cf)
		if err != nil {
			t.Fatal(err)
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: arch}}})
	}
	// An attestation entry, as buildx adds: it must be dropped.
	att, _ := random.Image(16, 1)
	idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: att, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "unknown", Architecture: "unknown"}}})
	ref, err := name.ParseReference(host+"/opm/base:latest", name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.WriteIndex(ref, idx); err != nil {
		t.Fatal(err)
	}
	d, _ := idx.Digest()
	return host + "/opm/base@" + d.String(), idx
}

func TestBuildFromIndexAndPush(t *testing.T) {
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	baseRef, base := baseIndex(t, host)
	ctx := context.Background()

	b1, err := Build(ctx, strings.Replace(baseRef, host, host, 1), sampleCatalog(time.Unix(5, 0)), Limits{}, remote.WithContext(ctx))
	if err != nil {
		t.Fatal(err)
	}
	b2, err := Build(ctx, baseRef, sampleCatalog(time.Now()), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := b1.Digest()
	d2, _ := b2.Digest()
	if d1 != d2 {
		t.Fatalf("same catalog and base: digests %s and %s differ", d1, d2)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !reflect.DeepEqual(b1.Platforms, want) {
		t.Errorf("platforms = %v, want %v", b1.Platforms, want)
	}

	pushed, err := b1.Push(ctx, host+"/acme/catalog:v4.16")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(pushed, "@"+d1.String()) {
		t.Errorf("pushed %s, want digest %s", pushed, d1)
	}
	got, err := remote.Index(mustRef(t, host+"/acme/catalog:v4.16"))
	if err != nil {
		t.Fatal(err)
	}
	im, _ := got.IndexManifest()
	if len(im.Manifests) != 2 {
		t.Fatalf("pushed index has %d manifests, want 2", len(im.Manifests))
	}
	baseIM, _ := base.IndexManifest()
	for i, d := range im.Manifests {
		img, err := got.Image(d.Digest)
		if err != nil {
			t.Fatal(err)
		}
		cf, _ := img.ConfigFile()
		if cf.Config.Labels[ConfigsLabel] != "/configs" || !reflect.DeepEqual(cf.Config.Entrypoint, []string{"/bin/opm"}) || !reflect.DeepEqual(cf.Config.Cmd, []string{"serve", "/configs"}) {
			t.Errorf("%s: config %+v lacks label/entrypoint/cmd", d.Platform, cf.Config)
		}
		if cf.Config.User != "1001" || cf.Config.WorkingDir != "/work" || len(cf.Config.Env) != 1 {
			t.Errorf("%s: user/workdir/env of the base not kept: %+v", d.Platform, cf.Config)
		}
		baseImg, _ := base.Image(baseIM.Manifests[i].Digest)
		bl, _ := baseImg.Layers()
		nl, _ := img.Layers()
		if len(nl) != len(bl)+1 {
			t.Fatalf("%s: %d layers, want %d", d.Platform, len(nl), len(bl)+1)
		}
		for j := range bl {
			bd, _ := bl[j].Digest()
			nd, _ := nl[j].Digest()
			if bd != nd {
				t.Errorf("%s: base layer %d changed: %s → %s", d.Platform, j, bd, nd)
			}
		}
	}
}

func TestBuildRefusesTags(t *testing.T) {
	_, err := Build(context.Background(), "quay.io/operator-framework/opm:latest", sampleCatalog(time.Now()), Limits{})
	if err == nil || !strings.Contains(err.Error(), "not pinned by digest") {
		t.Errorf("err = %v, want a 'not pinned by digest' error", err)
	}
}

func mustRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The layer's digest, size and diff ID are those of the bytes it serves:
// they are computed on the way, never read back.
func TestConfigsLayerHashesWhatItServes(t *testing.T) {
	l, err := ConfigsLayer(context.Background(), sampleCatalog(time.Unix(1, 0)), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	rc, err := l.Compressed()
	if err != nil {
		t.Fatal(err)
	}
	compressed, err := io.ReadAll(rc)
	rc.Close()
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compressed)) // the standard reader: any client can inflate it
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := l.Digest(); d.Hex != fmt.Sprintf("%x", sha256.Sum256(compressed)) {
		t.Errorf("digest %s is not the sha256 of the compressed bytes", d)
	}
	if n, _ := l.Size(); n != int64(len(compressed)) {
		t.Errorf("size %d, the compressed bytes are %d", n, len(compressed))
	}
	if d, _ := l.DiffID(); d.Hex != fmt.Sprintf("%x", sha256.Sum256(raw)) {
		t.Errorf("diff ID %s is not the sha256 of the tar", d)
	}
}

// bigCatalog is a catalog of several compression blocks.
func bigCatalog() fstest.MapFS {
	fsys := fstest.MapFS{}
	for i := range 6 {
		var b strings.Builder
		for j := 0; b.Len() < 700_000; j++ {
			fmt.Fprintf(&b, "schema: olm.bundle\nname: p%d.v%d.0.0\npackage: p%d\n---\n", i, j, i)
		}
		fsys[fmt.Sprintf("p%d/catalog.yaml", i)] = &fstest.MapFile{Data: []byte(b.String())}
	}
	return fsys
}

// The compressed bytes do not depend on how many cores compress them.
func TestConfigsLayerSameOnAnyNumberOfCores(t *testing.T) {
	fsys := bigCatalog()
	var digests []v1.Hash
	for _, procs := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(procs)
		digests = append(digests, layerDigest(t, fsys))
		runtime.GOMAXPROCS(prev)
	}
	if digests[0] != digests[1] {
		t.Errorf("digest on 1 core %s, on 4 cores %s", digests[0], digests[1])
	}
}

// keyedFS names contents as a git tree does, by a hash of the bytes.
type keyedFS struct {
	fstest.MapFS
	lookups *int
}

func (f keyedFS) ContentKey(name string) (string, bool) {
	*f.lookups++
	m, ok := f.MapFS[name]
	if !ok {
		return "", false
	}
	return fmt.Sprintf("%x", sha256.Sum256(m.Data)), true
}

// An unchanged catalog gets its layer back from the cache without being
// read; a changed one is built again.
func TestConfigsLayerCacheReusesAnUnchangedCatalog(t *testing.T) {
	cache := NewLayerCache(0)
	lookups := 0
	fsys := keyedFS{MapFS: sampleCatalog(time.Unix(1, 0)), lookups: &lookups}
	lim := Limits{Cache: cache}
	first, err := ConfigsLayer(context.Background(), fsys, lim)
	if err != nil {
		t.Fatal(err)
	}
	again, err := ConfigsLayer(context.Background(), fsys, lim)
	if err != nil {
		t.Fatal(err)
	}
	if again != first {
		t.Errorf("an unchanged catalog was built again")
	}
	if lookups == 0 {
		t.Errorf("the cache key did not use the content keys")
	}
	fsys.MapFS["README.md"] = &fstest.MapFile{Data: []byte("changed\n")}
	changed, err := ConfigsLayer(context.Background(), fsys, lim)
	if err != nil {
		t.Fatal(err)
	}
	d1, _ := first.Digest()
	d2, _ := changed.Digest()
	if changed == first || d1 == d2 {
		t.Errorf("a changed catalog got the cached layer %s", d1)
	}
	if hits, misses := cache.Stats(); hits != 1 || misses != 2 {
		t.Errorf("cache hits %d misses %d, want 1 and 2", hits, misses)
	}
}

// The cache holds at most its bytes, dropping the least recently used.
func TestLayerCacheBounded(t *testing.T) {
	c := NewLayerCache(100)
	c.put("a", &fileLayer{size: 60})
	c.put("b", &fileLayer{size: 30})
	c.get("a")
	c.put("c", &fileLayer{size: 30}) // over 100: b, the least recently used, goes
	c.put("huge", &fileLayer{size: 101})
	for key, want := range map[string]bool{"a": true, "b": false, "c": true, "huge": false} {
		if _, ok := c.get(key); ok != want {
			t.Errorf("%s cached = %v, want %v", key, ok, want)
		}
	}
}

// layerNames lists the entries of a layer's tar.
func layerNames(t *testing.T, l v1.Layer) []string {
	t.Helper()
	rc, err := l.Uncompressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	tr := tar.NewReader(rc)
	var names []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
	}
}

// What validation reads is what the image holds: a link that .indexignore
// hides passes validation, so it must not fail the build (it did: every
// rebuild after its merge failed), and files the loader skips stay out.
func TestConfigsLayerHoldsWhatTheLoaderReads(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("etcd/catalog.yaml", "schema: olm.package\nname: etcd\ndefaultChannel: stable\n---\n"+
		"schema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n---\n"+
		"schema: olm.bundle\npackage: etcd\nname: etcd.v1.0.0\nimage: quay.io/example/etcd-bundle:v1.0.0\n"+
		"properties:\n  - type: olm.package\n    value:\n      packageName: etcd\n      version: \"1.0.0\"\n")
	write(".indexignore", "hidden/\n*.md\n")
	write("hidden/notes.yaml", "not: read\n")
	write("etcd/README.md", "# etcd\n")
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "hidden", "link.yaml")); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	fsys := os.DirFS(dir)
	cat, err := catalog.Load(context.Background(), fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if fs := catalog.Validate(cat, catalog.ValidateOptions{}); catalog.HasErrors(fs) {
		t.Fatalf("the catalog should validate: %v", fs)
	}
	l, err := ConfigsLayer(context.Background(), fsys, Limits{})
	if err != nil {
		t.Fatalf("ConfigsLayer of a catalog that validates: %v", err)
	}
	got := layerNames(t, l)
	want := []string{"configs/", "configs/.indexignore", "configs/etcd/", "configs/etcd/catalog.yaml"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("entries = %q, want %q (the loader's file set and the .indexignore)", got, want)
	}

	// Unhidden, the same link fails validation and the build alike.
	write(".indexignore", "*.md\n")
	if _, err := ConfigsLayer(context.Background(), fsys, Limits{}); !errors.Is(err, ErrLink) {
		t.Errorf("err = %v, want ErrLink once the link is no longer hidden", err)
	}
}

// ContentKey names a catalog's layer without reading it: the same files give the same key, a changed file
// another, and a file system that cannot name contents none.
func TestContentKey(t *testing.T) {
	ctx := context.Background()
	lookups := 0
	files := sampleCatalog(time.Unix(1, 0))
	k1, err := ContentKey(ctx, keyedFS{MapFS: files, lookups: &lookups}, Limits{})
	if err != nil || k1 == "" {
		t.Fatalf("ContentKey = %q, %v", k1, err)
	}
	other := sampleCatalog(time.Unix(2, 0)) // other times, same content
	if k, _ := ContentKey(ctx, keyedFS{MapFS: other, lookups: &lookups}, Limits{}); k != k1 {
		t.Errorf("same content, key %s then %s", k1, k)
	}
	for name, f := range other {
		if !f.Mode.IsDir() && strings.HasSuffix(name, ".yaml") {
			other[name] = &fstest.MapFile{Data: append(append([]byte(nil), f.Data...), "\n# changed\n"...), ModTime: f.ModTime}
			break
		}
	}
	if k, _ := ContentKey(ctx, keyedFS{MapFS: other, lookups: &lookups}, Limits{}); k == k1 {
		t.Errorf("a changed file kept the key %s", k)
	}
	if k, err := ContentKey(ctx, files, Limits{}); k != "" || err != nil {
		t.Errorf("a file system without content keys: %q, %v; want none", k, err)
	}
}
