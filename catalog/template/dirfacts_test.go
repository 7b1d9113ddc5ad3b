package template

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
	"time"
)

// keyedFS is a file system whose directory entries name their content, as a git tree's do (a blob id), and
// which counts the files opened.
type keyedFS struct {
	files fstest.MapFS
	opens *atomic.Int64
}

func (k keyedFS) Open(name string) (fs.File, error) {
	f, err := k.files.Open(name)
	if err == nil {
		if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
			k.opens.Add(1)
		}
	}
	return f, err
}

func (k keyedFS) ReadDir(name string) ([]fs.DirEntry, error) {
	entries, err := k.files.ReadDir(name)
	if err != nil {
		return nil, err
	}
	out := make([]fs.DirEntry, len(entries))
	for i, e := range entries {
		out[i] = keyedEntry{DirEntry: e, fsys: k.files, path: path.Join(name, e.Name())}
	}
	return out, nil
}

type keyedEntry struct {
	fs.DirEntry
	fsys fstest.MapFS
	path string
}

func (e keyedEntry) ContentKey() (string, bool) {
	f, ok := e.fsys[e.path]
	if !ok || !e.Type().IsRegular() {
		return "", false
	}
	sum := sha256.Sum256(f.Data)
	return "test-blob:" + hex.EncodeToString(sum[:]), true
}

const testAnnotations = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"

func etcdDirs(versions ...string) fstest.MapFS {
	m := fstest.MapFS{}
	for _, v := range versions {
		m["operators/etcd/"+v+"/metadata/annotations.yaml"] = &fstest.MapFile{Data: []byte(testAnnotations)}
		m["operators/etcd/"+v+"/manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v" + v + "\nspec:\n  version: " + v + "\n")}
	}
	return m
}

// The image build is deterministic: the same files give the same digest whatever file system they are read
// from, their modification times and the order they were written in, so a digest may be kept by the
// directory's content.
func TestBundleImageDigestDeterministic(t *testing.T) {
	ctx := context.Background()
	m := etcdDirs("1.0.0")
	m["operators/etcd/1.0.0/manifests/z.crd.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.b\n")}
	sub, _ := fs.Sub(m, "operators/etcd/1.0.0")
	first, err := BundleImageDigest(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		dir := t.TempDir()
		names := []string{"manifests/z.crd.yaml", "manifests/etcd.csv.yaml", "metadata/annotations.yaml"}
		if i == 1 {
			names = []string{"metadata/annotations.yaml", "manifests/etcd.csv.yaml", "manifests/z.crd.yaml"}
		}
		for j, n := range names {
			p := filepath.Join(dir, filepath.FromSlash(n))
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, m["operators/etcd/1.0.0/"+n].Data, 0o600); err != nil {
				t.Fatal(err)
			}
			stamp := time.Date(2020+i, 1, j+1, 0, 0, 0, 0, time.UTC)
			if err := os.Chtimes(p, stamp, stamp); err != nil {
				t.Fatal(err)
			}
		}
		got, err := BundleImageDigest(ctx, os.DirFS(dir))
		if err != nil {
			t.Fatal(err)
		}
		if got != first {
			t.Errorf("copy %d on disk: digest %s, in memory %s", i, got, first)
		}
	}
	m["operators/etcd/1.0.0/manifests/z.crd.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: a.c\n")}
	if other, _ := BundleImageDigest(ctx, sub); other == first {
		t.Error("another content, the same digest")
	}
}

