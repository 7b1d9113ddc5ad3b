package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
)

// The community templates of the shared test data render offline wherever their committed catalogs hold the
// referenced images: on a real git repository holding the 22 packages (ci.yaml mappings, templates, catalogs of
// OpenShift 4.12 to 4.22), a pull request that touches every template (a comment) is checked by `catalog-check
// template check` without registry access. A template whose every image is the image of a blob in one of its
// committed catalogs (by digest, or by tag verbatim, with a template.tag-reference warning; a blob that can
// serve the catalog's migrate level) is rendered and compared — never "not verified"; any other template is
// "not verified", naming the image and what was searched.
func TestTemplateCheckCommunityTemplatesRenderOffline(t *testing.T) {
	if _, err := os.Stat(sharedTemplates); err != nil {
		t.Skipf("no %s (the shared test data is not on this machine)", sharedTemplates)
	}
	dir, git, write := testRepo(t)
	copyTree(t, write, sharedTemplates, ".")
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: \"catalogs/v4.*\"}]\nmaintainers: [alice]\n"+
		"bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")

	// What the committed catalogs hold: for each catalog file, image -> whether some blob of it serves
	// level none (has no olm.csv.metadata) and whether one serves bundle-object-to-csv-metadata.
	type serves struct{ none, csv bool }
	holds := map[string]map[string]serves{}
	cis, _ := filepath.Glob(filepath.Join(dir, "operators", "*", "ci.yaml"))
	type want struct {
		rendered bool
		missing  string // an image no committed catalog of the template holds at the level needed
	}
	wants := map[string]want{}
	tagged := 0
	for _, ci := range cis {
		pkg := filepath.Base(filepath.Dir(ci))
		data, _ := os.ReadFile(ci)
		maps, err := template.CIMappings("operators/"+pkg, pkg, data)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range maps {
			src, err := os.ReadFile(filepath.Join(dir, m.Template))
			if err != nil {
				continue
			}
			write(m.Template, string(src)+"\n# touched by the test\n")
			tmpl, _ := template.Parse(m.Template, src, catalog.Limits{})
			if tmpl == nil {
				continue
			}
			union := map[string]serves{}
			levels := map[string]bool{}
			for _, c := range m.Catalogs {
				levels[m.MigrateLevel[c]] = true
				if holds[c] == nil {
					holds[c] = map[string]serves{}
					data, err := os.ReadFile(filepath.Join(dir, c))
					if err == nil {
						docs, _ := catalog.ParseFile(c, data, catalog.Limits{})
						for _, d := range docs {
							if d.Schema != "olm.bundle" || d.Value.Get("image") == nil {
								continue
							}
							img := d.Value.Get("image").Str()
							s := holds[c][img]
							s.csv = true
							if !strings.Contains(string(d.Value.AppendJSON(nil)), `"olm.csv.metadata"`) {
								s.none = true
							}
							holds[c][img] = s
						}
					}
				}
				for img, s := range holds[c] {
					u := union[img]
					u.none, u.csv = u.none || s.none, u.csv || s.csv
					union[img] = u
				}
			}
			w := want{rendered: true}
			for _, ref := range tmpl.Refs() {
				u, ok := union[ref.Image]
				if ok && !strings.Contains(ref.Image, "@sha256:") {
					tagged++
				}
				for level := range levels {
					if !ok || (level == "none" || level == "") && !u.none {
						w = want{missing: ref.Image}
					}
				}
			}
			wants[m.Template] = w
		}
	}
	if len(wants) < 20 {
		t.Fatalf("only %d templates found", len(wants))
	}
	git("checkout", "-q", "-b", "pr")
	git("add", "-A")
	git("commit", "-q", "-m", "touch every template")
	head := git("rev-parse", "HEAD")

	var out, errb bytes.Buffer
	runEnv(context.Background(), []string{"template", "check", "--repo", dir, "--base", base, "--head", head, "--author", "alice", "--output", "json"},
		&out, &errb, env{getenv: func(string) string { return "" }})
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	res := resultOf(t, v, "templates")
	line := regexp.MustCompile("(?m)^- `([^`]+)` → `[^`]+`: (.*)$")
	got := map[string]string{}
	for _, m := range line.FindAllStringSubmatch(res.Summary, -1) {
		if prev, ok := got[m[1]]; !ok || strings.HasPrefix(prev, "matches") {
			got[m[1]] = m[2]
		}
	}
	var names []string
	for n := range wants {
		names = append(names, n)
	}
	sort.Strings(names)
	rendered, notVerified := 0, 0
	for _, n := range names {
		w, g := wants[n], got[n]
		switch {
		case g == "":
			t.Errorf("%s: not in the summary", n)
		case w.rendered && (strings.HasPrefix(g, "not verified") || strings.HasPrefix(g, "the template does not render")):
			t.Errorf("%s: every image is in its committed catalogs, yet %q", n, g)
		case w.rendered:
			rendered++
		case !strings.HasPrefix(g, "not verified") || !unverifiedImage(res.Findings, n, w.missing):
			t.Errorf("%s: %s is in none of its committed catalogs, yet %q", n, w.missing, g)
		default:
			notVerified++
		}
	}
	warned := 0
	for _, f := range res.Findings {
		if f.Rule == "template.tag-reference" {
			warned++
		}
		if f.Rule == "template.bundle-unverified" && !strings.Contains(f.Message, "catalog") {
			t.Errorf("an unverified image does not say which catalogs were searched: %s", f.Message)
		}
	}
	if tagged > 0 && warned == 0 {
		t.Errorf("%d tag references resolved from the catalogs, no template.tag-reference warning", tagged)
	}
	t.Logf("%d templates rendered offline, %d not verified (an image in none of their catalogs); %d tag references, %d warnings", rendered, notVerified, tagged, warned)
	if rendered == 0 {
		t.Errorf("no template rendered offline:\n%s", res.Summary)
	}
}

// unverifiedImage: a template.bundle-unverified finding on tmpl names img.
func unverifiedImage(fs []catalog.Finding, tmpl, img string) bool {
	for _, f := range fs {
		if f.Rule == "template.bundle-unverified" && f.File == tmpl && strings.Contains(f.Message, img) {
			return true
		}
	}
	return false
}
