package decode

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	sigsyaml "sigs.k8s.io/yaml"
)

// yamlChunks cuts src as parseYAMLStream does, without parsing.
func yamlChunks(p *fileParser) []yamlChunk {
	var chunks []yamlChunk
	src := p.src
	chunkStart, chunkLine, line := 0, 1, 1
	for off := 0; off < len(src); {
		end := strings.IndexByte(src[off:], '\n')
		next := len(src)
		if end >= 0 {
			end += off
			next = end + 1
		} else {
			end = len(src)
		}
		if strings.HasPrefix(src[off:end], "---") {
			if rest := strings.TrimSpace(src[off+3 : end]); rest != "" && rest[0] != '#' {
				return chunks
			}
			if off > chunkStart {
				chunks = append(chunks, yamlChunk{text: src[chunkStart:off], off: chunkStart, line: chunkLine})
				chunkStart, chunkLine = next, line+1
			}
		}
		off = next
		line++
	}
	if chunkStart < len(src) {
		chunks = append(chunks, yamlChunk{text: src[chunkStart:], off: chunkStart, line: chunkLine})
	}
	return chunks
}

// compareFastFull parses every chunk of src both ways and fails on any
// difference when the fast path did not bail. It returns how many chunks
// the fast path took and how many there were.
func compareFastFull(t testing.TB, name string, src string) (fast, total int) {
	lim := DefaultLimits()
	for _, c := range yamlChunks(newFileParser(name, src, lim)) {
		if blankYAML(c.text) {
			continue
		}
		total++
		pf := newFileParser(name, src, lim)
		fv, ok := pf.yamlFast(c)
		if !ok {
			continue
		}
		fast++
		pl := newFileParser(name, src, lim)
		lv, ok := pl.yamlFull(c)
		if !ok {
			t.Fatalf("%s:%d: fast path accepted a document the full parser refuses: %v\n%s", name, c.line, pl.findings, clip(c.text, 400))
		}
		if describeDiff(fv, lv, "") != "" {
			t.Fatalf("%s:%d: fast and full parsers differ:\n%s\nfast: %s\nfull: %s", name, c.line, clip(c.text, 400), describeDiff(fv, lv, ""), describeDiff(lv, fv, ""))
		}
		if !reflect.DeepEqual(pf.findings, pl.findings) {
			t.Fatalf("%s:%d: findings differ: fast %v, full %v", name, c.line, pf.findings, pl.findings)
		}
	}
	return fast, total
}

// sameDocs reports whether two parses gave the same documents, positions included.
func sameDocs(a, b []Doc) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Pos != y.Pos || x.Schema != y.Schema || x.Package != y.Package || x.Name != y.Name || describeDiff(x.Value, y.Value, "") != "" {
			return false
		}
	}
	return true
}

// describeDiff renders the first place where a differs from b ("" when
// they are equal, positions included).
func describeDiff(a, b Value, path string) string {
	if a.Kind != b.Kind || a.Str() != b.Str() || a.Line != b.Line || a.Col != b.Col || len(a.Fields()) != len(b.Fields()) || len(a.Items()) != len(b.Items()) {
		return fmt.Sprintf("at %q: kind %v str %q at %d:%d (%d fields, %d items)", path, a.Kind, clip(a.Str(), 60), a.Line, a.Col, len(a.Fields()), len(a.Items()))
	}
	af, bf := a.Fields(), b.Fields()
	for i := range af {
		fa, fb := af[i], bf[i]
		if fa.Key != fb.Key || fa.KeyLine != fb.KeyLine || fa.KeyCol != fb.KeyCol {
			return fmt.Sprintf("at %q: key %q at %d:%d", path, fa.Key, fa.KeyLine, fa.KeyCol)
		}
		if d := describeDiff(fa.Value, fb.Value, path+"."+fa.Key); d != "" {
			return d
		}
	}
	ai, bi := a.Items(), b.Items()
	for i := range ai {
		if d := describeDiff(ai[i], bi[i], fmt.Sprintf("%s[%d]", path, i)); d != "" {
			return d
		}
	}
	return ""
}

