package crd

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
)

// The differential test: generated old/new CRD pairs, judged by us and by
// crdify v0.6.0 run with operator-controller's preflight configuration. The
// goldens are crdify's verdicts, recorded by scripts/record-crdify-golden.sh:
// it writes the pairs with -crdify.write, runs crdify on each and folds the
// results into the golden file with -crdify.record.
var (
	crdifyWrite  = flag.String("crdify.write", "", "write the generated CRD pairs under this directory and stop")
	crdifyRecord = flag.String("crdify.record", "", "read crdify's results from this directory and rewrite the crdify golden file")
)

const crdifyGolden = "testdata/crdify/golden.txt"

// crdPair is one generated upgrade: an old and a new CRD document (JSON).
type crdPair struct {
	name     string
	old, new map[string]any
}

// keyword is one JSONSchemaProps keyword with two values and the type of
// the node that carries it.
type keyword struct {
	key  string
	host string // the node's type: string, integer, array, object, or "" (none)
	a, b any
}

// keywords covers every keyword of apiextensions.k8s.io/v1 JSONSchemaProps that
// a CRD may use (id, $schema, $ref, patternProperties, dependencies,
// additionalItems and definitions are refused by the API server).
var keywords = []keyword{
	{"type", "", "string", "integer"},
	{"format", "string", "email", "date-time"},
	{"title", "string", "A", "B"},
	{"description", "string", "A", "B"},
	{"default", "string", "a", "b"},
	{"maximum", "integer", 10, 5},
	{"exclusiveMaximum", "integer", true, false},
	{"minimum", "integer", 1, 5},
	{"exclusiveMinimum", "integer", true, false},
	{"multipleOf", "integer", 2, 4},
	{"maxLength", "string", 10, 5},
	{"minLength", "string", 1, 5},
	{"pattern", "string", "^a", "^b"},
	{"enum", "string", []any{"a", "b"}, []any{"a"}},
	{"enum", "string", []any{"a", "b"}, []any{"b", "a", "c"}},
	{"maxItems", "array", 10, 5},
	{"minItems", "array", 1, 5},
	{"uniqueItems", "array", true, false},
	{"items", "array", map[string]any{"type": "string"}, map[string]any{"type": "integer"}},
	{"items", "array", map[string]any{"type": "string"}, map[string]any{"type": "string", "description": "d"}},
	{"maxProperties", "object", 10, 5},
	{"minProperties", "object", 1, 5},
	{"required", "object", []any{"x"}, []any{"x", "y"}},
	{"properties", "object", map[string]any{"x": map[string]any{"type": "string"}}, map[string]any{"x": map[string]any{"type": "string"}, "y": map[string]any{"type": "string"}}},
	{"properties", "object", map[string]any{"x": map[string]any{"type": "string"}}, map[string]any{"x": map[string]any{"type": "integer"}}},
	{"additionalProperties", "object", true, false},
	{"additionalProperties", "object", map[string]any{"type": "string"}, map[string]any{"type": "integer"}},
	{"additionalProperties", "object", map[string]any{"type": "string"}, map[string]any{"type": "string", "description": "d"}},
	{"additionalProperties", "object", map[string]any{"type": "string", "enum": []any{"a"}}, map[string]any{"type": "string", "enum": []any{"a", "b"}}},
	{"allOf", "string", []any{map[string]any{"minLength": 1}}, []any{map[string]any{"minLength": 2}}},
	{"allOf", "string", []any{map[string]any{"minLength": 1}}, []any{map[string]any{"minLength": 1, "description": "d"}}},
	{"anyOf", "string", []any{map[string]any{"pattern": "^a"}}, []any{map[string]any{"pattern": "^a"}, map[string]any{"pattern": "^b"}}},
	{"oneOf", "string", []any{map[string]any{"maxLength": 3}}, []any{map[string]any{"maxLength": 4}}},
	{"not", "string", map[string]any{"pattern": "^a"}, map[string]any{"pattern": "^b"}},
	{"nullable", "string", true, false},
	{"externalDocs", "string", map[string]any{"url": "https://a.example.com"}, map[string]any{"url": "https://b.example.com"}},
	{"example", "string", "a", "b"},
	{"x-kubernetes-preserve-unknown-fields", "object", true, false},
	{"x-kubernetes-embedded-resource", "object", true, false},
	{"x-kubernetes-int-or-string", "", true, false},
	{"x-kubernetes-list-map-keys", "array", []any{"name"}, []any{"name", "port"}},
	{"x-kubernetes-list-type", "array", "atomic", "set"},
	{"x-kubernetes-map-type", "object", "atomic", "granular"},
	{"x-kubernetes-validations", "string", []any{map[string]any{"rule": "self.size() > 0"}}, []any{map[string]any{"rule": "self.size() > 1"}}},
}

