package promote

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAddCatalogNameKeepsTheFile: the name goes in as one line (or ", name" in a flow list), spelt like the
// source version's item, and nothing else of the file changes.
func TestAddCatalogNameKeepsTheFile(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"block", "fbc:\n  catalog_mapping:\n    - template_name: basic.yaml\n      catalog_names:\n        - v4.21\n        - v4.22\n      type: olm.template.basic\n",
			"fbc:\n  catalog_mapping:\n    - template_name: basic.yaml\n      catalog_names:\n        - v4.21\n        - v4.22\n        - v4.23\n      type: olm.template.basic\n"},
		{"indentless, last", "fbc:\n  catalog_mapping:\n  - template_name: a.yaml\n    catalog_names:\n    - v4.22\nreviewers:\n- bob\n",
			"fbc:\n  catalog_mapping:\n  - template_name: a.yaml\n    catalog_names:\n    - v4.22\n    - v4.23\nreviewers:\n- bob\n"},
		{"quoted", "fbc:\n  catalog_mapping:\n    - template_name: s.yaml\n      catalog_names:\n        - \"v4.21\"\n        - \"v4.22\"\n      type: olm.semver\n",
			"fbc:\n  catalog_mapping:\n    - template_name: s.yaml\n      catalog_names:\n        - \"v4.21\"\n        - \"v4.22\"\n        - \"v4.23\"\n      type: olm.semver\n"},
		{"flow", "fbc:\n  catalog_mapping:\n    - template_name: b.yaml\n      catalog_names: [\"v4.21\", v4.22]  # keep\n",
			"fbc:\n  catalog_mapping:\n    - template_name: b.yaml\n      catalog_names: [\"v4.21\", v4.22, v4.23]  # keep\n"},
		{"flow quoted", "fbc:\n  catalog_mapping:\n  - template_name: b.yaml\n    catalog_names: [\"v4.20\", \"v4.22\"]\n",
			"fbc:\n  catalog_mapping:\n  - template_name: b.yaml\n    catalog_names: [\"v4.20\", \"v4.22\", \"v4.23\"]\n"},
		{"second entry, comment between items", "fbc:\n  catalog_mapping:\n    - catalog_names:\n        - v4.12\n      template_name: old.yaml\n    - catalog_names:\n        - v4.21\n      # a comment\n        - v4.22\n      template_name: new.yaml\n",
			"fbc:\n  catalog_mapping:\n    - catalog_names:\n        - v4.12\n      template_name: old.yaml\n    - catalog_names:\n        - v4.21\n      # a comment\n        - v4.22\n        - v4.23\n      template_name: new.yaml\n"},
		{"crlf", "fbc:\r\n  catalog_mapping:\r\n    - template_name: a.yaml\r\n      catalog_names:\r\n        - v4.22\r\n",
			"fbc:\r\n  catalog_mapping:\r\n    - template_name: a.yaml\r\n      catalog_names:\r\n        - v4.22\r\n        - v4.23\r\n"},
		{"no final newline", "fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names:\n        - v4.22",
			"fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names:\n        - v4.22\n        - v4.23\n"},
	}
	for _, c := range cases {
		got, changed, err := AddCatalogName("ci.yaml", []byte(c.in), "v4.22", "v4.23")
		if err != nil || !changed {
			t.Errorf("%s: changed %v, %v", c.name, changed, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s:\ngot\n%s\nwant\n%s", c.name, got, c.want)
		}
	}
	// Already there: nothing to do.
	in := "fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names: [v4.22, v4.23]\n"
	if got, changed, err := AddCatalogName("ci.yaml", []byte(in), "v4.22", "v4.23"); err != nil || changed || string(got) != in {
		t.Errorf("already mapped: %v %v %q", changed, err, got)
	}
	// No entry names the source version.
	if _, _, err := AddCatalogName("ci.yaml", []byte("fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names: [v4.21]\n"), "v4.22", "v4.23"); err == nil {
		t.Error("no entry names v4.22, yet it was added")
	}
}

// TestAddCatalogNameRealFiles: the ci.yaml of every community package of the shared test data that maps
// v4.22 gains v4.23 as one line or one flow item.
func TestAddCatalogNameRealFiles(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(sharedTemplates, "operators", "*", "ci.yaml"))
	if len(files) == 0 {
		t.Skipf("the shared test data is absent (%s)", sharedTemplates)
	}
	edited := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := ParseCI(f, src)
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if cfg.MappingOf("v4.22") == nil {
			continue
		}
		got, changed, err := AddCatalogName(f, src, "v4.22", "v4.23")
		if err != nil || !changed {
			t.Errorf("%s: changed %v, %v", f, changed, err)
			continue
		}
		edited++
		before, after := strings.Split(string(src), "\n"), strings.Split(string(got), "\n")
		switch {
		case len(after) == len(before)+1:
			// One line added; every other line the same.
			d := 0
			for i := range after {
				if d == 0 && (i >= len(before) || after[i] != before[i]) {
					d = 1
					if !strings.HasSuffix(strings.TrimSpace(after[i]), "v4.23") && !strings.HasSuffix(strings.TrimSpace(after[i]), `v4.23"`) {
						t.Errorf("%s: added line %q", f, after[i])
					}
					continue
				}
				if after[i] != before[i-d] {
					t.Errorf("%s: line %d changed: %q", f, i+1, after[i])
					break
				}
			}
		case len(after) == len(before):
			n := 0
			for i := range after {
				if after[i] != before[i] {
					n++
					if !strings.Contains(after[i], "v4.23") {
						t.Errorf("%s: line %d changed: %q", f, i+1, after[i])
					}
				}
			}
			if n != 1 {
				t.Errorf("%s: %d lines changed", f, n)
			}
		default:
			t.Errorf("%s: rewritten:\n%s", f, got)
		}
	}
	t.Logf("%d ci.yaml files edited", edited)
}

