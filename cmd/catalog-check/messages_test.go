package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/pflag"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/internal/opmrun"
)

// runCLI runs catalog-check with args and returns its exit code, stdout and stderr.
func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), args, &out, &errb, env{getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// copyDir copies the directory src to dst (regular files only).
func copyDir(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
}

var sampleCatalog = filepath.Join("..", "..", "testdata", "catalogs", "sample")

// TestValidateNotACatalogRoot: `validate` given what is not one catalog's root says what it is and what to
// run instead (exit 2), once, instead of the findings its files would give as a catalog.
func TestValidateNotACatalogRoot(t *testing.T) {
	bundle := map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV}
	oneBundle := writeBundle(t, bundle)
	tree := t.TempDir()
	for _, v := range []string{"etcd/0.9.4", "etcd/1.0.0", "redis/1.1.0"} {
		for name, body := range bundle {
			p := filepath.Join(tree, v, filepath.FromSlash(name))
			os.MkdirAll(filepath.Dir(p), 0o755)
			os.WriteFile(p, []byte(body), 0o644)
		}
	}
	os.WriteFile(filepath.Join(tree, "etcd", "ci.yaml"), []byte("reviewers: [alice]\n"), 0o644)

	// The parent of several catalogs, as the community repository keeps them (catalogs/v4.16, …), below a
	// repository root with other files.
	repo := t.TempDir()
	copyDir(t, sampleCatalog, filepath.Join(repo, "catalogs", "v4.16"))
	copyDir(t, sampleCatalog, filepath.Join(repo, "catalogs", "v4.17"))
	os.WriteFile(filepath.Join(repo, "README.md"), []byte("# catalogs: of the community\n"), 0o644)

	// A parent of parents, as the shared test data is: catalogs/v4.16 and catalogs/v4.17 beside
	// templates/catalogs/v4.12 and v4.13. The command printed names the four catalogs, never catalogs/ or
	// templates/ (each of which would only be said to hold several catalogs again).
	nested := t.TempDir()
	for _, c := range []string{"catalogs/v4.16", "catalogs/v4.17", "templates/catalogs/v4.12", "templates/catalogs/v4.13"} {
		copyDir(t, sampleCatalog, filepath.Join(nested, filepath.FromSlash(c)))
	}
	var nestedRoots []string
	for _, c := range []string{"catalogs/v4.16", "catalogs/v4.17", "templates/catalogs/v4.12", "templates/catalogs/v4.13"} {
		nestedRoots = append(nestedRoots, filepath.Join(nested, filepath.FromSlash(c)))
	}

	// The operators/ tree of a repository whose packages keep only ci.yaml and catalog templates (the shared
	// test data's templates/operators), and one such package directory.
	tmplTree := t.TempDir()
	for _, p := range []string{"etcd", "redis"} {
		os.MkdirAll(filepath.Join(tmplTree, p, "catalog-templates"), 0o755)
		os.WriteFile(filepath.Join(tmplTree, p, "ci.yaml"), []byte("reviewers: [alice]\n"), 0o644)
		os.WriteFile(filepath.Join(tmplTree, p, "Makefile"), []byte("PWD=$(shell pwd)\n"), 0o644)
		os.WriteFile(filepath.Join(tmplTree, p, "catalog-templates", "basic.yaml"), []byte("schema: olm.template.basic\nentries: []\n"), 0o644)
	}

	tests := []struct {
		name, dir string
		want      []string
	}{
		{"template tree", tmplTree, []string{tmplTree + " is a tree of package directories with ci.yaml files or catalog templates (2 of them), not a file-based catalog", "catalog-check template render " + filepath.Join(tmplTree, "etcd", "catalog-templates", "basic.yaml")}},
		{"template package", filepath.Join(tmplTree, "redis"), []string{"redis is a package directory with a ci.yaml file or catalog templates, not a file-based catalog", "catalog-check template render " + filepath.Join(tmplTree, "redis", "catalog-templates", "basic.yaml")}},
		{"bundle directory", oneBundle, []string{oneBundle + " is a bundle directory (manifests/ and metadata/), not a file-based catalog", "catalog-check bundle validate " + oneBundle}},
		{"bundle tree", tree, []string{tree + " is a bundle directory tree, not a file-based catalog: it holds 3 bundle directories", "catalog-check bundle validate " + filepath.Join(tree, "*", "*")}},
		{"parent of catalogs", filepath.Join(repo, "catalogs"), []string{"holds several catalogs", "catalog-check validate " + filepath.Join(repo, "catalogs", "v4.16") + " " + filepath.Join(repo, "catalogs", "v4.17")}},
		{"repository root", repo, []string{"holds several catalogs", "catalog-check validate " + filepath.Join(repo, "catalogs", "v4.16") + " " + filepath.Join(repo, "catalogs", "v4.17")}},
		{"parent of parents", nested, []string{"holds several catalogs (4 directories", "catalog-check validate " + strings.Join(nestedRoots, " ")}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := runCLI(t, "validate", tc.dir)
			if code != exitCannotRun {
				t.Errorf("exit %d, want %d", code, exitCannotRun)
			}
			for _, w := range tc.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Count(errOut, "\n") != 1 || strings.Contains(out, "load.") || strings.Contains(out, "package.duplicate") {
				t.Errorf("want one line on stderr and no findings; stdout:\n%s\nstderr:\n%s", out, errOut)
			}
			code, out, _ = runCLI(t, "validate", "-o", "json", tc.dir)
			var rep validateReport
			if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitCannotRun || len(rep.Catalogs) != 1 || rep.Catalogs[0].Error == "" || len(rep.Findings) != 0 {
				t.Errorf("json: exit %d, %v, %+v", code, err, rep)
			}
		})
	}
	// One catalog whose package sits in two folders is a catalog with an error, not several catalogs.
	one := t.TempDir()
	copyDir(t, sampleCatalog, one)
	copyDir(t, filepath.Join(sampleCatalog, "etcd-lite"), filepath.Join(one, "etcd-lite-copy"))
	code, out, errOut := runCLI(t, "validate", "--no-hints", one)
	if code != exitFail || !strings.Contains(out, ": error: package.duplicate: ") || strings.Contains(errOut, "several catalogs") {
		t.Errorf("a duplicated package folder: exit %d\n%s%s", code, out, errOut)
	}
}

