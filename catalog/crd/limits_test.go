package crd

import (
	"context"
	"errors"
	"strconv"
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
