package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func crdCase(name, file string) string {
	return filepath.Join("..", "..", "catalog", "crd", "testdata", "cases", name, file)
}

func TestCRDDiffCLI(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	notCRD := write("cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n")
	badYAML := write("bad.yaml", "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: [x\n")
	empty := write("empty.yaml", "")
	scopeOld, scopeNew := crdCase("seed-scope-change", "old.yaml"), crdCase("seed-scope-change", "new.yaml")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout []string
		stderr []string
	}{
		{"safe", []string{crdCase("safe-changes", "old.yaml"), crdCase("safe-changes", "new.yaml")}, 0, []string{"safe: 0 errors, 0 warnings"}, nil},
		{"unsafe", []string{scopeOld, scopeNew}, 1, []string{
			"new.yaml:14: error: crd.scope-changed:",
			`olm: validating upgrade for CRD "example.test.example.com": scope: scope changed : "Namespaced" -> "Cluster"`,
			"unsafe: 1 error, 0 warnings"}, nil},
		{"flags after files", []string{scopeOld, scopeNew, "--override", "crd.scope-changed=warning"}, 0, []string{"warning: crd.scope-changed", "safe: 0 errors, 1 warning"}, nil},
		{"override ignore", []string{"--override=crd.scope-changed=ignore", scopeOld, scopeNew}, 0, []string{"safe: 0 errors, 0 warnings"}, nil},
		{"unknown override", []string{"--override", "crd.nope=ignore", scopeOld, scopeNew}, 2, nil, []string{`unknown rule "crd.nope"`}},
		{"bad output", []string{"--output", "xml", scopeOld, scopeNew}, 2, nil, []string{"want text or json"}},
		{"one file", []string{scopeOld}, 2, nil, []string{"want OLD and NEW (two CRD files or two bundle directories)"}},
		{"missing file", []string{scopeOld, filepath.Join(dir, "nope.yaml")}, 2, nil, []string{"nope.yaml", "no such file"}},
		{"not a CRD", []string{scopeOld, notCRD}, 2, nil, []string{"cm.yaml:1: error: crd.not-a-crd:", "could not evaluate"}},
		{"bad YAML", []string{badYAML, scopeNew}, 2, nil, []string{"bad.yaml:", "crd.invalid-document", "invalid YAML"}},
		{"empty file", []string{scopeOld, empty}, 2, nil, []string{"empty.yaml", "is empty"}},
		{"rules", []string{"--rules"}, 0, []string{"crd.field-removed", "crd.unknown-change"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := run(context.Background(), append([]string{"crd-diff"}, tc.args...), &stdout, &stderr)
			if code != tc.code {
				t.Errorf("exit code = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.code, stdout.String(), stderr.String())
			}
			for _, s := range tc.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tc.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
		})
	}
}

func TestCRDDiffJSON(t *testing.T) {
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"crd-diff", "--output", "json",
		crdCase("many-changes", "old.yaml"), crdCase("many-changes", "new.yaml")}, &stdout, &stderr)
	if code != 1 {
		t.Fatalf("exit code = %d, want 1; stderr %s", code, stderr.String())
	}
	var rep struct {
		Verdict string `json:"verdict"`
		Changes []struct {
			Rule, Severity, File, CRD, Version, Path, OLMMessage string
			Line                                                 int
		} `json:"changes"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, stdout.String())
	}
	if rep.Verdict != "unsafe" || len(rep.Changes) != 16 {
		t.Fatalf("verdict %q with %d changes, want unsafe with 16", rep.Verdict, len(rep.Changes))
	}
	c := rep.Changes[0]
	if c.Rule != "crd.required-field-added" || c.Path != "^.spec" || c.Line != 24 || c.CRD != "widgets.example.com" || c.Version != "v1" || c.OLMMessage == "" {
		t.Errorf("first change = %+v", c)
	}

	stdout.Reset()
	code = run(context.Background(), []string{"crd-diff", "--output", "json", crdCase("many-changes", "old.yaml"), "/nonexistent.yaml"}, &stdout, &stderr)
	if code != 2 || !strings.Contains(stdout.String(), `"verdict": "error"`) {
		t.Errorf("unreadable file: exit %d, output %s; want 2 and verdict error", code, stdout.String())
	}
}

// crd-diff takes bundle directories (or their manifests/): every CRD is compared by name, the CSV and other
// manifests are skipped, and a finding points at the field's line in the new CRD file. --profile
// compatibility turns the changes only the preflight refuses into warnings.
func TestCRDDiffBundleDirectories(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	crdOf := func(name string, extra string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: " + name + "s.example.com\nspec:\n" +
			"  group: example.com\n  names: {kind: " + name + ", plural: " + name + "s}\n  scope: Namespaced\n  versions:\n" +
			"  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n" +
			"        properties:\n          spec:\n            type: object\n            properties:\n              size: {type: integer}\n" + extra
	}
	csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: x.v1.0.0\nspec: {}\n"
	write("old/manifests/csv.yaml", csv)
	write("old/manifests/a.crd.yaml", crdOf("alpha", "              kept: {type: string}\n"))
	write("old/manifests/b.crd.yaml", crdOf("beta", ""))
	write("old/metadata/annotations.yaml", "annotations: {}\n")
	write("new/manifests/csv.yaml", csv)
	write("new/manifests/a.crd.yaml", crdOf("alpha", "              kept: {type: string, example: x}\n"))
	write("new/manifests/b.crd.yaml", crdOf("beta", "              added: {type: string}\n"))
	write("new/metadata/annotations.yaml", "annotations: {}\n")
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"crd-diff", filepath.Join(dir, "old"), filepath.Join(dir, "new", "manifests")}, &stdout, &stderr)
	if code != exitFail {
		t.Fatalf("exit %d, want %d (unsafe)\nstdout:\n%s\nstderr:\n%s", code, exitFail, stdout.String(), stderr.String())
	}
	want := filepath.Join(dir, "new", "manifests", "a.crd.yaml") + ":21:"
	if !strings.Contains(stdout.String(), want) || !strings.Contains(stdout.String(), "crd.example-added") {
		t.Errorf("no crd.example-added at %s (the example's line):\n%s", want, stdout.String())
	}
	stdout.Reset()
	code = run(context.Background(), []string{"crd-diff", "--profile", "compatibility", filepath.Join(dir, "old"), filepath.Join(dir, "new")}, &stdout, &stderr)
	if code != exitPass || !strings.Contains(stdout.String(), "OLM v1 will refuse this upgrade unless its preflight is disabled") {
		t.Errorf("compatibility profile: exit %d, want %d with the preflight note:\n%s", code, exitPass, stdout.String())
	}
	stdout.Reset()
	if code := run(context.Background(), []string{"crd-diff", filepath.Join(dir, "old", "metadata"), filepath.Join(dir, "new")}, &stdout, &stderr); code != exitCannotRun {
		t.Errorf("a directory without CRDs: exit %d, want %d", code, exitCannotRun)
	}
}
