package catalog_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/catalogtest"
	"github.com/catalogbot/catalogbot/catalog/load"
)

// keyedFS names each file's content by its hash, as a git tree does by blob id.
type keyedFS struct {
	fs.FS
	reads *openCounts // files opened, when counting
}

// openCounts counts opens by name; the loader opens files from several goroutines.
type openCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *openCounts) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

func (k keyedFS) ContentKey(name string) (string, bool) {
	data, err := fs.ReadFile(k.FS, name)
	if err != nil {
		return "", false
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:]), true
}

func (k keyedFS) Open(name string) (fs.File, error) {
	if k.reads != nil {
		k.reads.mu.Lock()
		k.reads.n[name]++
		k.reads.mu.Unlock()
	}
	return k.FS.Open(name)
}

// checkPartial asserts, for many package subsets, that validating a partial
// load (with no index, then with the index a first load filled) gives exactly
// what validating the whole catalog gives for those packages.
func checkPartial(t *testing.T, name string, fsys fs.FS, rng *rand.Rand, rounds int) {
	t.Helper()
	ctx := context.Background()
	whole, err := catalog.Load(ctx, fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	set, err := load.ListFiles(ctx, fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range whole.Packages {
		names = append(names, p.Name)
	}
	subsets := [][]string{{"no-such-package"}, nil}
	for _, n := range names {
		subsets = append(subsets, []string{n})
	}
	for r := 0; r < rounds && len(names) > 0; r++ {
		k := 1 + rng.IntN(min(4, len(names)))
		var s []string
		for range k {
			s = append(s, names[rng.IntN(len(names))])
		}
		subsets = append(subsets, s)
	}
	index := load.NewSummaryIndex(0)
	keyed := keyedFS{FS: fsys}
	for _, s := range subsets {
		want := catalog.Validate(whole, catalog.ValidateOptions{Packages: s})
		if s == nil {
			want = catalog.Validate(whole, catalog.ValidateOptions{Packages: []string{""}})
		}
		for _, withIndex := range []bool{false, true, true} {
			lim := catalog.Limits{}
			var in fs.FS = fsys
			if withIndex {
				lim.Index, in = index, keyed
			}
			part, out, err := catalog.LoadPartial(ctx, in, set, catalog.PartialOptions{Packages: s}, lim)
			if err != nil {
				t.Fatal(err)
			}
			pkgs := s
			if pkgs == nil {
				pkgs = []string{""}
			}
			got := catalog.Validate(part, catalog.ValidateOptions{Packages: pkgs})
			if !reflect.DeepEqual(got, want) {
				t.Errorf("%s: partial load (index %v) for %q: %d findings, whole load %d\ngot:  %v\nwant: %v", name, withIndex, s, len(got), len(want), got, want)
			}
			for _, p := range s {
				if wp, pp := whole.Package(p), part.Package(p); wp != nil && (pp == nil || len(pp.Bundles) != len(wp.Bundles) || len(pp.Channels) != len(wp.Channels)) {
					t.Errorf("%s: partial load for %q lacks some of its blobs", name, p)
				}
			}
			if len(out.Summaries) != len(set.Files) {
				t.Errorf("%s: outline has %d summaries for %d files", name, len(out.Summaries), len(set.Files))
			}
		}
	}
	// Every file's summary names the packages of its blobs, however it was learnt.
	_, out, err := catalog.LoadPartial(ctx, keyed, set, catalog.PartialOptions{}, catalog.Limits{Index: index})
	if err != nil {
		t.Fatal(err)
	}
	holds := map[string]map[string]bool{}
	for _, d := range whole.Docs() {
		p := d.Package
		if d.Schema == catalog.SchemaPackage {
			p = d.Name
		}
		if holds[d.Pos.File] == nil {
			holds[d.Pos.File] = map[string]bool{}
		}
		holds[d.Pos.File][p] = true
	}
	for i, f := range out.Files {
		for p := range holds[f.Path] {
			if !strings.Contains("\x00"+strings.Join(out.Summaries[i].Packages, "\x00")+"\x00", "\x00"+p+"\x00") {
				t.Errorf("%s: summary of %s lacks package %q: %+v", name, f.Path, p, out.Summaries[i])
			}
		}
	}
}

func TestPartialLoadEqualsWholeLoad(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 3))
	for seed := uint64(1); seed <= 4; seed++ {
		fsys := catalogtest.Generate(catalogtest.Options{Bundles: 200, PerPackage: 10, Seed: seed, ObjectsEvery: 3, Defects: 8})
		checkPartial(t, "synthetic", fsys, rng, 10)
	}
	cases, _ := filepath.Glob(filepath.Join("testdata", "validate", "*", "catalog"))
	for _, dir := range cases {
		checkPartial(t, dir, os.DirFS(dir), rng, 3)
	}
	cases, _ = filepath.Glob(filepath.Join("decode", "testdata", "load", "*", "catalog"))
	for _, dir := range cases {
		checkPartial(t, dir, os.DirFS(dir), rng, 2)
	}
	for _, name := range []string{"community-operators-prod-v4.16"} {
		dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
		if _, err := os.Stat(dir); err != nil {
			t.Logf("skipping %s: not found", dir)
			continue
		}
		checkPartial(t, name, os.DirFS(dir), rng, 3)
	}
}

