package main

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const sharedTemplates = "../../../shared/testdata/templates"

// copyTree writes every file under src into the test repository under dst.
func copyTree(t *testing.T, write func(name, body string), src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		write(filepath.ToSlash(filepath.Join(dst, rel)), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Pull requests on a copy of the community layout for kube-green (its ci.yaml catalog mapping, basic template
// and the catalogs rendered from it for OpenShift 4.15 to 4.21), checked by `catalog-check check --checks
// templates` on a real git repository: bundle images resolve from the base's catalogs (they are pinned by
// digest), nothing is pulled.
func TestCheckTemplateDrift(t *testing.T) {
	if _, err := os.Stat(sharedTemplates); err != nil {
		t.Skipf("no %s (the shared test data is not on this machine)", sharedTemplates)
	}
	dir, git, write := testRepo(t)
	versions := []string{"v4.15", "v4.16", "v4.17", "v4.18", "v4.19", "v4.20", "v4.21"}
	var roots []string
	for _, v := range versions {
		roots = append(roots, "{path: catalogs/"+v+"}")
		copyTree(t, write, filepath.Join(sharedTemplates, "catalogs", v, "kube-green"), "catalogs/"+v+"/kube-green")
	}
	write(".catalogbot.yaml", "version: 1\ncatalogs: ["+strings.Join(roots, ", ")+"]\nbundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\nmaintainers: [alice]\n")
	copyTree(t, write, filepath.Join(sharedTemplates, "operators", "kube-green"), "operators/kube-green")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	read := func(name string) string {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	pr := func(branch string, edit func()) string {
		git("checkout", "-q", "-b", branch, base)
		edit()
		git("add", "-A")
		git("commit", "-q", "-m", branch)
		return git("rev-parse", "HEAD")
	}
	const tmpl = "operators/kube-green/catalog-templates/basic-template.yaml"
	const v418 = "catalogs/v4.18/kube-green/catalog.yaml"
	handEdit := pr("hand-edit", func() {
		write(v418, strings.Replace(read(v418), "replaces: kube-green.v0.6.0", "replaces: kube-green.v0.5.2", 1))
	})
	templateOnly := pr("template-only", func() {
		write(tmpl, strings.Replace(read(tmpl), "  name: alpha\n", "  name: alpha\n  properties:\n  - type: example.note\n    value: {note: edited}\n", 1))
	})
	oneVersion := pr("one-version", func() {
		c := read(v418)
		i := strings.LastIndex(c, "---\nimage: ")
		write(v418, c[:i])
	})
	readme := pr("unrelated", func() { write("README.md", "hello\n") })
	for _, tc := range []struct {
		name, head string
		code       int
		want       []string
	}{
		{"nothing about kube-green changes", readme, exitPass, nil},
		{"a hand edit of one rendered catalog", handEdit, exitFail, []string{"template.drift-changed " + v418 + ":26"}},
		{"a template change not rendered", templateOnly, exitFail, nil},
		{"a bundle dropped from one OCP version", oneVersion, exitFail, []string{"template.drift-missing " + tmpl}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, "davidebianchi", "templates")
			if code != tc.code {
				t.Fatalf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, r := range v.Results {
				for _, f := range r.Findings {
					if f.Severity != "error" {
						continue
					}
					if !strings.Contains(f.Message, "catalog-check template render "+tmpl+" --output yaml") {
						t.Errorf("finding without the fix command: %s", f.Message)
					}
					got = append(got, f.Rule+" "+f.File+lineSuffix(f.Line))
				}
			}
			if tc.want == nil && tc.code == exitFail {
				// Every one of the seven catalogs lacks the edit: one finding per catalog.
				if len(got) != len(versions) {
					t.Errorf("findings %q, want one per catalog\n%s", got, out)
				}
				// The catalogs did not change: the findings sit on the template's changed line (3).
				for _, g := range got {
					if !strings.HasPrefix(g, "template.drift-changed "+tmpl+":") {
						t.Errorf("finding %q is not on the template's changed line", g)
					}
				}
				return
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(got, func(g string) bool { return strings.HasPrefix(g, w) }) {
					t.Errorf("findings %q lack %q\n%s", got, w, out)
				}
			}
			if tc.want == nil && len(got) > 0 {
				t.Errorf("unexpected findings %q", got)
			}
		})
	}
}

func lineSuffix(n int) string {
	if n == 0 {
		return ""
	}
	return ":" + itoa(n)
}

func itoa(n int) string { return strconv.Itoa(n) }
