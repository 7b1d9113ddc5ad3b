package policy

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"testing/fstest"
)

func TestResolveCatalogs(t *testing.T) {
	tree := fstest.MapFS{
		"catalogs/v4.16/etcd/catalog.yaml": {},
		"catalogs/v4.17/etcd/catalog.yaml": {},
		"catalogs/v4.9/x.yaml":             {},
		"catalogs/v4.x":                    {Data: []byte("a file, not a catalog")},
		"catalogs/other/x.yaml":            {},
	}
	for _, tc := range []struct {
		name, catalogs string
		want           []string // resolved paths, or the problem
		problem        string
	}{
		{"pattern", `[{path: "catalogs/v4.*"}]`, []string{"catalogs/v4.16", "catalogs/v4.17", "catalogs/v4.9"}, ""},
		{"class", `[{path: "catalogs/v4.1[67]"}, {path: catalogs/other}]`, []string{"catalogs/v4.16", "catalogs/v4.17", "catalogs/other"}, ""},
		{"literal missing is kept", `[{path: catalogs/v4.20}]`, []string{"catalogs/v4.20"}, ""},
		{"matches nothing", `[{path: catalogs/other}, {path: "catalogs/v5.*"}]`, nil, "4:5: catalog pattern catalogs/v5.* matches no directory of this revision"},
		{"overlaps a literal", `[{path: catalogs/v4.16}, {path: "catalogs/*"}]`, nil, "4:5: catalogs entry names the directory catalogs/v4.16 that the entry at line 3 names too"},
		{"nests", `[{path: "catalogs/*"}, {path: "catalogs/v4.16/*"}]`, nil, "makes catalog catalogs/v4.16/etcd, nested with the catalog of the entry at line 3"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// One entry a line: version on line 1, catalogs on 2, the entries from line 3.
			src := "version: 1\ncatalogs:\n"
			for _, e := range strings.Split(strings.Trim(tc.catalogs, "[]"), "}, ") {
				src += "  - " + strings.TrimSuffix(e, "}") + "}\n"
			}
			src += "maintainers: [alice]\n"
			p, err := Parse(FileName, []byte(src))
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			r, err := p.ResolveCatalogs(tree)
			if tc.problem != "" {
				var pe *ParseError
				if !errors.As(err, &pe) || !strings.Contains(err.Error(), tc.problem) {
					t.Fatalf("error %v, want a ParseError with %q\n%s", err, tc.problem, src)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range r.Catalogs {
				got = append(got, c.Path)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("catalogs %q, want %q", got, tc.want)
			}
			if IsPattern(p.Catalogs[0].Path) && p.Catalogs[0].Pattern == "" {
				t.Error("the parsed policy lost its pattern")
			}
		})
	}
}

func TestCatalogPatternProblems(t *testing.T) {
	for src, want := range map[string]string{
		"catalogs: [{path: \"catalogs/**\"}]":                                  "has a ** segment",
		"catalogs: [{path: \"catalogs/[v\"}]":                                  "is malformed",
		"catalogs: [{path: \"catalogs/v4.*\", image: \"quay.io/a/b:latest\"}]": "cannot name an image",
	} {
		_, err := Parse(FileName, []byte("version: 1\nmaintainers: [alice]\n"+src+"\n"))
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ".catalogbot.yaml:3:") {
			t.Errorf("%s: error %v, want %q at line 3", src, err, want)
		}
	}
}

// Any pattern the parser accepts resolves without a panic, to directories it matches, within the bound.
func FuzzResolveCatalogs(f *testing.F) {
	f.Add("catalogs/v4.*")
	f.Add("[a-z]*/*")
	f.Add("*")
	tree := fstest.MapFS{"catalogs/v4.16/a.yaml": {}, "catalogs/v4.17/b.yaml": {}, "x/y/z.json": {}, "top.yaml": {}}
	f.Fuzz(func(t *testing.T, pattern string) {
		p, err := Parse(FileName, []byte("version: 1\nmaintainers: [alice]\ncatalogs: [{path: "+strconv.Quote(pattern)+"}]\n"))
		if err != nil {
			return
		}
		r, err := p.ResolveCatalogs(tree)
		if err != nil {
			return
		}
		for _, c := range r.Catalogs {
			if IsPattern(c.Path) && c.Pattern == "" {
				t.Fatalf("%q left unresolved", c.Path)
			}
		}
	})
}
