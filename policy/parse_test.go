package policy

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const minimal = "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\n"

func mustParse(t *testing.T, src string) *Policy {
	t.Helper()
	p, err := Parse(".catalogbot.yaml", []byte(src))
	if err != nil {
		t.Fatalf("Parse:\n%s\nerror:\n%v", src, err)
	}
	return p
}

func problems(t *testing.T, src string) []Problem {
	t.Helper()
	_, err := Parse(".catalogbot.yaml", []byte(src))
	if err == nil {
		t.Fatalf("Parse:\n%s\nsucceeded, want problems", src)
	}
	pe, ok := err.(*ParseError)
	if !ok {
		t.Fatalf("Parse error is %T, want *ParseError", err)
	}
	for _, p := range pe.Problems {
		if p.File != ".catalogbot.yaml" || p.Message == "" || p.Hint == "" {
			t.Errorf("problem %+v: want a file, a message and a hint", p)
		}
	}
	return pe.Problems
}

func TestParseExampleFile(t *testing.T) {
	name := filepath.Join("..", "docs", "catalogbot.example.yaml")
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := Parse(name, data)
	if err != nil {
		t.Fatalf("the documented example does not parse:\n%v", err)
	}
	if len(p.Catalogs) != 2 || p.Catalogs[0].BaseImage == "" || len(p.Maintainers) != 2 || len(p.Packages) != 2 ||
		!p.Images.RequireDigest || len(p.CRDSafety.Overrides) != 1 || p.Automerge.Method != MergeMethodSquash ||
		len(p.Bundles) == 0 || p.Bundles[0].K8sVersion != "1.25" || !slices.Equal(p.Bundles[0].OptionalSuites, []string{"operatorhub", "deprecated-apis"}) {
		t.Errorf("example parsed to %+v, want every key set as written", p)
	}
}

func TestParseDefaults(t *testing.T) {
	p := mustParse(t, minimal)
	d := Default()
	if p.NewPackages != NewPackagesMaintainers || p.Automerge.Enabled || p.Automerge.Method != MergeMethodMerge ||
		!slices.Equal(p.Automerge.HoldLabels, d.Automerge.HoldLabels) || !slices.Equal(p.ProtectedPaths, []string{FileName}) ||
		p.Images.RequireDigest || len(p.Images.AllowedRegistries) != 0 || len(p.Packages) != 0 {
		t.Errorf("minimal policy = %+v, want the documented defaults", p)
	}
	if p.Version != 1 || p.File != ".catalogbot.yaml" {
		t.Errorf("Version, File = %d, %q", p.Version, p.File)
	}
}

