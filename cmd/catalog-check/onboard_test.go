package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/catalogbot/catalogbot/policy"
)

// layoutRepo is a catalog repository in the community layout: catalogs/v4.<n>/<package>/catalog.yaml,
// operators/<package>/<version>/ bundle directories with ci.yaml (reviewers, a catalog mapping), the
// pipeline's config.yaml, and a standalone template.
func layoutRepo(t *testing.T) string {
	t.Helper()
	pkg := func(name string) string {
		return "schema: olm.package\nname: " + name + "\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: " + name + "\nname: stable\nentries:\n  - name: " + name + ".v1.0.0\n"
	}
	files := map[string]string{
		"README.md":              "# catalogs\n",
		"config.yaml":            "organization: acme\nmaintainers:\n  - alice\n  - bob\nallowed_bundle_registries:\n  - quay.io/acme/\n",
		"operators/etcd/ci.yaml": "reviewers:\n- carol\n- jan_f\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    catalog_names: [v4.16, v4.17]\n    type: olm.template.basic\n",
		"operators/etcd/catalog-templates/basic.yaml": "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n",
		"operators/redis/ci.yaml":                     "updateGraph: replaces-mode\n",
		"templates/nginx.yaml":                        "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: nginx\n    defaultChannel: stable\n",
	}
	for _, v := range []string{"v4.16", "v4.17", "v4.18"} {
		for _, p := range []string{"etcd", "redis", "nginx"} {
			files["catalogs/"+v+"/"+p+"/catalog.yaml"] = pkg(p)
		}
	}
	for _, b := range []string{"etcd/1.0.0", "etcd/1.1.0", "redis/1.0.0"} {
		files["operators/"+b+"/metadata/annotations.yaml"] = bundleAnnotations
		files["operators/"+b+"/manifests/csv.yaml"] = bundleCSV
	}
	return writeBundle(t, files)
}

