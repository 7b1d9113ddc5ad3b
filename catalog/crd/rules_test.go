package crd

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
)

// crdDoc wraps an openAPIV3Schema (YAML, indented from column 0) into a
// one-version v1 CRD named samples.test.example.com.
func crdDoc(scope, schema string) string {
	return crdVersions(scope, "", versionDoc("v1alpha1", true, true, schema))
}

func versionDoc(name string, served, storage bool, schema string) string {
	return fmt.Sprintf("  - name: %s\n    served: %t\n    storage: %t\n    schema:\n      openAPIV3Schema:\n%s",
		name, served, storage, indent(schema, "        "))
}

func crdVersions(scope, conversion string, versions ...string) string {
	if scope == "" {
		scope = "Namespaced"
	}
	conv := ""
	if conversion != "" {
		conv = "  conversion:\n    strategy: " + conversion + "\n"
	}
	return `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: samples.test.example.com
spec:
  group: test.example.com
  names:
    kind: Sample
    listKind: SampleList
    plural: samples
    singular: sample
  scope: ` + scope + "\n" + conv + "  versions:\n" + strings.Join(versions, "")
}

func indent(s, pre string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(pre + l + "\n")
	}
	return b.String()
}

// spec builds an object schema whose spec has the given properties (YAML at column 0).
func spec(props string, extra ...string) string {
	s := "type: object\nproperties:\n  spec:\n    type: object\n"
	for _, e := range extra {
		s += indent(e, "    ")
	}
	if props != "" {
		s += "    properties:\n" + indent(props, "      ")
	}
	return s
}

func mustParse(t testing.TB, name, data string) []*CRD {
	t.Helper()
	crds, fs, err := Parse(name, []byte(data))
	if err != nil {
		t.Fatalf("Parse(%s) error %v; findings %v\n%s", name, err, fs, data)
	}
	return crds
}

func ruleIDs(cs []Change) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Rule)
	}
	return out
}