func TestParseKeys(t *testing.T) {
	tests := []struct {
		name  string
		extra string
		check func(p *Policy) bool
	}{
		{"catalog path cleaned", "", func(p *Policy) bool { return p.Catalogs[0].Path == "catalogs/v4.16" }},
		{"maintainer team", "", func(p *Policy) bool { return p.Maintainers[0] == Principal{Login: "alice"} }},
		{"packages", "packages:\n  etcd: {owners: [bob, \"@etcd-io/maintainers\"]}\n", func(p *Policy) bool {
			return slices.Equal(p.Packages["etcd"].Owners, []Principal{{Login: "bob"}, {Org: "etcd-io", Team: "maintainers"}}) && p.Packages["etcd"].Pos.Line == 5
		}},
		{"newPackages anyone", "newPackages: anyone\n", func(p *Policy) bool { return p.NewPackages == NewPackagesAnyone }},
		{"protectedPaths", "protectedPaths: [.github/**, docs]\n", func(p *Policy) bool {
			return slices.Equal(p.ProtectedPaths, []string{FileName, ".github/**", "docs"})
		}},
		{"protectedPaths lists the policy file once", "protectedPaths: [.catalogbot.yaml]\n", func(p *Policy) bool {
			return slices.Equal(p.ProtectedPaths, []string{FileName})
		}},
		{"images", "images: {allowedRegistries: [\"quay.io/acme/\"], requireDigest: true}\n", func(p *Policy) bool {
			return p.Images.RequireDigest && p.Images.AllowedRegistries[0] == "quay.io/acme/"
		}},
		{"crdSafety overrides in file order", "crdSafety:\n  overrides:\n    z.rule: ignore\n    a.rule: warning\n", func(p *Policy) bool {
			o := p.CRDSafety.Overrides
			return len(o) == 2 && o[0] == Override{"z.rule", "ignore", Position{6, 5}} && o[1].Rule == "a.rule"
		}},
		{"crdSafety profile compatibility", "crdSafety: {profile: compatibility}\n", func(p *Policy) bool {
			return p.CRDSafety.Profile == ProfileCompatibility && p.CRDSafety.ProfilePos.Line == 4
		}},
		{"crdSafety profile defaults to preflight", "crdSafety: {overrides: {}}\n", func(p *Policy) bool { return p.CRDSafety.Profile == ProfilePreflight }},
		{"automerge", "automerge: {enabled: true, method: rebase, holdLabels: [hold, wip], requireOwnerApproval: true}\n", func(p *Policy) bool {
			a := p.Automerge
			return a.Enabled && a.Method == MergeMethodRebase && slices.Equal(a.HoldLabels, []string{"hold", "wip"}) && a.RequireOwnerApproval
		}},
		{"automerge empty hold labels", "automerge: {holdLabels: []}\n", func(p *Policy) bool { return len(p.Automerge.HoldLabels) == 0 }},
		{"null optional keys are absent", "packages:\nimages:\nautomerge: {holdLabels: ~}\n", func(p *Policy) bool {
			return len(p.Packages) == 0 && len(p.Automerge.HoldLabels) == 0
		}},
		{"aliases", "automerge: {holdLabels: &l [hold]}\nimages: {allowedRegistries: [\"quay.io/a/\"]}\npackages:\n  a: {owners: &o [bob]}\n  b: {owners: *o}\n", func(p *Policy) bool {
			return len(p.Packages["b"].Owners) == 1
		}},
		{"bot login", "packages:\n  a: {owners: [\"renovate[bot]\"]}\n", func(p *Policy) bool { return p.Packages["a"].Owners[0].Login == "renovate[bot]" }},
		{"limits default", "", func(p *Policy) bool { return p.Limits.MaxFileBytes == DefaultMaxFileBytes }},
		{"limits", "limits: {maxFileBytes: 4096}\n", func(p *Policy) bool { return p.Limits.MaxFileBytes == 4096 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := mustParse(t, minimal+tt.extra)
			if !tt.check(p) {
				t.Errorf("Parse gave %+v, which fails the check", p)
			}
		})
	}
}

// want is one expected problem: its line, column (0: any) and a piece of its message.
type want struct {
	line, col int
	msg       string
}

