package authoring

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	syaml "sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
)

// onlyAdded says whether after is before with lines added and none changed or removed, and counts them (a
// last line without its line end may get one).
func onlyAdded(before, after string) (int, bool) {
	b, a := strings.SplitAfter(before, "\n"), strings.SplitAfter(after, "\n")
	i := 0
	for _, l := range a {
		if i < len(b) && (l == b[i] || i == len(b)-1 && strings.TrimRight(l, "\r\n") == b[i]) {
			i++
		}
	}
	return len(a) - len(b), i == len(b)
}

// additionsFor are bundles to add to a template as catalog updates do: one in an existing channel replacing
// its last entry, one also in a new channel with skips and a skip range; for a semver template one in
// stable and one in the candidate and fast streams.
func additionsFor(t *testing.T, file string, src []byte) []Addition {
	t.Helper()
	tmpl, fs := template.Parse(file, src, catalog.Limits{})
	if tmpl == nil {
		t.Fatalf("%s: %v", file, fs)
	}
	img := func(n int) string {
		return fmt.Sprintf("quay.io/acme/new-bundle@sha256:%064x", n)
	}
	if tmpl.Schema == template.SchemaSemver {
		return []Addition{
			{Package: "p", Name: "p.v99.0.0", Image: img(1), Channels: []string{"stable"}},
			{Package: "p", Name: "p.v99.0.0", Image: img(2), Channels: []string{"candidate-v99", "fast-v99"}},
		}
	}
	var doc struct {
		Entries []map[string]any `json:"entries"`
	}
	if err := syaml.Unmarshal(src, &doc); err != nil {
		t.Fatal(err)
	}
	var pkg, channel, last string
	for _, e := range doc.Entries {
		if e["schema"] == "olm.package" && pkg == "" {
			pkg, _ = e["name"].(string)
		}
	}
	for _, e := range doc.Entries {
		if e["schema"] == "olm.channel" && e["package"] == pkg && channel == "" {
			channel, _ = e["name"].(string)
			if list, _ := e["entries"].([]any); len(list) > 0 {
				last, _ = list[len(list)-1].(map[string]any)["name"].(string)
			}
		}
	}
	if pkg == "" || channel == "" {
		t.Fatalf("%s: no package or channel", file)
	}
	return []Addition{
		{Package: pkg, Name: pkg + ".v99.0.0", Image: img(1), Channels: []string{channel}, Replaces: last},
		{Package: pkg, Name: pkg + ".v99.0.0", Image: img(2), Channels: []string{channel, "brand-new"}, Replaces: last,
			Skips: []string{pkg + ".v0.0.1", pkg + ".v0.0.2"}, SkipRange: ">=0.0.1 <99.0.0"},
	}
}

// Adding one bundle to every template of the community repository in the shared test data changes nothing
// but the new lines, and the file then parses to exactly what writing the whole template anew gives.
func TestAddBundleAddsOnlyLinesToCommunityTemplates(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join(realTemplates, "operators", "*", "catalog-templates", "*.yaml"))
	if len(files) == 0 {
		t.Skipf("no templates under %s (the shared test data is not on this machine)", realTemplates)
	}
	n := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, add := range additionsFor(t, f, src) {
			edited, rewritten, err := addBundle(src, add)
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			if edited == nil {
				t.Errorf("%s: %s could not be added by editing the file; it is written anew", f, add.Image)
				continue
			}
			added, ok := onlyAdded(string(src), string(edited))
			if !ok || added <= 0 || added > 24 {
				t.Errorf("%s: adding %s (%v) changes more than new lines (%d added):\n%s", f, add.Name, add.Channels, added, edited)
			}
			if !sameYAML(edited, rewritten) {
				t.Errorf("%s: the edited template holds other values than the template written anew", f)
			}
			if got, err := AddBundle(src, add); err != nil || string(got) != string(edited) {
				t.Errorf("%s: AddBundle does not give the edited template: %v", f, err)
			}
			tmpl, fs := template.Parse(f, edited, catalog.Limits{})
			if tmpl == nil {
				t.Errorf("%s: the edited template does not parse: %v", f, fs)
				continue
			}
			found := false
			for _, r := range tmpl.Refs() {
				found = found || r.Image == add.Image
			}
			if !found {
				t.Errorf("%s: the edited template does not name %s", f, add.Image)
			}
			if _, err := AddBundle(edited, add); !errors.Is(err, ErrAlreadyThere) {
				t.Errorf("%s: adding %s again: %v", f, add.Image, err)
			}
			n++
		}
	}
	t.Logf("%d additions to %d community templates, each only new lines", n, len(files))
}

