package load

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog/decode"
)

// sharedCatalog returns the path of a real catalog under ../shared, or skips.
func sharedCatalog(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "..", "shared", "testdata", "catalogs", name)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real catalog %s is absent (it lives in ../shared next to the repository): %v", name, err)
	}
	return dir
}

func TestReadFSIndexIgnoreAndOrder(t *testing.T) {
	fsys := fstest.MapFS{
		".indexignore":   {Data: []byte("# comment\nREADME.md\nskip/\n")},
		"README.md":      {Data: []byte("# not yaml really\n")},
		"b/catalog.yaml": {Data: []byte("schema: olm.package\nname: b\n")},
		"a/catalog.json": {Data: []byte(`{"schema":"olm.package","name":"a"}`)},
		"skip/x.yaml":    {Data: []byte("garbage: [")},
		"c/.indexignore": {Data: []byte("*.md\n")},
		"c/notes.md":     {Data: []byte("- a list\n")},
		"c/empty":        {Data: nil},
		"d/link.yaml":    {Data: []byte("a.yaml"), Mode: os.ModeSymlink},
	}
	docs, findings, err := ReadFS(context.Background(), fsys, Limits{Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Pos.File+":"+d.Name)
	}
	if want := "a/catalog.json:a,b/catalog.yaml:b"; strings.Join(got, ",") != want {
		t.Errorf("docs = %v, want %v", got, want)
	}
	if len(findings) != 1 || findings[0].Rule != ruleLoadSymlink || findings[0].File != "d/link.yaml" {
		t.Errorf("findings = %v, want one %s for d/link.yaml", findings, ruleLoadSymlink)
	}
}

func TestReadFSRealCatalogs(t *testing.T) {
	for _, name := range []string{"community-operators-prod-v4.21", "community-operators-prod-v4.16"} {
		t.Run(name, func(t *testing.T) {
			dir := sharedCatalog(t, name)
			docs, findings, err := ReadFS(context.Background(), os.DirFS(dir), Limits{})
			if err != nil {
				t.Fatal(err)
			}
			for _, f := range findings {
				if f.Severity == SeverityError {
					t.Errorf("unexpected finding %v", f)
				}
			}
			if len(docs) < 100 {
				t.Errorf("got %d docs, want hundreds", len(docs))
			}
			// ReadFS moves strings out of the file buffers; the values must be
			// those of a plain parse.
			var plain []Doc
			err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				data, err := os.ReadFile(path)
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(dir, path)
				docs, _ := decode.ParseFile(filepath.ToSlash(rel), data, DefaultLimits().Decoding())
				plain = append(plain, docs...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !sameDocs(docs, plain) { // positions and values (the tree reader compacts strings)
				t.Errorf("ReadFS's documents differ from a plain parse of each file")
			}
		})
	}
}

// TestReadFSReusesBuffers reads, with one worker, files whose documents
// keep their buffer and files whose strings are moved out of it, so that the
// buffer is read into again: every document must still equal a parse of its
// file on its own (a string left pointing into a reused buffer would not).
func TestReadFSReusesBuffers(t *testing.T) {
	blob := strings.Repeat("QUJDREVGR0hJSktMTU5PUA==", 12_000) // ~290 KB of base64
	bundleYAML := func(pkg string, n int) string {
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%d.0.0\nimage: quay.io/x/%s:v%d\nproperties:\n  - type: olm.package\n    value:\n      packageName: %s\n      version: %d.0.0\n  - type: olm.csv.metadata\n    value:\n      description: |\n        line one of %s %d\n        line two\n      keywords: [\"\"]\n", pkg, pkg, i, pkg, i, pkg, i, pkg, i)
		}
		return b.String()
	}
	fsys := fstest.MapFS{
		// Largest: a base64 blob, kept with its buffer.
		"a/blob.json": {Data: []byte(`{"schema":"olm.bundle","package":"a","name":"a.v1","properties":[{"type":"olm.bundle.object","value":{"data":"` + blob + `"}}]}`)},
		// Next: block YAML, moved out, its buffer reused by all below.
		"b/catalog.yaml": {Data: []byte(bundleYAML("b", 600))},
		// Mostly one string, but small beside the reused buffer: moved out.
		"c/blob.json":    {Data: []byte(`{"schema":"olm.bundle","package":"c","name":"c.v1","properties":[{"type":"olm.bundle.object","value":{"data":"` + blob[:40_000] + `"}}]}`)},
		"d/catalog.yaml": {Data: []byte(bundleYAML("d", 30))},
		"e/catalog.yaml": {Data: []byte(bundleYAML("e", 3))},
		"f/bad.yaml":     {Data: []byte("schema: olm.bundle\nname: [\n")},
		"g/empty.yaml":   {Data: nil},
		"h/catalog.json": {Data: []byte(`{"schema":"olm.package","name":"h","description":"tab\tescaped"}` + "\n")},
	}
	docs, findings, err := ReadFS(context.Background(), fsys, Limits{Concurrency: 1})
	if err != nil {
		t.Fatal(err)
	}
	var want []Doc
	var wantFindings []Finding
	for _, name := range []string{"a/blob.json", "b/catalog.yaml", "c/blob.json", "d/catalog.yaml", "e/catalog.yaml", "f/bad.yaml", "g/empty.yaml", "h/catalog.json"} {
		d, f := decode.ParseFile(name, fsys[name].Data, DefaultLimits().Decoding())
		want = append(want, d...)
		wantFindings = append(wantFindings, f...)
	}
	SortFindings(wantFindings)
	if len(docs) != 1+600+1+30+3+1 {
		t.Fatalf("got %d documents", len(docs))
	}
	if !sameDocs(docs, want) {
		for i := range docs {
			if i < len(want) && !sameDocs(docs[i:i+1], want[i:i+1]) {
				t.Fatalf("document %d (%s %s) differs from a parse of its file alone: %s", i, docs[i].Pos.File, docs[i].Name, clipped(docs[i].Value.String(), 200))
			}
		}
		t.Fatal("documents differ from a parse of each file alone")
	}
	if fmt.Sprint(findings) != fmt.Sprint(wantFindings) {
		t.Errorf("findings %v, want %v", findings, wantFindings)
	}
}