// TestValidateEmptyAndMissing: an empty directory passes (as opm says) with a warning that it holds no
// catalog; a missing one is said once.
func TestValidateEmptyAndMissing(t *testing.T) {
	empty := t.TempDir()
	code, out, errOut := runCLI(t, "validate", empty)
	if code != exitPass || !strings.Contains(out, "warning: "+empty+" holds no catalog content") || !strings.Contains(out, "is it the catalog's root?") {
		t.Errorf("empty: exit %d\n%s%s", code, out, errOut)
	}
	code, out, _ = runCLI(t, "validate", "--output", "json", empty)
	if code != exitPass || !strings.Contains(out, `"warning": "`) {
		t.Errorf("empty, json: exit %d\n%s", code, out)
	}
	missing := filepath.Join(t.TempDir(), "nonexistent")
	code, out, errOut = runCLI(t, "validate", missing)
	if code != exitCannotRun || strings.Count(out+errOut, "nonexistent") != 1 || !strings.Contains(errOut, missing+": no such directory") {
		t.Errorf("missing: exit %d, want 2 and the error once\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
}

// findingLine is the one finding format of every subcommand: path:line:col: severity: rule: message.
var findingLine = regexp.MustCompile(`^[^ :][^:]*(:[0-9]+(:[0-9]+)?)?: (error|warning): [a-z0-9]+(\.[a-z0-9-]+)+: \S`)

// TestOneFindingFormat: validate, bundle validate, crd-diff and check print findings the same way.
func TestOneFindingFormat(t *testing.T) {
	stranded := filepath.Join("..", "..", "catalog", "testdata", "validate", "channel.stranded", "catalog")
	badBundle := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": strings.Replace(bundleCSV, "installModes: [{type: AllNamespaces, supported: true}]", "installModes: [{type: OwnNamespace, supported: true}]", 1)})
	scopeOld, scopeNew := crdCase("seed-scope-change", "old.yaml"), crdCase("seed-scope-change", "new.yaml")
	for _, args := range [][]string{
		{"validate", "--no-hints", stranded},
		{"bundle", "validate", badBundle},
		{"crd-diff", scopeOld, scopeNew},
	} {
		_, out, errOut := runCLI(t, args...)
		n := 0
		for _, line := range strings.Split(out+errOut, "\n") {
			if findingLine.MatchString(line) {
				n++
			}
		}
		if n == 0 {
			t.Errorf("%v: no line in the finding format:\n%s%s", args, out, errOut)
		}
	}
	// check: the shared writer prints the same lines.
	var b bytes.Buffer
	writeText(&b, nil, true)
	writeFinding(&b, catalogFinding("catalogs/a/etcd/catalog.yaml", 3, 5, "error", "channel.stranded", "stranded"), true)
	if !strings.Contains(b.String(), "catalogs/a/etcd/catalog.yaml:3:5: error: channel.stranded: stranded\n") {
		t.Errorf("writeFinding: %q", b.String())
	}
}

// TestCRDDiffRulesMessages: crd-diff's rule list and hints point where a user can go (--rules, the
// documents by name), not to the project's internal notes.
func TestCRDDiffRulesMessages(t *testing.T) {
	code, out, _ := runCLI(t, "crd-diff", "--rules")
	if code != exitPass || regexp.MustCompile(`seed 0\d\d|\x{00a7}`).MatchString(out) {
		t.Errorf("crd-diff --rules: exit %d, cites internal notes:\n%s", code, out)
	}
	if !strings.Contains(out, "Prohibited CRD upgrade changes") {
		t.Errorf("crd-diff --rules does not name the preflight's documentation:\n%s", out)
	}
	code, _, errOut := runCLI(t, "crd-diff", "--override", "crd.nope=ignore", crdCase("seed-scope-change", "old.yaml"), crdCase("seed-scope-change", "new.yaml"))
	if code != exitCannotRun || !strings.Contains(errOut, "crd-diff --rules lists them") {
		t.Errorf("unknown override: exit %d: %s", code, errOut)
	}
	code, out, _ = runCLI(t, "rules")
	if code != exitPass || regexp.MustCompile(`seed 0\d\d|\x{00a7}`).MatchString(out) {
		t.Errorf("rules cites internal notes")
	}
}

func catalogFinding(file string, line, col int, sev, rule, msg string) catalog.Finding {
	return catalog.Finding{Rule: rule, Severity: catalog.Severity(sev), Position: catalog.Position{File: file, Line: line, Column: col}, Message: msg}
}

// TestGitHubOutputFromSubdirectory: run from a subdirectory of the repository, --output github names files
// by their path from the repository's root (GitHub places annotations by it), not from where it ran.
func TestGitHubOutputFromSubdirectory(t *testing.T) {
	repo := t.TempDir()
	os.Mkdir(filepath.Join(repo, ".git"), 0o755)
	csv := strings.Replace(bundleCSV, "installModes: [{type: AllNamespaces, supported: true}]", "installModes: [{type: OwnNamespace, supported: true}]", 1)
	for name, body := range map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": csv} {
		p := filepath.Join(repo, "operators", "etcd", "1.0.0", filepath.FromSlash(name))
		os.MkdirAll(filepath.Dir(p), 0o755)
		os.WriteFile(p, []byte(body), 0o644)
	}
	t.Chdir(filepath.Join(repo, "operators"))
	for _, tc := range []struct {
		workspace, want string
	}{
		{"", "file=operators/etcd/1.0.0/manifests/csv.yaml,line=8"},
		{filepath.Join(repo, "operators"), "file=etcd/1.0.0/manifests/csv.yaml,line=8"},
	} {
		var out, errb bytes.Buffer
		getenv := func(k string) string {
			if k == "GITHUB_WORKSPACE" {
				return tc.workspace
			}
			return ""
		}
		code := runEnv(context.Background(), []string{"bundle", "validate", "-o", "github", filepath.Join("etcd", "1.0.0")}, &out, &errb, env{getenv: getenv})
		if code != exitPass || !strings.Contains(out.String(), "::warning "+tc.want) {
			t.Errorf("GITHUB_WORKSPACE=%q: exit %d, want an annotation with %s:\n%s%s", tc.workspace, code, tc.want, out.String(), errb.String())
		}
	}
}

// TestOutputFlagEverywhere: every subcommand with --output takes -o too, and shell completion offers its
// values (and those of --migrate-level and --checks).
func TestOutputFlagEverywhere(t *testing.T) {
	n := 0
	program(env{getenv: func(string) string { return "" }}).Walk(func(path string, flags *pflag.FlagSet) {
		f := flags.Lookup("output")
		if f == nil {
			return
		}
		n++
		if f.Shorthand != "o" {
			t.Errorf("%s: --output has no -o", path)
		}
		args := append(strings.Fields(path), "--output", "")
		code, out, _ := runCLI(t, append([]string{"__complete"}, args...)...)
		if code != exitPass || !strings.Contains(out, "json\n") || !strings.Contains(out, ":4\n") {
			t.Errorf("%s: completion of --output: %q", path, out)
		}
	})
	if n < 9 {
		t.Errorf("found --output on %d commands; want at least 9", n)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"template", "render", "--migrate-level", ""}, "none\nbundle-object-to-csv-metadata\n:4\n"},
		{[]string{"bundle", "render", "--migrate-level", ""}, "none\nbundle-object-to-csv-metadata\n:4\n"},
		{[]string{"check", "--checks", "ownership,"}, "ownership,validation\nownership,immutability\nownership,crd-safety\nownership,templates\nownership,images\n:6\n"},
		{[]string{"crd-diff", "--profile", ""}, "preflight\ncompatibility\n:4\n"},
	} {
		if _, out, _ := runCLI(t, append([]string{"__complete"}, tc.args...)...); out != tc.want {
			t.Errorf("complete %v = %q, want %q", tc.args, out, tc.want)
		}
	}
	// -o in use: the JSON report of validate.
	code, out, _ := runCLI(t, "validate", "-o", "json", sampleCatalog)
	if code != exitPass || !strings.HasPrefix(out, "{") {
		t.Errorf("validate -o json: exit %d\n%s", code, out)
	}
}