// A second resolver given the facts the first learnt reads no file of the directories whose content it
// knows, and resolves the same references to the same directories; a directory whose content changed is
// read again.
func TestDirResolverFactsSkipReads(t *testing.T) {
	ctx := context.Background()
	m := etcdDirs("1.0.0", "1.1.0", "1.2.0")
	var opens atomic.Int64
	fsys := keyedFS{files: m, opens: &opens}
	dirs := []string{"operators/etcd/1.0.0", "operators/etcd/1.1.0", "operators/etcd/1.2.0"}
	const pattern = "quay.io/acme/{package}-bundle:v{version}"
	sub, _ := fs.Sub(m, "operators/etcd/1.1.0")
	dg, err := BundleImageDigest(ctx, sub)
	if err != nil {
		t.Fatal(err)
	}
	byDigest := "quay.io/acme/etcd-bundle@" + dg
	facts := NewDirFactsCache(0)

	cold := NewDirResolver(fsys, dirs, pattern, "none").WithFacts(facts)
	if dir, ok := cold.DirOf(ctx, byDigest); !ok || dir != "operators/etcd/1.1.0" {
		t.Fatalf("cold: DirOf(%s) = %q, %v", byDigest, dir, ok)
	}
	if opens.Load() == 0 || facts.Len() != 3 || facts.Added() != 3 {
		t.Fatalf("cold: %d files opened, %d facts (%d added); want reads and the 3 directories", opens.Load(), facts.Len(), facts.Added())
	}

	opens.Store(0)
	warm := NewDirResolver(fsys, dirs, pattern, "none").WithFacts(facts)
	if dir, ok := warm.DirOf(ctx, byDigest); !ok || dir != "operators/etcd/1.1.0" {
		t.Errorf("warm: DirOf(%s) = %q, %v", byDigest, dir, ok)
	}
	if dir, ok := warm.DirOf(ctx, "quay.io/acme/etcd-bundle:v1.2.0"); !ok || dir != "operators/etcd/1.2.0" {
		t.Errorf("warm: DirOf by tag = %q, %v", dir, ok)
	}
	if n := opens.Load(); n != 0 {
		t.Errorf("warm: %d files opened to index directories the facts know", n)
	}
	// Resolving reads the one directory rendered, and renders what a cold resolver renders.
	got, err := warm.Resolve(ctx, byDigest)
	if err != nil {
		t.Fatal(err)
	}
	want, err := NewDirResolver(fsys, dirs, pattern, "none").Resolve(ctx, byDigest)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bundleJSON(got.Bundle), bundleJSON(want.Bundle)) {
		t.Errorf("warm render differs:\n%s\n%s", bundleJSON(got.Bundle), bundleJSON(want.Bundle))
	}

	// A changed directory has another key: it is read, and its new digest names it.
	m["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v1.1.0\n  annotations: {changed: \"yes\"}\nspec:\n  version: 1.1.0\n")}
	opens.Store(0)
	changed := NewDirResolver(fsys, dirs, pattern, "none").WithFacts(facts)
	if _, ok := changed.DirOf(ctx, byDigest); ok {
		t.Error("the old digest still names the changed directory")
	}
	if opens.Load() == 0 {
		t.Error("the changed directory was not read")
	}
	newDg, _ := BundleImageDigest(ctx, sub)
	if dir, ok := changed.DirOf(ctx, "quay.io/acme/etcd-bundle@"+newDg); !ok || dir != "operators/etcd/1.1.0" {
		t.Errorf("the changed directory's digest: %q, %v", dir, ok)
	}
}

// BundleImageDigestOf keeps the digest it builds, and a resolver looking up by digest then builds nothing
// for that directory.
func TestBundleImageDigestOfShared(t *testing.T) {
	ctx := context.Background()
	m := etcdDirs("1.0.0")
	var opens atomic.Int64
	fsys := keyedFS{files: m, opens: &opens}
	facts := NewDirFactsCache(0)
	dg, err := BundleImageDigestOf(ctx, fsys, "operators/etcd/1.0.0", facts)
	if err != nil {
		t.Fatal(err)
	}
	sub, _ := fs.Sub(m, "operators/etcd/1.0.0")
	if want, _ := BundleImageDigest(ctx, sub); dg != want {
		t.Fatalf("digest %s, want %s", dg, want)
	}
	opens.Store(0)
	if again, err := BundleImageDigestOf(ctx, fsys, "operators/etcd/1.0.0", facts); err != nil || again != dg || opens.Load() != 0 {
		t.Errorf("again: %s, %v, %d files opened", again, err, opens.Load())
	}
	d := NewDirResolver(fsys, []string{"operators/etcd/1.0.0"}, "quay.io/acme/{package}-bundle:v{version}", "none").WithFacts(facts)
	if _, ok := d.DirOf(ctx, "quay.io/acme/etcd-bundle@"+dg); !ok || opens.Load() != 0 {
		t.Errorf("resolver after BundleImageDigestOf: found %v, %d files opened", ok, opens.Load())
	}
}

