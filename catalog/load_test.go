package catalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
)

// sharedCatalog returns the path of a real catalog under ../shared, or skips.
func sharedCatalog(tb testing.TB, name string) string {
	tb.Helper()
	dir := filepath.Join("..", "..", "shared", "testdata", "catalogs", name)
	if _, err := os.Stat(dir); err != nil {
		tb.Skipf("real catalog %s is absent (it lives in ../shared next to the repository): %v", name, err)
	}
	return dir
}

func TestParseFileJSONAndYAML(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []string // schema/package/name of each doc
		wantPos [][2]int // line, column of each doc
		rules   []string
	}{
		{
			name:    "json stream without separators",
			src:     `{"schema":"olm.package","name":"foo"}{"schema":"olm.channel","package":"foo","name":"stable"}` + "\n",
			want:    []string{"olm.package//foo", "olm.channel/foo/stable"},
			wantPos: [][2]int{{1, 1}, {1, 38}},
		},
		{
			name:    "yaml two documents",
			src:     "---\nschema: olm.package\nname: foo\n---\nschema: olm.channel\npackage: foo\nname: stable\n",
			want:    []string{"olm.package//foo", "olm.channel/foo/stable"},
			wantPos: [][2]int{{2, 1}, {5, 1}},
		},
		{
			name:  "yaml header comment then separator",
			src:   "# header\n---\nschema: olm.package\nname: foo\n",
			want:  []string{"olm.package//foo"},
			rules: []string{ruleLoadEmptyDocument},
		},
		{
			name:  "keys matched case-insensitively",
			src:   "Schema: olm.package\nNAME: foo\n",
			want:  []string{"olm.package//foo"},
			rules: nil,
		},
		{
			name:  "name that yaml reads as a number",
			src:   "schema: olm.package\nname: 1.0\n",
			want:  []string{"olm.package//"},
			rules: []string{ruleLoadMetaNotString},
		},
		{
			name:  "malformed json",
			src:   `{"schema":"olm.package","name":"foo"}` + "\n" + `{"schema": }`,
			want:  []string{"olm.package//foo"},
			rules: []string{ruleLoadJSONSyntax},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, findings := ParseFile("f.yaml", []byte(tt.src), Limits{})
			var got []string
			for _, d := range docs {
				got = append(got, d.Schema+"/"+d.Package+"/"+d.Name)
			}
			if strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("docs = %v, want %v", got, tt.want)
			}
			for i, p := range tt.wantPos {
				if i < len(docs) && (docs[i].Pos.Line != p[0] || docs[i].Pos.Column != p[1]) {
					t.Errorf("doc %d at %d:%d, want %d:%d", i, docs[i].Pos.Line, docs[i].Pos.Column, p[0], p[1])
				}
			}
			var rules []string
			for _, f := range findings {
				rules = append(rules, f.Rule)
				if f.Line < 1 || f.File != "f.yaml" {
					t.Errorf("finding %v lacks a position", f)
				}
			}
			if strings.Join(rules, ",") != strings.Join(tt.rules, ",") {
				t.Errorf("findings = %v, want rules %v", findings, tt.rules)
			}
		})
	}
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
				p := newFileParser(filepath.ToSlash(rel), string(data), DefaultLimits())
				p.parse()
				plain = append(plain, p.docs...)
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if !sameDocs(docs, plain) {
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
		d, f := ParseFile(name, fsys[name].Data, DefaultLimits())
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
				t.Fatalf("document %d (%s %s) differs from a parse of its file alone: %s", i, docs[i].Pos.File, docs[i].Name, describeDiff(docs[i].Value, want[i].Value, ""))
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
		{name: "file too large", lim: Limits{MaxFileSize: 500}, wantRule: ruleLoadFileTooLarge},
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

// TestParseFileHostileInput checks that inputs built to exhaust a parser are
// refused with the right finding (speed is shown by BenchmarkHostileInput).
func TestParseFileHostileInput(t *testing.T) {
	for _, tt := range hostileInputs() {
		t.Run(tt.name, func(t *testing.T) {
			docs, findings := ParseFile("hostile.yaml", tt.data, tt.lim)
			if len(docs) != tt.docs {
				t.Errorf("got %d documents, want %d", len(docs), tt.docs)
			}
			if len(findings) == 0 || findings[0].Rule != tt.rule {
				t.Fatalf("findings = %v, want %s first", findings, tt.rule)
			}
		})
	}
}

type hostileInput struct {
	name string
	data []byte
	lim  Limits
	rule string
	docs int // documents read before the limit hit
}

func hostileInputs() []hostileInput {
	// A billion laughs: each level repeats the previous one ten times.
	var laughs strings.Builder
	laughs.WriteString("schema: x\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&laughs, "l%d: &l%d [", i, i)
		for j := 0; j < 10; j++ {
			if j > 0 {
				laughs.WriteString(", ")
			}
			fmt.Fprintf(&laughs, "*l%d", i-1)
		}
		laughs.WriteString("]\n")
	}
	// Aliases that stay under goyaml.v2's ratio but expand past our bound.
	var wide strings.Builder
	wide.WriteString("schema: x\nbase: &b [")
	for i := 0; i < 2000; i++ {
		if i > 0 {
			wide.WriteString(", ")
		}
		fmt.Fprintf(&wide, "v%d", i)
	}
	wide.WriteString("]\nrefs:\n")
	for i := 0; i < 60; i++ {
		wide.WriteString("- *b\n")
	}
	return []hostileInput{
		{name: "billion laughs", data: []byte(laughs.String()), rule: ruleLoadAliasExpansion},
		{name: "wide aliases", data: []byte(wide.String()), lim: Limits{MaxAliasExpansion: 50_000}, rule: ruleLoadAliasExpansion},
		{name: "deep yaml flow", data: []byte("a: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"), rule: ruleLoadTooDeep},
		{name: "deep yaml block", data: []byte(deepBlockYAML(300)), rule: ruleLoadTooDeep},
		{name: "deep json", data: []byte(`{"a":` + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + "}"), rule: ruleLoadTooDeep},
		{name: "too many documents", data: []byte(strings.Repeat("{\"schema\":\"x\"}", 20)), lim: Limits{MaxDocuments: 10}, rule: ruleLoadTooManyDocs, docs: 10},
	}
}

func deepBlockYAML(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		b.WriteString(strings.Repeat(" ", i))
		b.WriteString("k:\n")
	}
	b.WriteString(strings.Repeat(" ", depth) + "v: 1\n")
	return b.String()
}

func BenchmarkHostileInput(b *testing.B) {
	for _, tt := range hostileInputs() {
		b.Run(tt.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				ParseFile("hostile.yaml", tt.data, tt.lim)
			}
		})
	}
}

