package template

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/catalog/bundle"
)

// fakeBundles resolves images named "<package>:<version>" into minimal bundles.
var fakeBundles = ResolverFunc(func(_ context.Context, image string) (*Resolved, error) {
	pkg, version, ok := strings.Cut(image, ":")
	if !ok || strings.HasPrefix(pkg, "missing") {
		return nil, fmt.Errorf("no such image: %w", ErrNotFound)
	}
	val, _ := json.Marshal(map[string]string{"packageName": pkg, "version": version})
	return &Resolved{Bundle: &bundle.Rendered{Schema: "olm.bundle", Name: pkg + ".v" + version, Package: pkg, Image: image,
		Properties: []bundle.Property{{Type: "olm.package", Value: val}}}}, nil
})

func render(t *testing.T, src string) (*Output, []catalog.Finding) {
	t.Helper()
	tmpl, fs := Parse("t.yaml", []byte(src), catalog.Limits{})
	if tmpl == nil {
		return nil, fs
	}
	out, rfs := Render(context.Background(), tmpl, Options{Resolver: fakeBundles})
	return out, append(fs, rfs...)
}

func TestTemplateFindingsOnTheirLines(t *testing.T) {
	for name, tc := range map[string]struct{ src, want string }{
		"no schema":          {"entries: []\n", "t.yaml:1:1: template.schema"},
		"unknown schema":     {"schema: olm.template.fancy\n", "t.yaml:1:9: template.schema"},
		"bad yaml":           {"schema: olm.semver\nstable: [\n", "template.parse"},
		"semver unknown key": {"schema: olm.semver\nstable:\n  bundles: [{image: a:1.0.0}]\nextra: 1\n", "t.yaml:4:1: template.semver-field"},
		"semver bundle key":  {"schema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0.0\n      name: x\n", "t.yaml:5:7: template.semver-field"},
		"preference":         {"schema: olm.semver\ngenerateMajorChannels: true\ndefaultChannelTypePreference: minor\nstable:\n  bundles: [{image: a:1.0.0}]\n", "t.yaml:3:31: template.semver-preference"},
		"not semver":         {"schema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0\n", "t.yaml:4:14: template.bundle-version"},
		"other package":      {"schema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0.0\n    - image: b:1.1.0\n", "t.yaml:5:14: template.bundle-package"},
		"missing bundle":     {"schema: olm.semver\nstable:\n  bundles:\n    - image: missing:1.0.0\n", "t.yaml:4:14: template.bundle-unresolved"},
		"no bundles":         {"schema: olm.semver\n", "template.no-bundles"},
		"build metadata":     {"schema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0.0+1\n    - image: a:1.0.0+2\n", "template.build-metadata"},
		"basic bundle props": {"schema: olm.template.basic\nentries:\n  - schema: olm.bundle\n    image: a:1.0.0\n    package: a\n", "t.yaml:3:5: template.bundle-entry"},
		"basic no schema":    {"schema: olm.template.basic\nentries:\n  - name: a\n", "t.yaml:3:5: template.entry-shape"},
		"basic channel type": {"schema: olm.template.basic\nentries:\n  - schema: olm.channel\n    name: 5\n", "template.entry-shape"},
	} {
		t.Run(name, func(t *testing.T) {
			out, fs := render(t, tc.src)
			if out != nil {
				t.Fatalf("rendered, want a finding %q", tc.want)
			}
			found := false
			for _, f := range fs {
				if strings.Contains(f.String(), tc.want) {
					found = true
				}
			}
			if !found {
				t.Errorf("findings %v lack %q", fs, tc.want)
			}
		})
	}
}

// Semver channels as opm v1.60 and v1.69 make them, on versions crossing minor and major lines.
func TestSemverChannels(t *testing.T) {
	src := "schema: olm.semver\ngenerateMajorChannels: true\nstable:\n  bundles:\n" +
		"    - image: a:1.0.0\n    - image: a:1.0.1\n    - image: a:1.1.0\n    - image: a:2.0.0\n"
	tmpl, fs := Parse("t.yaml", []byte(src), catalog.Limits{})
	if tmpl == nil {
		t.Fatal(fs)
	}
	for _, tc := range []struct{ opm, want string }{
		{"v1.60.0", `{"schema":"olm.channel","name":"stable-v1","package":"a","entries":[{"name":"a.v1.0.0"},{"name":"a.v1.0.1","skips":["a.v1.0.0"]},{"name":"a.v1.1.0","replaces":"a.v1.0.1"}]}`},
		{"v1.69.0", `{"schema":"olm.channel","name":"stable-v1","package":"a","entries":[{"name":"a.v1.0.0"},{"name":"a.v1.0.1","skips":["a.v1.0.0"]},{"name":"a.v1.1.0","replaces":"a.v1.0.1","skips":["a.v1.0.0"]}]}`},
	} {
		beh, _ := BehaviourOf(tc.opm)
		out, fs := Render(context.Background(), tmpl, Options{Resolver: fakeBundles, Behaviour: beh})
		if out == nil {
			t.Fatal(fs)
		}
		var got []string
		for _, b := range out.Blobs {
			if b.Schema == "olm.channel" && b.Name == "stable-v1" {
				got = append(got, string(b.JSON))
			}
			if b.Schema == "olm.package" && !bytes.Contains(b.JSON, []byte(`"defaultChannel":"stable-v2"`)) {
				t.Errorf("%s: package %s, want default channel stable-v2", tc.opm, b.JSON)
			}
		}
		if len(got) != 1 || got[0] != tc.want {
			t.Errorf("%s: stable-v1 = %s\nwant %s", tc.opm, got, tc.want)
		}
	}
}

func FuzzParseAndRender(f *testing.F) {
	f.Add([]byte("schema: olm.semver\nstable:\n  bundles:\n    - image: a:1.0.0\n"))
	f.Add([]byte("schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: a\n  - schema: olm.bundle\n    image: a:1.0.0\n  - {schema: x, n: 1.0e3}\n"))
	f.Add([]byte("{\"schema\":\"olm.semver\",\"GenerateMajorChannels\":true,\"Candidate\":{\"bundles\":[{\"image\":\"a:0.0.1-rc.1\"}]}}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tmpl, fs := Parse("f.yaml", data, catalog.Limits{MaxFileSize: 1 << 20})
		for _, fd := range fs {
			if fd.Rule == "" || fd.Severity == "" || fd.File != "f.yaml" {
				t.Fatalf("finding without rule, severity or file: %+v", fd)
			}
		}
		if tmpl == nil {
			if !hasErrors(fs) {
				t.Fatal("no template and no error")
			}
			return
		}
		out, rfs := Render(context.Background(), tmpl, Options{Resolver: fakeBundles})
		if out == nil {
			if !hasErrors(rfs) {
				t.Fatal("no output and no error")
			}
			return
		}
		var buf bytes.Buffer
		if err := out.WriteJSON(&buf); err != nil {
			t.Fatal(err)
		}
		var y bytes.Buffer
		if err := out.WriteYAML(&y); err != nil {
			t.Fatal(err)
		}
		// What renders is a catalog that the drift check finds equal to itself.
		if d := Drift(out, "c.yaml", y.Bytes(), catalog.Limits{}, "fix"); hasErrors(d) {
			t.Fatalf("drift of a render against itself: %v", d)
		}
	})
}
