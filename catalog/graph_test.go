package catalog

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// channelOf builds a channel from compact entries "name<replaces|skip1,skip2|skipRange".
func channelOf(t *testing.T, specs ...string) *Channel {
	t.Helper()
	ch := &Channel{Name: "stable", entryByName: map[string]*ChannelEntry{}}
	for i, s := range specs {
		parts := strings.SplitN(s, "<", 2)
		e := &ChannelEntry{Name: parts[0], NamePos: Position{File: "c.yaml", Line: i + 1}}
		if len(parts) == 2 {
			f := strings.SplitN(parts[1], "|", 3)
			e.Replaces = f[0]
			if len(f) > 1 && f[1] != "" {
				e.Skips = strings.Split(f[1], ",")
				e.SkipsPos = make([]Position, len(e.Skips))
			}
			if len(f) > 2 {
				e.SkipRange = f[2]
			}
		}
		ch.Entries = append(ch.Entries, e)
		if _, ok := ch.entryByName[e.Name]; !ok {
			ch.entryByName[e.Name] = e
		}
	}
	return ch
}

func names(es []*ChannelEntry) []string {
	out := []string{}
	for _, e := range es {
		out = append(out, e.Name)
	}
	return out
}

func TestHeadsAndWalk(t *testing.T) {
	tests := []struct {
		name         string
		entries      []string
		wantHeads    []string
		wantCycle    string // joined with " -> "
		wantStranded []string
	}{
		{"single", []string{"a"}, []string{"a"}, "", []string{}},
		{"chain", []string{"a", "b<a", "c<b"}, []string{"c"}, "", []string{}},
		{"replaces outside channel", []string{"b<x", "c<b"}, []string{"c"}, "", []string{}},
		{"skipRange is no edge", []string{"a", "b<||>=0.0.0 <1.0.0"}, []string{"a", "b"}, "", []string{}},
		{"skips make one head", []string{"a", "b<|a"}, []string{"b"}, "", []string{}},
		{"two heads", []string{"a", "b<a", "c"}, []string{"b", "c"}, "", []string{}},
		{"no head: loop", []string{"a<b", "b<a"}, []string{}, "", nil},
		{"self replace", []string{"a<a"}, []string{}, "", nil},
		{"cycle below head", []string{"a<b", "b<c", "c<b", "d<a"}, []string{"d"}, "b -> c -> b", nil}, // the loop only, as opm prints it
		// The walk stops at a replaced entry some entry skips: b is skipped,
		// so a (reachable only through b) is stranded, as in opm.
		{"skip stops walk", []string{"a", "b<a", "c<b|b"}, []string{"c"}, "", []string{"a"}},
		{"skip stops walk, skipped too", []string{"a", "b<a", "c<b|b,a"}, []string{"c"}, "", []string{}},
		{"stranded behind second chain", []string{"a", "b<a", "c<b", "x<a"}, []string{"c", "x"}, "", nil},
		{"duplicate entry keeps first", []string{"a", "b<a", "a<b"}, []string{"b"}, "", []string{}},
		{"empty name replaced by empty replaces", []string{"<a", "a"}, []string{""}, " -> a -> ", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ch := channelOf(t, tt.entries...)
			heads := ch.Heads()
			if got := names(heads); !reflect.DeepEqual(got, tt.wantHeads) {
				t.Fatalf("Heads() = %q, want %q", got, tt.wantHeads)
			}
			if len(heads) != 1 {
				return
			}
			w := ch.walkReplaces(heads[0])
			if got := strings.Join(w.cycle, " -> "); got != tt.wantCycle {
				t.Errorf("cycle = %q, want %q", got, tt.wantCycle)
			}
			if tt.wantStranded != nil {
				if got := names(w.stranded); !reflect.DeepEqual(got, tt.wantStranded) {
					t.Errorf("stranded = %q, want %q", got, tt.wantStranded)
				}
			}
		})
	}
}