// Comments, folded scalars, indentless lists, capitalised keys and CRLF line ends stay as they are.
func TestAddBundleKeepsTheText(t *testing.T) {
	for _, tc := range []struct {
		name, src string
		add       Addition
		want      string
	}{
		{"indentless lists, sorted keys, a comment after",
			"---\nentries:\n- name: a\n  schema: olm.package\n- entries:\n  - name: a.v1\n  name: stable\n  package: a\n  schema: olm.channel\n- image: a@sha256:1\n  schema: olm.bundle\n# the end\nschema: olm.template.basic\n",
			Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"stable"}, Replaces: "a.v1"},
			"---\nentries:\n- name: a\n  schema: olm.package\n- entries:\n  - name: a.v1\n  - name: a.v2\n    replaces: a.v1\n  name: stable\n  package: a\n  schema: olm.channel\n- image: a@sha256:1\n  schema: olm.bundle\n- image: a@sha256:2\n  schema: olm.bundle\n# the end\nschema: olm.template.basic\n"},
		// The CSV names no replaces or skips: in stable it goes after the head, a.v1 (one head, as opm wants);
		// beta is new and has no head.
		{"indented lists, a folded description, comments inside",
			"schema: olm.template.basic\nentries:\n  # the package\n  - schema: olm.package\n    name: a\n    description: a long\n      text on two lines\n  - schema: olm.channel\n    package: a\n    name: stable\n    entries:\n      - name: a.v1 # first\n  - schema: olm.bundle\n    image: a@sha256:1\n",
			Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"stable", "beta"}, SkipRange: ">=1.0.0 <2.0.0"},
			"schema: olm.template.basic\nentries:\n  # the package\n  - schema: olm.package\n    name: a\n    description: a long\n      text on two lines\n  - schema: olm.channel\n    package: a\n    name: stable\n    entries:\n      - name: a.v1 # first\n      - name: a.v2\n        replaces: a.v1\n        skipRange: '>=1.0.0 <2.0.0'\n  - schema: olm.channel\n    package: a\n    name: beta\n    entries:\n      - name: a.v2\n        skipRange: '>=1.0.0 <2.0.0'\n  - schema: olm.bundle\n    image: a@sha256:1\n  - schema: olm.bundle\n    image: a@sha256:2\n"},
		{"semver with capitalised keys and CRLF",
			"Schema: olm.semver\r\nStable:\r\n  Bundles:\r\n  - Image: a@sha256:1\r\n",
			Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"candidate"}},
			"Schema: olm.semver\r\nStable:\r\n  Bundles:\r\n  - Image: a@sha256:1\r\nCandidate:\r\n  Bundles:\r\n  - Image: a@sha256:2\r\n"},
		{"semver without a final newline",
			"schema: olm.semver\nstable:\n  bundles:\n    - image: a@sha256:1",
			Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"stable"}},
			"schema: olm.semver\nstable:\n  bundles:\n    - image: a@sha256:1\n    - image: a@sha256:2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			edited, rewritten, err := addBundle([]byte(tc.src), tc.add)
			if err != nil {
				t.Fatal(err)
			}
			if string(edited) != tc.want {
				t.Errorf("edited:\n%s\nwant:\n%s\n(written anew:\n%s)", edited, tc.want, rewritten)
			}
		})
	}
	// A flow-style list cannot take a line: the template is written anew, to the same values.
	src := "schema: olm.semver\nstable: {bundles: [{image: a@sha256:1}]}\n"
	edited, rewritten, err := addBundle([]byte(src), Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"stable"}})
	if err != nil || edited != nil || !strings.Contains(string(rewritten), "a@sha256:2") {
		t.Errorf("flow style: edited %q, written anew %q, %v", edited, rewritten, err)
	}
}

