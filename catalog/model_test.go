package catalog

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog/load"
)

// loadText builds a catalog from one YAML file's text.
func loadText(t *testing.T, text string) *Catalog {
	t.Helper()
	docs, findings := ParseFile("c.yaml", []byte(text), Limits{})
	return NewCatalog(docs, findings)
}

func TestModelDecoding(t *testing.T) {
	c := loadText(t, `schema: olm.package
name: foo
defaultChannel: stable
icon: {base64data: PHN2Zy8+, mediatype: image/svg+xml}
---
schema: olm.channel
package: foo
name: stable
entries:
  - Name: foo.v1
    name: foo.v2
    REPLACES: foo.v0
    skips: [a, b]
    skipRange: '<2.0.0'
  - null
---
schema: olm.bundle
package: foo
name: foo.v2
image: quay.io/x/foo:2
properties:
  - type: olm.package
    value: {packageName: foo, version: 2.0.0-rc.1}
  - type: olm.gvk
    value: {group: g, version: v1, kind: K}
  - type: olm.package.required
    value: {packageName: bar, versionRange: '>=1.0.0'}
  - type: olm.channel
    value: {channelName: stable, priority: 1.0}
  - type: olm.csv.metadata
    value: {displayName: Foo, keywords: [x], annotations: {a: b}, crdDescriptions: {owned: [{name: ks.g, version: v1, kind: K}]}}
  - type: olm.bundle.object
    value: {data: `+base64.StdEncoding.EncodeToString([]byte("kind: ConfigMap\n"))+`}
  - type: com.example.mine
    value: [1, 2]
relatedImages:
  - {name: op, image: quay.io/x/op:2}
---
schema: olm.deprecations
package: foo
entries:
  - reference: {schema: olm.bundle, name: foo.v2}
    message: old
---
schema: olm.channel
package: ghost
name: s
entries: []
---
schema: my.schema
name: other
`)
	if len(c.LoadFindings) != 0 {
		t.Fatalf("load findings: %v", c.LoadFindings)
	}
	if got := []string{c.Packages[0].Name, c.Packages[1].Name}; !reflect.DeepEqual(got, []string{"foo", "ghost"}) {
		t.Fatalf("packages = %q, want foo, ghost (sorted)", got)
	}
	p := c.Package("foo")
	if !p.Declared || p.DefaultChannel != "stable" || p.Icon == nil || p.Icon.MediaType != "image/svg+xml" {
		t.Errorf("package = %+v", p)
	}
	if g := c.Package("ghost"); g.Declared || len(g.Channels) != 1 {
		t.Errorf("ghost package = %+v, want undeclared with one channel", g)
	}
	if len(c.Others) != 1 || c.Others[0].Schema != "my.schema" {
		t.Errorf("others = %v", c.Others)
	}
	ch := p.Channel("stable")
	if len(ch.Entries) != 2 {
		t.Fatalf("entries = %d, want 2 (null decodes to an empty entry, as in opm)", len(ch.Entries))
	}
	e := ch.Entries[0]
	// Keys match case-insensitively; of Name and name, opm keeps the one
	// sorting last in byte order ("name").
	if e.Name != "foo.v2" || e.Replaces != "foo.v0" || !reflect.DeepEqual(e.Skips, []string{"a", "b"}) || e.SkipRange != "<2.0.0" {
		t.Errorf("entry = %+v", e)
	}
	if e.NamePos.Line != 11 || e.ReplacesPos.Line != 12 || e.SkipsPos[1].Line != 13 || e.SkipRangePos.Line != 14 {
		t.Errorf("entry positions = %v %v %v %v", e.NamePos, e.ReplacesPos, e.SkipsPos, e.SkipRangePos)
	}
	if ch.Entries[1].Name != "" {
		t.Errorf("null entry name = %q", ch.Entries[1].Name)
	}
	b := p.Bundle("foo.v2")
	if b == nil || b.Image != "quay.io/x/foo:2" || b.ImagePos.Line != 20 {
		t.Fatalf("bundle = %+v", b)
	}
	pp, ok := b.PackageProperty()
	if !ok || pp.PackageName != "foo" || pp.Version != "2.0.0-rc.1" || pp.VersionPos.Line != 23 {
		t.Errorf("olm.package = %+v, %v", pp, ok)
	}
	v, err := b.Version()
	if err != nil || v.String() != "2.0.0-rc.1" {
		t.Errorf("Version() = %v, %v", v, err)
	}
	if got := b.GVKs(); !reflect.DeepEqual(got, []GVK{{"g", "v1", "K"}}) {
		t.Errorf("GVKs = %v", got)
	}
	if got := b.RequiredPackages(); len(got) != 1 || got[0].PackageName != "bar" || got[0].VersionRange != ">=1.0.0" {
		t.Errorf("RequiredPackages = %v", got)
	}
	if cp, ok := b.Properties[3].AsChannel(); !ok || cp.Priority != 1 || cp.ChannelName != "stable" {
		t.Errorf("AsChannel = %+v, %v", cp, ok)
	}
	md, ok := b.CSVMetadata()
	if !ok || md.DisplayName != "Foo" || md.Annotations["a"] != "b" || len(md.OwnedCRDs) != 1 || md.OwnedCRDs[0].Name != "ks.g" {
		t.Errorf("CSVMetadata = %+v, %v", md, ok)
	}
	objs, err := b.Objects()
	if err != nil || len(objs) != 1 || string(objs[0]) != "kind: ConfigMap\n" {
		t.Errorf("Objects() = %q, %v", objs, err)
	}
	if other := b.Properties[6]; other.Type != "com.example.mine" || other.Value.Kind != KindArray {
		t.Errorf("unknown property not kept verbatim: %+v", other)
	}
	if len(b.RelatedImages) != 1 || b.RelatedImages[0].Image != "quay.io/x/op:2" {
		t.Errorf("related images = %+v", b.RelatedImages)
	}
	if d := p.Deprecation(SchemaBundle, "foo.v2"); d == nil || d.Message != "old" {
		t.Errorf("Deprecation(bundle foo.v2) = %+v", d)
	}
	if d := p.Deprecation(SchemaPackage, ""); d != nil {
		t.Errorf("Deprecation(package) = %+v, want nil", d)
	}
}

