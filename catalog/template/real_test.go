package template

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

const realTemplates = "../../../shared/testdata/templates"

func TestRenderCommunityTemplatesFromTheirCatalogs(t *testing.T) {
	if _, err := os.Stat(realTemplates); err != nil {
		t.Skipf("no %s (the shared test data is not on this machine)", realTemplates)
	}
	ctx := context.Background()
	fsys := os.DirFS(realTemplates)
	resolvers := map[string]*CatalogResolver{}
	for _, level := range []string{"none", "bundle-object-to-csv-metadata"} {
		r, _ := NewCatalogResolver(level)
		if err := r.AddFS(ctx, fsys, catalog.Limits{}, "catalogs"); err != nil {
			t.Fatal(err)
		}
		resolvers[level] = r
	}
	pkgs, _ := filepath.Glob(filepath.Join(realTemplates, "operators", "*", "ci.yaml"))
	same, differ, unresolved := 0, 0, 0
	for _, ci := range pkgs {
		pkg := filepath.Base(filepath.Dir(ci))
		data, _ := os.ReadFile(ci)
		maps, err := CIMappings("operators/"+pkg, pkg, data)
		if err != nil {
			t.Errorf("%s: %v", ci, err)
			continue
		}
		for _, m := range maps {
			src, err := os.ReadFile(filepath.Join(realTemplates, m.Template))
			if err != nil {
				t.Errorf("%v", err)
				continue
			}
			tmpl, fs := Parse(m.Template, src, catalog.Limits{})
			if tmpl == nil {
				t.Errorf("%s: %v", m.Template, fs)
				continue
			}
			for _, c := range m.Catalogs {
				want, err := os.ReadFile(filepath.Join(realTemplates, c))
				if err != nil {
					continue
				}
				for _, beh := range []string{"v1.46.0", "v1.69.0"} {
					b, _ := BehaviourOf(beh)
					out, fs := Render(ctx, tmpl, Options{Resolver: resolvers[m.MigrateLevel[c]], Behaviour: b})
					if out == nil {
						unresolved++
						if !strings.Contains(fmt.Sprint(fs), "template.bundle-unresolved") {
							t.Logf("%s -> %s (%s): %v", m.Template, c, beh, fs)
						}
						continue
					}
					var got bytes.Buffer
					if err := out.WriteYAML(&got); err != nil {
						t.Fatal(err)
					}
					drift := Drift(out, c, want, catalog.Limits{}, "fix it")
					if bytes.Equal(got.Bytes(), want) {
						same++
						if len(drift) != 0 {
							t.Errorf("%s -> %s (%s): identical, yet drift reported: %v", m.Template, c, beh, drift)
						}
					} else {
						differ++
						if !hasErrors(drift) {
							t.Errorf("%s -> %s (%s): differs at line %d, yet no drift reported", m.Template, c, beh, firstDiffLine(got.Bytes(), want))
						}
						if beh == "v1.46.0" {
							for _, f := range drift {
								t.Logf("drift: %s", f)
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d identical, %d differ, %d not resolvable offline", same, differ, unresolved)
}

func firstDiffLine(a, b []byte) int {
	la, lb := strings.Split(string(a), "\n"), strings.Split(string(b), "\n")
	for i := range la {
		if i >= len(lb) || la[i] != lb[i] {
			return i + 1
		}
	}
	return len(la) + 1
}