// Whatever the template, AddBundle never panics; an edit of the file only adds lines, holds what writing the
// template anew holds, and names the bundle so that adding it again finds it there.
func FuzzAddBundle(f *testing.F) {
	seeds, _ := filepath.Glob("../testdata/opm/*/template.yaml")
	for _, p := range seeds {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data, uint8(0))
		}
	}
	f.Add([]byte("schema: olm.semver\nstable:\n  bundles:\n  - image: a@sha256:1\n"), uint8(1))
	f.Add([]byte("---\nentries:\n- name: a\n  schema: olm.package\n# c\nschema: olm.template.basic\n"), uint8(2))
	f.Add([]byte("schema: olm.template.basic\r\nentries:\r\n  - schema: olm.bundle\r\n    image: x\r\n"), uint8(3))
	f.Fuzz(func(t *testing.T, src []byte, kind uint8) {
		if len(src) > 1<<16 {
			return
		}
		add := Addition{Package: "a", Name: "a.v2", Image: "a@sha256:2", Channels: []string{"stable"}, Replaces: "a.v1"}
		switch kind % 4 {
		case 1:
			add.Channels = []string{"candidate-v2", "beta"}
		case 2:
			add.Skips, add.SkipRange = []string{"a.v0"}, ">=0.1.0 <2.0.0"
		case 3:
			add.Channels = []string{"stable", "new"}
		}
		edited, rewritten, err := addBundle(src, add)
		if err != nil {
			return
		}
		if rewritten == nil {
			t.Fatal("no template written")
		}
		if edited == nil {
			return
		}
		if _, ok := onlyAdded(string(src), string(edited)); !ok {
			t.Fatalf("the edit changes lines:\n%q\n->\n%q", src, edited)
		}
		if !sameYAML(edited, rewritten) {
			t.Fatalf("the edit holds other values:\n%q\n%q", edited, rewritten)
		}
		if _, err := AddBundle(edited, add); !errors.Is(err, ErrAlreadyThere) {
			t.Fatalf("adding again: %v\n%q", err, edited)
		}
	})
}

// A bundle whose CSV names no predecessor goes after its channel's head (the one entry nothing replaces or
// skips), so the channel keeps one head; a channel with no single head, and a CSV that names its edges, are
// left as they are.
func TestAddBundleChainsToTheChannelHead(t *testing.T) {
	tmpl := func(entries string) string {
		return "schema: olm.template.basic\nentries:\n  - schema: olm.channel\n    package: a\n    name: stable\n    entries:\n" + entries + "  - schema: olm.bundle\n    image: a@sha256:1\n"
	}
	for _, tc := range []struct {
		name, entries string
		add           Addition
		want          string // the new channel entry's lines
	}{
		{"after the head", "      - name: a.v1\n      - name: a.v2\n        replaces: a.v1\n",
			Addition{Package: "a", Name: "a.v3", Image: "a@sha256:3", Channels: []string{"stable"}},
			"      - name: a.v3\n        replaces: a.v2\n"},
		{"skips count as edges", "      - name: a.v1\n      - name: a.v2\n        skips: [a.v1]\n",
			Addition{Package: "a", Name: "a.v3", Image: "a@sha256:3", Channels: []string{"stable"}, SkipRange: "<3.0.0"},
			"      - name: a.v3\n        replaces: a.v2\n        skipRange: <3.0.0\n"},
		{"two heads: left alone", "      - name: a.v1\n      - name: a.v2\n",
			Addition{Package: "a", Name: "a.v3", Image: "a@sha256:3", Channels: []string{"stable"}},
			"      - name: a.v3\n"},
		{"the CSV's own replaces", "      - name: a.v1\n      - name: a.v2\n        replaces: a.v1\n",
			Addition{Package: "a", Name: "a.v3", Image: "a@sha256:3", Channels: []string{"stable"}, Replaces: "a.v1"},
			"      - name: a.v3\n        replaces: a.v1\n"},
		{"the CSV's own skips", "      - name: a.v1\n      - name: a.v2\n        replaces: a.v1\n",
			Addition{Package: "a", Name: "a.v3", Image: "a@sha256:3", Channels: []string{"stable"}, Skips: []string{"a.v2"}},
			"      - name: a.v3\n        skips:\n          - a.v2\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := AddBundle([]byte(tmpl(tc.entries)), tc.add)
			if err != nil {
				t.Fatal(err)
			}
			if want := tmpl(tc.entries + tc.want); !strings.HasPrefix(string(out), want[:len(want)-len("  - schema: olm.bundle\n    image: a@sha256:1\n")]) {
				t.Errorf("got:\n%s\nwant the channel:\n%s", out, tc.entries+tc.want)
			}
		})
	}
}
