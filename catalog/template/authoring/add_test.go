package authoring

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/template"
	syaml "sigs.k8s.io/yaml"
)

type basicDoc struct {
	Schema  string           `json:"schema"`
	Entries []map[string]any `json:"entries"`
}

// Taking the newest bundle out of each generated basic template and adding it back with AddBundle (its image,
// channels, replaces, skips and skipRange, as a catalog update does) renders to exactly what opm v1.60.0
// rendered of the original template.
func TestAddBundleRendersAsTheOriginal(t *testing.T) {
	ctx := context.Background()
	dirs := realBundleDirs(t)
	res := template.NewDirResolver(os.DirFS(realBundles), dirs, "", "none").AnyRepository()
	beh, _ := template.BehaviourOf("v1.60.0")
	cases, _ := filepath.Glob("../testdata/opm/*-basic/template.yaml")
	n := 0
	for _, c := range cases {
		src, _ := os.ReadFile(c)
		var doc basicDoc
		if err := syaml.Unmarshal(src, &doc); err != nil {
			t.Fatal(err)
		}
		var add Addition
		var kept []map[string]any
		for _, e := range doc.Entries {
			if e["schema"] == "olm.channel" && e["name"] == "stable" {
				add.Package = e["package"].(string)
				list := e["entries"].([]any)
				last := list[len(list)-1].(map[string]any)
				add.Name = last["name"].(string)
				add.Replaces, _ = last["replaces"].(string)
				add.SkipRange, _ = last["skipRange"].(string)
				for _, s := range asList(last["skips"]) {
					add.Skips = append(add.Skips, s.(string))
				}
			}
		}
		// The generated templates list the newest bundle bare in channel fast: only stable gets it back.
		add.Channels = []string{"stable"}
		firstBundle := true
		for _, e := range doc.Entries {
			switch {
			case e["schema"] == "olm.bundle" && firstBundle: // the newest comes first in these templates
				add.Image, firstBundle = e["image"].(string), false
				continue
			case e["schema"] == "olm.channel" && e["name"] == "stable":
				var entries []any
				for _, it := range e["entries"].([]any) {
					if it.(map[string]any)["name"] != add.Name {
						entries = append(entries, it)
					}
				}
				if entries == nil {
					entries = []any{}
				}
				e["entries"] = entries
			}
			kept = append(kept, e)
		}
		doc.Entries = kept
		base, err := syaml.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		added, err := AddBundle(base, add)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if _, err := AddBundle(added, add); !errors.Is(err, ErrAlreadyThere) {
			t.Errorf("%s: adding twice: %v", c, err)
		}
		tmpl, fs := template.Parse(c, added, catalog.Limits{})
		if tmpl == nil {
			t.Fatalf("%s: %v\n%s", c, fs, added)
		}
		out, fs := template.Render(ctx, tmpl, template.Options{Resolver: res, Behaviour: beh})
		if out == nil {
			t.Fatalf("%s: %v", c, fs)
		}
		var y bytes.Buffer
		_ = out.WriteYAML(&y)
		var g opmGolden
		data, _ := os.ReadFile(filepath.Join(filepath.Dir(c), "opm-v1.60.0.json"))
		if err := json.Unmarshal(data, &g); err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(y.Bytes())
		if hex.EncodeToString(sum[:]) != g.Outputs["yaml"] {
			t.Errorf("%s: after AddBundle the render differs from opm's of the original\n%s", c, added)
		}
		n++
	}
	t.Logf("%d templates: the bundle added back renders as the original", n)
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

func TestAddBundleSemver(t *testing.T) {
	src := "# our template\nschema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0.0\n"
	out, err := AddBundle([]byte(src), Addition{Package: "a", Name: "a.v1.1.0", Image: "a:1.1.0", Channels: []string{"candidate-v1", "stable"}})
	if err != nil {
		t.Fatal(err)
	}
	s := string(out)
	if !strings.Contains(s, "# our template") || !strings.Contains(s, "stable:\n  bundles:\n    - image: a:1.0.0\n    - image: a:1.1.0\n") || !strings.Contains(s, "candidate:\n  bundles:\n    - image: a:1.1.0\n") {
		t.Errorf("semver after AddBundle:\n%s", s)
	}
	if _, err := AddBundle([]byte("schema: olm.semver\nstable: {bundles: [{image: a:1.0.0}]}\n"), Addition{Package: "a", Name: "a.v1", Image: "a:1.0.0", Channels: []string{"stable"}}); !errors.Is(err, ErrAlreadyThere) {
		t.Errorf("adding an image twice: %v", err)
	}
	if _, err := AddBundle([]byte("schema: olm.fancy\n"), Addition{Package: "a", Name: "a", Image: "a"}); err == nil {
		t.Error("an unknown schema is an error")
	}
}

func TestAddBundleBasicNewChannel(t *testing.T) {
	src := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: a\n    defaultChannel: stable\n  - schema: olm.channel\n    package: a\n    name: stable\n    entries:\n      - name: a.v1.0.0\n  - schema: olm.bundle\n    image: a:1.0.0\n"
	out, err := AddBundle([]byte(src), Addition{Package: "a", Name: "a.v1.1.0", Image: "a:1.1.0", Channels: []string{"stable", "beta"}, Replaces: "a.v1.0.0", SkipRange: "<1.1.0"})
	if err != nil {
		t.Fatal(err)
	}
	tmpl, fs := template.Parse("t.yaml", out, catalog.Limits{})
	if tmpl == nil {
		t.Fatal(fs)
	}
	var order []string
	for _, e := range tmpl.Entries {
		order = append(order, e.Schema+":"+e.Name+e.Image)
	}
	if got := strings.Join(order, " "); got != "olm.package:a olm.channel:stable olm.channel:beta olm.bundle:a:1.0.0 olm.bundle:a:1.1.0" {
		t.Errorf("entries %s\n%s", got, out)
	}
	rendered, fs := template.Render(context.Background(), tmpl, template.Options{Resolver: fakeBundles})
	if rendered == nil {
		t.Fatal(fs)
	}
	var buf bytes.Buffer
	_ = rendered.WriteJSON(&buf)
	for _, want := range []string{`"name": "beta"`, `"replaces": "a.v1.0.0"`, `"skipRange": "<1.1.0"`, `"name": "a.v1.1.0"`} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("render lacks %s:\n%s", want, buf.String())
		}
	}
}