// positions wrap a node into a version's openAPIV3Schema: at the root and
// under properties, items, additionalProperties and each combinator.
var positions = []struct {
	name string
	wrap func(node map[string]any) map[string]any
}{
	{"root", func(n map[string]any) map[string]any { return n }},
	{"properties", func(n map[string]any) map[string]any { return specWith("f", n) }},
	{"items", func(n map[string]any) map[string]any {
		return specWith("f", map[string]any{"type": "array", "items": n})
	}},
	{"additionalProperties", func(n map[string]any) map[string]any {
		return specWith("f", map[string]any{"type": "object", "additionalProperties": n})
	}},
	{"allOf", func(n map[string]any) map[string]any { return specWith("f", map[string]any{"allOf": []any{n}}) }},
	{"anyOf", func(n map[string]any) map[string]any { return specWith("f", map[string]any{"anyOf": []any{n}}) }},
	{"oneOf", func(n map[string]any) map[string]any { return specWith("f", map[string]any{"oneOf": []any{n}}) }},
	{"not", func(n map[string]any) map[string]any { return specWith("f", map[string]any{"not": n}) }},
}

func specWith(field string, node map[string]any) map[string]any {
	return map[string]any{"type": "object", "properties": map[string]any{
		"spec": map[string]any{"type": "object", "properties": map[string]any{field: node}},
	}}
}

// hostNode is a node of the keyword's host type carrying key: value
// (value nil: the keyword is absent).
func hostNode(k keyword, value any) map[string]any {
	n := map[string]any{}
	if k.host != "" && k.key != "type" {
		n["type"] = k.host
	}
	switch k.host {
	case "array":
		if k.key != "items" {
			n["items"] = map[string]any{"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}
		}
	case "object":
		if k.key != "properties" {
			n["properties"] = map[string]any{"x": map[string]any{"type": "string"}, "y": map[string]any{"type": "string"}}
		}
	}
	if value != nil {
		n[k.key] = value
	}
	return n
}

type version struct {
	name            string
	served, storage bool
	schema          map[string]any
}

// crdDocument is a v1 CRD; storedVersions is its status (nil: none), as a
// cluster keeps it for the CRD the preflight reads as old.
func crdDocument(scope, conversion string, storedVersions []string, versions ...version) map[string]any {
	vs := []any{}
	for _, v := range versions {
		vs = append(vs, map[string]any{"name": v.name, "served": v.served, "storage": v.storage,
			"schema": map[string]any{"openAPIV3Schema": v.schema}})
	}
	spec := map[string]any{
		"group": "test.example.com",
		"names": map[string]any{"kind": "Sample", "listKind": "SampleList", "plural": "samples", "singular": "sample"},
		"scope": scope, "versions": vs,
	}
	if conversion != "" {
		spec["conversion"] = map[string]any{"strategy": conversion}
	}
	doc := map[string]any{"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": "samples.test.example.com"}, "spec": spec}
	if storedVersions != nil {
		doc["status"] = map[string]any{"storedVersions": storedVersions}
	}
	return doc
}

// oneVersion is an old CRD (with its status) or a new one of a single version.
func oneVersion(schema map[string]any, old bool) map[string]any {
	var stored []string
	if old {
		stored = []string{"v1"}
	}
	return crdDocument("Namespaced", "", stored, version{"v1", true, true, schema})
}