// DirKey names content: the same files in two places share a key; a renamed or changed file, or an added
// one, changes it; a link, or a file system that names no content, gives none.
func TestDirKey(t *testing.T) {
	m := etcdDirs("1.0.0", "1.1.0")
	m["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = m["operators/etcd/1.0.0/manifests/etcd.csv.yaml"]
	var n atomic.Int64
	fsys := keyedFS{files: m, opens: &n}
	a, okA := DirKey(fsys, "operators/etcd/1.0.0")
	b, okB := DirKey(fsys, "operators/etcd/1.1.0")
	if !okA || !okB || a != b {
		t.Fatalf("same files: %q %v, %q %v", a, okA, b, okB)
	}
	if n.Load() != 0 {
		t.Errorf("DirKey opened %d files", n.Load())
	}
	variants := map[string]func(fstest.MapFS){
		"renamed": func(m fstest.MapFS) {
			m["operators/etcd/1.1.0/manifests/csv.yaml"] = m["operators/etcd/1.1.0/manifests/etcd.csv.yaml"]
			delete(m, "operators/etcd/1.1.0/manifests/etcd.csv.yaml")
		},
		"changed": func(m fstest.MapFS) {
			m["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = &fstest.MapFile{Data: []byte("kind: ClusterServiceVersion\n")}
		},
		"added": func(m fstest.MapFS) {
			m["operators/etcd/1.1.0/tests/scorecard.yaml"] = &fstest.MapFile{Data: []byte("x: 1\n")}
		},
	}
	for name, change := range variants {
		v := fstest.MapFS{}
		for k, f := range m {
			v[k] = f
		}
		change(v)
		if k, ok := DirKey(keyedFS{files: v, opens: &n}, "operators/etcd/1.1.0"); !ok || k == a {
			t.Errorf("%s: key %q, %v; want another key", name, k, ok)
		}
	}
	m["operators/etcd/1.1.0/manifests/link.yaml"] = &fstest.MapFile{Data: []byte("etcd.csv.yaml"), Mode: fs.ModeSymlink}
	if k, ok := DirKey(fsys, "operators/etcd/1.1.0"); ok {
		t.Errorf("a directory with a link has key %q", k)
	}
	if k, ok := DirKey(m, "operators/etcd/1.0.0"); ok {
		t.Errorf("a file system that names no content gives key %q", k)
	}
}

// The facts written are read back under the same stamp only; a damaged file is refused whole.
func TestDirFactsCacheRoundTrip(t *testing.T) {
	c := NewDirFactsCache(0)
	c.put("k1", DirFacts{Bundle: true, Package: "etcd", Version: "1.0.0", Digest: "sha256:" + strings.Repeat("a", 64)})
	c.put("k2", DirFacts{})
	c.put("k3", DirFacts{Bundle: true, Package: "etcd", Version: "1.1.0", NoImage: true})
	c.put("k1", DirFacts{Bundle: true, Package: "etcd", Version: "1.0.0"}) // facts without the digest do not forget it
	var buf bytes.Buffer
	if err := c.WriteTo(&buf, "build-1"); err != nil {
		t.Fatal(err)
	}
	back, err := ReadDirFactsCache(bytes.NewReader(buf.Bytes()), "build-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k1", "k2", "k3"} {
		want, _ := c.get(k)
		if got, ok := back.get(k); !ok || got != want {
			t.Errorf("%s: %+v, %v; want %+v", k, got, ok, want)
		}
	}
	if f, _ := back.get("k1"); f.Digest == "" {
		t.Error("the digest was forgotten")
	}
	if back.Added() != 0 {
		t.Errorf("a cache read back has %d added", back.Added())
	}
	if _, err := ReadDirFactsCache(bytes.NewReader(buf.Bytes()), "build-2", 0); err == nil {
		t.Error("facts of another build were read")
	}
	damaged := append(bytes.Clone(buf.Bytes()), "{not json\n"...)
	if _, err := ReadDirFactsCache(bytes.NewReader(damaged), "build-1", 0); err == nil {
		t.Error("a damaged file was read")
	}
	small := NewDirFactsCache(2)
	for _, k := range []string{"a", "b", "c"} {
		small.put(k, DirFacts{Bundle: true})
	}
	if _, ok := small.get("a"); ok || small.Len() != 2 {
		t.Errorf("bounded to 2: %d kept, oldest kept: %v", small.Len(), ok)
	}
}

// ReadDirFactsCache never panics, and what it accepts it writes back to the same.
func FuzzReadDirFactsCache(f *testing.F) {
	c := NewDirFactsCache(0)
	c.put("k1", DirFacts{Bundle: true, Package: "etcd", Version: "1.0.0", Digest: "sha256:00"})
	var buf bytes.Buffer
	_ = c.WriteTo(&buf, "s")
	f.Add(buf.Bytes())
	f.Add([]byte(`{"stamp":"s"}` + "\n" + `{"key":"x"}` + "\n"))
	f.Add([]byte(""))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := ReadDirFactsCache(bytes.NewReader(data), "s", 100)
		if err != nil {
			return
		}
		var out bytes.Buffer
		if err := got.WriteTo(&out, "s"); err != nil {
			t.Fatal(err)
		}
		again, err := ReadDirFactsCache(bytes.NewReader(out.Bytes()), "s", 100)
		if err != nil || again.Len() != got.Len() {
			t.Fatalf("written back: %v, %d of %d", err, again.Len(), got.Len())
		}
	})
}