// TestInitCommunityLayout: init on a community-layout repository writes a policy catalogbot accepts, with
// the catalogs as one pattern, the bundle root reading ci.yaml, the standalone template with its package's
// catalogs, and the maintainers and registries of config.yaml; --write writes it once.
func TestInitCommunityLayout(t *testing.T) {
	repo := layoutRepo(t)
	code, out, errOut := runCLI(t, "init", "--repo", repo)
	if code != exitPass {
		t.Fatalf("init: exit %d: %s", code, errOut)
	}
	pol, err := policy.Parse(policy.FileName, []byte(out))
	if err != nil {
		t.Fatalf("init wrote a policy that does not parse: %v\n%s", err, out)
	}
	resolved, err := pol.ResolveCatalogs(os.DirFS(repo))
	if err != nil {
		t.Fatal(err)
	}
	if len(pol.Catalogs) != 1 || pol.Catalogs[0].Path != "catalogs/v4.*" || len(resolved.Catalogs) != 3 {
		t.Errorf("catalogs = %+v (resolved %d), want the pattern catalogs/v4.* for three catalogs", pol.Catalogs, len(resolved.Catalogs))
	}
	if len(pol.Bundles) != 1 || pol.Bundles[0].Path != "operators" || !pol.Bundles[0].CIYamlOwners || !pol.Bundles[0].TemplatesFromCIYaml {
		t.Errorf("bundles = %+v, want operators with ownersFromCIYaml and templatesFromCIYaml", pol.Bundles)
	}
	if len(pol.Templates) != 1 || pol.Templates[0].Path != "templates/nginx.yaml" || len(pol.Templates[0].Catalogs) != 3 {
		t.Errorf("templates = %+v, want templates/nginx.yaml with the three nginx catalogs (etcd's template is ci.yaml's)", pol.Templates)
	}
	if len(pol.Maintainers) != 2 || pol.Maintainers[0].Login != "alice" || !strings.Contains(out, "From the maintainers of config.yaml") {
		t.Errorf("maintainers = %+v", pol.Maintainers)
	}
	if len(pol.Images.AllowedRegistries) != 1 || pol.Images.AllowedRegistries[0] != "quay.io/acme/" {
		t.Errorf("allowedRegistries = %v", pol.Images.AllowedRegistries)
	}
	// --maintainer wins over config.yaml; --write writes the file, and refuses to replace it.
	if code, _, errOut := runCLI(t, "init", "--repo", repo, "--write", "--maintainer", "@acme/admins"); code != exitPass || !strings.Contains(errOut, "wrote") {
		t.Fatalf("init --write: exit %d: %s", code, errOut)
	}
	written, _ := os.ReadFile(filepath.Join(repo, policy.FileName))
	if !strings.Contains(string(written), `- "@acme/admins"`) {
		t.Errorf("written policy lacks the maintainer given:\n%s", written)
	}
	if code, _, errOut := runCLI(t, "init", "--repo", repo, "--write"); code != exitCannotRun || !strings.Contains(errOut, "exists") {
		t.Errorf("init --write over a policy: exit %d: %s", code, errOut)
	}
	// The policy it wrote lints: the unknown ci.yaml reviewer and redis's missing owner are reported.
	code, out, errOut = runCLI(t, "policy", "lint", "--repo", repo)
	if code != exitFail {
		t.Errorf("lint: exit %d, want 1: %s%s", code, out, errOut)
	}
	for _, want := range []string{
		"operators/etcd/ci.yaml:3:3: error: policy.unknown-user: reviewer \"jan_f\" of package etcd is not a GitHub login",
		"catalogs/v4.16/nginx: warning: policy.package-no-owner: package nginx has no owner",
		"catalogs/v4.16/redis: warning: policy.package-no-owner: package redis has no owner",
		".catalogbot.yaml: INVALID: 1 error, 2 warnings",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
}

// TestInitNeedsCatalogAndMaintainers: init says what it lacks instead of writing a policy catalogbot refuses.
func TestInitNeedsCatalogAndMaintainers(t *testing.T) {
	if code, _, errOut := runCLI(t, "init", "--repo", writeBundle(t, map[string]string{"README.md": "x\n"}), "--maintainer", "alice"); code != exitCannotRun || !strings.Contains(errOut, "no file-based catalog found") {
		t.Errorf("no catalog: exit %d: %s", code, errOut)
	}
	repo := t.TempDir()
	copyDir(t, sampleCatalog, filepath.Join(repo, "catalog"))
	if code, _, errOut := runCLI(t, "init", "--repo", repo); code != exitCannotRun || !strings.Contains(errOut, "--maintainer") {
		t.Errorf("no maintainer: exit %d: %s", code, errOut)
	}
	os.MkdirAll(filepath.Join(repo, ".github"), 0o755)
	os.WriteFile(filepath.Join(repo, ".github", "CODEOWNERS"), []byte("# owners\n*  @acme/catalog-admins dave\ndocs/ erin\n"), 0o644)
	code, out, errOut := runCLI(t, "init", "--repo", repo)
	if code != exitPass || !strings.Contains(out, "- path: \"catalog\"") || !strings.Contains(out, "- \"@acme/catalog-admins\"\n  - \"dave\"") || !strings.Contains(out, "the * rule of .github/CODEOWNERS") {
		t.Errorf("CODEOWNERS: exit %d: %s\n%s", code, errOut, out)
	}
}

// TestPolicyLint: each kind of problem of a policy against its repository, on its line.
func TestPolicyLint(t *testing.T) {
	repo := layoutRepo(t)
	write := func(body string) {
		os.WriteFile(filepath.Join(repo, policy.FileName), []byte(body), 0o644)
	}
	write(`version: 1
catalogs:
  - path: catalogs/v4.*
  - path: catalogs/v5.*
  - path: operators/redis
maintainers: [alice, "@acme/admins"]
packages:
  redis: { owners: [mallory] }
  nginx: { owners: [bob] }
bundles:
  - path: operators
    ownersFromCIYaml: true
  - path: templates
templates:
  - path: templates/nginx.yaml
    catalogs: [catalogs/v4.16/nginx/catalog.yaml, catalogs/v4.19/nginx/catalog.yaml]
  - path: templates/gone.yaml
    catalogs: [catalogs/v4.16/nginx/catalog.yaml]
`)
	users := filepath.Join(t.TempDir(), "users.txt")
	os.WriteFile(users, []byte("# the organization's members\nalice\nbob\ncarol\n"), 0o644)
	teams := filepath.Join(t.TempDir(), "teams.yaml")
	os.WriteFile(teams, []byte(`"@acme/other": [alice]`+"\n"), 0o644)
	code, out, errOut := runCLI(t, "policy", "lint", "--repo", repo, "--known-users", users, "--team-members", teams)
	if code != exitFail {
		t.Errorf("exit %d, want 1: %s", code, errOut)
	}
	for _, want := range []string{
		".catalogbot.yaml:4:5: error: policy.root-missing: catalog pattern catalogs/v5.* matches no directory",
		".catalogbot.yaml:5:5: warning: policy.root-empty: catalog root operators/redis holds no package",
		".catalogbot.yaml:13:5: warning: policy.bundle-root-empty: bundle root templates holds no bundle directory",
		".catalogbot.yaml:15:5: error: policy.template-missing: catalog file catalogs/v4.19/nginx/catalog.yaml, which template templates/nginx.yaml renders into, is not a file",
		".catalogbot.yaml:17:5: error: policy.template-missing: template templates/gone.yaml is not a file",
		".catalogbot.yaml:8:3: error: policy.unknown-user: owner of redis, mallory is not a known GitHub user",
		".catalogbot.yaml:1: error: policy.unknown-user: maintainer @acme/admins is not among the teams of --team-members",
		"operators/etcd/ci.yaml:3:3: error: policy.unknown-user: reviewer \"jan_f\"",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("lint output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "package-no-owner: package etcd") || strings.Contains(out, "package-no-owner: package nginx") || strings.Contains(out, "package-no-owner: package redis") {
		t.Errorf("an owned package is reported without owner:\n%s", out)
	}
	// JSON, and a policy that does not parse.
	code, out, _ = runCLI(t, "policy", "lint", "--repo", repo, "-o", "json")
	var rep struct {
		Valid    bool
		Findings []struct{ Rule string }
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil || code != exitFail || rep.Valid || len(rep.Findings) == 0 {
		t.Errorf("json: exit %d, %v, %+v", code, err, rep)
	}
	write("version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\nautomerge: {enabled: maybe}\n")
	if code, out, _ := runCLI(t, "policy", "lint", "--repo", repo); code != exitFail || !strings.Contains(out, ".catalogbot.yaml:4:") || !strings.Contains(out, "error: policy.invalid:") {
		t.Errorf("invalid policy: exit %d\n%s", code, out)
	}
	os.Remove(filepath.Join(repo, policy.FileName))
	if code, _, errOut := runCLI(t, "policy", "lint", "--repo", repo); code != exitCannotRun || !strings.Contains(errOut, "write one with catalog-check init") {
		t.Errorf("no policy: exit %d: %s", code, errOut)
	}
}

// TestInitAndLintAtRevision: both read a git revision without a checkout.
func TestInitAndLintAtRevision(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	repo := layoutRepo(t)
	git := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-C", repo, "-c", "user.name=t", "-c", "user.email=t@example.com"}, args...)...)
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git("init", "-q", "-b", "main")
	git("add", "-A")
	git("commit", "-q", "-m", "catalogs")
	// The working tree moves on; the revision is what is read.
	os.RemoveAll(filepath.Join(repo, "catalogs"))
	code, out, errOut := runCLI(t, "init", "--repo", repo, "--rev", "main")
	if code != exitPass || !strings.Contains(out, `- path: "catalogs/v4.*"`) {
		t.Fatalf("init --rev: exit %d: %s\n%s", code, errOut, out)
	}
	p := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(p, []byte(out), 0o644)
	if code, out, errOut := runCLI(t, "policy", "lint", "--repo", repo, "--rev", "main", "--policy", p); code != exitFail || !strings.Contains(out, "policy.unknown-user") {
		t.Errorf("lint --rev: exit %d: %s\n%s", code, errOut, out)
	}
	if code, _, errOut := runCLI(t, "init", "--repo", repo, "--rev", "main", "--write"); code != exitCannotRun || !strings.Contains(errOut, "--write writes into the working tree") {
		t.Errorf("init --rev --write: exit %d: %s", code, errOut)
	}
}

// TestInitSharedTemplates: init and lint on the slice of the community repository in the shared test data.
func TestInitSharedTemplates(t *testing.T) {
	if _, err := os.Stat(sharedTemplates); err != nil {
		t.Skipf("no %s (the shared test data is not on this machine)", sharedTemplates)
	}
	code, out, errOut := runCLI(t, "init", "--repo", sharedTemplates, "--maintainer", "alice")
	if code != exitPass || !strings.Contains(out, `- path: "catalogs/v4.*"`) || !strings.Contains(out, "ownersFromCIYaml: true") || !strings.Contains(out, "templatesFromCIYaml: true") {
		t.Fatalf("init: exit %d: %s\n%s", code, errOut, out)
	}
	p := filepath.Join(t.TempDir(), "policy.yaml")
	os.WriteFile(p, []byte(out), 0o644)
	if code, out, errOut := runCLI(t, "policy", "lint", "--repo", sharedTemplates, "--policy", p); code == exitCannotRun || strings.Contains(out, "root-missing") {
		t.Errorf("lint: exit %d: %s\n%s", code, errOut, out)
	}
}

// TestPolicyLintGitHubUsers: --github-users looks each login up on the GitHub API given ($GITHUB_API_URL,
// with $GITHUB_TOKEN): a 404 is an unknown user, an API that fails makes the lint "could not verify".
func TestPolicyLintGitHubUsers(t *testing.T) {
	repo := layoutRepo(t)
	os.WriteFile(filepath.Join(repo, policy.FileName), []byte("version: 1\ncatalogs: [{path: catalogs/v4.*}]\nmaintainers: [alice, ghost]\nbundles: [{path: operators, ownersFromCIYaml: true}]\n"), 0o644)
	var (
		mu      sync.Mutex
		asked   []string
		auth    string
		failing bool
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		asked = append(asked, r.URL.Path)
		auth = r.Header.Get("Authorization")
		switch {
		case failing:
			http.Error(w, "rate limited", http.StatusForbidden)
		case r.URL.Path == "/users/alice" || r.URL.Path == "/users/carol":
			w.Write([]byte(`{"login":"x"}`))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	lint := func() (int, string, string) {
		var out, errb bytes.Buffer
		getenv := func(k string) string {
			return map[string]string{"GITHUB_API_URL": srv.URL, "GITHUB_TOKEN": "t0ken"}[k]
		}
		code := runEnv(context.Background(), []string{"policy", "lint", "--repo", repo, "--github-users"}, &out, &errb, env{getenv: getenv})
		return code, out.String(), errb.String()
	}
	code, out, errOut := lint()
	if code != exitFail || !strings.Contains(out, ".catalogbot.yaml:1: error: policy.unknown-user: maintainer ghost is not a known GitHub user") {
		t.Errorf("exit %d: %s\n%s", code, out, errOut)
	}
	if strings.Contains(out, "maintainer alice") || strings.Contains(out, `reviewer "carol"`) {
		t.Errorf("an existing user is reported:\n%s", out)
	}
	mu.Lock()
	if auth != "Bearer t0ken" || len(asked) != 3 {
		t.Errorf("lookups %v (authorization %q), want alice, ghost and carol once each, with the token", asked, auth)
	}
	failing = true
	mu.Unlock()
	os.WriteFile(filepath.Join(repo, "operators", "etcd", "ci.yaml"), []byte("reviewers: [carol]\n"), 0o644)
	os.WriteFile(filepath.Join(repo, policy.FileName), []byte("version: 1\ncatalogs: [{path: catalogs/v4.*}]\nmaintainers: [alice]\npackages: {redis: {owners: [alice]}, nginx: {owners: [alice]}}\nbundles: [{path: operators, ownersFromCIYaml: true}]\n"), 0o644)
	if code, out, errOut := lint(); code != exitCannotRun || !strings.Contains(errOut, "could not verify") || !strings.Contains(out, "not verified") {
		t.Errorf("failing API: exit %d, want 2: %s\n%s", code, out, errOut)
	}
}
