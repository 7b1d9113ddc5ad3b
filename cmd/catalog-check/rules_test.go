package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateRulesDoc = flag.Bool("update-rules-doc", false, "rewrite docs/rules.md from the rule tables")

// TestRulesDocUpToDate fails when docs/rules.md is not what `catalog-check rules`
// prints, so the reference cannot drift from the rule tables.
// Regenerate with: go run ./cmd/catalog-check rules > docs/rules.md
func TestRulesDocUpToDate(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"rules"}, &out, &errb); code != exitPass {
		t.Fatalf("runRules exit = %d, want %d; stderr: %s", code, exitPass, errb.String())
	}
	path := filepath.Join("..", "..", "docs", "rules.md")
	if *updateRulesDoc {
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading %s: %v", path, err)
	}
	if !bytes.Equal(out.Bytes(), want) {
		t.Errorf("docs/rules.md differs from `catalog-check rules` output; regenerate it with\n\tgo run ./cmd/catalog-check rules > docs/rules.md\nfirst differing line: %s", firstDiff(string(want), out.String()))
	}
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("line %d: file has %q, generated has %q", i+1, x, y)
		}
	}
	return "(none)"
}

func TestRulesJSONListsEveryRuleOnce(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"rules", "--output", "json"}, &out, &errb); code != exitPass {
		t.Fatalf("exit = %d, want %d; stderr: %s", code, exitPass, errb.String())
	}
	var groups []ruleGroup
	if err := json.Unmarshal(out.Bytes(), &groups); err != nil {
		t.Fatalf("output is not JSON: %v", err)
	}
	if got, want := len(groups), 5; got != want {
		t.Fatalf("got %d groups, want %d", got, want)
	}
	seen := map[string]string{}
	for _, g := range groups {
		if len(g.Rules) == 0 {
			t.Errorf("group %s has no rules", g.Package)
		}
		for _, r := range g.Rules {
			if prev, ok := seen[r.ID]; ok {
				t.Errorf("rule %s listed by %s and by %s", r.ID, prev, g.Package)
			}
			seen[r.ID] = g.Package
			if r.Summary == "" || r.Hint == "" {
				t.Errorf("rule %s: summary %q, hint %q; want both", r.ID, r.Summary, r.Hint)
			}
			switch r.Severity {
			case "error", "warning":
			default:
				t.Errorf("rule %s: default severity %q, want error or warning", r.ID, r.Severity)
			}
		}
	}
	md := func() string {
		var b bytes.Buffer
		run(context.Background(), []string{"rules"}, &b, &b)
		return b.String()
	}()
	for id := range seen {
		if !strings.Contains(md, "| `"+id+"` |") {
			t.Errorf("markdown has no row for rule %s", id)
		}
	}
}

func TestRulesBadUsage(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"unknown output", []string{"--output", "yaml"}, exitCannotRun},
		{"stray argument", []string{"extra"}, exitCannotRun},
		{"unknown flag", []string{"--nope"}, exitCannotRun},
		{"help", []string{"-h"}, exitPass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if got := run(context.Background(), append([]string{"rules"}, tc.args...), &out, &errb); got != tc.want {
				t.Errorf("runRules(%q) = %d, want %d", tc.args, got, tc.want)
			}
		})
	}
}
