package policy

import (
	"strings"
	"testing"
)

func TestParseTemplates(t *testing.T) {
	src := `version: 1
catalogs: [{path: catalogs}]
maintainers: [alice]
bundles:
  - path: operators
    templatesFromCIYaml: true
    image: quay.io/acme/{package}-bundle:v{version}
templates:
  - path: templates/foo.yaml
    migrateLevel: bundle-object-to-csv-metadata
    opm: v1.46.0
    catalogs:
      - catalogs/v4.17/foo/catalog.yaml
      - {path: catalogs/v4.16/foo/catalog.yaml, migrateLevel: none}
`
	pol, err := Parse(FileName, []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Templates) != 1 {
		t.Fatalf("templates: %+v", pol.Templates)
	}
	tm := pol.Templates[0]
	if tm.Path != "templates/foo.yaml" || tm.Opm != "v1.46.0" || len(tm.Catalogs) != 2 {
		t.Fatalf("template: %+v", tm)
	}
	if tm.Catalogs[0] != (TemplateCatalog{"catalogs/v4.17/foo/catalog.yaml", "bundle-object-to-csv-metadata"}) ||
		tm.Catalogs[1] != (TemplateCatalog{"catalogs/v4.16/foo/catalog.yaml", "none"}) {
		t.Fatalf("catalogs: %+v", tm.Catalogs)
	}
	if b := pol.Bundles[0]; !b.TemplatesFromCIYaml || b.Image != "quay.io/acme/{package}-bundle:v{version}" {
		t.Fatalf("bundle root: %+v", b)
	}
}

func TestParseTemplateProblems(t *testing.T) {
	for name, tc := range map[string]struct{ yaml, want string }{
		"no catalogs":   {"templates:\n  - path: t.yaml\n", "names no catalog"},
		"no path":       {"templates:\n  - catalogs: [c.yaml]\n", "has no path"},
		"bad level":     {"templates:\n  - path: t.yaml\n    migrateLevel: all\n    catalogs: [c.yaml]\n", "not a migrate level"},
		"bad opm":       {"templates:\n  - path: t.yaml\n    opm: latest\n    catalogs: [c.yaml]\n", "not an opm release"},
		"escape":        {"templates:\n  - path: ../t.yaml\n    catalogs: [c.yaml]\n", "not a file path"},
		"twice":         {"templates:\n  - path: t.yaml\n    catalogs: [c.yaml]\n  - path: t.yaml\n    catalogs: [d.yaml]\n", "listed twice"},
		"image pattern": {"bundles:\n  - path: operators\n    image: quay.io/acme/bundle:latest\n", "{package} and {version}"},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(FileName, []byte("version: 1\ncatalogs: [{path: catalogs}]\nmaintainers: [alice]\n"+tc.yaml))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error with %q, got %v", tc.want, err)
			}
		})
	}
}