func TestParseProblems(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []want
	}{
		{"empty file", "", []want{{0, 0, "empty"}}},
		{"comments only", "# nothing\n", []want{{0, 0, "empty"}}},
		{"not a mapping", "- a\n", []want{{1, 1, "must be a mapping"}}},
		{"syntax error", "version: 1\ncatalogs: [\n", []want{{2, 0, "YAML syntax error"}}},
		{"tabs", "version: 1\n\tcatalogs: []\n", []want{{2, 0, "YAML syntax error"}}},
		{"two documents", minimal + "---\nversion: 1\n", []want{{4, 1, "more than one YAML document"}}},
		{"missing required keys", "newPackages: anyone\n", []want{{1, 1, "version is missing"}, {1, 1, "catalogs is missing"}, {1, 1, "maintainers is missing"}}},
		{"version 2", "version: 2\nfuture: {x: 1}\n", []want{{1, 10, "version 2 is not supported"}}},
		{"version as string", "version: \"1\"\n", []want{{1, 10, "must be the number 1"}}},
		{"unknown top-level key", minimal + "owners: [x]\n", []want{{4, 1, `unknown key "owners" in the policy`}}},
		{"unknown key, wrong case", minimal + "NewPackages: anyone\n", []want{{4, 1, `unknown key "NewPackages"`}}},
		{"unknown key in catalogs entry", "version: 1\ncatalogs:\n  - path: a\n    imag: x\nmaintainers: [a]\n", []want{{4, 5, `unknown key "imag" in a catalogs entry`}}},
		{"unknown key in package", minimal + "packages:\n  etcd:\n    owners: [bob]\n    reviewers: [carol]\n", []want{{7, 5, `unknown key "reviewers" in package etcd`}}},
		{"unknown key in automerge", minimal + "automerge:\n  enable: true\n", []want{{5, 3, `unknown key "enable" in automerge`}}},
		{"unknown key in crdSafety", minimal + "crdSafety:\n  override: {}\n", []want{{5, 3, `unknown key "override" in crdSafety`}}},
		{"unknown key in images", minimal + "images: {registries: []}\n", []want{{4, 10, `unknown key "registries" in images`}}},
		{"duplicate key", minimal + "newPackages: anyone\nnewPackages: maintainers\n", []want{{5, 1, `key "newPackages" twice`}}},
		{"merge key", minimal + "automerge:\n  <<: {enabled: true}\n", []want{{5, 3, "merge keys"}}},
		{"unknown optional suite", minimal + "bundles: [{path: operators, strict: true, optionalSuites: [operatorhub, community]}]\n", []want{{4, 73, `unknown suite "community"`}}},
		{"k8sVersion not a version", minimal + "bundles: [{path: operators, optionalSuites: [operatorframework], k8sVersion: \"one.25\"}]\n", []want{{4, 78, `"one.25" is not a Kubernetes version`}}},
		{"catalogs not a list", "version: 1\ncatalogs: catalogs/v4.16\nmaintainers: [a]\n", []want{{2, 11, "catalogs must be a list"}}},
		{"catalog entry not a mapping", "version: 1\ncatalogs: [a, ~]\nmaintainers: [a]\n", []want{{2, 12, "must be a mapping with a path, not the string"}, {2, 15, "not nothing"}}},
		{"catalogs empty", "version: 1\ncatalogs: []\nmaintainers: [a]\n", []want{{2, 1, "catalogs is empty"}}},
		{"catalog without path", "version: 1\ncatalogs: [{image: \"quay.io/a/b:1\"}]\nmaintainers: [a]\n", []want{{2, 12, "has no path"}}},
		{"catalog paths", "version: 1\ncatalogs:\n- path: /abs\n- path: ../up\n- path: a/../../b\n- path: 'a\\b'\n- path: a\n- path: a/\n- path: b\n- path: b/c\n- path: 7\nmaintainers: [a]\n", []want{
			{3, 9, "absolute"}, {4, 9, "contains .."}, {5, 9, "contains .."}, {6, 9, "backslash"}, {8, 3, "listed twice"}, {10, 3, "nested"}, {11, 9, "must be a string, not the number 7"}}},
		{"catalog images", "version: 1\ncatalogs:\n- path: a\n  image: quay.io/acme/catalog\n  baseImage: quay.io/operator-framework/opm:latest\nmaintainers: [a]\n", []want{
			{4, 10, "with a registry and a tag"}, {5, 14, "not pinned by digest"}}},
		{"maintainers wrong", "version: 1\ncatalogs: [{path: a}]\nmaintainers: [\"@acme\", -bob, b_b-, bo.-b, \"a/b\", \"@acme/\", 12, alice, Alice, \"@" + strings.Repeat("x", 40) + "/t\"]\n", []want{
			{3, 15, "has no /team"}, {3, 24, "not a valid GitHub login"}, {3, 30, "not a valid GitHub login"}, {3, 36, "not a valid GitHub login"},
			{3, 43, "looks like a team"}, {3, 50, "not a valid team slug"}, {3, 60, "must be a string, not the number 12"}, {3, 71, "lists Alice twice"}, {3, 78, "organisation"}}},
		{"maintainers empty", "version: 1\ncatalogs: [{path: a}]\nmaintainers: []\n", []want{{3, 1, "maintainers is empty"}}},
		{"maintainers a string", "version: 1\ncatalogs: [{path: a}]\nmaintainers: alice\n", []want{{3, 14, "must be a list"}}},
		{"packages", minimal + "packages:\n  Etcd: {owners: [a]}\n  b: [x]\n  c: {}\n  d:\n  e: {owners: []}\n  f: x\n", []want{
			{5, 3, "not a valid package name"}, {6, 6, "not a list"}, {7, 3, "has no owners"}, {8, 3, "has no owners"}, {9, 3, "has no owners"}, {10, 6, "must be a mapping"}}},
		{"packages a list", minimal + "packages: [etcd]\n", []want{{4, 11, "packages must be a mapping"}}},
		{"newPackages", minimal + "newPackages: owners\n", []want{{4, 14, "not a known rule"}}},
		{"protectedPaths", minimal + "protectedPaths: [/x, \"a/[b\", a//b, ../x, \"\", true]\n", []want{
			{4, 18, "starts with /"}, {4, 22, "malformed"}, {4, 30, "empty segment"}, {4, 36, `".." segment`}, {4, 42, "empty pattern"}, {4, 46, "must be a string"}}},
		{"images", minimal + "images:\n  allowedRegistries: [\"https://quay.io\", nginx, \"quay.io/a:1\", \"quay.io/a@sha256:x\", \"\"]\n  requireDigest: yes\n", []want{
			{5, 23, "URL scheme"}, {5, 42, "registry host"}, {5, 49, "has a tag"}, {5, 64, "contains a space or @"}, {5, 86, "empty entry"}, {6, 18, "must be true or false"}}},
		{"crdSafety", minimal + "crdSafety:\n  overrides:\n    crd.a: warn\n    crd.b: 1\n    \"bad id\": error\n", []want{
			{6, 12, "not known"}, {7, 12, "must be a string"}, {8, 5, "not a rule id"}}},
		{"crdSafety overrides a list", minimal + "crdSafety: {overrides: [a]}\n", []want{{4, 24, "must be a mapping from rule id"}}},
		{"crdSafety profile", minimal + "crdSafety: {profile: strict}\n", []want{{4, 22, `crdSafety.profile "strict" is not known`}}},
		{"automerge", minimal + "automerge:\n  enabled: \"true\"\n  method: fast-forward\n  holdLabels: hold\n  requireOwnerApproval: 1\n", []want{
			{5, 12, "must be true or false"}, {6, 11, "not a GitHub merge method"}, {7, 15, "must be a list"}, {8, 25, "must be true or false"}}},
		{"limits", minimal + "limits:\n  maxFileBytes: 16MiB\n", []want{{5, 17, "must be a number of bytes"}}},
		{"limits out of range", minimal + "limits: {maxFileBytes: 10}\n", []want{{4, 24, "out of range"}}},
		{"automerge label too long", minimal + "automerge: {holdLabels: [\"" + strings.Repeat("x", 51) + "\"]}\n", []want{{4, 26, "not a valid label name"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problems(t, tt.src)
			for _, w := range tt.want {
				if !hasProblem(got, w) {
					t.Errorf("missing problem at %d:%d containing %q; got:\n%s", w.line, w.col, w.msg, (&ParseError{got}).Error())
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("got %d problems, want %d:\n%s", len(got), len(tt.want), (&ParseError{got}).Error())
			}
		})
	}
}

func hasProblem(ps []Problem, w want) bool {
	for _, p := range ps {
		if (w.line == 0 || p.Line == w.line) && (w.col == 0 || p.Column == w.col) && strings.Contains(p.Message, w.msg) {
			return true
		}
	}
	return false
}

// TestParseAliasBudget: a small file that expands to many values through
// aliases is refused once, not walked in full.
func TestParseAliasBudget(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal + "packages:\n  p0: {owners: &o [")
	for i := range 1000 {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "u%d", i)
	}
	b.WriteString("]}\n")
	for i := 1; i < 200; i++ {
		fmt.Fprintf(&b, "  p%d: {owners: *o}\n", i)
	}
	ps := problems(t, b.String())
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "expands to more than") {
		t.Errorf("problems = %v, want one about the expansion", ps)
	}
}

