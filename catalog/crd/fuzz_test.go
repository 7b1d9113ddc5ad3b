package crd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// FuzzDiff feeds two arbitrary files to Parse and Diff: nothing may panic,
// and a set diffed with itself must never report anything.
func FuzzDiff(f *testing.F) {
	dirs, _ := filepath.Glob(filepath.Join("testdata", "cases", "*"))
	for _, dir := range dirs {
		old, err1 := os.ReadFile(filepath.Join(dir, "old.yaml"))
		new, err2 := os.ReadFile(filepath.Join(dir, "new.yaml"))
		if err1 == nil && err2 == nil {
			f.Add(old, new)
		}
	}
	f.Add([]byte(crdDoc("", spec("a:\n  type: string"))), []byte("{}"))
	f.Add([]byte("apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: x}\nspec: {scope: Cluster, version: v1}\n"), []byte("a: &a [*a]"))
	// Some of the pairs the differential test against crdify generates.
	for i, p := range generatedPairs() {
		if i%60 != 0 {
			continue
		}
		old, err1 := json.Marshal(p.old)
		new, err2 := json.Marshal(p.new)
		if err1 == nil && err2 == nil {
			f.Add(old, new)
		}
	}
	f.Fuzz(func(t *testing.T, a, b []byte) {
		old, _, _ := Parse("old.yaml", a)
		new, _, _ := ParseManifests("new.yaml", b)
		Diff(old, new, Options{})
		Diff(new, old, Options{Overrides: Overrides{RuleUnknownChange: "warning"}})
		for _, set := range [][]*CRD{old, new} {
			if self := Diff(set, set, Options{}); len(self) != 0 {
				t.Fatalf("Diff of a set with itself = %s", render(self))
			}
		}
	})
}