// TestBundleRenderYAML: bundle render -o yaml prints the blob as opm render -o yaml does (one YAML document),
// the same blob as the JSON output; with $OPM (or the reference tools' directory) byte for byte opm's.
func TestBundleRenderYAML(t *testing.T) {
	dir := writeBundle(t, map[string]string{"metadata/annotations.yaml": bundleAnnotations, "manifests/csv.yaml": bundleCSV})
	host := loopbackRegistry(t)
	ref := host + "/bundles/etcd:v1.0.0"
	pushBundleDir(t, dir, ref)
	code, js, errs := runRender(dir, "--image", ref)
	if code != exitPass {
		t.Fatalf("json: exit %d: %s", code, errs)
	}
	code, y, errs := runRender(dir, "--image", ref, "-o", "yaml")
	if code != exitPass || !strings.HasPrefix(y, "---\nimage: "+ref+"\n") {
		t.Fatalf("yaml: exit %d: %s\n%s", code, errs, y)
	}
	fromYAML, err := sigsyaml.YAMLToJSON([]byte(strings.TrimPrefix(y, "---\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(blobForCompare(t, fromYAML), blobForCompare(t, []byte(js))) {
		t.Errorf("the YAML is not the JSON's blob:\n%s\n%s", y, js)
	}
	if code, _, errs := runRender(dir, "--image", ref, "-o", "xml"); code != exitCannotRun || !strings.Contains(errs, "want json or yaml") {
		t.Errorf("-o xml: exit %d: %s", code, errs)
	}
	opm, why := opmrun.Tool("", "OPM", "opm")
	if why != "" {
		t.Skipf("compared with opm render -o yaml only with opm: %s", why)
	}
	home := t.TempDir()
	policy := filepath.Join(home, ".config", "containers", "policy.json")
	os.MkdirAll(filepath.Dir(policy), 0o755)
	os.WriteFile(policy, []byte(`{"default":[{"type":"insecureAcceptAnything"}]}`), 0o644)
	cmd := exec.CommandContext(t.Context(), opm, "render", "--use-http", ref, "-o", "yaml")
	cmd.Env = append(os.Environ(), "HOME="+home)
	theirs, err := cmd.Output()
	if err != nil {
		t.Fatalf("opm render: %v", err)
	}
	code, ours, _ := runRender(ref, "--insecure-registry", host, "-o", "yaml")
	if code != exitPass || ours != string(theirs) {
		t.Errorf("bundle render -o yaml of the image differs from opm render -o yaml:\nours:\n%s\nopm:\n%s", ours, theirs)
	}
}

// TestTemplateRenderOpmForm: template render takes opm alpha render-template's TYPE FILE form too; the
// type must match the template's schema.
func TestTemplateRenderOpmForm(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "basic.yaml")
	os.WriteFile(file, []byte("schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries: []\n"), 0o644)
	code, plain, errs := runCLI(t, "template", "render", file, "--offline", "-o", "yaml")
	if code != exitPass {
		t.Fatalf("render FILE: exit %d: %s", code, errs)
	}
	code, opmForm, errs := runCLI(t, "template", "render", "basic", file, "--offline", "-o", "yaml")
	if code != exitPass || opmForm != plain {
		t.Errorf("render basic FILE: exit %d: %s\n%s", code, errs, opmForm)
	}
	if code, _, errs := runCLI(t, "template", "render", "semver", file, "--offline"); code != exitCannotRun || !strings.Contains(errs, "is an olm.template.basic template, not semver") {
		t.Errorf("render semver BASIC: exit %d: %s", code, errs)
	}
	if code, _, errs := runCLI(t, "template", "render", "fancy", file); code != exitCannotRun || !strings.Contains(errs, `"fancy" is not a template type`) {
		t.Errorf("render fancy FILE: exit %d: %s", code, errs)
	}
	// The type alone, the file forgotten: said so, not "open basic: no such file".
	t.Chdir(dir)
	if code, _, errs := runCLI(t, "template", "render", "basic"); code != exitCannotRun || !strings.Contains(errs, "basic is a template type and there is no file of that name: give the template after it (basic FILE)") {
		t.Errorf("render basic: exit %d: %s", code, errs)
	}
}

// TestShortImageName: a Docker Hub short name is reported as unqualified, with what CRI-O does with it and
// the name to write, not as a reference that does not parse.
func TestShortImageName(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "kube-green"), 0o755)
	os.WriteFile(filepath.Join(dir, "kube-green", "catalog.yaml"), []byte(`schema: olm.package
name: kube-green
defaultChannel: alpha
---
schema: olm.channel
package: kube-green
name: alpha
entries:
  - name: kube-green.v0.3.0
---
schema: olm.bundle
package: kube-green
name: kube-green.v0.3.0
image: kubegreen/kube-green:0.3.0
properties:
  - type: olm.package
    value: {packageName: kube-green, version: 0.3.0}
`), 0o644)
	code, out, errOut := runCLI(t, "images", dir)
	for _, want := range []string{`"kubegreen/kube-green:0.3.0" is unqualified`, "CRI-O", "registries.conf", "short-name-mode", "write it in full: docker.io/kubegreen/kube-green:0.3.0"} {
		if !strings.Contains(out, want) {
			t.Errorf("images: exit %d, output lacks %q:\n%s%s", code, want, out, errOut)
		}
	}
	if strings.Contains(out, "could not parse") {
		t.Errorf("a short name is reported as not parsing:\n%s", out)
	}
}