func TestParseProblemCap(t *testing.T) {
	var b strings.Builder
	b.WriteString(minimal)
	for i := range 500 {
		fmt.Fprintf(&b, "k%d: 1\n", i)
	}
	ps := problems(t, b.String())
	if len(ps) != maxProblems+1 || !strings.Contains(ps[maxProblems].Message, "more problems") {
		t.Errorf("got %d problems ending with %v, want %d and a summary", len(ps), ps[len(ps)-1], maxProblems+1)
	}
}

func TestParseTooLarge(t *testing.T) {
	src := minimal + "#" + strings.Repeat("x", MaxFileSize) + "\n"
	ps := problems(t, src)
	if len(ps) != 1 || !strings.Contains(ps[0].Message, "over the") {
		t.Errorf("problems = %v, want one about the size", ps)
	}
}

func TestProblemString(t *testing.T) {
	p := Problem{File: ".catalogbot.yaml", Line: 3, Column: 5, Message: "bad", Hint: "fix it"}
	if got, want := p.String(), ".catalogbot.yaml:3:5: bad (fix it)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(minimal))
	if data, err := os.ReadFile(filepath.Join("..", "docs", "catalogbot.example.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("version: 1\ncatalogs: [{path: &a x}]\nmaintainers: [*a]\npackages: {a: {owners: [\"@o/t\"]}}\n"))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse("f.yaml", data)
		if err != nil {
			pe, ok := err.(*ParseError)
			if !ok || len(pe.Problems) == 0 {
				t.Fatalf("error %T %v, want a *ParseError with problems", err, err)
			}
			return
		}
		if p.Version != Version || len(p.Catalogs) == 0 || len(p.Maintainers) == 0 || !p.Protected(FileName) {
			t.Fatalf("accepted policy breaks invariants: %+v", p)
		}
		for _, c := range p.Catalogs {
			if strings.HasPrefix(c.Path, "/") || slices.Contains(strings.Split(c.Path, "/"), "..") {
				t.Fatalf("accepted catalog path %q", c.Path)
			}
		}
	})
}