// TestRules checks each rule both ways: the unsafe change and its safe counterpart.
func TestRules(t *testing.T) {
	str := "type: string"
	tests := []struct {
		name     string
		old, new string
		want     []string // rule ids, sorted as Diff sorts (by path, then rule)
	}{
		{"required added", spec("a:\n  type: string"), spec("a:\n  type: string", "required: [a]"), []string{RuleRequiredFieldAdded}},
		{"required made optional", spec("a:\n  type: string", "required: [a]"), spec("a:\n  type: string"), nil},
		{"new optional field", spec("a:\n  type: string"), spec("a:\n  type: string\nb:\n  type: string"), nil},
		{"field removed", spec("a:\n  type: string\nb:\n  type: object\n  properties:\n    c:\n      type: string"), spec("a:\n  type: string"), []string{RuleFieldRemoved}},
		{"type changed", spec("a:\n  type: string"), spec("a:\n  type: integer"), []string{RuleTypeChanged}},
		{"type changed with children, each reported as the preflight does", spec("a:\n  type: object\n  properties:\n    x:\n      type: string"), spec("a:\n  type: string\n  default: x"), []string{RuleDefaultAdded, RuleTypeChanged, RuleFieldRemoved}},
		{"default added", spec("a:\n  type: string"), spec("a:\n  type: string\n  default: x"), []string{RuleDefaultAdded}},
		{"default changed", spec("a:\n  type: string\n  default: x"), spec("a:\n  type: string\n  default: y"), []string{RuleDefaultChanged}},
		{"default removed", spec("a:\n  type: string\n  default: x"), spec("a:\n  type: string"), []string{RuleDefaultRemoved}},
		{"default same value other spelling", spec("a:\n  type: number\n  default: 1"), spec("a:\n  type: number\n  default: 1.0"), nil},
		{"default object key order", spec("a:\n  type: object\n  default: {x: 1, y: 2}"), spec("a:\n  type: object\n  default: {y: 2, x: 1}"), nil},
		{"enum added", spec("a:\n  type: string"), spec("a:\n  type: string\n  enum: [x, y]"), []string{RuleEnumAdded}},
		{"enum dropped entirely (the preflight refuses it)", spec("a:\n  type: string\n  enum: [x, y]"), spec("a:\n  type: string"), []string{RuleEnumValueRemoved}},
		{"enum value removed", spec("a:\n  type: string\n  enum: [x, y]"), spec("a:\n  type: string\n  enum: [x]"), []string{RuleEnumValueRemoved}},
		{"enum value added", spec("a:\n  type: string\n  enum: [x]"), spec("a:\n  type: string\n  enum: [x, y, z]"), nil},
		{"minimum added", spec("a:\n  type: integer"), spec("a:\n  type: integer\n  minimum: 1"), []string{RuleMinimumTightened}},
		{"minimum increased", spec("a:\n  type: integer\n  minimum: 1"), spec("a:\n  type: integer\n  minimum: 2"), []string{RuleMinimumTightened}},
		{"minimum lowered", spec("a:\n  type: integer\n  minimum: 2"), spec("a:\n  type: integer\n  minimum: 1.5"), nil},
		{"minLength added", spec("a:\n  " + str), spec("a:\n  " + str + "\n  minLength: 1"), []string{RuleMinimumTightened}},
		{"minLength removed", spec("a:\n  " + str + "\n  minLength: 1"), spec("a:\n  " + str), nil},
		{"minItems increased", spec("a:\n  type: array\n  minItems: 1\n  items:\n    type: string"), spec("a:\n  type: array\n  minItems: 3\n  items:\n    type: string"), []string{RuleMinimumTightened}},
		{"minProperties added", spec("a:\n  type: object"), spec("a:\n  type: object\n  minProperties: 1"), []string{RuleMinimumTightened}},
		{"maximum added", spec("a:\n  type: integer"), spec("a:\n  type: integer\n  maximum: 10"), []string{RuleMaximumTightened}},
		{"maximum decreased", spec("a:\n  type: integer\n  maximum: 10"), spec("a:\n  type: integer\n  maximum: 9"), []string{RuleMaximumTightened}},
		{"maximum raised", spec("a:\n  type: integer\n  maximum: 10"), spec("a:\n  type: integer\n  maximum: 11"), nil},
		{"maxLength decreased", spec("a:\n  " + str + "\n  maxLength: 10"), spec("a:\n  " + str + "\n  maxLength: 5"), []string{RuleMaximumTightened}},
		{"maxItems raised", spec("a:\n  type: array\n  maxItems: 1\n  items:\n    type: string"), spec("a:\n  type: array\n  maxItems: 3\n  items:\n    type: string"), nil},
		{"maxProperties added", spec("a:\n  type: object"), spec("a:\n  type: object\n  maxProperties: 3"), []string{RuleMaximumTightened}},
		{"pattern added", spec("a:\n  " + str), spec("a:\n  " + str + "\n  pattern: '^a'"), []string{RulePatternAdded}},
		{"pattern changed", spec("a:\n  " + str + "\n  pattern: '^a'"), spec("a:\n  " + str + "\n  pattern: '^b'"), []string{RulePatternChanged}},
		{"pattern removed (the preflight refuses it)", spec("a:\n  " + str + "\n  pattern: '^a'"), spec("a:\n  " + str), []string{RulePatternRemoved}},
		{"nullable removed", spec("a:\n  " + str + "\n  nullable: true"), spec("a:\n  " + str), []string{RuleNullableRemoved}},
		{"nullable added (the preflight refuses it)", spec("a:\n  " + str), spec("a:\n  " + str + "\n  nullable: true"), []string{RuleNullableAdded}},
		{"description only", spec("a:\n  " + str + "\n  description: old words"), spec("a:\n  " + str + "\n  description: new words"), nil},
		{"title added is unknown to the preflight", spec("a:\n  " + str), spec("a:\n  " + str + "\n  title: T"), []string{RuleUnknownChange}},
		{"unknown keys are dropped as the API server drops them", spec("a:\n  " + str + "\n  fromat: x"), spec("a:\n  " + str + "\n  fromat: y"), nil},
		{"description inside additionalProperties is compared whole", spec("a:\n  type: object\n  additionalProperties:\n    type: string\n    description: old"),
			spec("a:\n  type: object\n  additionalProperties:\n    type: string\n    description: new"), []string{RuleUnknownChange}},
		{"format added", spec("a:\n  " + str), spec("a:\n  " + str + "\n  format: date-time"), []string{RuleFormatChanged}},
		{"format narrowed", spec("a:\n  type: integer\n  format: int64"), spec("a:\n  type: integer\n  format: int32"), []string{RuleFormatChanged}},
		{"format removed", spec("a:\n  " + str + "\n  format: date-time"), spec("a:\n  " + str), []string{RuleFormatRemoved}},
		{"title changed is unknown", spec("a:\n  " + str + "\n  title: A"), spec("a:\n  " + str + "\n  title: B"), []string{RuleUnknownChange}},
		{"format unchanged", spec("a:\n  " + str + "\n  format: date-time"), spec("a:\n  " + str + "\n  format: date-time"), nil},
		{"x-kubernetes extension changed is unknown", spec("a:\n  type: object\n  x-kubernetes-preserve-unknown-fields: true"), spec("a:\n  type: object"), []string{RuleUnknownChange}},
		{"CEL rule added", spec("a:\n  " + str), spec("a:\n  " + str + "\n  x-kubernetes-validations:\n  - rule: self.size() > 1"), []string{RuleValidationRulesChanged}},
		{"CEL rule changed", spec("a:\n  " + str + "\n  x-kubernetes-validations:\n  - rule: self.size() > 1"), spec("a:\n  " + str + "\n  x-kubernetes-validations:\n  - rule: self.size() > 2"), []string{RuleValidationRulesChanged}},
		{"CEL rules removed", spec("a:\n  " + str + "\n  x-kubernetes-validations:\n  - rule: self.size() > 1"), spec("a:\n  " + str), []string{RuleValidationRulesRemoved}},
		{"CEL rule added beside a format", spec("a:\n  " + str), spec("a:\n  " + str + "\n  format: date-time\n  x-kubernetes-validations:\n  - rule: self.size() > 1\n  title: T"), []string{RuleFormatChanged, RuleUnknownChange, RuleValidationRulesChanged}},
		{"nested items field removed", spec("a:\n  type: array\n  items:\n    type: object\n    properties:\n      x:\n        type: string\n      y:\n        type: string"),
			spec("a:\n  type: array\n  items:\n    type: object\n    properties:\n      x:\n        type: string"), []string{RuleFieldRemoved}},
		{"additionalProperties schema tightened", spec("a:\n  type: object\n  additionalProperties:\n    type: string"),
			spec("a:\n  type: object\n  additionalProperties:\n    type: string\n    maxLength: 3"), []string{RuleUnknownChange, RuleMaximumTightened}},
		{"additionalProperties removed", spec("a:\n  type: object\n  additionalProperties:\n    type: string"), spec("a:\n  type: object"), []string{RuleUnknownChange, RuleFieldRemoved}},
		{"anyOf branch tightened", spec("a:\n  anyOf:\n  - type: integer\n  - type: string"), spec("a:\n  anyOf:\n  - type: integer\n  - type: string\n    pattern: x"), []string{RuleUnknownChange, RulePatternAdded}},
		{"anyOf branch added is unknown", spec("a:\n  anyOf:\n  - type: integer"), spec("a:\n  anyOf:\n  - type: integer\n  - type: string"), []string{RuleUnknownChange}},
		{"not added is unknown", spec("a:\n  type: string"), spec("a:\n  type: string\n  not:\n    enum: [x]"), []string{RuleUnknownChange}},
		{"items removed", spec("a:\n  type: array\n  items:\n    type: string"), spec("a:\n  type: array"), []string{RuleFieldRemoved}},
		{"non-numeric bound is unknown", spec("a:\n  type: integer\n  maximum: 3"), spec("a:\n  type: integer\n  maximum: three"), []string{RuleUnknownChange}},
		{"exclusiveMaximum added is unknown", spec("a:\n  type: integer\n  maximum: 3"), spec("a:\n  type: integer\n  maximum: 3\n  exclusiveMaximum: true"), []string{RuleUnknownChange}},
		{"not changed", spec("a:\n  type: string\n  not:\n    enum: [x]"), spec("a:\n  type: string\n  not:\n    enum: [x]"), nil},
		{"several causes, several findings", spec("a:\n  type: string\nb:\n  type: integer"), spec("a:\n  type: integer", "required: [a]"),
			[]string{RuleRequiredFieldAdded, RuleTypeChanged, RuleFieldRemoved}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := mustParse(t, "old.yaml", crdDoc("", tc.old))
			new := mustParse(t, "new.yaml", crdDoc("", tc.new))
			got := Diff(old, new, Options{})
			if ids := ruleIDs(got); !slices.Equal(ids, tc.want) {
				t.Errorf("Diff rules = %v, want %v\n%s", ids, tc.want, dump(got))
			}
			if self := Diff(new, new, Options{}); len(self) != 0 {
				t.Errorf("Diff(new, new) = %s, want nothing", dump(self))
			}
		})
	}
}

