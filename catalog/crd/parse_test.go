package crd

import (
	"context"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

func TestParseBadInput(t *testing.T) {
	deep := "type: object\nproperties:\n"
	ind := "  "
	for i := 0; i < 90; i++ {
		deep += ind + "a:\n" + ind + "  type: object\n" + ind + "  properties:\n"
		ind += "    "
	}
	deep += ind + "b: {type: string}\n"
	tests := []struct {
		name, data string
		rule       string
		line       int
	}{
		{"not a CRD", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n", RuleNotACRD, 1},
		{"CRD after a non-CRD", "apiVersion: v1\nkind: Service\n---\n" + crdDoc("", spec("")), RuleNotACRD, 1},
		{"invalid YAML", crdDoc("", spec("")) + "  bad: [unclosed\n", RuleInvalidDocument, 0},
		{"tab indentation", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n\tname: x\n", RuleInvalidDocument, 0},
		{"JSON syntax", `{"apiVersion": "apiextensions.k8s.io/v1", "kind": }`, RuleInvalidDocument, 1},
		{"missing schema", strings.Replace(crdDoc("", spec("")), "    schema:\n      openAPIV3Schema:\n", "    x:\n      y:\n", 1), RuleMissingSchema, 14},
		{"no name", strings.Replace(crdDoc("", spec("")), "  name: samples.test.example.com\n", "  labels: {}\n", 1), RuleInvalidCRD, 1},
		{"bad scope", crdDoc("Everywhere", spec("")), RuleInvalidCRD, 12},
		{"no versions", strings.Split(crdDoc("", spec("")), "  versions:")[0], RuleInvalidCRD, 4},
		{"duplicate version", crdVersions("", "", versionDoc("v1", true, true, "type: object"), versionDoc("v1", true, false, "type: object")), RuleInvalidCRD, 20},
		{"properties not a map", crdDoc("", "type: object\nproperties: [a, b]\n"), RuleInvalidCRD, 20},
		{"too deep", crdDoc("", deep), RuleSchemaTooLarge, 0},
		{"duplicate CRD", crdDoc("", spec("")) + "---\n" + crdDoc("", spec("")), RuleDuplicateCRD, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, fs, err := Parse("in.yaml", []byte(tc.data))
			if err == nil {
				t.Fatalf("Parse succeeded, want a %s error; findings %v", tc.rule, fs)
			}
			var f *catalog.Finding
			for i := range fs {
				if fs[i].Rule == tc.rule {
					f = &fs[i]
					break
				}
			}
			if f == nil {
				t.Fatalf("findings %v, want one with rule %s", fs, tc.rule)
			}
			if f.File != "in.yaml" || f.Line < 1 || (tc.line > 0 && f.Line != tc.line) {
				t.Errorf("finding at %s, want in.yaml:%d (%s)", f.Position, tc.line, f.Message)
			}
			if f.Severity != catalog.SeverityError || f.Message == "" {
				t.Errorf("finding %+v: want an error with a message", f)
			}
		})
	}
}

func TestParseManifestsSkipsOthers(t *testing.T) {
	data := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x.v1\n---\n" + crdDoc("", spec(""))
	crds, fs, err := ParseManifests("bundle.yaml", []byte(data))
	if err != nil || len(fs) != 0 {
		t.Fatalf("ParseManifests: %v %v, want no findings", err, fs)
	}
	if len(crds) != 1 || crds[0].Name != "samples.test.example.com" || crds[0].Pos.Line != 9 {
		t.Fatalf("got %d CRDs (%+v), want samples.test.example.com at line 9", len(crds), crds)
	}
}

func TestParseV1beta1(t *testing.T) {
	data := `apiVersion: apiextensions.k8s.io/v1beta1
kind: CustomResourceDefinition
metadata:
  name: gadgets.example.com
spec:
  group: example.com
  names: {kind: Gadget, plural: gadgets}
  scope: Namespaced
  subresources: {status: {}}
  validation:
    openAPIV3Schema:
      type: object
      properties:
        shared: {type: string}
  versions:
  - name: v1alpha1
    served: true
    storage: false
  - name: v1beta1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          own: {type: integer}
`
	crds := mustParse(t, "in.yaml", data)
	if len(crds) != 1 || len(crds[0].Versions) != 2 {
		t.Fatalf("got %+v, want one CRD with two versions", crds)
	}
	a, b := crds[0].Version("v1alpha1"), crds[0].Version("v1beta1")
	if a.Schema.Property("shared") == nil || b.Schema.Property("own") == nil || b.Schema.Property("shared") != nil {
		t.Errorf("v1alpha1 should use spec.validation and v1beta1 its own schema")
	}
	if a.Subresources != `{"status":{}}` || !b.Storage || a.Storage {
		t.Errorf("got subresources %q storage %t/%t", a.Subresources, a.Storage, b.Storage)
	}

	single := strings.Replace(data, "  versions:\n", "  version: v1\n  xversions:\n", 1)
	crds = mustParse(t, "in.yaml", single)
	if v := crds[0].Version("v1"); v == nil || !v.Served || !v.Storage || v.Schema.Property("shared") == nil {
		t.Errorf("spec.version alone: got %+v, want one served storage version v1 with the shared schema", crds[0].Versions)
	}
}

func TestCompareKubeVersions(t *testing.T) {
	// Least preferred first, as the API server ranks versions: other names
	// in reverse alphabetical order, then alpha, beta and GA releases, each
	// by major and minor version.
	ordered := []string{"v1gamma1", "v1-10-0", "v0x", "foo", "v1alpha1", "v2alpha1", "v1beta1", "v1beta10", "v2beta1", "v1", "v2", "v10"}
	for i := range ordered {
		for j := range ordered {
			got := compareKubeVersions(ordered[i], ordered[j])
			if (i < j && got >= 0) || (i > j && got <= 0) || (i == j && got != 0) {
				t.Errorf("compareKubeVersions(%s, %s) = %d, want the order %v", ordered[i], ordered[j], got, ordered)
			}
		}
	}
}

func TestSchemaNodeLimit(t *testing.T) {
	var props strings.Builder
	for i := 0; i < 50; i++ {
		props.WriteString("  f" + strings.Repeat("x", i) + ": {type: string}\n")
	}
	data := crdDoc("", "type: object\nproperties:\n"+props.String())
	docs, _ := catalog.ParseFile("in.yaml", []byte(data), catalog.Limits{})
	if len(docs) != 1 {
		t.Fatalf("ParseFile: %d docs, want 1", len(docs))
	}
	if c, _ := crdFromValue(context.Background(), "in.yaml", &docs[0].Value, Limits{MaxDepth: 10, MaxNodes: 51}); c == nil {
		t.Fatalf("51 nodes refused with a limit of 51")
	}
	c, cfs := crdFromValue(context.Background(), "in.yaml", &docs[0].Value, Limits{MaxDepth: 10, MaxNodes: 50})
	if c != nil || len(cfs) != 1 || cfs[0].Rule != RuleSchemaTooLarge {
		t.Fatalf("got %v %v, want one %s finding", c, cfs, RuleSchemaTooLarge)
	}
}

func TestParseList(t *testing.T) {
	doc := crdDoc("", spec("a: {type: string}"))
	data := "apiVersion: v1\nkind: List\nitems:\n- " + strings.ReplaceAll(strings.TrimSuffix(doc, "\n"), "\n", "\n  ") + "\n"
	crds := mustParse(t, "list.yaml", data)
	if len(crds) != 1 || crds[0].Name != "samples.test.example.com" || crds[0].Pos.Line != 7 {
		t.Fatalf("got %d CRDs (%+v), want samples.test.example.com at line 7", len(crds), crds)
	}
}
