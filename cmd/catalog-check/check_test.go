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