func TestYAMLFastMatchesFullOnRealCatalogs(t *testing.T) {
	for _, name := range []string{"community-operators-prod-v4.21", "community-operators-prod-v4.16"} {
		dir := sharedCatalog(t, name)
		fast, total := 0, 0
		err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			if looksLikeJSON(string(data)) {
				return nil
			}
			f, n := compareFastFull(t, path, string(data))
			fast += f
			total += n
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: fast path took %d of %d documents", name, fast, total)
		if fast < total*9/10 {
			t.Errorf("%s: fast path took only %d of %d documents", name, fast, total)
		}
	}
}

// loadCorpus returns the files under testdata/load, for tests and fuzz seeds.
func loadCorpus(tb testing.TB) map[string][]byte {
	tb.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(filepath.Join("testdata", "load"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		files[path] = data
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return files
}

// FuzzParseFile checks, for any input: no panic; every finding has a rule,
// the file and a line; the fast YAML path agrees with the full one; and a
// document that parses without findings equals what sigs.k8s.io/yaml (what
// opm uses) makes of it.
func FuzzParseFile(f *testing.F) {
	for _, data := range loadCorpus(f) {
		f.Add(data)
	}
	for _, src := range yamlSnippets() {
		f.Add([]byte(src))
	}
	f.Add([]byte("schema: olm.bundle\npackage: foo\nname: foo.v1\nimage: quay.io/x/y@sha256:00\nproperties:\n- type: olm.package\n  value:\n    packageName: foo\n    version: 1.0.0\n- type: olm.csv.metadata\n  value:\n    description: |-\n      # Title\n\n      text\n    keywords:\n    - a\n    - 'b c'\nrelatedImages: []\n"))
	f.Add([]byte("schema: olm.package\nname: foo\n"))
	f.Add([]byte(`{"schema":"olm.package","name":"foo"}`))
	// Issue 20's reproductions: keys equal under full case folding, a quoted key over goyaml.v2's simple-key
	// bound, CR CR LF line ends.
	f.Add([]byte("schema: olm.package\nname: p\nss: 1\n\u00df: 2\n"))
	f.Add([]byte("schema: olm.package\nname: p\n\"" + strings.Repeat("k", 1023) + "\": 1\n"))
	f.Add([]byte("schema: olm.package\nname: p\ndescription: |\r\r\n  one\r\r\n  two\r\r\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		lim := Limits{MaxDepth: 50, MaxAliasExpansion: 1000, MaxDocuments: 100}
		docs, findings := ParseFile("fuzz.yaml", data, lim)
		for _, fd := range findings {
			if fd.Rule == "" || fd.File != "fuzz.yaml" || fd.Line < 1 || fd.Message == "" {
				t.Fatalf("finding lacks rule, file, line or message: %#v", fd)
			}
		}
		src := string(data)
		if looksLikeJSON(src) {
			if valueIsOpms(findings) && len(docs) == 1 {
				var want any
				if err := json.Unmarshal(data, &want); err == nil {
					assertSameJSON(t, docs[0].Value, want, src)
				}
			}
			return
		}
		compareFastFull(t, "fuzz.yaml", src)
		// The differential oracle: one clean document must equal sigs.k8s.io/yaml's reading.
		// The oracle reads the one piece opm's reader cuts, not the whole
		// file: "---#c" cuts for opm but is text for a YAML parser.
		if chunks := yamlChunks(newFileParser("fuzz.yaml", src, DefaultLimits())); valueIsOpms(findings) && len(docs) == 1 && len(chunks) == 1 {
			// opm's line reader drops one CR before each LF before parsing.
			text := []byte(strings.ReplaceAll(chunks[0].text, "\r\n", "\n"))
			if len(text) > 0 && text[len(text)-1] != '\n' {
				text = append(text, '\n')
			}
			j, err := sigsyaml.YAMLToJSON(text)
			if err != nil {
				t.Fatalf("we accept what sigs.k8s.io/yaml refuses (%v):\n%q", err, src)
			}
			var want any
			if err := json.Unmarshal(j, &want); err != nil {
				t.Fatalf("sigs.k8s.io/yaml gave bad JSON: %v", err)
			}
			assertSameJSON(t, docs[0].Value, want, src)
		}
	})
}

func assertSameJSON(t *testing.T, v Value, want any, src string) {
	t.Helper()
	var got any
	if err := json.Unmarshal(v.AppendJSON(nil), &got); err != nil {
		t.Fatalf("AppendJSON gave invalid JSON %s: %v", v.AppendJSON(nil), err)
	}
	if !reflect.DeepEqual(got, want) {
		w, _ := json.Marshal(want)
		t.Fatalf("input %q\n got %s\nwant %s", src, v.AppendJSON(nil), w)
	}
}

// TestYAMLSnippets runs both YAML paths and the sigs.k8s.io/yaml oracle on
// small inputs at the edges of the fast path's subset.
func TestYAMLSnippets(t *testing.T) {
	for _, src := range yamlSnippets() {
		t.Run("", func(t *testing.T) {
			compareFastFull(t, "s.yaml", src)
			docs, findings := ParseFile("s.yaml", []byte(src), Limits{})
			if !valueIsOpms(findings) || len(docs) != 1 {
				return
			}
			text := []byte(src)
			if text[len(text)-1] != '\n' {
				text = append(text, '\n')
			}
			j, err := sigsyaml.YAMLToJSON(text)
			if err != nil {
				t.Fatalf("%q: we accept what sigs.k8s.io/yaml refuses: %v", src, err)
			}
			var want any
			if err := json.Unmarshal(j, &want); err != nil {
				t.Fatal(err)
			}
			assertSameJSON(t, docs[0].Value, want, src)
		})
	}
}

// valueIsOpms reports whether a document's Value must equal what opm's
// YAML/JSON decoding makes of it: the findings only judge the object (its
// schema, its meta keys), not how it was read. Duplicate keys are left out:
// opm keeps an arbitrary one when "1" and 1 collide.
func valueIsOpms(findings []Finding) bool {
	for _, f := range findings {
		switch f.Rule {
		case ruleLoadMissingSchema, ruleLoadMetaNotString, ruleLoadFoldedKey:
		default:
			return false
		}
	}
	return true
}

// yamlSnippets are small inputs at the edges of the fast path's subset.
func yamlSnippets() []string {
	return []string{
		"a: b\n  c: d\n",
		"a:\n- b\n- c\nd: e\n",
		"a: 'it''s'\nb: \"x\\u00e9\\t\"\n",
		"a: |\n  x\n\n  y\n\nb: 1\n",
		"a: |-\n\n  x\n",
		"a: |\n   x\n  y\n",
		"a: >\n  x\n  y\n",
		"- a\n",
		"a: -1\nb: - 1\n",
		"a:    # comment\n  b: c\n",
		"a: x #c\n  y\n",
		"key with spaces: v\n",
		"a: 0o17\nb: 1_000\nc: +1\nd: .5\ne: 1e3\nf: 0b101\ng: -0x1F\nh: 08\ni: 1e400\n",
		"a: 2001-12-14t21:59:43.10-05:00\nb: 2001-12-14\n",
		"a: null\nb: Null\nc: NULL\nd: nUll\ne: ~\nf: Yes\ng: oFF\nh: y\n",
		"a: [1, 2]\nb: {c: d}\nc: []\nd: {}\n",
		"a: \"x\\\n  y\"\n",
		"a: b   \nc: 'x'  # c\n",
		"a:\n  - b\n  -   c\n",
		"a:\n-\n  b: c\n",
		"a: |+\n  x\n\n",
		"a: |\n  x",
		"? a\n: b\n",
		"é: x\nkey: é\nz: 'ü' \ny: \"ñ\"\n",
		"a: b\n\tc: d\n",
		"a: x\n b: y\n",
		"a:\n  b\n  c\n",
		"a: 'multi\n\n  line'\n",
		"a: \"x\"y\n",
		"a: \"multi\n  line\\ttab\"\n",
		"a: 'x\n b'\n",
		"a: |2\n   x\n  y\n",
		"- a: b\n  c: d\n",
		"a:\n  - b: c\n    d: e\n  - f\n",
		"a: &x b\nc: *x\n",
		"a: !!str 1\nb: !foo 2\nc: ! 3\n",
		"1: a\n1.5: b\ntrue: c\n0x10: d\n",
		"a: b\na: c\n",
		"a: :b\nc: -d\ne: ?f\n",
		"a: b:c\nd: http://x.y/z#w\n",
		"a: '#x'\nb: x#y\n",
		"a: |\n  x\n # not a comment\n  y\n",
		"a:\n  # comment\n  b: c\n",
		"a: 'x' # c\nb: \"y\" #d\n",
		"---\na: b\n",
		"--- # c\na: b\n",
		"a: |\n  one\n\n\n",
		"a: |-\n  one\n\n\nb: c\n",
		"a: |+\n  one\n\n\nb: c\n",
		"a:\n  |\n  x\n",
		"a: b\n  \n  c\n",
		"a: 'x\n\n\n  y'\n",
		"a: \"\\x41\\u263A\\U0001F600\\0\\a\\e\\N\"\n",
		"a:\n- - b\n",
		"a: x\n  - y\n",
		"a:  \n  b\n",
		"a: b \t\nc: d\t# c\n",
		"a: \"\"\nb: ''\n",
		"'': x\n\"\": y\n",
		// Folded block scalars: lines joined by a space, kept apart next to more indented lines or empty ones.
		"a: >\n  x\n  y\n\n  z\n   w\n  v\n\n\n   u\n  t\nb: >-\n  x\n  y\nc: >+\n  x\n\n\nd: 1\n",
		"a: >\n\n\n  x\n   \n  y\n  \n  \tz\n  q\n",
		"a: >2\n   x\n  y\n",
		"a:\n- >-\n  one\n  two\n- >\n    a\n   b\n",
		"a:\n- >-\n  one\n  two\n- >\n   a\n    b\n   c\n",
		"a: >\n  x\n y\n",
		"a: > # c\n  x\n",
		"a: >\n  x",
		// Double-quoted scalars with escaped line breaks, and lines of a quoted scalar less indented than its key.
		"a: \"x \\\n    \\ y\\\n\n  z\\\n  \\nw\"\n",
		"a:\n  b: 'one\n  two\n three\nfour'\n  c: d\n",
		"a:\n- \"x\\\ny\"\n- 'a\n\n b'\n",
		"a: \"x\\\n\ty\"\n",
		"a: \"x\\ \n  y\"\n",
	}
}

// fastYAMLCharsByByte is fastYAMLChars one byte at a time, the reference its word-at-a-time tests must match.
func fastYAMLCharsByByte(text string) bool {
	for i := 0; i < len(text); {
		c := text[i]
		if c >= 0x20 && c < 0x7F || c == '\n' || c == '\t' {
			i++
			continue
		}
		if c < 0x80 {
			return false
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if r == utf8.RuneError || r < 0xA0 || r == 0x2028 || r == 0x2029 || r == 0xFEFF || r == 0xFFFE || r == 0xFFFF {
			return false
		}
		i += size
	}
	return !strings.HasPrefix(text, "...") && !strings.Contains(text, "\n...")
}

// FuzzFastYAMLChars: the word-at-a-time screen of the fast path says what the byte-at-a-time one says, at
// every offset (each input is tried from each of its first 16 bytes, so every byte falls at every place of a
// word).
func FuzzFastYAMLChars(f *testing.F) {
	for _, s := range yamlSnippets() {
		f.Add(s)
	}
	f.Add("abcdefghijklmnop\x7fqrstuvwxyz0123456789")
	f.Add("key: value\twith tab\n  é ü ñ \u2028 \u00a0 \u0085 \xff\xfe \x1b \r\n")
	f.Add(strings.Repeat("~ }|{`_^]\\[@?>=<;:/.-,+*)('&%$#\"! ", 3))
	f.Fuzz(func(t *testing.T, s string) {
		for k := 0; k < 16 && k <= len(s); k++ {
			if got, want := fastYAMLChars(s[k:]), fastYAMLCharsByByte(s[k:]); got != want {
				t.Fatalf("fastYAMLChars(%q) = %v, byte by byte %v", s[k:], got, want)
			}
		}
	})
}