func BenchmarkReadFS(b *testing.B) {
	for _, name := range []string{"community-operators-prod-v4.21", "community-operators-prod-v4.16"} {
		b.Run(name, func(b *testing.B) {
			dir := sharedCatalog(b, name)
			fsys := os.DirFS(dir)
			var size int64
			_ = filepath.Walk(dir, func(_ string, info os.FileInfo, err error) error {
				if err == nil && info.Mode().IsRegular() {
					size += info.Size()
				}
				return nil
			})
			b.SetBytes(size)
			b.ReportAllocs()
			cpu0 := processCPUTime()
			for b.Loop() {
				if _, _, err := ReadFS(context.Background(), fsys, Limits{}); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := processCPUTime() - cpu0; cpu > 0 {
				b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			}
		})
	}
}

func writeTree(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestReadFSIndexIgnoreSemantics(t *testing.T) {
	pkg := func(name string) string { return "schema: olm.package\nname: " + name + "\n" }
	dir := writeTree(t, map[string]string{
		".indexignore":         "# root patterns\n*.md\n!keep.md\nbuild/\n",
		"keep.md":              pkg("keep"),
		"drop.md":              "not: [yaml",
		"build/x.yaml":         "not: [yaml",
		"a/build/y.yaml":       "not: [yaml", // "build/" matches at any depth
		"a/catalog.yaml":       pkg("a"),
		"b/.indexignore":       "/local.yaml\n",
		"b/local.yaml":         "not: [yaml",
		"b/sub/local.yaml":     pkg("b-sub"), // rooted at b/, so only b/local.yaml is excluded
		"c/.indexignore":       "!*.md\n",
		"c/notes.md":           pkg("c-notes"), // re-included below c/
		"d/deep/.indexignore":  "*\n",
		"d/deep/anything.yaml": "not: [yaml",
		"d/deep/more/x.json":   "{",
		"d/catalog.json":       `{"schema":"olm.package","name":"d"}`,
	})
	docs, findings, err := ReadFS(context.Background(), os.DirFS(dir), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, d := range docs {
		got = append(got, d.Pos.File+"="+d.Name)
	}
	want := "a/catalog.yaml=a,b/sub/local.yaml=b-sub,c/notes.md=c-notes,d/catalog.json=d,keep.md=keep"
	if strings.Join(got, ",") != want {
		t.Errorf("docs = %s, want %s", strings.Join(got, ","), want)
	}
	if len(findings) != 0 {
		t.Errorf("findings = %v, want none", findings)
	}
}

func TestReadFSSymlinkIsAFinding(t *testing.T) {
	dir := writeTree(t, map[string]string{"pkg/catalog.yaml": "schema: olm.package\nname: p\n"})
	outside := writeTree(t, map[string]string{"secret.yaml": "schema: olm.package\nname: secret\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.yaml"), filepath.Join(dir, "pkg", "link.yaml")); err != nil {
		t.Skipf("cannot make a symlink here: %v", err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "linkdir")); err != nil {
		t.Fatal(err)
	}
	docs, findings, err := ReadFS(context.Background(), os.DirFS(dir), Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(docs) != 1 || docs[0].Name != "p" {
		t.Errorf("docs = %v, want only pkg/catalog.yaml's", docs)
	}
	var files []string
	for _, f := range findings {
		if f.Rule != ruleLoadSymlink || f.Severity != SeverityError || !strings.Contains(f.Message, "never follows links") {
			t.Errorf("unexpected finding %v", f)
		}
		files = append(files, f.File)
	}
	if got, want := strings.Join(files, ","), "linkdir,pkg/link.yaml"; got != want {
		t.Errorf("symlink findings for %s, want %s", got, want)
	}
}

func TestReadFSLimits(t *testing.T) {
	dir := writeTree(t, map[string]string{
		"a.yaml": "schema: olm.package\nname: a\n",
		"b.yaml": "schema: olm.package\nname: b\n" + strings.Repeat("# padding\n", 100),
		"c.yaml": "schema: olm.package\nname: c\n",
	})
	fsys := os.DirFS(dir)
	tests := []struct {
		name     string
		lim      Limits
		wantErr  string
		wantRule string
	}{
		{name: "too many files", lim: Limits{MaxFiles: 2}, wantErr: "more than 2 files"},
		{name: "too many bytes", lim: Limits{MaxTotalSize: 500}, wantErr: "exceed 500 bytes"},
		{name: "file too large", lim: Limits{MaxFileSize: 500}, wantRule: decode.RuleFileTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, findings, err := ReadFS(context.Background(), fsys, tt.lim)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(findings) != 1 || findings[0].Rule != tt.wantRule || findings[0].File != "b.yaml" {
				t.Errorf("findings = %v, want one %s on b.yaml", findings, tt.wantRule)
			}
			if len(docs) != 2 {
				t.Errorf("got %d docs, want 2 (a and c)", len(docs))
			}
		})
	}
}

func TestReadFSCancelled(t *testing.T) {
	dir := writeTree(t, map[string]string{"a.yaml": "schema: olm.package\nname: a\n"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, _, err := ReadFS(ctx, os.DirFS(dir), Limits{}); err == nil {
		t.Fatal("ReadFS with a cancelled context succeeded, want its error")
	}
}

// sameDocs reports whether two reads gave the same documents: positions, meta keys and values.
func sameDocs(a, b []Doc) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Pos != y.Pos || x.Schema != y.Schema || x.Package != y.Package || x.Name != y.Name ||
			!bytes.Equal(x.Value.AppendJSON(nil), y.Value.AppendJSON(nil)) {
			return false
		}
	}
	return true
}

func clipped(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
