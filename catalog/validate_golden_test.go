package catalog

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the expected.txt files of testdata/validate from the current output")

// renderFindings is the golden form of findings: one line each, hint indented below.
func renderFindings(fs []Finding) string {
	var b strings.Builder
	for _, f := range fs {
		b.WriteString(f.String())
		b.WriteString(" [")
		b.WriteString(string(f.Severity))
		if f.Package != "" {
			b.WriteString(", package ")
			b.WriteString(f.Package)
		}
		b.WriteString("]\n")
		if f.Hint != "" {
			b.WriteString("    hint: ")
			b.WriteString(f.Hint)
			b.WriteString("\n")
		}
	}
	if b.Len() == 0 {
		return "valid: no findings\n"
	}
	return b.String()
}

// goldenCases lists the case folders of testdata/validate: each holds a
// catalog/ folder and expected.txt.
func goldenCases(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join("testdata", "validate"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.IsDir() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}

// TestValidateGolden validates each case's catalog and compares the findings
// with expected.txt. Case names start with the rule they exercise; names
// ending in ".ok" (and "valid-*") must have no error finding.
func TestValidateGolden(t *testing.T) {
	for _, name := range goldenCases(t) {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "validate", name)
			c, err := LoadDir(context.Background(), filepath.Join(dir, "catalog"), Limits{})
			if err != nil {
				t.Fatalf("LoadDir: %v", err)
			}
			fs := Validate(c, ValidateOptions{})
			for _, f := range fs {
				if f.Line == 0 {
					t.Errorf("finding %s has no line", f)
				}
			}
			got := renderFindings(fs)
			exp := filepath.Join(dir, "expected.txt")
			if *update {
				if err := os.WriteFile(exp, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(exp)
			if err != nil {
				t.Fatalf("%v (run go test -run TestValidateGolden -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("findings differ from %s\ngot:\n%s\nwant:\n%s", exp, got, want)
			}
			ok := strings.HasSuffix(name, ".ok") || strings.HasPrefix(name, "valid-")
			if ok && HasErrors(fs) {
				t.Errorf("case %s must be valid, got errors:\n%s", name, got)
			}
			if rule, isOK := strings.CutSuffix(name, ".ok"); isOK {
				for _, f := range fs {
					if f.Rule == rule {
						t.Errorf("case %s must not report %s, got %s", name, rule, f)
					}
				}
			}
			if !ok {
				rule := name
				if i := strings.IndexByte(name, '+'); i >= 0 {
					rule = name[:i]
				}
				found := false
				for _, f := range fs {
					found = found || f.Rule == rule
				}
				if !found {
					t.Errorf("case %s must report rule %s, got:\n%s", name, rule, got)
				}
			}
		})
	}
}

// TestEveryRuleHasGoldenCases: each model rule has a failing case folder
// named after it and a valid near-miss named <rule>.ok; every rule id that
// appears in expected output is in Rules().
func TestEveryRuleHasGoldenCases(t *testing.T) {
	cases := goldenCases(t)
	has := map[string]bool{}
	for _, c := range cases {
		rule := c
		if i := strings.IndexByte(c, '+'); i >= 0 {
			rule = c[:i]
		}
		has[rule] = true
	}
	for _, r := range modelRules() {
		if !has[r.ID] {
			t.Errorf("rule %s has no failing case folder testdata/validate/%s", r.ID, r.ID)
		}
		if !has[r.ID+".ok"] {
			t.Errorf("rule %s has no valid case folder testdata/validate/%s.ok", r.ID, r.ID)
		}
	}
	known := map[string]bool{}
	for _, r := range Rules() {
		if known[r.ID] {
			t.Errorf("rule id %s is twice in Rules()", r.ID)
		}
		known[r.ID] = true
		if r.Severity != SeverityError && r.Severity != SeverityWarning {
			t.Errorf("rule %s has severity %q, want error or warning", r.ID, r.Severity)
		}
		if r.Summary == "" || r.Hint == "" {
			t.Errorf("rule %s lacks a summary or hint", r.ID)
		}
	}
	for _, c := range cases {
		data, err := os.ReadFile(filepath.Join("testdata", "validate", c, "expected.txt"))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n") {
			parts := strings.SplitN(line, ": ", 3)
			if len(parts) < 3 || strings.HasPrefix(line, " ") {
				continue
			}
			if !known[parts[1]] {
				t.Errorf("%s: rule %q is not in Rules()", c, parts[1])
			}
		}
	}
}