// A package required by a judged bundle, a package declared twice, a blob of
// no package and a broken file are all read; the rest is neither read nor
// parsed once the index knows it.
func TestPartialLoadReadsOnlyWhatIsNeeded(t *testing.T) {
	pkg := func(n string) string { return `{"schema":"olm.package","name":"` + n + `"}` + "\n" }
	bundle := func(p, n, extra string) string {
		return `{"schema":"olm.bundle","package":"` + p + `","name":"` + n + `","image":"quay.io/x/` + n + `:1","properties":[{"type":"olm.package","value":{"packageName":"` + p + `","version":"1.0.0"}}` + extra + `]}` + "\n"
	}
	channel := func(p, n string) string {
		return `{"schema":"olm.channel","package":"` + p + `","name":"stable","entries":[{"name":"` + n + `"}]}` + "\n"
	}
	req := `,{"type":"olm.package.required","value":{"packageName":"b","versionRange":">=2.0.0"}}`
	fsys := fstest.MapFS{
		"a/catalog.json":   {Data: []byte(pkg("a") + channel("a", "a.v1") + bundle("a", "a.v1", req))},
		"b/catalog.json":   {Data: []byte(pkg("b") + channel("b", "b.v1") + bundle("b", "b.v1", ""))},
		"c/catalog.json":   {Data: []byte(pkg("c") + channel("c", "c.v1") + bundle("c", "c.v1", ""))},
		"d/catalog.json":   {Data: []byte(pkg("d") + channel("d", "d.v1") + bundle("d", "d.v1", ""))},
		"d2/catalog.json":  {Data: []byte(pkg("d"))},
		"e/catalog.json":   {Data: []byte(pkg("e") + channel("e", "e.v1") + bundle("e", "e.v1", ""))},
		"loose/x.json":     {Data: []byte(`{"schema":"olm.bundle","name":"orphan"}` + "\n")},
		"broken/bad.yaml":  {Data: []byte("schema: [\n")},
		"unrelated/f.json": {Data: []byte(pkg("f"))},
	}
	ctx := context.Background()
	set, err := load.ListFiles(ctx, fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	index := load.NewSummaryIndex(0)
	keyed := keyedFS{FS: fsys}
	if _, _, err := catalog.LoadPartial(ctx, keyed, set, catalog.PartialOptions{Packages: []string{"a"}}, catalog.Limits{Index: index}); err != nil {
		t.Fatal(err)
	}
	if index.Len() != len(set.Files) {
		t.Fatalf("index holds %d summaries, want one per file (%d)", index.Len(), len(set.Files))
	}
	reads := &openCounts{n: map[string]int{}}
	part, out, err := catalog.LoadPartial(ctx, keyedFS{FS: fsys, reads: reads}, set, catalog.PartialOptions{Packages: []string{"a"}}, catalog.Limits{Index: index})
	if err != nil {
		t.Fatal(err)
	}
	if out.FromIndex != len(set.Files) {
		t.Errorf("FromIndex = %d, want %d", out.FromIndex, len(set.Files))
	}
	for _, f := range []string{"a/catalog.json", "b/catalog.json", "d/catalog.json", "d2/catalog.json", "loose/x.json", "broken/bad.yaml"} {
		if reads.get(f) == 0 {
			t.Errorf("%s was not read", f)
		}
	}
	for _, f := range []string{"c/catalog.json", "e/catalog.json", "unrelated/f.json"} {
		if reads.get(f) != 0 {
			t.Errorf("%s was read, though nothing of it is needed", f)
		}
	}
	if part.Package("b") == nil || !part.Package("b").Declared {
		t.Errorf("the required package b is not in the partial catalog")
	}
	whole, _ := catalog.Load(ctx, fsys, catalog.Limits{})
	want := catalog.Validate(whole, catalog.ValidateOptions{Packages: []string{"a"}})
	if got := catalog.Validate(part, catalog.ValidateOptions{Packages: []string{"a"}}); !reflect.DeepEqual(got, want) {
		t.Errorf("findings differ:\ngot:  %v\nwant: %v", got, want)
	}
	rules := map[string]bool{}
	for _, f := range want {
		rules[f.Rule] = true
	}
	for _, r := range []string{"bundle.required-package-unsatisfied", "package.duplicate", "bundle.package-empty", "load.yaml-syntax"} {
		if !rules[r] {
			t.Logf("findings: %v", want)
			t.Errorf("the fixture should produce %s", r)
		}
	}
}

func TestSummaryIndexRoundTrip(t *testing.T) {
	x := load.NewSummaryIndex(3)
	for i, k := range []string{"k1", "k2", "k3", "k4"} {
		x.Put(k, load.FileSummary{Packages: []string{"p" + k}, Declares: []string{"p" + k}})
		_ = i
	}
	if x.Len() != 3 {
		t.Fatalf("Len = %d, want 3 (bounded)", x.Len())
	}
	if _, ok := x.Get("k1"); ok {
		t.Errorf("the least recently used summary was kept")
	}
	x.Put("alias", load.FileSummary{Aliases: true})
	if _, ok := x.Get("alias"); ok {
		t.Errorf("a summary of a file expanding aliases was kept")
	}
	var buf bytes.Buffer
	if err := x.WriteTo(&buf, "stamp-1"); err != nil {
		t.Fatal(err)
	}
	y, err := load.ReadSummaryIndex(bytes.NewReader(buf.Bytes()), "stamp-1", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"k2", "k3", "k4"} {
		a, _ := x.Get(k)
		b, ok := y.Get(k)
		if !ok || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: read back %+v, %v; wrote %+v", k, b, ok, a)
		}
	}
	if _, err := load.ReadSummaryIndex(bytes.NewReader(buf.Bytes()), "stamp-2", 0); !errors.Is(err, load.ErrSummaryStamp) {
		t.Errorf("another stamp: err = %v, want ErrSummaryStamp", err)
	}
	cut := buf.Bytes()[:buf.Len()-5]
	if _, err := load.ReadSummaryIndex(bytes.NewReader(cut), "stamp-1", 0); err == nil {
		t.Errorf("a truncated index was read without error")
	}
}

