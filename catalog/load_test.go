package catalog

import (
	"context"
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
		})
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
