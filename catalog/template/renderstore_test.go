package template

import (
	"bytes"
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/fstest"
)

// memRenderStore is a RenderStore in memory that counts what it is asked.
type memRenderStore struct {
	mu         sync.Mutex
	m          map[string][]byte
	gets, hits int
}

func (s *memRenderStore) GetRender(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.gets++
	d, ok := s.m[key]
	if ok {
		s.hits++
	}
	return d, ok
}

func (s *memRenderStore) PutRender(key string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = map[string][]byte{}
	}
	s.m[key] = append([]byte(nil), data...)
}

// A render read back from a store is the render: every bundle of the shared test data (or the small etcd
// directories without it), at both migrate levels, gives the same blob, CSV content and output bytes from a
// store as rendered from its directory, and a process with the store opens none of the directories' files.
func TestDirRendersStoreRoundTrip(t *testing.T) {
	ctx := context.Background()
	files, dirs := sharedBundleFS(t)
	pattern := "quay.io/acme/{package}-bundle:v{version}"
	var opens atomic.Int64
	fsys := keyedFS{files: files, opens: &opens}
	store := &memRenderStore{}
	renderAll := func(level string) (map[string]*Resolved, int64) {
		facts := NewDirFactsCache(0)
		r := NewDirResolver(fsys, dirs, pattern, level).WithFacts(facts).WithRenders(NewDirRenders().WithStore(store))
		out := map[string]*Resolved{}
		r.DirOf(ctx, "quay.io/acme/none-bundle:v0") // index the directories first
		opens.Store(0)
		for _, ref := range testRefs(r) {
			res, err := r.Resolve(ctx, ref)
			if err != nil {
				continue // a directory opm does not render renders nothing, stored or not
			}
			out[ref] = res
		}
		return out, opens.Load()
	}
	for _, level := range []string{"none", "bundle-object-to-csv-metadata"} {
		cold, coldOpens := renderAll(level)
		if len(cold) == 0 {
			t.Fatalf("%s: nothing rendered", level)
		}
		hits := store.hits
		warm, warmOpens := renderAll(level)
		if store.hits-hits != len(cold) {
			t.Errorf("%s: %d renders read from the store, want %d", level, store.hits-hits, len(cold))
		}
		if warmOpens != 0 || coldOpens == 0 {
			t.Errorf("%s: files opened: %d rendering, %d from the store (want 0)", level, coldOpens, warmOpens)
		}
		for ref, c := range cold {
			w := warm[ref]
			if w == nil {
				t.Errorf("%s %s: not rendered from the store", level, ref)
				continue
			}
			if got, want := blobJSON(t, w), blobJSON(t, c); !bytes.Equal(got, want) {
				t.Errorf("%s %s: stored blob differs", level, ref)
			}
			if w.From != c.From || w.ByTag != c.ByTag {
				t.Errorf("%s %s: from %q/%v, want %q/%v", level, ref, w.From, w.ByTag, c.From, c.ByTag)
			}
			if (w.CSV == nil) != (c.CSV == nil) || (c.CSV != nil && !bytes.Equal(w.CSV.AppendJSON(nil), c.CSV.AppendJSON(nil))) {
				t.Errorf("%s %s: stored CSV differs", level, ref)
			}
		}
	}
	// A damaged or foreign entry is a miss, never a render.
	for k := range store.m {
		store.m[k] = []byte(`{"format":"another","bundle":{}}`)
	}
	again := NewDirResolver(fsys, dirs, pattern, "none").WithRenders(NewDirRenders().WithStore(store))
	again.DirOf(ctx, "quay.io/acme/none-bundle:v0")
	for _, ref := range testRefs(again) {
		if res, err := again.Resolve(ctx, ref); err == nil && res.Bundle == nil {
			t.Errorf("%s: a damaged entry gave an empty render", ref)
		}
	}
}

func blobJSON(t *testing.T, r *Resolved) []byte {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r.Bundle); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// sharedBundleFS holds the shared test data's bundle directories (operators/<pkg>/<version>), or two small
// ones when the shared data is absent.
func sharedBundleFS(t *testing.T) (fstest.MapFS, []string) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	anns, _ := filepath.Glob(filepath.Join(root, "*", "*", "metadata", "annotations.yaml"))
	if len(anns) == 0 {
		t.Log("the shared test data is absent; two small bundle directories instead")
		return etcdDirs("1.0.0", "1.1.0"), []string{"operators/etcd/1.0.0", "operators/etcd/1.1.0"}
	}
	sort.Strings(anns)
	if testing.Short() {
		anns = anns[:min(len(anns), 12)]
	}
	m := fstest.MapFS{}
	var dirs []string
	for _, a := range anns {
		dir := filepath.Dir(filepath.Dir(a))
		rel, _ := filepath.Rel(root, dir)
		name := path.Join("operators", filepath.ToSlash(rel))
		dirs = append(dirs, name)
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			data, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			r, _ := filepath.Rel(dir, p)
			m[path.Join(name, filepath.ToSlash(r))] = &fstest.MapFile{Data: data, Mode: 0o644}
			return nil
		})
	}
	return m, dirs
}

// testRefs are the pattern references of the directories r has indexed, in order.
func testRefs(r *DirResolver) []string {
	r.idx.mu.Lock()
	defer r.idx.mu.Unlock()
	var refs []string
	for ref := range r.idx.byRef {
		if !strings.Contains(ref, "@") {
			refs = append(refs, ref)
		}
	}
	sort.Strings(refs)
	return refs
}
