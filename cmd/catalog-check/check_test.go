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
	"sync/atomic"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
)

// testRepo makes an empty repository and returns its directory, a git runner
// and a file writer for it.
func testRepo(t *testing.T) (dir string, git func(args ...string) string, write func(name, body string)) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed (.ci/run installs it)")
	}
	dir = t.TempDir()
	git = func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@e", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@e", "HOME="+dir, "GIT_CONFIG_NOSYSTEM=1")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	write = func(name, body string) {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git("init", "-q", "-b", "main")
	return dir, git, write
}

// etcdBundle is bundle etcd.v<v> with its image at imageRepo.
func etcdBundle(imageRepo, v string) string {
	return "---\nschema: olm.bundle\npackage: etcd\nname: etcd.v" + v + "\nimage: " + imageRepo + ":v" + v +
		"\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: " + v + "}\n"
}

const etcdPackage = "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n"

// prRepo makes a repository whose main branch has a policy and one package
// owned by bob, and a branch "pr" that adds a bundle with a second channel
// head (invalid) to it.
func prRepo(t *testing.T) (dir, base, head string) {
	t.Helper()
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n")
	const image = "quay.io/acme/etcd-bundle"
	write("catalog/etcd/catalog.yaml", etcdPackage+"---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"+etcdBundle(image, "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base = git("rev-parse", "HEAD")
	git("checkout", "-q", "-b", "pr")
	write("catalog/etcd/catalog.yaml", etcdPackage+"---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n  - name: etcd.v1.1.0\n"+etcdBundle(image, "1.0.0")+etcdBundle(image, "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "two heads")
	head = git("rev-parse", "HEAD")
	return dir, base, head
}

// Offline means offline: with the images check off, crd-safety reads no
// bundle image (bundles without olm.bundle.object are "CRDs not embedded,
// not compared", neutral) and no request reaches a registry.
func TestCheckCommandImagesOffIsOffline(t *testing.T) {
	var requests atomic.Int64
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		http.NotFound(w, r)
	}))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalog}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n")
	image := host + "/acme/etcd-bundle"
	channel := "---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n"
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+etcdBundle(image, "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalog/etcd/catalog.yaml", etcdPackage+channel+"  - name: etcd.v1.1.0\n    replaces: etcd.v1.0.0\n"+etcdBundle(image, "1.0.0")+etcdBundle(image, "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "upgrade")
	head := git("rev-parse", "HEAD")

	run := func(checks string) string {
		t.Helper()
		var out, errb bytes.Buffer
		runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
			"--checks", checks, "--insecure-registry", host}, &out, &errb, env{getenv: func(string) string { return "" }})
		return out.String() + errb.String()
	}
	out := run("ownership,validation,immutability,crd-safety")
	if n := requests.Load(); n != 0 {
		t.Errorf("with the images check off, %d requests reached the registry:\n%s", n, out)
	}
	for _, want := range []string{"crd-safety: neutral", "CRDs not embedded, not compared"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// With it on, the same bundles are read from their images.
	run("crd-safety,images")
	if requests.Load() == 0 {
		t.Errorf("with the images check on, no request reached the registry")
	}
}

func TestCheckCommandText(t *testing.T) {
	dir, base, head := prRepo(t)
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob", "--checks", "ownership,validation,immutability,crd-safety"}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitFail {
		t.Fatalf("exit = %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitFail, out.String(), errb.String())
	}
	for _, want := range []string{"ownership: success", "validation: failure", "catalog/etcd/catalog.yaml:", "overall: failure"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
}

func TestCheckCommandGitHubFromEvent(t *testing.T) {
	dir, base, head := prRepo(t)
	tmp := t.TempDir()
	event := filepath.Join(tmp, "event.json")
	ev := map[string]any{"number": 7, "pull_request": map[string]any{"number": 7, "base": map[string]any{"sha": base}, "head": map[string]any{"sha": head}, "user": map[string]any{"login": "mallory"}}, "repository": map[string]any{"full_name": "acme/catalog"}}
	data, _ := json.Marshal(ev)
	if err := os.WriteFile(event, data, 0o644); err != nil {
		t.Fatal(err)
	}
	summary := filepath.Join(tmp, "summary.md")
	vars := map[string]string{"GITHUB_EVENT_PATH": event, "GITHUB_STEP_SUMMARY": summary}
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"check", "--repo", dir, "--output", "github", "--checks", "ownership,validation"}, &out, &errb, env{getenv: func(k string) string { return vars[k] }})
	if code != exitFail {
		t.Fatalf("exit = %d, want %d\n%s\n%s", code, exitFail, out.String(), errb.String())
	}
	if !strings.Contains(out.String(), "::error file=catalog/etcd/catalog.yaml,line=") || !strings.Contains(out.String(), "title=ownership%3A ownership.not-owner::") {
		t.Errorf("workflow commands missing:\n%s", out.String())
	}
	md, err := os.ReadFile(summary)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(md), "| ownership | ❌ failure |") {
		t.Errorf("step summary:\n%s", md)
	}
}