// TestParseCIErrors: a malformed ci.yaml is an error on its line saying what is wrong.
func TestParseCIErrors(t *testing.T) {
	cases := []struct {
		in   string
		line int
		want string
	}{
		{"fbc:\n  version_promotion_strategy: sometimes\n", 2, `"sometimes" is not a strategy`},
		{"fbc:\n  enabled: maybe\n", 2, "not a boolean"},
		{"fbc: [1]\n", 1, "not a mapping"},
		{"fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names: [4.20]\n", 4, "not a string"},
		{"fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalogs_names: [v4.20]\n", 3, "catalogs_names"},
		{"fbc:\n  catalog_mapping:\n    - type: olm.semver\n      catalog_names: [v4.20]\n", 3, "no template_name"},
		{"fbc:\n  catalog_mapping:\n    - template_name: ../x.yaml\n      catalog_names: [v4.20]\n", 3, "not a file name"},
		{"fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      type: olm.fancy\n      catalog_names: [v4.20]\n", 4, "not a template type"},
		{"fbc:\n  catalog_mapping: {a: 1}\n", 2, "not a list"},
		{"reviewers:\n  - a\n bad: [\n", 2, "not valid YAML"},
		{"fbc: &x\n  enabled: true\nother: *x\n", 1, "aliases"},
		{"a: 1\n---\nb: 2\n", 2, "more than one YAML document"},
		{"- 1\n", 1, "not a mapping"},
	}
	for _, c := range cases {
		_, err := ParseCI("operators/x/ci.yaml", []byte(c.in))
		var ce *CIError
		if !errors.As(err, &ce) {
			t.Errorf("%q: %v, want a CIError", c.in, err)
			continue
		}
		if ce.Line != c.line || !strings.Contains(ce.Error(), c.want) || !strings.HasPrefix(ce.Error(), "operators/x/ci.yaml:") {
			t.Errorf("%q: %v, want line %d and %q", c.in, err, c.line, c.want)
		}
	}
	cfg, err := ParseCI("ci.yaml", []byte("fbc:\n  enabled: true\n  version_promotion_strategy: always\n"))
	if err != nil || cfg.Strategy != Always || cfg.StrategyLine != 3 {
		t.Errorf("always: %+v %v", cfg, err)
	}
	cfg, err = ParseCI("ci.yaml", nil)
	if err != nil || cfg.Strategy != DefaultStrategy || cfg.Enabled {
		t.Errorf("empty: %+v %v", cfg, err)
	}
}

// FuzzAddCatalogName: for any ci.yaml, the edit either fails with an error or gives a file holding exactly
// the old values with the name added to the entry that held the source version — never a panic, never a
// silent change elsewhere.
func FuzzAddCatalogName(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(sharedTemplates, "operators", "*", "ci.yaml"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("fbc:\n  catalog_mapping:\n    - template_name: a.yaml\n      catalog_names: [\"v4.22\" , 'v4.21']\n"))
	f.Add([]byte("fbc:\n  catalog_mapping:\n  - template_name: a.yaml\n    catalog_names:\n    - 'v4.22' # c\n    - v4.21\n"))
	f.Add([]byte("fbc:\n  catalog_mapping:\n    - {template_name: a.yaml, catalog_names: [v4.22]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		out, changed, err := AddCatalogName("ci.yaml", data, "v4.22", "v4.23")
		if err != nil {
			return
		}
		if !changed {
			if string(out) != string(data) {
				t.Fatal("unchanged but different")
			}
			return
		}
		want, err := expected(data, "v4.22", "v4.23")
		if err != nil {
			t.Fatalf("edited a file without the source version: %v", err)
		}
		if !sameValue(out, want) {
			t.Fatalf("the edit changed more than the name:\n%s\n---\n%s", data, out)
		}
		cfg, err := ParseCI("ci.yaml", out)
		if err != nil || cfg.MappingOf("v4.23") == nil {
			t.Fatalf("the edited file does not map v4.23: %v\n%s", err, out)
		}
	})
}

// sharedTemplates is the community slice of the shared test data, beside the clone.
const sharedTemplates = "../../shared/testdata/templates"

// FuzzParseCI: any input is read or refused with a CIError on a line of the file; never a panic.
func FuzzParseCI(f *testing.F) {
	seeds, _ := filepath.Glob(filepath.Join(sharedTemplates, "operators", "*", "ci.yaml"))
	for _, s := range seeds {
		if data, err := os.ReadFile(s); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte("fbc:\n  version_promotion_strategy: never\n"))
	f.Add([]byte("fbc: {catalog_mapping: [{template_name: a, catalog_names: [v4.1]}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := ParseCI("ci.yaml", data)
		if err != nil {
			var ce *CIError
			if !errors.As(err, &ce) {
				t.Fatalf("%T %v: not a CIError", err, err)
			}
			if ce.Line < 1 || ce.Line > strings.Count(string(data), "\n")+2 {
				t.Fatalf("line %d of a %d-line file: %v", ce.Line, strings.Count(string(data), "\n")+1, err)
			}
			return
		}
		switch cfg.Strategy {
		case Never, ReviewNeeded, Always:
		default:
			t.Fatalf("strategy %q", cfg.Strategy)
		}
		for _, m := range cfg.Mappings {
			if m.Template == "" || strings.ContainsAny(m.Template, "/\\") {
				t.Fatalf("template %q", m.Template)
			}
		}
	})
}