func dump(cs []Change) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "  %s [%s %s %s] old=%q new=%q\n    %s\n", c.Finding, c.CRD, c.Version, c.Path, c.Old, c.New, c.OLMMessage())
	}
	return b.String()
}

func TestCRDLevelRules(t *testing.T) {
	s := spec("a:\n  type: string")
	v := func(name string, served, storage bool) string { return versionDoc(name, served, storage, s) }
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"scope changed", crdVersions("Namespaced", "", v("v1", true, true)), crdVersions("Cluster", "", v("v1", true, true)), []string{RuleScopeChanged}},
		{"scope kept", crdVersions("Cluster", "", v("v1", true, true)), crdVersions("Cluster", "", v("v1", true, true)), nil},
		{"storage version removed", crdVersions("", "", v("v1alpha1", true, true)), crdVersions("", "", v("v1alpha2", true, true)), []string{RuleStoredVersionRemoved}},
		{"served version removed", crdVersions("", "", v("v1alpha1", true, false), v("v1", true, true)), crdVersions("", "", v("v1", true, true)), []string{RuleServedVersionRemoved}},
		{"unserved version removed", crdVersions("", "", v("v1alpha1", false, false), v("v1", true, true)), crdVersions("", "", v("v1", true, true)), nil},
		{"version unserved", crdVersions("", "", v("v1alpha1", true, false), v("v1", true, true)), crdVersions("", "", v("v1alpha1", false, false), v("v1", true, true)), []string{RuleVersionUnserved}},
		{"storage moved to another version", crdVersions("", "", v("v1alpha1", true, true), v("v1", true, false)), crdVersions("", "", v("v1alpha1", true, false), v("v1", true, true)), nil},
		{"new version added, compatible", crdVersions("", "", v("v1alpha1", true, true)), crdVersions("", "", v("v1alpha1", true, true), v("v1beta1", true, false)), nil},
		{"new served version incompatible, conversion None", crdVersions("", "", v("v1alpha1", true, true)),
			crdVersions("", "None", v("v1alpha1", true, true), versionDoc("v1beta1", true, false, spec("a:\n  type: integer"))), []string{RuleServedVersionIncompatible}},
		{"new served version incompatible, conversion Webhook", crdVersions("", "", v("v1alpha1", true, true)),
			crdVersions("", "Webhook", v("v1alpha1", true, true), versionDoc("v1beta1", true, false, spec("a:\n  type: integer"))), nil},
		{"new unserved version incompatible", crdVersions("", "", v("v1alpha1", true, true)),
			crdVersions("", "", v("v1alpha1", true, true), versionDoc("v1beta1", false, false, spec("b:\n  type: integer"))), nil},
		{"v1beta1 default preserveUnknownFields dropped", strings.Replace(crdVersions("", "", v("v1", true, true)), "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", 1),
			crdVersions("", "", v("v1", true, true)), []string{RulePruningEnabled}},
		{"v1beta1 preserveUnknownFields false kept", strings.Replace(crdVersions("", "", v("v1", true, true)), "apiextensions.k8s.io/v1\n", "apiextensions.k8s.io/v1beta1\n", 1) + "  preserveUnknownFields: false\n",
			crdVersions("", "", v("v1", true, true)), nil},
		{"subresources changed (the preflight does not compare them)", crdVersions("", "", v("v1", true, true)),
			crdVersions("", "", v("v1", true, true)+"    subresources:\n      status: {}\n"), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := mustParse(t, "old.yaml", tc.old)
			new := mustParse(t, "new.yaml", tc.new)
			got := Diff(old, new, Options{})
			if ids := ruleIDs(got); !slices.Equal(ids, tc.want) {
				t.Errorf("Diff rules = %v, want %v\n%s", ids, tc.want, dump(got))
			}
			if self := Diff(new, new, Options{}); len(self) != 0 {
				t.Errorf("Diff(new, new) = %s, want nothing", dump(self))
			}
		})
	}
}