func TestCheckCommandUsageErrors(t *testing.T) {
	var out, errb bytes.Buffer
	getenv := func(string) string { return "" }
	for _, args := range [][]string{
		{"--output", "yaml", "--base", "x", "--author", "bob"},
		{"--base", "HEAD"}, // no author
		{"--repo", t.TempDir(), "--base", "HEAD", "--author", "bob"}, // not a repository
		{"--checks", "nope", "--base", "HEAD", "--author", "bob"},
	} {
		if code := runEnv(context.Background(), append([]string{"check"}, args...), &out, &errb, env{getenv: getenv}); code != exitCannotRun {
			t.Errorf("%v: exit = %d, want %d", args, code, exitCannotRun)
		}
	}
}

func TestWorkflowCommandEscaping(t *testing.T) {
	if got, want := escapeProperty("a:b,c%\n"), "a%3Ab%2Cc%25%0A"; got != want {
		t.Errorf("escapeProperty = %q, want %q", got, want)
	}
	if got, want := escapeData("50%\r\nx"), "50%25%0D%0Ax"; got != want {
		t.Errorf("escapeData = %q, want %q", got, want)
	}
}

// offlineRegistry counts every request that reaches it; a request is a failure of "offline means offline".
type offlineRegistry struct {
	host     string
	requests atomic.Int64
	paths    chan string
}

func newOfflineRegistry(t *testing.T) *offlineRegistry {
	t.Helper()
	r := &offlineRegistry{paths: make(chan string, 100)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		select {
		case r.paths <- req.Method + " " + req.URL.Path:
		default:
		}
		http.NotFound(w, req)
	}))
	t.Cleanup(srv.Close)
	r.host = strings.TrimPrefix(srv.URL, "http://")
	return r
}

// seen lists the requests received so far (up to 100).
func (r *offlineRegistry) seen() []string {
	var out []string
	for {
		select {
		case p := <-r.paths:
			out = append(out, p)
		default:
			return out
		}
	}
}

// allButImages are the checks of `catalog-check check` without the images check.
const allButImages = "ownership,validation,immutability,crd-safety,templates"

// checkOffline runs the check command with the registry allowed (plain HTTP, loopback), so that a request a
// check makes would reach it, and returns the JSON verdict.
func checkOffline(t *testing.T, reg *offlineRegistry, dir, base, head, checkList string, extra ...string) (verdict, string) {
	t.Helper()
	var out, errb bytes.Buffer
	runEnv(context.Background(), append([]string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
		"--checks", checkList, "--insecure-registry", reg.host, "--output", "json"}, extra...), &out, &errb, env{getenv: func(string) string { return "" }})
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("output is not JSON (%v):\n%s\n%s", err, out.String(), errb.String())
	}
	return v, out.String() + errb.String()
}

func resultOf(t *testing.T, v verdict, name string) checks.Result {
	t.Helper()
	for _, r := range v.Results {
		if r.Check == name {
			return r
		}
	}
	t.Fatalf("no %s result", name)
	return checks.Result{}
}

// wantNotEmbedded: crd-safety is neutral and says the CRDs are not embedded, in its title and summary.
func wantNotEmbedded(t *testing.T, v verdict, out string) {
	t.Helper()
	r := resultOf(t, v, "crd-safety")
	if r.Conclusion != checks.Neutral || r.Title != "CRDs not embedded, not compared" || !strings.Contains(r.Summary, "CRDs not embedded, not compared") {
		t.Errorf("crd-safety = %s %q, want neutral %q\n%s", r.Conclusion, r.Title, "CRDs not embedded, not compared", out)
	}
}

// Offline means offline on a pull request that adds a bundle directory: its predecessor is published only in
// a catalog, without olm.bundle.object, and its CSV names images on the registry. Without the images check no
// request reaches the registry, and crd-safety says the upgrade was not compared (neutral), never a pass.
func TestCheckBundleDirectoryImagesOffIsOffline(t *testing.T) {
	reg := newOfflineRegistry(t)
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/etcd/catalog.yaml", etcdPackage+"---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcdoperator.v1.0.0\n"+
		"---\nschema: olm.bundle\npackage: etcd\nname: etcdoperator.v1.0.0\nimage: "+reg.host+"/acme/etcd-bundle:v1.0.0\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.0.0}\n")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	files := etcdBundleFiles("1.1.0", "etcd", "registry+v1")
	files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = strings.ReplaceAll(bundleCSV, "1.0.0", "1.1.0") + "  replaces: etcdoperator.v1.0.0\n" +
		"  relatedImages:\n    - name: operand\n      image: " + reg.host + "/acme/etcd:3.5\n"
	files["operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml"] = crdWithFields("size")
	for name, body := range files {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "1.1.0")
	head := git("rev-parse", "HEAD")

	v, out := checkOffline(t, reg, dir, base, head, allButImages)
	if n := reg.requests.Load(); n != 0 {
		t.Errorf("with the images check off, %d requests reached the registry %q:\n%s", n, reg.seen(), out)
	}
	wantNotEmbedded(t, v, out)
	r := resultOf(t, v, "crd-safety")
	if got := findingsOf(v, "crd-safety"); len(got) != 1 || got[0] != "crd-safety.no-source operators/etcd/1.1.0/manifests/etcd.csv.yaml" {
		t.Errorf("crd-safety findings %q, want one crd-safety.no-source on the new CSV", got)
	}
	if !strings.Contains(r.Summary, "etcdoperator.v1.0.0` → `etcdoperator.v1.1.0` (replaces, catalog catalogs/v4.16): not compared") {
		t.Errorf("summary does not name the upgrade not compared:\n%s", r.Summary)
	}
	// With the images check on, the predecessor's image is read (and the CSV's images checked).
	checkOffline(t, reg, dir, base, head, "crd-safety,images")
	if reg.requests.Load() == 0 {
		t.Errorf("with the images check on, no request reached the registry")
	}
}