// An index of a catalog's file summaries holds names, not the files they
// were read from (a summary's strings once kept each file's whole text).
func TestSummaryIndexDoesNotHoldFiles(t *testing.T) {
	fsys := fstest.MapFS{}
	pad := strings.Repeat("x", 1<<20)
	for i := range 64 {
		name := fmt.Sprintf("p%02d", i)
		if i%2 == 0 {
			fsys[name+"/catalog.json"] = &fstest.MapFile{Data: []byte(`{"schema":"olm.package","name":"` + name + `","description":"` + pad + `"}` + "\n")}
		} else {
			fsys[name+"/catalog.yaml"] = &fstest.MapFile{Data: []byte("schema: olm.package\nname: " + name + "\ndescription: " + pad + "\n")}
		}
	}
	ctx := context.Background()
	set, err := load.ListFiles(ctx, fsys, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	index := load.NewSummaryIndex(0)
	if _, _, err := catalog.LoadPartial(ctx, keyedFS{FS: fsys}, set, catalog.PartialOptions{}, catalog.Limits{Index: index}); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	if index.Len() != 64 {
		t.Fatalf("index holds %d summaries, want 64", index.Len())
	}
	// The files are garbage once read (measured: 0 MiB left with the names copied, 65 MiB without).
	if m.HeapAlloc > 16<<20 {
		t.Errorf("after summarizing 64 MiB of files the heap holds %d MiB: the index keeps the files' text", m.HeapAlloc>>20)
	}
	runtime.KeepAlive(index)
}