func TestCRDRemoved(t *testing.T) {
	a := crdDoc("", spec(""))
	b := strings.ReplaceAll(a, "samples.test.example.com", "others.test.example.com")
	old := mustParse(t, "old.yaml", a+"---\n"+b)
	new := mustParse(t, "new.yaml", b)
	got := Diff(old, new, Options{})
	if ids := ruleIDs(got); !slices.Equal(ids, []string{RuleCRDRemoved}) {
		t.Fatalf("Diff rules = %v, want [%s]", ids, RuleCRDRemoved)
	}
	if got[0].CRD != "samples.test.example.com" || got[0].File != "old.yaml" || got[0].Line != 4 {
		t.Errorf("got %s at %s, want samples.test.example.com at old.yaml:4", got[0].CRD, got[0].Position)
	}
	// Sets joined from several manifests may name a CRD twice: one finding.
	if got := Diff(append(old, old...), new, Options{}); len(got) != 1 {
		t.Errorf("old set given twice: got %d changes, want 1", len(got))
	}
	// The other way round a CRD is added: safe.
	if got := Diff(new, old, Options{}); len(got) != 0 {
		t.Errorf("adding a CRD: got %s, want nothing", dump(got))
	}
}

// TestSeedExamples checks the examples of the preflight's documentation (OpenShift docs, Extensions:
// Prohibited CRD upgrade changes) and their OLM messages.
func TestSeedExamples(t *testing.T) {
	base := "type: object\nproperties:\n  apiVersion:\n    type: string\n  kind:\n    type: string\n  metadata:\n    type: object\n  spec:\n    type: object\n  status:\n    type: object\n  pollInterval:\n    type: string\n"
	noPoll := strings.Replace(base, "  pollInterval:\n    type: string\n", "", 1)
	// The documentation quotes an older preflight's wording; these are crdify v0.6.0's
	// as operator-controller joins them.
	const pre = `validating upgrade for CRD "samples.test.example.com": `
	tests := []struct {
		name, new string
		want      string
	}{
		{"scope", crdVersions("Cluster", "", versionDoc("v1alpha1", true, true, base)), pre + `scope: scope changed : "Namespaced" -> "Cluster"`},
		{"stored version", crdVersions("", "", versionDoc("v1alpha2", true, true, base)), pre + `storedVersionRemoval: stored versions removed : [v1alpha1]`},
		{"field removed", crdVersions("", "", versionDoc("v1alpha1", true, true, noPoll)),
			pre + `existingFieldRemoval: removed field : v1alpha1.^.pollInterval`},
		{"required", crdVersions("", "", versionDoc("v1alpha1", true, true, base+"required:\n- pollInterval\n")),
			pre + `v1alpha1: ^: required: new required fields: [pollInterval]`},
	}
	old := mustParse(t, "old.yaml", crdVersions("", "", versionDoc("v1alpha1", true, true, base)))
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(old, mustParse(t, "new.yaml", tc.new), Options{})
			if len(got) != 1 {
				t.Fatalf("got %d changes, want 1:\n%s", len(got), dump(got))
			}
			if m := got[0].OLMMessage(); m != tc.want {
				t.Errorf("OLMMessage() =\n  %s\nwant\n  %s", m, tc.want)
			}
		})
	}
}