// BenchmarkParseFileJSON parses the v4.21 catalog rendered as one JSON
// stream, indented as opm renders it.
func BenchmarkParseFileJSON(b *testing.B) {
	dir := sharedCatalog(b, "community-operators-prod-v4.21")
	docs, _, err := ReadFS(context.Background(), os.DirFS(dir), Limits{})
	if err != nil {
		b.Fatal(err)
	}
	var stream bytes.Buffer
	for i := range docs {
		if err := json.Indent(&stream, docs[i].Value.AppendJSON(nil), "", "    "); err != nil {
			b.Fatal(err)
		}
		stream.WriteByte('\n')
	}
	data := stream.Bytes()
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		got, findings := ParseFile("catalog.json", data, Limits{})
		if len(got) != len(docs) || len(findings) != 0 {
			b.Fatalf("got %d docs and %v, want %d docs", len(got), findings, len(docs))
		}
	}
}

// TestCompactStringsCountsHeldBytes: a file that is almost all one string
// keeps its buffer only when the buffer is not much larger than the file.
func TestCompactStringsCountsHeldBytes(t *testing.T) {
	src := `{"schema":"olm.bundle","name":"x","image":"` + strings.Repeat("y", 100_000) + `"}`
	for _, tt := range []struct {
		held int
		kept bool
	}{{len(src), true}, {4 * len(src), false}} {
		p := newFileParser("f.json", strings.Clone(src), DefaultLimits())
		p.parse()
		if kept := compactStrings(p.docs, p.src, tt.held, true); kept != tt.kept {
			t.Errorf("held %d: kept = %v, want %v", tt.held, kept, tt.kept)
		}
		if got := p.docs[0].Value.Get("image").Str(); len(got) != 100_000 {
			t.Errorf("held %d: image has %d bytes after compaction", tt.held, len(got))
		}
	}
}