// Resolvers sharing DirRenders load and render a directory once, even when they ask at the same time; what
// they get is the same render.
func TestDirRendersShared(t *testing.T) {
	ctx := context.Background()
	m := etcdDirs("1.0.0", "1.1.0")
	var opens atomic.Int64
	fsys := keyedFS{files: m, opens: &opens}
	dirs := []string{"operators/etcd/1.0.0", "operators/etcd/1.1.0"}
	const ref = "quay.io/acme/etcd-bundle:v1.1.0"
	facts, renders := NewDirFactsCache(0), NewDirRenders()
	NewDirResolver(fsys, dirs, "quay.io/acme/{package}-bundle:v{version}", "none").WithFacts(facts).DirOf(ctx, ref) // learn the directories
	opens.Store(0)
	results := make([]*Resolved, 8)
	var wg sync.WaitGroup
	for i := range results {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var r Resolver
			if i%2 == 0 {
				r = NewDirResolver(fsys, dirs, "quay.io/acme/{package}-bundle:v{version}", "none").WithFacts(facts).WithRenders(renders)
			} else {
				r = FetchDirResolver(fsys, func(string) (string, error) { return "operators/etcd/1.1.0", nil }, "none", renders)
			}
			res, err := r.Resolve(ctx, ref)
			if err != nil {
				t.Error(err)
			}
			results[i] = res
		}()
	}
	wg.Wait()
	for i, r := range results {
		if r != results[0] {
			t.Errorf("resolver %d got another render", i)
		}
	}
	if n := opens.Load(); n != 2 { // the CSV and the annotations, once
		t.Errorf("%d files opened for one directory rendered by 8 resolvers", n)
	}
}
