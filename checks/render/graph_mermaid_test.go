package render

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/catalogbot/catalogbot/catalog"
)

var update = flag.Bool("update", false, "rewrite golden files")

type testEntry struct {
	Name      string   `json:"name"`
	Replaces  string   `json:"replaces,omitempty"`
	Skips     []string `json:"skips,omitempty"`
	SkipRange string   `json:"skipRange,omitempty"`
}

// testCatalog builds a one-package catalog with one channel (nil entries:
// no channel) and, when versions is set, a bundle per entry.
func testCatalog(t testing.TB, channel string, entries []testEntry, versions map[string]string) *catalog.Catalog {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"schema":"olm.package","name":"etcd","defaultChannel":"stable"}` + "\n")
	if entries != nil {
		ch, _ := json.Marshal(map[string]any{"schema": "olm.channel", "package": "etcd", "name": channel, "entries": entries})
		b.Write(ch)
		b.WriteString("\n")
	}
	for name, v := range versions {
		bu, _ := json.Marshal(map[string]any{"schema": "olm.bundle", "package": "etcd", "name": name, "image": "quay.io/x/y@sha256:" + strings.Repeat("a", 64),
			"properties": []any{map[string]any{"type": "olm.package", "value": map[string]any{"packageName": "etcd", "version": v}}}})
		b.Write(bu)
		b.WriteString("\n")
	}
	c, err := catalog.Load(context.Background(), fstest.MapFS{"etcd/catalog.json": {Data: []byte(b.String())}}, catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func chain(n int) []testEntry {
	out := make([]testEntry, n)
	for i := range out {
		out[i].Name = fmt.Sprintf("etcd.v1.0.%d", i)
		if i > 0 {
			out[i].Replaces = fmt.Sprintf("etcd.v1.0.%d", i-1)
		}
	}
	return out
}

func TestUpgradeGraphMermaid(t *testing.T) {
	base := []testEntry{{Name: "etcd.v0.9.0"}, {Name: "etcd.v0.9.2", Replaces: "etcd.v0.9.0"}}
	added := append(append([]testEntry(nil), base...), testEntry{Name: "etcd.v0.9.4", Replaces: "etcd.v0.9.2", Skips: []string{"etcd.v0.9.3"}})
	big := chain(100)
	bigAfter := append(append([]testEntry(nil), big...), testEntry{Name: "etcd.v2.0.0", Replaces: "etcd.v1.0.99"})
	ranged := []testEntry{{Name: "etcd.v1.0.0"}, {Name: "etcd.v1.1.0", SkipRange: ">=1.0.0 <1.1.0"}}
	versions := map[string]string{"etcd.v1.0.0": "1.0.0", "etcd.v1.1.0": "1.1.0"}
	tests := []struct {
		name          string
		before, after *catalog.Catalog
	}{
		{"new-head", testCatalog(t, "stable", base, nil), testCatalog(t, "stable", added, nil)},
		{"new-channel", testCatalog(t, "stable", nil, nil), testCatalog(t, "stable", base, nil)},
		{"removed-channel", testCatalog(t, "stable", base, nil), testCatalog(t, "stable", nil, nil)},
		{"removed-entry", testCatalog(t, "stable", added, nil), testCatalog(t, "stable", base, nil)},
		{"skiprange", testCatalog(t, "stable", ranged[:1], versions), testCatalog(t, "stable", ranged, versions)},
		{"large-channel", testCatalog(t, "stable", big, nil), testCatalog(t, "stable", bigAfter, nil)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := UpgradeGraphMermaid(tt.before, tt.after, "etcd", "stable")
			golden := filepath.Join("testdata", "mermaid", tt.name+".golden")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("UpgradeGraphMermaid differs from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}

func TestUpgradeGraphMermaidBounds(t *testing.T) {
	big := chain(500)
	after := append(append([]testEntry(nil), big...), testEntry{Name: "etcd.v2.0.0", Replaces: "etcd.v1.0.499"})
	got := UpgradeGraphMermaid(testCatalog(t, "stable", big, nil), testCatalog(t, "stable", after, nil), "etcd", "stable")
	nodes := regexp.MustCompile(`(?m)^    [ab]\d+\[`).FindAllString(got, -1)
	if len(nodes) > 2*maxGraphNodes {
		t.Errorf("%d nodes drawn, want at most %d", len(nodes), 2*maxGraphNodes)
	}
	for _, want := range []string{"etcd.v2.0.0 (new head)", "etcd.v1.0.499", "more entries not shown"} {
		if !strings.Contains(got, want) {
			t.Errorf("picture lacks %q", want)
		}
	}
	if UpgradeGraphMermaid(nil, nil, "etcd", "stable") != "" {
		t.Error("no channel on either side should draw nothing")
	}
}

func TestUpgradeGraphMermaidEscapes(t *testing.T) {
	hostile := "x\"]\n```\nclick a href \"javascript:alert(1)\" <b>#1;"
	entries := []testEntry{{Name: "etcd.v1"}, {Name: hostile, Replaces: "etcd.v1"}}
	got := UpgradeGraphMermaid(testCatalog(t, "stable", entries[:1], nil), testCatalog(t, "stable", entries, nil), "etcd", "stable")
	body := strings.TrimSuffix(strings.TrimPrefix(got, "```mermaid\n"), "```\n")
	if n := strings.Count(body, "\n"); n != 15 {
		t.Errorf("picture has %d lines, want 15 (the hostile name on one line):\n%s", n, got)
	}
	for _, bad := range []string{"```", "<b>", "javascript:alert(1)\"", "\nclick"} {
		if strings.Contains(body, bad) {
			t.Errorf("picture contains %q unescaped:\n%s", bad, got)
		}
	}
	for _, line := range strings.Split(body, "\n") {
		if strings.Count(line, `"`)%2 != 0 {
			t.Errorf("line with unbalanced quotes: %q", line)
		}
	}
}

func TestChangedChannelGraphs(t *testing.T) {
	base := []testEntry{{Name: "etcd.v0.9.0"}, {Name: "etcd.v0.9.2", Replaces: "etcd.v0.9.0"}}
	added := append(append([]testEntry(nil), base...), testEntry{Name: "etcd.v0.9.4", Replaces: "etcd.v0.9.2"})
	before := testCatalog(t, "stable", base, nil)
	if got := ChangedChannelGraphs(before, testCatalog(t, "stable", base, nil)); got != "" {
		t.Errorf("unchanged catalogs drew %q, want nothing", got)
	}
	got := ChangedChannelGraphs(before, testCatalog(t, "stable", added, nil))
	if strings.Count(got, "```mermaid") != 1 || !strings.Contains(got, "channel `stable`") || !strings.Contains(got, "etcd.v0.9.4 (new head)") {
		t.Errorf("ChangedChannelGraphs =\n%s\nwant one picture of etcd/stable with the new head", got)
	}
	if got := ChangedChannelGraphs(nil, before); strings.Count(got, "```mermaid") != 1 {
		t.Errorf("a new catalog should draw its one channel:\n%s", got)
	}
}

// BenchmarkUpgradeGraphMermaid draws a 500-entry channel with one new head.
func BenchmarkUpgradeGraphMermaid(b *testing.B) {
	big := chain(500)
	after := append(append([]testEntry(nil), big...), testEntry{Name: "etcd.v2.0.0", Replaces: "etcd.v1.0.499"})
	before, afterCat := testCatalog(b, "stable", big, nil), testCatalog(b, "stable", after, nil)
	b.ReportAllocs()
	for b.Loop() {
		UpgradeGraphMermaid(before, afterCat, "etcd", "stable")
	}
}
