package crd

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// bigCRD is one CRD whose spec has an enum of n values (value i is "v<i+shift>")
// and n properties each requiring the next, so that every list the diff reads
// has n entries.
func bigCRD(n, shift int) []*CRD {
	spec := &Schema{Type: "object", HasEnum: true}
	for i := 0; i < n; i++ {
		v := strconv.Quote("v" + strconv.Itoa(i+shift))
		spec.Enum = append(spec.Enum, v)
		name := "f" + strconv.Itoa(i)
		spec.Properties = append(spec.Properties, Property{Name: name, Schema: &Schema{Type: "string"}})
		spec.Required = append(spec.Required, Name{Name: name})
	}
	root := &Schema{Type: "object", Properties: []Property{{Name: "spec", Schema: spec}}}
	return []*CRD{{Name: "bigs.example.com", Scope: "Namespaced",
		Versions: []Version{{Name: "v1", Served: true, Storage: true, Schema: root}}}}
}

// TestDiffLinear compares enum, required and property lists of 100k entries.
// Comparing them pairwise took half a minute (issue #20); as sets it is well
// under a second.
func TestDiffLinear(t *testing.T) {
	const n = 100_000
	old, new := bigCRD(n, 0), bigCRD(n, 1) // new drops "v0" and adds "v100000"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	start := time.Now()
	got, err := DiffContext(ctx, old, new, Options{})
	if err != nil {
		t.Fatalf("DiffContext: %v after %v, want it done well within 5s", err, time.Since(start))
	}
	if ids := ruleIDs(got); len(ids) != 1 || ids[0] != RuleEnumValueRemoved {
		t.Fatalf("rules = %v, want [%s]", ids, RuleEnumValueRemoved)
	}
	if got[0].Detail != `allowed enum values removed : ["v0"]` {
		t.Errorf("detail = %q", got[0].Detail)
	}
}

// TestDiffCancelled checks that a diff stops when its context ends, in the
// middle of a large schema.
func TestDiffCancelled(t *testing.T) {
	old, new := bigCRD(50_000, 0), bigCRD(50_000, 0)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	got, err := DiffContext(ctx, old, new, Options{})
	if !errors.Is(err, context.Canceled) || got != nil {
		t.Fatalf("DiffContext(cancelled) = %d changes, %v; want nil, context.Canceled", len(got), err)
	}
}

// TestParseNestedWholeLinear: allOf, anyOf, oneOf, not and additionalProperties
// are compared whole, through a digest of everything below them. Each node's
// digest is built from its children's, so a large leaf under 75 nested nots
// costs about what it costs at the top, not 75 times as much.
func TestParseNestedWholeLinear(t *testing.T) {
	var enum strings.Builder
	for i := 0; i < 100_000; i++ {
		fmt.Fprintf(&enum, "\"v%d\",", i)
	}
	leaf := `{"type":"string","enum":[` + strings.TrimSuffix(enum.String(), ",") + `]}`
	doc := func(depth int) []byte {
		node := leaf
		for i := 0; i < depth; i++ {
			node = `{"not":` + node + `}`
		}
		return []byte(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b.c"},` +
			`"spec":{"group":"b.c","names":{"kind":"A","plural":"a"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,` +
			`"schema":{"openAPIV3Schema":` + node + `}}]}}`)
	}
	best := func(data []byte) time.Duration {
		var min time.Duration
		for i := 0; i < 3; i++ {
			start := time.Now()
			if _, fs, err := Parse("nest.json", data); err != nil {
				t.Fatalf("Parse: %v %v", err, fs)
			}
			if d := time.Since(start); i == 0 || d < min {
				min = d
			}
		}
		return min
	}
	flat, nested := best(doc(1)), best(doc(75))
	if nested > 5*flat+50*time.Millisecond {
		t.Errorf("Parse with the leaf 75 levels deep took %v, at the top %v: want about the same", nested, flat)
	}
}