// TestTemplateConvert: template convert prints what opm alpha convert-template basic prints (the goldens
// recorded from opm v1.60.0 in catalog/template/authoring/testdata/convert), from a file or standard input, in opm's
// form too; a catalog opm cannot read fails.
func TestTemplateConvert(t *testing.T) {
	goldens := filepath.Join("..", "..", "catalog", "template", "authoring", "testdata", "convert")
	file := filepath.Join(sampleCatalog, "etcd-lite", "catalog.yaml")
	for _, tc := range []struct {
		args   []string
		golden string
	}{
		{[]string{"template", "convert", file, "-o", "yaml"}, "sample-yaml.yaml"},
		{[]string{"template", "convert", "basic", file}, "sample-yaml.json"},
		{[]string{"template", "convert", filepath.Join(sampleCatalog, "widget-operator", "catalog.json"), "--output", "json"}, "sample-json.json"},
	} {
		want, err := os.ReadFile(filepath.Join(goldens, tc.golden))
		if err != nil {
			t.Fatal(err)
		}
		code, out, errOut := runCLI(t, tc.args...)
		if code != exitPass || out != string(want) {
			t.Errorf("%v: exit %d %s\n%s\nwant (opm's):\n%s", tc.args, code, errOut, out, want)
		}
	}
	var out, errb bytes.Buffer
	data, _ := os.ReadFile(file)
	if code := runTemplateConvert([]string{"-"}, "yaml", bytes.NewReader(data), &out, &errb); code != exitPass {
		t.Errorf("stdin: exit %d %s", code, errb.String())
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("schema: olm.package\nname: p\nName: q\n"), 0o644)
	if code, _, errOut := runCLI(t, "template", "convert", bad); code != exitFail || !strings.Contains(errOut, "duplicate keys") {
		t.Errorf("duplicate keys: exit %d %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "template", "convert", sampleCatalog); code != exitCannotRun || !strings.Contains(errOut, "is a directory") {
		t.Errorf("a directory: exit %d %s", code, errOut)
	}
}

// TestTemplateRenderMigratedCatalog: a template whose bundle is resolved only by a catalog rendered with
// --migrate-level bundle-object-to-csv-metadata (as the community's newer catalogs are), rendered without
// it, says which flag the catalog was made with instead of only that the image was not found; with it,
// the template renders.
func TestTemplateRenderMigratedCatalog(t *testing.T) {
	dir := t.TempDir()
	const img = "quay.io/acme/etcd-bundle@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	os.MkdirAll(filepath.Join(dir, "catalog", "etcd"), 0o755)
	os.WriteFile(filepath.Join(dir, "catalog", "etcd", "catalog.yaml"), []byte(`---
schema: olm.package
name: etcd
defaultChannel: stable
---
schema: olm.channel
package: etcd
name: stable
entries:
  - name: etcd.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcd.v1.0.0
image: `+img+`
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
  - type: olm.csv.metadata
    value: {displayName: etcd}
`), 0o644)
	tmpl := filepath.Join(dir, "basic.yaml")
	os.WriteFile(tmpl, []byte(`schema: olm.template.basic
entries:
  - schema: olm.package
    name: etcd
    defaultChannel: stable
  - schema: olm.channel
    package: etcd
    name: stable
    entries:
      - name: etcd.v1.0.0
  - schema: olm.bundle
    image: `+img+`
`), 0o644)
	code, _, errOut := runCLI(t, "template", "render", "basic", tmpl, "--offline", "--catalog", filepath.Join(dir, "catalog"))
	if code == exitPass || !strings.Contains(errOut, "holds olm.csv.metadata") || !strings.Contains(errOut, "--migrate-level bundle-object-to-csv-metadata") {
		t.Errorf("without --migrate-level: exit %d, want the flag the catalog was rendered with named:\n%s", code, errOut)
	}
	code, out, errOut := runCLI(t, "template", "render", "basic", tmpl, "--offline", "--catalog", filepath.Join(dir, "catalog"), "--migrate-level", "bundle-object-to-csv-metadata", "-o", "yaml")
	if code != exitPass || !strings.Contains(out, "image: "+img) {
		t.Errorf("with --migrate-level: exit %d\n%s%s", code, out, errOut)
	}
}