// generatedPairs returns every generated pair, named uniquely and stably.
func generatedPairs() []crdPair {
	var out []crdPair
	seen := map[string]int{}
	add := func(name string, old, new map[string]any) {
		seen[name]++
		if n := seen[name]; n > 1 {
			name = fmt.Sprintf("%s-%d", name, n)
		}
		out = append(out, crdPair{name: name, old: old, new: new})
	}
	ops := []struct {
		name string
		pick func(k keyword) (old, new any)
	}{
		{"add", func(k keyword) (any, any) { return nil, k.a }},
		{"remove", func(k keyword) (any, any) { return k.a, nil }},
		{"change", func(k keyword) (any, any) { return k.a, k.b }},
		{"change-back", func(k keyword) (any, any) { return k.b, k.a }},
	}
	for _, k := range keywords {
		for _, p := range positions {
			for _, op := range ops {
				ov, nv := op.pick(k)
				name := fmt.Sprintf("%s-%s-%s", p.name, k.key, op.name)
				add(name, oneVersion(p.wrap(hostNode(k, ov)), true), oneVersion(p.wrap(hostNode(k, nv)), false))
			}
		}
	}
	// Served versions: v2 is served next to v1 and differs from it by one
	// keyword, with conversion None (compared) or Webhook (not compared).
	for _, k := range keywords {
		for _, op := range ops {
			ov, nv := op.pick(k)
			v1 := version{"v1", true, true, specWith("f", hostNode(k, ov))}
			v2 := version{"v2", true, false, specWith("f", hostNode(k, nv))}
			old := crdDocument("Namespaced", "", []string{"v1"}, v1)
			add(fmt.Sprintf("served-%s-%s", k.key, op.name), old, crdDocument("Namespaced", "", nil, v1, v2))
			if op.name == "change" {
				add(fmt.Sprintf("served-webhook-%s-%s", k.key, op.name), old, crdDocument("Namespaced", "Webhook", nil, v1, v2))
				// Both versions already served and already different: nothing new.
				both := crdDocument("Namespaced", "", []string{"v1"}, v1, v2)
				add(fmt.Sprintf("served-kept-%s-%s", k.key, op.name), both, crdDocument("Namespaced", "", nil, v1, v2))
				unserved := v2
				unserved.served = false
				add(fmt.Sprintf("served-unserved-%s-%s", k.key, op.name), old, crdDocument("Namespaced", "", nil, v1, unserved))
			}
		}
	}
	// Served-version order for a name that is not Kubernetes-style: the
	// preflight ranks v1-10-0 below v1, so it compares v1-10-0 -> v1. An enum
	// value v1 lacks is a removal in that direction and an addition in the
	// other, so the verdict flips with the order, both ways.
	enum := func(values ...any) map[string]any {
		return specWith("f", map[string]any{"type": "string", "enum": values})
	}
	narrow, wide := version{"v1", true, true, enum("a")}, version{"v1", true, true, enum("a", "b")}
	add("served-order-v1-10-0-wider", crdDocument("Namespaced", "", []string{"v1"}, narrow),
		crdDocument("Namespaced", "", nil, narrow, version{"v1-10-0", true, false, enum("a", "b")}))
	add("served-order-v1-10-0-narrower", crdDocument("Namespaced", "", []string{"v1"}, wide),
		crdDocument("Namespaced", "", nil, wide, version{"v1-10-0", true, false, enum("a")}))
	// Parts of a CRD outside the schemas.
	base := specWith("f", map[string]any{"type": "string"})
	v := func(name string, served, storage bool) version { return version{name, served, storage, base} }
	add("crd-scope-changed", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), crdDocument("Cluster", "", nil, v("v1", true, true)))
	add("crd-stored-version-removed", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), crdDocument("Namespaced", "", nil, v("v2", true, true)))
	// As a bundle carries it: no status. The preflight, reading no
	// storedVersions, sees nothing; we count the storage version as stored.
	add("crd-stored-version-removed-no-status", crdDocument("Namespaced", "", nil, v("v1", true, true)), crdDocument("Namespaced", "", nil, v("v2", true, true)))
	add("crd-storage-moved", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true), v("v2", true, false)), crdDocument("Namespaced", "", nil, v("v1", true, false), v("v2", true, true)))
	add("crd-served-version-removed", crdDocument("Namespaced", "", []string{"v2"}, v("v1", true, false), v("v2", true, true)), crdDocument("Namespaced", "", nil, v("v2", true, true)))
	add("crd-version-unserved", crdDocument("Namespaced", "", []string{"v2"}, v("v1", true, false), v("v2", true, true)), crdDocument("Namespaced", "", nil, v("v1", false, false), v("v2", true, true)))
	add("crd-version-added", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), crdDocument("Namespaced", "", nil, v("v1", true, true), v("v2", true, false)))
	add("crd-conversion-webhook-added", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), crdDocument("Namespaced", "Webhook", nil, v("v1", true, true)))
	renamed := crdDocument("Namespaced", "", nil, v("v1", true, true))
	renamed["spec"].(map[string]any)["names"] = map[string]any{"kind": "Example", "listKind": "ExampleList", "plural": "samples", "singular": "example", "shortNames": []any{"ex"}}
	add("crd-names-changed", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), renamed)
	withCols := crdDocument("Namespaced", "", nil, v("v1", true, true))
	ver := withCols["spec"].(map[string]any)["versions"].([]any)[0].(map[string]any)
	ver["subresources"] = map[string]any{"status": map[string]any{}}
	ver["additionalPrinterColumns"] = []any{map[string]any{"name": "F", "type": "string", "jsonPath": ".spec.f"}}
	add("crd-subresources-and-columns-added", crdDocument("Namespaced", "", []string{"v1"}, v("v1", true, true)), withCols)
	// Attributes written as null (generators and hand edits leave "properties:"
	// with nothing under it): the preflight decodes them as absent.
	nulls := []struct {
		name     string
		old, new map[string]any
	}{
		{"null-properties-field-added", map[string]any{"type": "object", "properties": nil}, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
		{"null-properties-unchanged", map[string]any{"type": "object", "properties": nil}, map[string]any{"type": "object", "properties": nil}},
		{"null-properties-to-empty", map[string]any{"type": "object", "properties": nil}, map[string]any{"type": "object"}},
		{"null-property-schema-typed", map[string]any{"type": "object", "properties": map[string]any{"a": nil}}, map[string]any{"type": "object", "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
		{"null-default-added", map[string]any{"type": "string", "default": nil}, map[string]any{"type": "string", "default": "x"}},
		{"null-enum-added", map[string]any{"type": "string", "enum": nil}, map[string]any{"type": "string", "enum": []any{"a"}}},
		{"null-items-typed", map[string]any{"type": "array", "items": nil}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}},
		{"null-nullable-set", map[string]any{"type": "string", "nullable": nil}, map[string]any{"type": "string", "nullable": true}},
		{"null-required-added", map[string]any{"type": "object", "required": nil, "properties": map[string]any{"a": map[string]any{"type": "string"}}}, map[string]any{"type": "object", "required": []any{"a"}, "properties": map[string]any{"a": map[string]any{"type": "string"}}}},
	}
	for _, n := range nulls {
		add(n.name, oneVersion(specWith("f", n.old), true), oneVersion(specWith("f", n.new), false))
	}
	return out
}

// writePairs writes each pair as <dir>/<name>/old.json and new.json.
func writePairs(t *testing.T, dir string, pairs []crdPair) {
	for _, p := range pairs {
		d := filepath.Join(dir, p.name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for file, doc := range map[string]map[string]any{"old.json": p.old, "new.json": p.new} {
			data, err := json.Marshal(doc)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(d, file), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// crdifyResults is the part of crdify's JSON output the comparison reads.
type crdifyResults struct {
	CRDValidation         []crdifyComparison `json:"crdValidation"`
	SameVersionValidation []crdifyVersioned  `json:"sameVersionValidation"`
	ServedVersion         []crdifyVersioned  `json:"servedVersionValidation"`
}

type crdifyVersioned struct {
	Version             string `json:"version"`
	PropertyComparisons []struct {
		Property          string             `json:"property"`
		ComparisonResults []crdifyComparison `json:"comparisonResults"`
	} `json:"propertyComparisons"`
}

type crdifyComparison struct {
	Name   string   `json:"name"`
	Errors []string `json:"errors"`
}

var removedField = regexp.MustCompile(`^removed field : ([^.]+)\.(\^.*)$`)

// crdifyKeys reduces crdify's errors to findings keys ("same v1 ^.spec.f
// type"), as keys() does for ours. A removed field is one finding at the
// top of the removed subtree: crdify also lists every node below it and
// compares each with nothing, which says the same thing again.
func crdifyKeys(r crdifyResults) []string {
	set := map[string]bool{}
	removed := map[string]bool{} // "v1 ^.spec.f"
	for _, c := range r.CRDValidation {
		for _, e := range c.Errors {
			if m := removedField.FindStringSubmatch(e); c.Name == "existingFieldRemoval" && m != nil {
				removed[m[1]+" "+m[2]] = true
				continue
			}
			set["crd "+c.Name] = true
		}
	}
	under := func(version, path string) bool {
		for p := path; ; {
			if removed[version+" "+p] {
				return true
			}
			i := strings.LastIndexByte(p, '.')
			if i < 0 {
				return false
			}
			p = p[:i]
		}
	}
	for k := range removed {
		version, path, _ := strings.Cut(k, " ")
		if i := strings.LastIndexByte(path, '.'); i >= 0 && under(version, path[:i]) {
			continue
		}
		set["same "+version+" "+path+" existingFieldRemoval"] = true
	}
	for scope, list := range map[string][]crdifyVersioned{"same": r.SameVersionValidation, "served": r.ServedVersion} {
		for _, v := range list {
			for _, p := range v.PropertyComparisons {
				if scope == "same" && under(v.Version, p.Property) {
					continue
				}
				for _, c := range p.ComparisonResults {
					if len(c.Errors) > 0 {
						set[fmt.Sprintf("%s %s %s %s", scope, v.Version, p.Property, c.Name)] = true
					}
				}
			}
		}
	}
	return sortedKeys(set)
}

// keys reduces our error findings to the same keys.
func keys(changes []Change) []string {
	set := map[string]bool{}
	for _, c := range changes {
		if c.Severity != "error" {
			continue
		}
		switch {
		case c.Check == "scope" || c.Check == "storedVersionRemoval":
			set["crd "+c.Check] = true
		case strings.Contains(c.Version, " -> "):
			set[fmt.Sprintf("served %s %s %s", c.Version, c.Path, c.Check)] = true
		default:
			set[fmt.Sprintf("same %s %s %s", c.Version, c.Path, c.Check)] = true
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// verdictLine is one golden line: name, verdict, keys.
func verdictLine(name string, keys []string) string {
	verdict := "safe"
	if len(keys) > 0 {
		verdict = "unsafe"
	}
	return fmt.Sprintf("%s\t%s\t%s", name, verdict, strings.Join(keys, "; "))
}

// deliberatePairs maps the generated pairs where we differ from crdify on
// purpose to the Deviation that explains it.
var deliberatePairs = map[string]string{
	"crd-stored-version-removed-no-status": "stored-version-from-spec",
}

// TestCrdifyDifferential judges every generated pair and compares the
// verdict and the findings (validation and path) with crdify's. A pair may
// disagree only where Deviations lists a deliberate difference.
func TestCrdifyDifferential(t *testing.T) {
	pairs := generatedPairs()
	if *crdifyWrite != "" {
		writePairs(t, *crdifyWrite, pairs)
		t.Logf("wrote %d pairs under %s", len(pairs), *crdifyWrite)
		return
	}
	if *crdifyRecord != "" {
		var lines []string
		for _, p := range pairs {
			data, err := os.ReadFile(filepath.Join(*crdifyRecord, p.name, "crdify.json"))
			if err != nil {
				t.Fatal(err)
			}
			var r crdifyResults
			if err := json.Unmarshal(data, &r); err != nil {
				t.Fatalf("%s: crdify output: %v", p.name, err)
			}
			lines = append(lines, verdictLine(p.name, crdifyKeys(r)))
		}
		if err := os.MkdirAll(filepath.Dir(crdifyGolden), 0o755); err != nil {
			t.Fatal(err)
		}
		head := "# crdify v0.6.0 with operator-controller's preflight configuration, per generated pair:\n# name<TAB>verdict<TAB>findings. Recorded by scripts/record-crdify-golden.sh; do not edit.\n"
		if err := os.WriteFile(crdifyGolden, []byte(head+strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	data, err := os.ReadFile(crdifyGolden)
	if err != nil {
		t.Fatalf("%v (record it with scripts/record-crdify-golden.sh)", err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(string(data), "\n") {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		name, _, _ := strings.Cut(l, "\t")
		want[name] = l
	}
	known := map[string]bool{}
	for _, d := range Deviations() {
		known[d.ID] = true
	}
	deliberate := map[string]string{}
	for name, id := range deliberatePairs {
		if !known[id] {
			t.Errorf("deliberatePairs[%s] names %q, which Deviations does not list", name, id)
		}
		deliberate[name] = id
	}
	if len(pairs) < 300 {
		t.Errorf("%d generated pairs, want hundreds", len(pairs))
	}
	verdicts, findings := 0, 0
	for _, p := range pairs {
		w, ok := want[p.name]
		if !ok {
			t.Errorf("%s: not in %s (re-record it with scripts/record-crdify-golden.sh)", p.name, crdifyGolden)
			continue
		}
		got := ourLine(t, p)
		gotVerdict, wantVerdict := strings.Split(got, "\t")[1], strings.Split(w, "\t")[1]
		if gotVerdict == wantVerdict {
			verdicts++
		}
		if got == w {
			findings++
			if d, ok := deliberate[p.name]; ok {
				t.Errorf("%s agrees with crdify but is listed as deliberate difference %q", p.name, d)
			}
			continue
		}
		if _, ok := deliberate[p.name]; ok {
			continue
		}
		t.Errorf("differs from crdify:\n  ours:   %s\n  crdify: %s", got, w)
	}
	t.Logf("%d pairs: verdict agrees on %d, findings agree on %d", len(pairs), verdicts, findings)
}

func ourLine(t *testing.T, p crdPair) string {
	t.Helper()
	var sets [2][]*CRD
	for i, doc := range []map[string]any{p.old, p.new} {
		data, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		crds, fs, err := Parse(p.name+".json", data)
		if err != nil {
			t.Fatalf("%s: %v %v", p.name, err, fs)
		}
		sets[i] = crds
	}
	return verdictLine(p.name, keys(Diff(sets[0], sets[1], Options{})))
}