func TestPositions(t *testing.T) {
	old := mustParse(t, "old.yaml", crdDoc("", spec("a:\n  type: string\nb:\n  type: string")))
	newDoc := crdDoc("", spec("a:\n  type: string\n  default: x"))
	new := mustParse(t, "new.yaml", newDoc)
	got := Diff(old, new, Options{})
	want := []struct {
		rule, path, pos string
	}{
		{RuleDefaultAdded, "^.spec.a", "new.yaml:" + lineNo(newDoc, "default: x")},
		{RuleFieldRemoved, "^.spec.b", "old.yaml:" + lineNo(crdDoc("", spec("a:\n  type: string\nb:\n  type: string")), "b:")},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d:\n%s", len(got), len(want), dump(got))
	}
	for i, w := range want {
		if got[i].Rule != w.rule || got[i].Path != w.path || got[i].Position.String() != w.pos {
			t.Errorf("change %d = %s %s at %s, want %s %s at %s", i, got[i].Rule, got[i].Path, got[i].Position, w.rule, w.path, w.pos)
		}
	}
}

func lineNo(doc, sub string) string {
	for i, l := range strings.Split(doc, "\n") {
		if strings.TrimSpace(l) == sub {
			return fmt.Sprint(i + 1)
		}
	}
	return "?"
}

