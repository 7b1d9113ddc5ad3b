package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/catalogbot/catalogbot/catalog"
	cbundle "github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/internal/servertest"
)

// promoteKind is one synthetic package of the promotion test repository.
type promoteKind struct {
	name string
	// ci is the package's ci.yaml ("" for none); mapped says its template renders v4.22.
	ci       string
	semver   bool
	mapped   bool
	catalogs []string // the catalog versions holding the package
	// want is the outcome and strategy the promotion reports.
	outcome, strategy string
}

func ciMapped(strategy, names string) string {
	s := "---\nreviewers:\n  - alice\nfbc:\n  enabled: true\n"
	if strategy != "" {
		s += "  version_promotion_strategy: " + strategy + "\n"
	}
	return s + "  catalog_mapping:\n    - template_name: basic.yaml\n      type: olm.template.basic\n      catalog_names:" + names
}

const blockNames = "\n        - v4.21\n        - v4.22\n"

// promoteKinds are the 20 synthetic packages: mapped (basic and semver, block and flow lists, quoted names,
// indentless lists, two mapping entries) and unmapped, each strategy, already promoted, without a v4.22
// catalog, and malformed ci.yaml files.
func promoteKinds() []promoteKind {
	v2122 := []string{"v4.21", "v4.22"}
	return []promoteKind{
		{name: "p01-basic-always", ci: ciMapped("always", blockNames), mapped: true, catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p02-flow-always", ci: ciMapped("always", ` ["v4.21", v4.22]`+"\n"), mapped: true, catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p03-quoted-always", ci: "fbc:\n  enabled: true\n  version_promotion_strategy: always\n  catalog_mapping:\n    - catalog_names:\n        - \"v4.12\"\n      template_name: old.yaml\n      type: olm.template.basic\n    - catalog_names:\n        - \"v4.21\"\n        - \"v4.22\"\n      template_name: basic.yaml\n      type: olm.template.basic\nreviewers:\n  - alice\n", mapped: true, catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p04-semver-always", ci: strings.ReplaceAll(strings.ReplaceAll(ciMapped("always", blockNames), "basic.yaml", "semver.yaml"), "olm.template.basic", "olm.semver"), semver: true, mapped: true, catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p05-basic-review", ci: ciMapped("review-needed", blockNames), mapped: true, catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p06-basic-default", ci: ciMapped("", blockNames), mapped: true, catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p07-semver-default", ci: strings.ReplaceAll(strings.ReplaceAll(ciMapped("", ` ["v4.22"]`+"\n"), "basic.yaml", "semver.yaml"), "olm.template.basic", "olm.semver"), semver: true, mapped: true, catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p08-copy-no-ci", catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p09-copy-reviewers", ci: "reviewers:\n  - bob\n", catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p10-copy-always", ci: "fbc:\n  version_promotion_strategy: always\n", catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p11-disabled-always", ci: strings.ReplaceAll(ciMapped("always", blockNames), "enabled: true", "enabled: false"), catalogs: v2122, outcome: "promoted", strategy: "always"},
		{name: "p12-never-mapped", ci: ciMapped("never", blockNames), mapped: true, catalogs: v2122, outcome: "skipped", strategy: "never"},
		{name: "p13-never-copy", ci: "fbc:\n  version_promotion_strategy: never\n", catalogs: v2122, outcome: "skipped", strategy: "never"},
		{name: "p14-present-mapped", ci: ciMapped("always", blockNames+"        - v4.23\n"), mapped: true, catalogs: []string{"v4.21", "v4.22", "v4.23"}, outcome: "unchanged", strategy: "always"},
		{name: "p15-present-copy", catalogs: []string{"v4.22", "v4.23"}, outcome: "unchanged", strategy: "review-needed"},
		{name: "p16-no-source", ci: ciMapped("always", "\n        - v4.20\n        - v4.21\n"), mapped: true, catalogs: []string{"v4.21"}, outcome: "skipped", strategy: "always"},
		{name: "p17-bad-strategy", ci: "fbc:\n  enabled: true\n  version_promotion_strategy: sometimes\n", catalogs: v2122, outcome: "skipped", strategy: "review-needed"},
		{name: "p18-bad-names", ci: ciMapped("always", " [4.20, v4.22]\n"), catalogs: v2122, outcome: "skipped", strategy: "review-needed"},
		{name: "p19-mapped-elsewhere", ci: ciMapped("review-needed", "\n        - v4.21\n"), catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
		{name: "p20-indentless", ci: "fbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names:\n    # the supported versions\n    - v4.21\n    - v4.22\nreviewers:\n- carol\n", mapped: true, catalogs: v2122, outcome: "promoted", strategy: "review-needed"},
	}
}

func fakeDigest(s string) string {
	sum := sha256.Sum256([]byte(s))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// syntheticPackage writes a package's bundles (as the catalog blobs a render of their images gives), its
// template, and its catalog for each version — the template's rendering, so the catalogs hold no drift.
func syntheticPackage(t *testing.T, root string, k promoteKind) {
	t.Helper()
	pkg := k.name
	versions := []string{"1.0.0", "1.1.0", "2.0.0"}
	var blobs strings.Builder
	var images []string
	for _, v := range versions {
		img := "quay.io/example/" + pkg + "-bundle@" + fakeDigest(pkg+v)
		images = append(images, img)
		fmt.Fprintf(&blobs, "---\nschema: olm.bundle\npackage: %s\nname: %s.v%s\nimage: %s\nproperties:\n- type: olm.package\n  value: {packageName: %s, version: %s}\n- type: olm.csv.metadata\n  value: {displayName: %s, description: a test operator}\nrelatedImages:\n- name: operator\n  image: quay.io/example/%s@%s\n",
			pkg, pkg, v, img, pkg, v, pkg, pkg, fakeDigest("op"+pkg+v))
	}
	var tmpl string
	if k.semver {
		tmpl = "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: false\nstable:\n  bundles:\n"
		for _, img := range images {
			tmpl += "  - image: " + img + "\n"
		}
	} else {
		tmpl = fmt.Sprintf("schema: olm.template.basic\nentries:\n- schema: olm.package\n  name: %[1]s\n  defaultChannel: stable\n- schema: olm.channel\n  package: %[1]s\n  name: stable\n  entries:\n  - name: %[1]s.v1.0.0\n  - name: %[1]s.v1.1.0\n    replaces: %[1]s.v1.0.0\n  - name: %[1]s.v2.0.0\n    replaces: %[1]s.v1.1.0\n", pkg)
		for _, img := range images {
			tmpl += "- schema: olm.bundle\n  image: " + img + "\n"
		}
	}
	parsed, findings := template.Parse("t.yaml", []byte(tmpl), catalog.Limits{})
	if parsed == nil {
		t.Fatalf("%s: %v", pkg, findings)
	}
	docs, _ := catalog.ParseFile("seed.yaml", []byte(blobs.String()), catalog.Limits{})
	cr, _ := template.NewCatalogResolver("bundle-object-to-csv-metadata")
	cr.Add(docs)
	beh, _ := template.BehaviourOf("v1.46.0")
	out, findings := template.Render(context.Background(), parsed, template.Options{Resolver: cr, Behaviour: beh})
	if out == nil {
		t.Fatalf("%s: %v", pkg, findings)
	}
	var rendered bytes.Buffer
	if err := out.WriteYAML(&rendered); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(root, "operators", pkg)
	if k.ci != "" {
		writePromoteFile(t, filepath.Join(dir, "ci.yaml"), k.ci)
	}
	name := "basic.yaml"
	if k.semver {
		name = "semver.yaml"
	}
	writePromoteFile(t, filepath.Join(dir, "catalog-templates", name), tmpl)
	writePromoteFile(t, filepath.Join(dir, "Makefile"), "OPM_VERSION ?= v1.46.0\n")
	for _, v := range k.catalogs {
		file := "catalog.yaml"
		if k.name == "p09-copy-reviewers" {
			file = "catalog.json" // a copied package keeps its file names
			writePromoteFile(t, filepath.Join(root, "catalogs", v, pkg, ".indexignore"), "# nothing ignored\n")
			var js bytes.Buffer
			if err := out.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			writePromoteFile(t, filepath.Join(root, "catalogs", v, pkg, file), js.String())
			continue
		}
		writePromoteFile(t, filepath.Join(root, "catalogs", v, pkg, file), rendered.String())
	}
}

func writePromoteFile(t *testing.T, name, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_NOSYSTEM=1", "HOME="+dir)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// realPromotePackages are community packages of the shared test data added to the repository when it is
// there: templates with tags, semver, flow lists with mixed quoting, comments inside the list, two
// mapping entries, drift, and one that stopped at v4.21.
var realPromotePackages = []string{"cat-facts-operator", "dotvirt-operator", "ecr-secret-operator", "jumpstarter-operator", "kepler-operator", "rsct-operator", "kube-green", "nfs-provisioner-operator"}

const sharedTemplatesDir = "../../../shared/testdata/templates"

// copyTree copies the directory src to dst.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		writePromoteFile(t, filepath.Join(dst, rel), string(data))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// makePromoteRepo builds the test repository as a git repository: the 20 synthetic packages, and the real
// ones when the shared test data is there. It returns the directory and the real packages added.
func makePromoteRepo(t *testing.T) (string, []string) {
	t.Helper()
	root := t.TempDir()
	writePromoteFile(t, filepath.Join(root, ".catalogbot.yaml"), "version: 1\ncatalogs:\n  - path: catalogs/v4.*\nmaintainers: [admin]\nbundles:\n  - path: operators\n    ownersFromCIYaml: true\n    templatesFromCIYaml: true\n")
	for _, k := range promoteKinds() {
		syntheticPackage(t, root, k)
	}
	var real []string
	if _, err := os.Stat(sharedTemplatesDir); err != nil {
		t.Logf("the shared test data is absent (%s): the repository holds the 20 synthetic packages only", sharedTemplatesDir)
	} else {
		for _, p := range realPromotePackages {
			copyTree(t, filepath.Join(sharedTemplatesDir, "operators", p), filepath.Join(root, "operators", p))
			cats, _ := filepath.Glob(filepath.Join(sharedTemplatesDir, "catalogs", "*", p))
			for _, c := range cats {
				copyTree(t, c, filepath.Join(root, "catalogs", filepath.Base(filepath.Dir(c)), p))
			}
			real = append(real, p)
		}
	}
	gitT(t, root, "init", "-q", "-b", "main")
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "catalogs up to v4.22")
	return root, real
}

func runPromoteCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := runEnv(t.Context(), append([]string{"promote"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

type promoteJSON struct {
	TargetDeclared bool `json:"targetDeclared"`
	Packages       []struct {
		Name, Strategy, StrategyFrom, Outcome, Method, Reason, Error string
		Files, Notes                                                 []string
	} `json:"packages"`
}

// TestPromoteCLI: catalogbot promote on a git repository of 20 synthetic packages (and 8 community ones when
// the shared test data is there) reports every package with its strategy and outcome, writes nothing with
// --dry-run, writes exactly the promoted packages' files otherwise (each ci.yaml gaining one line or one flow
// item), names each malformed ci.yaml on its line with exit 1, renders each mapped package's new catalog
// byte for byte as its committed v4.22 catalog (same template, same migrate level), leaves a catalog that
// catalog-check validate passes, and changes nothing when run again.
func TestPromoteCLI(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	root, real := makePromoteRepo(t)

	// --dry-run: the plan, nothing written.
	code, out, errs := runPromoteCLI(t, "--from", "v4.22", "--to", "v4.23", "--repo", root, "--dry-run", "-o", "json")
	if code != exitFail {
		t.Fatalf("dry run: exit %d, want %d (two malformed ci.yaml)\n%s%s", code, exitFail, out, errs)
	}
	if st := gitT(t, root, "status", "--porcelain"); st != "" {
		t.Fatalf("--dry-run wrote files:\n%s", st)
	}
	var plan promoteJSON
	if err := json.Unmarshal([]byte(out), &plan); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !plan.TargetDeclared {
		t.Error("catalogs/v4.* declares catalogs/v4.23, yet the plan says it is not declared")
	}
	got := map[string]int{}
	for _, p := range plan.Packages {
		got[p.Name] = 1
	}
	if len(plan.Packages) != 20+len(real) {
		t.Errorf("%d packages in the plan, want %d", len(plan.Packages), 20+len(real))
	}
	byName := map[string]int{}
	for i, p := range plan.Packages {
		byName[p.Name] = i
	}
	wantFiles := map[string]bool{}
	for _, k := range promoteKinds() {
		i, ok := byName[k.name]
		if !ok {
			t.Errorf("%s: not in the plan", k.name)
			continue
		}
		p := plan.Packages[i]
		if p.Outcome != k.outcome || p.Strategy != k.strategy {
			t.Errorf("%s: %s with %s (%s), want %s with %s", k.name, p.Outcome, p.Strategy, p.Reason, k.outcome, k.strategy)
		}
		if p.Outcome == "promoted" {
			for _, f := range p.Files {
				wantFiles[f] = true
			}
			wantMethod := "copy"
			if k.mapped {
				wantMethod = "template"
			}
			if p.Method != wantMethod {
				t.Errorf("%s: method %s, want %s", k.name, p.Method, wantMethod)
			}
		}
	}
	for _, c := range []struct{ pkg, want string }{
		{"p17-bad-strategy", "operators/p17-bad-strategy/ci.yaml:3:"},
		{"p18-bad-names", "operators/p18-bad-names/ci.yaml:10:"},
		{"p12-never-mapped", "fbc.version_promotion_strategy is never (operators/p12-never-mapped/ci.yaml:6)"},
		{"p16-no-source", "no v4.22 catalog"},
		{"p14-present-mapped", "catalogs/v4.23/p14-present-mapped/ exists already"},
	} {
		p := plan.Packages[byName[c.pkg]]
		if !strings.Contains(p.Reason, c.want) {
			t.Errorf("%s: reason %q, want %q in it", c.pkg, p.Reason, c.want)
		}
	}
	if p := plan.Packages[byName["p19-mapped-elsewhere"]]; len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "does not name v4.22") {
		t.Errorf("p19: notes %v", p.Notes)
	}
	for _, name := range real {
		p := plan.Packages[byName[name]]
		want := "promoted"
		if name == "kube-green" {
			want = "skipped"
		}
		if p.Outcome != want {
			t.Errorf("%s: %s (%s), want %s", name, p.Outcome, p.Reason, want)
		}
		if p.Outcome == "promoted" {
			for _, f := range p.Files {
				wantFiles[f] = true
			}
		}
	}

	// The promotion itself.
	code, out, errs = runPromoteCLI(t, "--from", "v4.22", "--to", "v4.23", "--repo", root)
	if code != exitFail {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitFail, out, errs)
	}
	for _, line := range []string{
		"p01-basic-always      always         promoted (template): catalogs/v4.23/p01-basic-always/catalog.yaml, operators/p01-basic-always/ci.yaml",
		"p08-copy-no-ci        review-needed  promoted (copy): catalogs/v4.23/p08-copy-no-ci/catalog.yaml",
		"p13-never-copy        never          skipped: fbc.version_promotion_strategy is never (operators/p13-never-copy/ci.yaml:2)",
	} {
		if !strings.Contains(strings.Join(strings.Fields(out), " "), strings.Join(strings.Fields(line), " ")) {
			t.Errorf("the output lacks %q:\n%s", line, out)
		}
	}
	// Of the community packages, kube-green is skipped; without the shared test data there are none.
	realPromoted := 0
	for _, name := range real {
		if name != "kube-green" {
			realPromoted++
		}
	}
	if !strings.Contains(out, fmt.Sprintf("%d packages: %d promoted", 20+len(real), 13+realPromoted)) {
		t.Errorf("summary:\n%s", out)
	}
	changed := map[string]bool{}
	for _, l := range strings.Split(strings.TrimSpace(gitT(t, root, "status", "--porcelain", "-uall")), "\n") {
		changed[strings.TrimSpace(l[2:])] = true
	}
	for f := range wantFiles {
		if !changed[f] {
			t.Errorf("%s: in the plan, not written", f)
		}
	}
	for f := range changed {
		if !wantFiles[f] {
			t.Errorf("%s: written, not in the plan", f)
		}
	}
	// Every ci.yaml gains exactly one line, or one flow item on its line.
	for _, l := range strings.Split(strings.TrimSpace(gitT(t, root, "diff", "--numstat")), "\n") {
		f := strings.Fields(l)
		if len(f) != 3 || !strings.HasSuffix(f[2], "/ci.yaml") {
			t.Errorf("changed besides ci.yaml files: %s", l)
			continue
		}
		if !(f[0] == "1" && f[1] == "0") && !(f[0] == "1" && f[1] == "1") {
			t.Errorf("%s: +%s -%s lines, want one line added or one changed", f[2], f[0], f[1])
		}
	}
	// The new catalogs of mapped packages are their v4.22 catalogs (same template, same migrate level), unless
	// a note says the committed v4.22 catalog drifted from its template.
	for _, p := range plan.Packages {
		if p.Outcome != "promoted" {
			continue
		}
		for _, f := range p.Files {
			if !strings.HasPrefix(f, "catalogs/v4.23/") {
				continue
			}
			old, err := os.ReadFile(filepath.Join(root, strings.Replace(f, "v4.23", "v4.22", 1)))
			if err != nil {
				t.Errorf("%s: %v", f, err)
				continue
			}
			now, _ := os.ReadFile(filepath.Join(root, f))
			drift := false
			for _, n := range p.Notes {
				drift = drift || strings.Contains(n, "(drift)")
			}
			if !bytes.Equal(old, now) && !drift {
				t.Errorf("%s: differs from its v4.22 catalog and no note says why", f)
			}
		}
	}
	// The promoted catalog passes validation as catalog-check validate judges it.
	res, err := catalog.ValidateDir(t.Context(), filepath.Join(root, "catalogs", "v4.23"), catalog.DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	var errsFound []string
	for _, f := range res.Findings {
		if f.Severity == catalog.SeverityError {
			errsFound = append(errsFound, f.String())
		}
	}
	sort.Strings(errsFound)
	if len(errsFound) > 0 {
		t.Errorf("catalogs/v4.23 does not validate:\n%s", strings.Join(errsFound, "\n"))
	}

	// Run again: every promoted package is now unchanged.
	gitT(t, root, "add", "-A")
	gitT(t, root, "commit", "-q", "-m", "promoted")
	code, out, _ = runPromoteCLI(t, "--from", "v4.22", "--to", "v4.23", "--repo", root, "--rev", "HEAD")
	if code != exitFail || strings.Contains(out, "promoted (template)") || strings.Contains(out, "promoted (copy)") {
		t.Errorf("second run: exit %d, something promoted again:\n%s", code, out)
	}
	if st := gitT(t, root, "status", "--porcelain"); st != "" {
		t.Errorf("the second run wrote files:\n%s", st)
	}
}

// TestPromoteCLIUsage: bad arguments are refused with what to write instead.
func TestPromoteCLIUsage(t *testing.T) {
	root := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--to", "v4.23"}, "--from and --to are required"},
		{[]string{"--from", "v4.22", "--to", "v4.22", "--repo", root}, "both v4.22"},
		{[]string{"--from", "../x", "--to", "v4.23", "--repo", root}, "not a catalog name"},
		{[]string{"--from", "v4.22", "--to", "v4.23", "--repo", root}, "catalogs/v4.22 is not a directory"},
		{[]string{"--from", "v4.22", "--to", "v4.23", "--repo", filepath.Join(root, "nope")}, "is not a directory"},
		{[]string{"--from", "v4.22", "--to", "v4.23", "--repo", root, "--rev", "HEAD"}, "--rev needs a git repository"},
		{[]string{"--from", "v4.22", "--to", "v4.23", "-o", "xml"}, "--output must be text or json"},
	} {
		code, _, errs := runPromoteCLI(t, c.args...)
		if code != exitCannotRun || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", c.args, code, errs, c.want)
		}
	}
}

// TestPromoteCLIPull: a template ahead of its catalog (it names a bundle image the committed catalog lacks)
// cannot be rendered offline, so the catalog is copied and a note says why; with --pull the image is pulled
// from the registry (on loopback here) and the new catalog is the template's rendering, with the new bundle;
// an image outside the policy's allowedRegistries is never pulled.
func TestPromoteCLIPull(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	ctx := t.Context()
	host := servertest.NewRegistry(t)
	bundles := t.TempDir()
	var refs []string
	for _, v := range []struct{ version, replaces string }{{"1.0.0", ""}, {"1.1.0", "pulled-operator.v1.0.0"}} {
		dir := filepath.Join(bundles, v.version)
		csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: pulled-operator.v" + v.version + "\nspec:\n  version: " + v.version + "\n  minKubeVersion: 1.25.0\n  installModes: [{type: AllNamespaces, supported: true}]\n"
		if v.replaces != "" {
			csv += "  replaces: " + v.replaces + "\n"
		}
		writePromoteFile(t, filepath.Join(dir, "manifests", "csv.yaml"), csv)
		writePromoteFile(t, filepath.Join(dir, "metadata", "annotations.yaml"), "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: pulled-operator\n  operators.operatorframework.io.bundle.channels.v1: stable\n")
		b, _, err := cbundle.Load(ctx, os.DirFS(dir), cbundle.Limits{})
		if err != nil {
			t.Fatal(err)
		}
		img, err := image.BundleImage(ctx, os.DirFS(dir), b.Annotations, image.Limits{TempDir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		digest, _ := img.Digest()
		tag := host + "/pulled-operator-bundle:v" + v.version
		if err := remote.Write(mustInsecureRef(t, tag), img, remote.WithContext(ctx)); err != nil {
			t.Fatal(err)
		}
		refs = append(refs, host+"/pulled-operator-bundle@"+digest.String())
	}
	semver := func(refs ...string) string {
		s := "schema: olm.semver\ngenerateMajorChannels: true\ngenerateMinorChannels: false\nstable:\n  bundles:\n"
		for _, r := range refs {
			s += "  - image: " + r + "\n"
		}
		return s
	}
	// The committed v4.22 catalog: the template as it was, with the first bundle only.
	old, _ := template.Parse("t.yaml", []byte(semver(refs[0])), catalog.Limits{})
	dr := template.NewDirResolver(os.DirFS(bundles), []string{"1.0.0", "1.1.0"}, "", "bundle-object-to-csv-metadata").AnyRepository()
	beh, _ := template.BehaviourOf("v1.46.0")
	out, findings := template.Render(ctx, old, template.Options{Resolver: dr, Behaviour: beh})
	if out == nil {
		t.Fatal(findings)
	}
	var committed bytes.Buffer
	if err := out.WriteYAML(&committed); err != nil {
		t.Fatal(err)
	}
	repoWith := func(allowed string) string {
		root := t.TempDir()
		writePromoteFile(t, filepath.Join(root, ".catalogbot.yaml"), "version: 1\ncatalogs:\n  - path: catalogs/v4.22\n  - path: catalogs/v4.23\nmaintainers: [admin]\nimages:\n  allowedRegistries: [\""+allowed+"\"]\n")
		writePromoteFile(t, filepath.Join(root, "operators", "pulled-operator", "ci.yaml"), "fbc:\n  enabled: true\n  version_promotion_strategy: always\n  catalog_mapping:\n    - template_name: semver.yaml\n      type: olm.semver\n      catalog_names: [v4.22]\n")
		writePromoteFile(t, filepath.Join(root, "operators", "pulled-operator", "Makefile"), "OPM_VERSION ?= v1.46.0\n")
		writePromoteFile(t, filepath.Join(root, "operators", "pulled-operator", "catalog-templates", "semver.yaml"), semver(refs...))
		writePromoteFile(t, filepath.Join(root, "catalogs", "v4.22", "pulled-operator", "catalog.yaml"), committed.String())
		return root
	}
	plan := func(root string, args ...string) promoteJSON {
		t.Helper()
		code, out, errs := runPromoteCLI(t, append([]string{"--from", "v4.22", "--to", "v4.23", "--repo", root, "-o", "json"}, args...)...)
		if code != exitOK {
			t.Fatalf("exit %d\n%s%s", code, out, errs)
		}
		var p promoteJSON
		if err := json.Unmarshal([]byte(out), &p); err != nil {
			t.Fatal(err)
		}
		if len(p.Packages) != 1 {
			t.Fatalf("%s", out)
		}
		return p
	}

	root := repoWith(host)
	if p := plan(root, "--dry-run").Packages[0]; p.Method != "copy" || len(p.Notes) == 0 || !strings.Contains(p.Notes[0], "render offline") {
		t.Errorf("offline: %s %v", p.Method, p.Notes)
	}
	p := plan(root, "--pull", "--insecure-registry", host).Packages[0]
	if p.Outcome != "promoted" || p.Method != "template" {
		t.Fatalf("with --pull: %s %s %v", p.Outcome, p.Method, p.Notes)
	}
	got, err := os.ReadFile(filepath.Join(root, "catalogs", "v4.23", "pulled-operator", "catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(got), "name: pulled-operator.v1.1.0") || !strings.Contains(string(got), refs[1]) {
		t.Errorf("the pulled bundle is not in the new catalog:\n%s", got)
	}
	res, err := catalog.ValidateDir(ctx, filepath.Join(root, "catalogs", "v4.23"), catalog.DefaultLimits())
	if err != nil || hasErrorFinding(res.Findings) {
		t.Errorf("the new catalog does not validate: %v %v", err, res.Findings)
	}

	// The registry is not one the policy allows: nothing is pulled, the catalog is copied.
	other := repoWith("quay.io/acme")
	if p := plan(other, "--pull", "--insecure-registry", host, "--dry-run").Packages[0]; p.Method != "copy" {
		t.Errorf("outside allowedRegistries: %s %v", p.Method, p.Notes)
	}
	if code, _, errs := runPromoteCLI(t, "--from", "v4.22", "--to", "v4.23", "--repo", other, "--insecure-registry", host); code != exitCannotRun || !strings.Contains(errs, "need --pull") {
		t.Errorf("--insecure-registry without --pull: %d %s", code, errs)
	}
}

func hasErrorFinding(fs []catalog.Finding) bool {
	for _, f := range fs {
		if f.Severity == catalog.SeverityError {
			return true
		}
	}
	return false
}

func mustInsecureRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s, name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