// Offline means offline on a template pull request: the template gains a bundle image that no catalog of the
// base holds and no bundle directory builds, and the rendered catalog gains the bundle without its CRDs.
// Without the images check nothing is pulled: templates is "not verified" (neutral), crd-safety "CRDs not
// embedded, not compared" (neutral), and no request reaches the registry.
func TestCheckTemplateImagesOffIsOffline(t *testing.T) {
	reg := newOfflineRegistry(t)
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\npackages:\n  etcd: {owners: [bob]}\n"+
		"templates:\n  - path: templates/etcd.yaml\n    catalogs: [catalogs/v4.16/etcd/catalog.yaml]\n")
	img := func(c byte) string { return reg.host + "/acme/etcd-bundle@sha256:" + strings.Repeat(string(c), 64) }
	tmpl := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n" +
		"  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcd.v1.0.0\n" +
		"  - schema: olm.bundle\n    image: " + img('a') + "\n"
	bundleBlob := func(c byte, v string) string {
		return "---\nimage: " + img(c) + "\nname: etcd.v" + v + "\npackage: etcd\nproperties:\n- type: olm.package\n  value:\n    packageName: etcd\n    version: " + v + "\nschema: olm.bundle\n"
	}
	pkg := "---\ndefaultChannel: stable\nname: etcd\nschema: olm.package\n"
	write("templates/etcd.yaml", tmpl)
	write("catalogs/v4.16/etcd/catalog.yaml", pkg+"---\nentries:\n- name: etcd.v1.0.0\nname: stable\npackage: etcd\nschema: olm.channel\n"+bundleBlob('a', "1.0.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("templates/etcd.yaml", strings.Replace(tmpl, "      - name: etcd.v1.0.0\n", "      - name: etcd.v1.0.0\n      - name: etcd.v1.1.0\n        replaces: etcd.v1.0.0\n", 1)+
		"  - schema: olm.bundle\n    image: "+img('b')+"\n")
	write("catalogs/v4.16/etcd/catalog.yaml", pkg+"---\nentries:\n- name: etcd.v1.0.0\n- name: etcd.v1.1.0\n  replaces: etcd.v1.0.0\nname: stable\npackage: etcd\nschema: olm.channel\n"+
		bundleBlob('a', "1.0.0")+bundleBlob('b', "1.1.0"))
	git("add", "-A")
	git("commit", "-q", "-m", "1.1.0")
	head := git("rev-parse", "HEAD")

	v, out := checkOffline(t, reg, dir, base, head, allButImages)
	if n := reg.requests.Load(); n != 0 {
		t.Errorf("with the images check off, %d requests reached the registry %q:\n%s", n, reg.seen(), out)
	}
	wantNotEmbedded(t, v, out)
	if r := resultOf(t, v, "templates"); r.Conclusion != checks.Neutral || !strings.Contains(r.Summary, "not verified") {
		t.Errorf("templates = %s %q, want neutral, not verified:\n%s", r.Conclusion, r.Title, r.Summary)
	}
	for _, name := range []string{"validation", "immutability"} { // ownership: a template outside the catalogs is for maintainers
		if r := resultOf(t, v, name); r.Conclusion != checks.Success {
			t.Errorf("%s = %s, want success: %v", name, r.Conclusion, r.Findings)
		}
	}
	// With registry access for templates (template check --pull), the image the template gains is pulled.
	var stdout, stderr bytes.Buffer
	runEnv(context.Background(), []string{"template", "check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
		"--pull", "--insecure-registry", reg.host}, &stdout, &stderr, env{getenv: func(string) string { return "" }})
	if reg.requests.Load() == 0 {
		t.Errorf("with --pull, the templates check pulled nothing:\n%s%s", stdout.String(), stderr.String())
	}
}