func TestOverrides(t *testing.T) {
	old := mustParse(t, "old.yaml", crdDoc("", spec("a:\n  type: string")))
	new := mustParse(t, "new.yaml", crdDoc("", spec("a:\n  type: string\n  pattern: x\n  title: y")))
	tests := []struct {
		name string
		ov   Overrides
		want []string
		sevs []catalog.Severity
	}{
		{"defaults", nil, []string{RulePatternAdded, RuleUnknownChange}, []catalog.Severity{catalog.SeverityError, catalog.SeverityError}},
		{"warning", Overrides{RulePatternAdded: catalog.SeverityWarning}, []string{RulePatternAdded, RuleUnknownChange}, []catalog.Severity{catalog.SeverityWarning, catalog.SeverityError}},
		{"ignore", Overrides{RuleUnknownChange: catalog.SeverityIgnore}, []string{RulePatternAdded}, []catalog.Severity{catalog.SeverityError}},
		{"unknown rule", Overrides{"crd.nope": catalog.SeverityIgnore}, []string{RuleInvalidOverride, RulePatternAdded, RuleUnknownChange}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Diff(old, new, Options{Overrides: tc.ov})
			if ids := ruleIDs(got); !slices.Equal(ids, tc.want) {
				t.Fatalf("rules = %v, want %v", ids, tc.want)
			}
			for i, s := range tc.sevs {
				if got[i].Severity != s {
					t.Errorf("%s severity = %s, want %s", got[i].Rule, got[i].Severity, s)
				}
			}
			if err := tc.ov.Validate(); (err != nil) != (tc.name == "unknown rule") {
				t.Errorf("Validate() = %v", err)
			}
		})
	}
	for _, s := range []string{"crd.nope=error", "crd.field-removed=fatal", "crd.field-removed", "=error"} {
		if _, _, err := ParseOverride(s); err == nil {
			t.Errorf("ParseOverride(%q) succeeded, want an error", s)
		}
	}
	if r, s, err := ParseOverride("crd.field-removed=warning"); err != nil || r != RuleFieldRemoved || s != catalog.SeverityWarning {
		t.Errorf("ParseOverride = %s %s %v, want %s warning", r, s, err, RuleFieldRemoved)
	}
}

func TestRulesTable(t *testing.T) {
	seen := map[string]bool{}
	for _, r := range Rules() {
		if seen[r.ID] {
			t.Errorf("rule %s listed twice", r.ID)
		}
		seen[r.ID] = true
		if !strings.HasPrefix(r.ID, "crd.") || r.Summary == "" || r.Hint == "" || r.Source == "" {
			t.Errorf("rule %+v: want a crd. id, summary, hint and source", r)
		}
		if _, err := catalog.ParseSeverity(string(r.Severity)); err != nil || r.Severity == catalog.SeverityIgnore {
			t.Errorf("rule %s: default severity %q", r.ID, r.Severity)
		}
	}
}