// graphCatalog builds a catalog of package foo from YAML channel specs and versions.
func graphCatalog(t *testing.T, channels map[string][]string, versions map[string]string) *Catalog {
	t.Helper()
	var b strings.Builder
	b.WriteString("schema: olm.package\nname: foo\ndefaultChannel: stable\n")
	for _, chName := range sortedKeys(channels) {
		fmt.Fprintf(&b, "---\nschema: olm.channel\npackage: foo\nname: %s\nentries:\n", chName)
		for _, s := range channels[chName] {
			parts := strings.SplitN(s, "<", 2)
			fmt.Fprintf(&b, "  - name: %s\n", parts[0])
			if len(parts) == 2 {
				f := strings.SplitN(parts[1], "|", 3)
				if f[0] != "" {
					fmt.Fprintf(&b, "    replaces: %s\n", f[0])
				}
				if len(f) > 1 && f[1] != "" {
					fmt.Fprintf(&b, "    skips: [%s]\n", f[1])
				}
				if len(f) > 2 {
					fmt.Fprintf(&b, "    skipRange: '%s'\n", f[2])
				}
			}
		}
	}
	for _, name := range sortedKeys(versions) {
		fmt.Fprintf(&b, "---\nschema: olm.bundle\npackage: foo\nname: %s\nimage: quay.io/x/foo:%s\nproperties:\n  - type: olm.package\n    value: {packageName: foo, version: '%s'}\n", name, versions[name], versions[name])
	}
	docs, findings := ParseFile("foo.yaml", []byte(b.String()), Limits{})
	if len(findings) > 0 {
		t.Fatalf("test catalog does not parse: %v", findings)
	}
	return NewCatalog(docs, nil)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

func TestPredecessors(t *testing.T) {
	versions := map[string]string{"a": "0.9.0", "b": "1.0.0", "c": "1.1.0", "d": "1.2.0", "e": "2.0.0-rc.1", "z": "3.0.0"}
	c := graphCatalog(t, map[string][]string{
		"stable": {"a", "b<a", "c<b|a", "d<c||>=1.0.0 <1.2.0"},
		"fast":   {"b", "e<b|c|>=0.9.0 <2.0.0-rc.1", "z<ghost"},
	}, versions)
	tests := []struct {
		bundle string
		want   []UpgradeEdge
	}{
		{"a", nil},
		{"b", []UpgradeEdge{{"a", "stable", EdgeReplaces}}},
		{"c", []UpgradeEdge{{"a", "stable", EdgeSkips}, {"b", "stable", EdgeReplaces}}},
		// skipRange matches bundles of any channel of the package, never itself.
		{"d", []UpgradeEdge{{"b", "stable", EdgeSkipRange}, {"c", "stable", EdgeReplaces}, {"c", "stable", EdgeSkipRange}}},
		{"e", []UpgradeEdge{
			{"a", "fast", EdgeSkipRange}, {"b", "fast", EdgeReplaces}, {"b", "fast", EdgeSkipRange},
			{"c", "fast", EdgeSkipRange}, {"c", "fast", EdgeSkips}, {"d", "fast", EdgeSkipRange}}},
		{"z", nil}, // replaces a bundle that does not exist
		{"nothere", nil},
	}
	for _, tt := range tests {
		if got := c.Predecessors("foo", tt.bundle); !reflect.DeepEqual(got, tt.want) {
			t.Errorf("Predecessors(foo, %s) = %v, want %v", tt.bundle, got, tt.want)
		}
	}
	if got := c.Predecessors("nopkg", "a"); got != nil {
		t.Errorf("Predecessors(nopkg, a) = %v, want nil", got)
	}
}

func TestChannelHead(t *testing.T) {
	c := graphCatalog(t, map[string][]string{
		"stable": {"a", "b<a"},
		"two":    {"a", "b"},
		"loop":   {"a<b", "b<a"},
	}, map[string]string{"a": "1.0.0", "b": "1.1.0"})
	tests := []struct {
		pkg, channel string
		want         string
		wantErr      string
	}{
		{"foo", "stable", "b", ""},
		{"foo", "two", "", "2 heads: a, b"},
		{"foo", "loop", "", "has no head"},
		{"foo", "nope", "", "has no channel"},
		{"bar", "stable", "", "not in the catalog"},
	}
	for _, tt := range tests {
		got, err := c.ChannelHead(tt.pkg, tt.channel)
		if got != tt.want {
			t.Errorf("ChannelHead(%s, %s) = %q, want %q", tt.pkg, tt.channel, got, tt.want)
		}
		if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
			t.Errorf("ChannelHead(%s, %s) error = %v, want one containing %q", tt.pkg, tt.channel, err, tt.wantErr)
		}
	}
}

// TestSampleCatalogGraph checks the upgrade graph of the README's sample catalog.
func TestSampleCatalogGraph(t *testing.T) {
	c, err := LoadDir(t.Context(), "../testdata/catalogs/sample", Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if fs := Validate(c, ValidateOptions{}); len(fs) != 0 {
		t.Errorf("sample catalog has findings: %v", fs)
	}
	want := []UpgradeEdge{
		{"etcd-lite.v0.9.0", "stable", EdgeSkipRange},
		{"etcd-lite.v1.0.0", "stable", EdgeSkipRange},
		{"etcd-lite.v1.0.1", "stable", EdgeReplaces},
	}
	if got := c.Predecessors("etcd-lite", "etcd-lite.v1.1.0"); !reflect.DeepEqual(got, want) {
		t.Errorf("Predecessors(etcd-lite.v1.1.0) = %v, want %v", got, want)
	}
	if got := c.Predecessors("etcd-lite", "etcd-lite.v1.0.0"); !reflect.DeepEqual(got, []UpgradeEdge{{"etcd-lite.v0.9.0", "alpha", EdgeReplaces}}) {
		t.Errorf("Predecessors(etcd-lite.v1.0.0) = %v", got)
	}
	if h, err := c.ChannelHead("widget-operator", "fast"); h != "widget-operator.v0.3.0" || err != nil {
		t.Errorf("ChannelHead(widget-operator, fast) = %q, %v", h, err)
	}
	objs, err := c.Package("etcd-lite").Bundle("etcd-lite.v1.1.0").Objects()
	if err != nil || len(objs) != 2 || !strings.Contains(string(objs[0]), `"kind":"CustomResourceDefinition"`) {
		t.Errorf("Objects() = %d objects, %v", len(objs), err)
	}
}