func TestBundleVersionStrictness(t *testing.T) {
	tests := []struct {
		version string
		ok      bool
	}{
		{"1.0.0", true}, {"1.0.0-rc.1+b.2", true}, {"0.0.0", true},
		{"v1.0.0", false}, {"1.0", false}, {"01.0.0", false}, {"1.0.0-01", false},
		// Masterminds' StrictNewVersion accepts these; opm does not.
		{"1.0.0-", false}, {"1.0.0+", false}, {"1.0.0-a..b", false},
	}
	for _, tt := range tests {
		c := loadText(t, "schema: olm.package\nname: foo\ndefaultChannel: s\n---\nschema: olm.channel\npackage: foo\nname: s\nentries: [{name: b}]\n---\n"+
			"schema: olm.bundle\npackage: foo\nname: b\nimage: quay.io/x/b:1\nproperties:\n  - type: olm.package\n    value: {packageName: foo, version: '"+tt.version+"'}\n")
		_, err := c.Package("foo").Bundle("b").Version()
		if (err == nil) != tt.ok {
			t.Errorf("Version() of %q: error %v, want ok=%v", tt.version, err, tt.ok)
		}
		fs := Validate(c, ValidateOptions{})
		flagged := false
		for _, f := range fs {
			flagged = flagged || f.Rule == ruleBundleVersionInvalid
		}
		if flagged == tt.ok {
			t.Errorf("version %q: bundle.version-invalid reported = %v, want %v", tt.version, flagged, !tt.ok)
		}
	}
}

// TestShapeLikeEncodingJSON pins the decoding rules opm inherits from encoding/json.
func TestShapeLikeEncodingJSON(t *testing.T) {
	tests := []struct {
		name, value string
		shape       *shape
		wantErr     string // substring of the first error, "" for none
	}{
		{"null is fine for a string", `null`, shString, ""},
		{"number is not a string", `5`, shString, "a number 5"},
		{"integral float is an int", `1.0`, shInt, ""},
		{"fraction is not an int", `1.5`, shInt, "an integer"},
		{"int32 overflow", `3000000000`, shInt32, "an integer (32-bit)"},
		{"int64 fits", `3000000000`, shInt, ""},
		{"huge is not an int", `1e21`, shInt, "an integer"},
		{"base64", `"aGk="`, shBytes, ""},
		{"base64 with newlines", "\"aG\\nk=\"", shBytes, ""},
		{"base64 without padding", `"aGk"`, shBytes, "standard base64"},
		{"url-safe base64", `"_-8="`, shBytes, "standard base64"},
		{"bytes as numbers", `[104, 105]`, shBytes, ""},
		{"bytes out of range", `[256]`, shBytes, "byte value"},
		{"unknown keys ignored", `{"other": 5}`, shPackageProp, ""},
		{"keys fold", `{"VERSION": 5}`, shPackageProp, "VERSION is a number"},
		{"list of strings", `["a", null]`, shStrings, ""},
		{"map values", `{"a": "b", "c": true}`, shStringMap, "c is a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, fs := ParseFile("v.json", []byte(`{"schema":"x","v":`+tt.value+`}`), Limits{})
			if len(fs) > 0 || len(docs) != 1 {
				t.Fatalf("test value does not parse: %v", fs)
			}
			errs := checkShape(docs[0].Value.Get("v"), tt.shape, "v", nil)
			switch {
			case tt.wantErr == "" && len(errs) > 0:
				t.Errorf("got error %q, want none", errs[0].message())
			case tt.wantErr != "" && len(errs) == 0:
				t.Errorf("got no error, want one containing %q", tt.wantErr)
			case tt.wantErr != "" && !strings.Contains(errs[0].message(), tt.wantErr):
				t.Errorf("got error %q, want one containing %q", errs[0].message(), tt.wantErr)
			}
		})
	}
}

func TestRulesTable(t *testing.T) {
	ids := map[string]bool{}
	for _, r := range Rules() {
		ids[r.ID] = true
	}
	for _, r := range modelRules() {
		if modelRuleIndex()[r.ID].ID != r.ID {
			t.Errorf("rule %s missing from the index", r.ID)
		}
	}
	for _, r := range load.Rules() {
		if !ids[r.ID] {
			t.Errorf("loader rule %s not in Rules()", r.ID)
		}
	}
}