// TestPreflightOnlyProfile: each change only the preflight refuses has its own rule id, an error by default
// (the preflight's verdict) and a warning that says so under the compatibility profile; what breaks stored
// objects stays an error under both.
func TestPreflightOnlyProfile(t *testing.T) {
	withStatus := func(specProps, status string) string {
		return "type: object\nproperties:\n  spec:\n    type: object\n    properties:\n" + indent(specProps, "      ") + "  status:\n" + indent(status, "    ")
	}
	old := mustParse(t, "old.yaml", crdDoc("", withStatus(
		"list:\n  type: array\n  items: {type: string}\nmap:\n  type: object\n  additionalProperties: {type: string}\n"+
			"keyed:\n  type: array\n  items: {type: object, properties: {name: {type: string}}}\n"+
			"doc: {type: string}\nnullish: {type: string}\nplain: {type: string}\nkept: {type: string}\n",
		"type: object\nproperties:\n  phase: {type: string}\n")))
	new := mustParse(t, "new.yaml", crdDoc("", withStatus(
		"list:\n  type: array\n  items: {type: string}\n  x-kubernetes-list-type: set\nmap:\n  type: object\n  additionalProperties: {type: string}\n  x-kubernetes-map-type: atomic\n"+
			"keyed:\n  type: array\n  items: {type: object, properties: {name: {type: string}}}\n  x-kubernetes-list-map-keys: [name]\n"+
			"doc: {type: string, example: x}\nnullish: {type: string, nullable: true}\nplain: {type: string, default: \"\"}\n",
		"type: object\n")))
	want := map[string]bool{RuleListTypeAdded: true, RuleMapTypeAdded: true, RuleListMapKeysAdded: true, RuleExampleAdded: true,
		RuleNullableAdded: true, RuleDefaultAdded: true, RuleStatusFieldRemoved: true, RuleFieldRemoved: true}
	for _, profile := range []string{"", ProfilePreflight, ProfileCompatibility} {
		got := Diff(old, new, Options{Profile: profile})
		seen := map[string]bool{}
		for _, c := range got {
			seen[c.Rule] = true
			wantSev := catalog.SeverityError
			if profile == ProfileCompatibility && c.Rule != RuleFieldRemoved {
				wantSev = catalog.SeverityWarning
				if !strings.HasSuffix(c.Message, PreflightOnlyNote) {
					t.Errorf("%s: message %q does not say the preflight refuses it", c.Rule, c.Message)
				}
			}
			if c.Severity != wantSev {
				t.Errorf("profile %q: %s is %s, want %s", profile, c.Rule, c.Severity, wantSev)
			}
			if c.Line <= 0 {
				t.Errorf("%s: no line", c.Rule)
			}
		}
		for r := range want {
			if !seen[r] {
				t.Errorf("profile %q: no %s among\n%s", profile, r, dump(got))
			}
		}
		if len(got) != len(want) {
			t.Errorf("profile %q: %d changes, want %d:\n%s", profile, len(got), len(want), dump(got))
		}
		if Unsafe(got) != true {
			t.Errorf("profile %q: a removed spec field must stay unsafe", profile)
		}
	}
}

// TestMaxChanges: past Options.MaxChanges changes are counted, not kept; each rule left out is one change
// that says how many, with the rule's severity, so the verdict is unchanged.
func TestMaxChanges(t *testing.T) {
	var o, n strings.Builder
	for i := 0; i < 50; i++ {
		fmt.Fprintf(&o, "f%02d: {type: string}\n", i)
		fmt.Fprintf(&n, "f%02d: {type: integer}\n", i)
	}
	old := mustParse(t, "old.yaml", crdDoc("", spec(o.String())))
	new := mustParse(t, "new.yaml", crdDoc("", spec(n.String())))
	if all := Diff(old, new, Options{}); len(all) != 50 {
		t.Fatalf("%d changes, want 50", len(all))
	}
	got := Diff(old, new, Options{MaxChanges: 10})
	if len(got) != 11 || !Unsafe(got) {
		t.Fatalf("%d changes (unsafe %t), want 10 and one count:\n%s", len(got), Unsafe(got), dump(got))
	}
	last := got[10]
	if last.Rule != RuleTypeChanged || last.Severity != catalog.SeverityError || !strings.Contains(last.Message, "40 more crd.type-changed changes not listed") {
		t.Errorf("the count: %+v", last)
	}
}

// TestNearestLine: the line of a path's node in a CRD, or of its nearest ancestor the CRD has.
func TestNearestLine(t *testing.T) {
	data := crdDoc("", spec("list:\n  type: array\n  items:\n    type: object\n    properties:\n      name: {type: string}\nany:\n  allOf:\n  - {minLength: 1}\n"))
	c := mustParse(t, "c.yaml", data)[0]
	lines := strings.Split(data, "\n")
	for path, want := range map[string]string{
		"^.spec.list.items.name":           "name: {type: string}",
		"^.spec.list.items.gone":           "items:",
		"^.spec.gone.deeper":               "spec:",
		"^.spec.any.allOf[0]":              "- {minLength: 1}",
		"^.spec.any.allOf[5]":              "any:",
		"^.spec.list.additionalProperties": "list:",
	} {
		l := c.NearestLine("v1alpha1", path)
		if l < 1 || l > len(lines) || strings.TrimSpace(lines[l-1]) != want {
			got := ""
			if l >= 1 && l <= len(lines) {
				got = lines[l-1]
			}
			t.Errorf("NearestLine(%s) = %d (%q), want the line %q", path, l, got, want)
		}
	}
	if l := c.NearestLine("v9", "^.spec"); l != c.Pos.Line {
		t.Errorf("unknown version: line %d, want the CRD's %d", l, c.Pos.Line)
	}
}
