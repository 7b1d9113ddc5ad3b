package jsonout

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var indentSeeds = []string{
	``, ` `, `null`, ` true `, `false`, `0`, `-0.5e+10`, `1E3`, `01`, `-`, `1.`, `1e`, `.5`,
	`""`, `"a\"b\\c\/\b\f\n\r\t\u00e9\uD83D"`, `"\x"`, `"\u12"`, "\"\x01\"", "\"\xff\xfe\"", `"unterminated`,
	`{}`, `[]`, `{ }`, `[ ]`, `{"a":1}`, `{"a": [1, 2, {"b": null}], "c": {}}`, "\n\t{\"a\" :\r\n[ ] }\n \t",
	`{"a":1,}`, `[1,]`, `[1 2]`, `{"a" 1}`, `{1:2}`, `{"a":1} x`, `[[[[]]]]`, `nul`, `tru`, `falsey`, `[1]]`,
	`{"data":"` + strings.Repeat("QUJD", 100) + `"}`,
}

// TestIndentDepth: nesting past encoding/json's limit is refused by both (the output of nesting just under
// it is quadratic in the depth: not compared).
func TestIndentDepth(t *testing.T) {
	src := []byte(strings.Repeat("[", 10001) + strings.Repeat("]", 10001))
	if json.Indent(&bytes.Buffer{}, src, "", "") == nil {
		t.Fatal("encoding/json took 10001 levels")
	}
	if _, err := Indent(nil, src, ""); err == nil {
		t.Error("Indent took 10001 levels")
	}
	if _, err := Indent(nil, src[1:len(src)-1], ""); err != nil {
		t.Errorf("Indent refused 10000 levels: %v", err)
	}
}

// TestIndentMatchesEncodingJSON runs the seeds and every JSON file of the repository's test data through
// both indenters.
func TestIndentMatchesEncodingJSON(t *testing.T) {
	for _, s := range indentSeeds {
		checkIndent(t, []byte(s))
	}
	n := 0
	_ = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || filepath.Ext(path) != ".json" || n >= 100 {
			return nil
		}
		b, err := os.ReadFile(path)
		if err == nil && len(b) < 4<<20 {
			n++
			checkIndent(t, b)
		}
		return nil
	})
	if n == 0 {
		t.Log("no JSON files found under the repository")
	}
}

func checkIndent(t *testing.T, src []byte) {
	t.Helper()
	for _, indent := range []string{"    ", "  ", "\t"} {
		var want bytes.Buffer
		want.WriteString("prefix")
		werr := json.Indent(&want, src, "", indent)
		got, gerr := Indent([]byte("prefix"), src, indent)
		if (werr == nil) != (gerr == nil) {
			t.Fatalf("Indent(%.200q): error %v, encoding/json's %v", src, gerr, werr)
		}
		if werr == nil && !bytes.Equal(got, want.Bytes()) {
			t.Fatalf("Indent(%.200q):\n%s\nencoding/json:\n%s", src, got, want.Bytes())
		}
		if werr != nil && string(got) != "prefix" {
			t.Fatalf("Indent(%.200q) failed but changed dst: %q", src, got)
		}
		checkNested(t, src, indent)
	}
}

// checkNested compares AppendNested with encoding/json's indenting encoder writing src as a json.RawMessage
// inside an object inside an array.
func checkNested(t *testing.T, src []byte, indent string) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", indent)
	enc.SetEscapeHTML(false)
	werr := enc.Encode([]map[string]json.RawMessage{{"v": json.RawMessage(src)}})
	got := append([]byte("["), '\n')
	got = append(got, indent...)
	got = append(got, "{\n"...)
	got = append(got, strings.Repeat(indent, 2)...)
	got = append(got, `"v": `...)
	got, gerr := AppendNested(got, src, indent, 2)
	got = append(got, '\n')
	got = append(got, indent...)
	got = append(got, "}\n]\n"...)
	if (werr == nil) != (gerr == nil) {
		t.Fatalf("AppendNested(%.200q): error %v, encoding/json's %v", src, gerr, werr)
	}
	if werr == nil && !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("AppendNested(%.200q):\n%s\nencoding/json:\n%s", src, got, want.Bytes())
	}
}

func FuzzIndent(f *testing.F) {
	for _, s := range indentSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		checkIndent(t, src)
	})
}

func TestAppendNestedNil(t *testing.T) {
	got, err := AppendNested(nil, nil, "  ", 3)
	if err != nil || string(got) != "null" {
		t.Errorf("AppendNested(nil) = %q, %v, want null", got, err)
	}
	if _, err := AppendNested(nil, []byte{}, "  ", 0); err == nil {
		t.Error("AppendNested(empty) succeeded; encoding/json refuses an empty json.RawMessage")
	}
}

func checkString(t *testing.T, s string) {
	t.Helper()
	var want bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(s); err != nil {
		t.Fatal(err)
	}
	if got := AppendString(nil, s); string(got)+"\n" != want.String() {
		t.Fatalf("AppendString(%q) = %s, encoding/json: %s", s, got, want.Bytes())
	}
}

func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `a"b\c`, "<&>", "\x00\x1f\x7f", "é\u2028\u2029", "\xff", "tab\there\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		checkString(t, s)
	})
}