// TestUnhandledDetail: the OLM line of an unhandled change is worded as
// operator-controller shortens crdify's report (its own test expects
// `Format "" -> "email"`). An example added has a rule of its own (so it can
// be waived alone); the preflight reports it in the same unhandled line.
func TestUnhandledDetail(t *testing.T) {
	old := mustParse(t, "old.yaml", crdDoc("", spec("a:\n  type: string\n  x-kubernetes-preserve-unknown-fields: true")))
	new := mustParse(t, "new.yaml", crdDoc("", spec("a:\n  type: string\n  format: email\n  example: x")))
	got := Diff(old, new, Options{})
	want := map[string]string{
		RuleExampleAdded:  `validating upgrade for CRD "samples.test.example.com": v1alpha1: ^.spec.a: unhandled: unhandled changes found (Example nil -> <complex value>)`,
		RuleFormatChanged: `validating upgrade for CRD "samples.test.example.com": v1alpha1: ^.spec.a: unhandled: unhandled changes found (Format "" -> "email")`,
		RuleUnknownChange: `validating upgrade for CRD "samples.test.example.com": v1alpha1: ^.spec.a: unhandled: unhandled changes found (XPreserveUnknownFields &true -> nil)`,
	}
	if len(got) != len(want) {
		t.Fatalf("got %d changes, want %d (%v):\n%s", len(got), len(want), want, dump(got))
	}
	for _, c := range got {
		if m := c.OLMMessage(); m != want[c.Rule] {
			t.Errorf("%s: OLMMessage() =\n  %s\nwant\n  %s", c.Rule, m, want[c.Rule])
		}
	}
}

// TestServedPairsBounded: the pairs of served versions grow with the square
// of their number; past a bound the CRD is reported as too large to compare
// instead of keeping the check busy.
func TestServedPairsBounded(t *testing.T) {
	schema := bigCRD(10, 0)[0].Versions[0].Schema
	many := func() []*CRD {
		c := &CRD{Name: "bigs.example.com", Scope: "Namespaced"}
		for i := 0; i < 200; i++ {
			c.Versions = append(c.Versions, Version{Name: "v" + strconv.Itoa(i+1), Served: true, Storage: i == 0, Schema: schema, nodes: 2000})
		}
		return []*CRD{c}
	}
	got := Diff(bigCRD(10, 0), many(), Options{})
	if ids := ruleIDs(got); !slices.Contains(ids, RuleSchemaTooLarge) {
		t.Fatalf("rules = %v, want %s", ids, RuleSchemaTooLarge)
	}
	// Also when the old CRD was as large: never dropped as an old issue.
	if ids := ruleIDs(Diff(many(), many(), Options{})); !slices.Equal(ids, []string{RuleSchemaTooLarge}) {
		t.Errorf("same CRD: rules = %v, want [%s]", ids, RuleSchemaTooLarge)
	}
}

// TestParseCancelled: reading a large schema stops when the context ends.
func TestParseCancelled(t *testing.T) {
	var b strings.Builder
	b.WriteString(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"a.b.c"},` +
		`"spec":{"group":"b.c","names":{"kind":"A","plural":"a"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,` +
		`"schema":{"openAPIV3Schema":{"type":"object","properties":{`)
	for i := 0; i < 5000; i++ {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `"f%d":{"type":"string"}`, i)
	}
	b.WriteString(`}}}}]}}`)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	crds, _, err := ParseManifestsContext(ctx, "big.json", []byte(b.String()))
	if !errors.Is(err, context.Canceled) || crds != nil {
		t.Fatalf("ParseManifestsContext(cancelled) = %d CRDs, %v; want none, context.Canceled", len(crds), err)
	}
	if crds, _, err := ParseManifestsContext(context.Background(), "big.json", []byte(b.String())); err != nil || len(crds) != 1 {
		t.Fatalf("ParseManifestsContext = %d CRDs, %v; want 1", len(crds), err)
	}
}
