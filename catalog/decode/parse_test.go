package decode

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
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

// parseTree parses every file under dir, in lexical order.
func parseTree(tb testing.TB, dir string) []Doc {
	tb.Helper()
	var docs []Doc
	err := fs.WalkDir(os.DirFS(dir), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(filepath.Join(dir, p))
		if err != nil {
			return err
		}
		got, _ := ParseFile(p, data, Limits{})
		docs = append(docs, got...)
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return docs
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
	docs := parseTree(b, dir)
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

// BenchmarkParseBundleYAML parses every YAML file of the shared test data's bundle directories (the 131
// community bundles: CSVs, CRDs, metadata; 35 MB) as bundle.Load does, from memory. The floor beside it,
// BenchmarkParseBundleYAMLFloor, only finds the line breaks of the same bytes.
func BenchmarkParseBundleYAML(b *testing.B) {
	files, total := bundleYAMLFiles(b)
	b.SetBytes(int64(total))
	b.ReportAllocs()
	for b.Loop() {
		for _, f := range files {
			ParseDocuments("f.yaml", f, Limits{})
		}
	}
}

func BenchmarkParseBundleYAMLFloor(b *testing.B) {
	files, total := bundleYAMLFiles(b)
	b.SetBytes(int64(total))
	lines := 0
	for b.Loop() {
		for _, f := range files {
			lines += bytes.Count(f, []byte{'\n'})
		}
	}
	if lines == 0 {
		b.Fatal("no lines")
	}
}

func bundleYAMLFiles(b testing.TB) (files [][]byte, total int) {
	root := filepath.Join("..", "..", "..", "shared", "testdata", "bundles")
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return err
		}
		data, err := os.ReadFile(p)
		files = append(files, data)
		total += len(data)
		return err
	})
	if err != nil || len(files) == 0 {
		if _, ok := b.(*testing.B); ok {
			b.Skipf("the shared test data's bundles are absent (%s): %v", root, err)
		}
		return nil, 0
	}
	return files, total
}

// ParseDocumentsShared reads what ParseDocuments reads, with the same findings: on the load corpus, the
// snippets, a file over the size bound and, when the shared test data is there, every YAML file of the
// community bundles.
func TestParseDocumentsSharedMatches(t *testing.T) {
	inputs := map[string][]byte{}
	for name, data := range loadCorpus(t) {
		inputs[name] = data
	}
	for i, s := range yamlSnippets() {
		inputs[fmt.Sprintf("snippet%d.yaml", i)] = []byte(s)
	}
	inputs["big.yaml"] = []byte("a: " + strings.Repeat("x", 200) + "\n")
	if files, _ := bundleYAMLFiles(t); len(files) > 0 {
		for i, f := range files {
			inputs[fmt.Sprintf("bundle%d.yaml", i)] = f
		}
	}
	for name, data := range inputs {
		lim := Limits{}
		if name == "big.yaml" {
			lim.MaxFileSize = 100
		}
		want, wantF := ParseDocuments(name, data, lim)
		got, gotF := ParseDocumentsShared(name, bytes.Clone(data), lim)
		if !sameDocs(got, want) || !reflect.DeepEqual(gotF, wantF) {
			t.Errorf("%s: ParseDocumentsShared gave %d documents and %v, ParseDocuments %d and %v", name, len(got), gotF, len(want), wantF)
		}
	}
}
