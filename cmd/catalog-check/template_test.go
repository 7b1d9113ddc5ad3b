package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog/bundle"
	"github.com/catalogbot/catalogbot/catalog/image"
)

func runTemplate(args ...string) (int, string, string) {
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), append([]string{"template"}, args...), &out, &errb, env{getenv: func(string) string { return "" }})
	return code, out.String(), errb.String()
}

// The community's kube-green template rendered offline, its images resolved from the committed catalogs, gives
// the committed catalogs byte for byte: v4.16 as is, v4.18 with the csv-metadata migration made from v4.16's
// olm.bundle.object blobs.
func TestTemplateRenderOfflineMatchesCommunityCatalogs(t *testing.T) {
	if _, err := os.Stat(sharedTemplates); err != nil {
		t.Skipf("no %s (the shared test data is not on this machine)", sharedTemplates)
	}
	tmpl := filepath.Join(sharedTemplates, "operators/kube-green/catalog-templates/basic-template.yaml")
	for _, tc := range []struct {
		args    []string
		catalog string
	}{
		{[]string{"--catalog", filepath.Join(sharedTemplates, "catalogs")}, "v4.16"},
		{[]string{"--catalog", filepath.Join(sharedTemplates, "catalogs/v4.16"), "--migrate-level", "bundle-object-to-csv-metadata"}, "v4.18"},
	} {
		code, out, errs := runTemplate(append([]string{"render", tmpl, "--output", "yaml", "--offline"}, tc.args...)...)
		if code != exitPass {
			t.Fatalf("exit %d: %s", code, errs)
		}
		want, err := os.ReadFile(filepath.Join(sharedTemplates, "catalogs", tc.catalog, "kube-green/catalog.yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if out != string(want) {
			t.Errorf("%s: the render differs from the committed catalog", tc.catalog)
		}
	}
}

// A semver template naming a bundle image on a registry: pulled through the guarded client it renders as the
// same image resolved from its bundle directory offline; an image nobody has is a finding on its line, exit 1;
// a host not allowed is never contacted.
func TestTemplateRenderPullsThroughTheGuardedClient(t *testing.T) {
	dir := t.TempDir()
	for name, body := range etcdBundleFiles("1.1.0", "etcd", "registry+v1") {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bundleDir := filepath.Join(dir, "operators/etcd/1.1.0")
	host := loopbackRegistry(t)
	ref := host + "/etcd-bundle:v1.1.0"
	pushBundleDir(t, bundleDir, ref)
	tmpl := filepath.Join(dir, "semver.yaml")
	write := func(body string) {
		if err := os.WriteFile(tmpl, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("schema: olm.semver\nstable:\n  bundles:\n    - image: " + ref + "\n")
	code, pulled, errs := runTemplate("render", tmpl, "--insecure-registry", host)
	if code != exitPass {
		t.Fatalf("pull: exit %d: %s", code, errs)
	}
	if !strings.Contains(pulled, `"defaultChannel": "stable-v1.1"`) || !strings.Contains(pulled, `"image": "`+ref+`"`) {
		t.Errorf("unexpected render:\n%s", pulled)
	}
	// Offline, the tag cannot be matched to the directory (only digests and the policy's image pattern can).
	if code, _, errs := runTemplate("render", tmpl, "--offline", "--bundles", filepath.Join(dir, "operators")); code != exitFail || !strings.Contains(errs, "semver.yaml:4:") {
		t.Errorf("offline by tag: exit %d, want 1 with a finding on line 4: %s", code, errs)
	}
	// Not allowed: the registry is not contacted, the template does not render.
	if code, _, errs := runTemplate("render", tmpl); code != exitFail || !strings.Contains(errs, "template.bundle-unresolved") {
		t.Errorf("without --insecure-registry: exit %d: %s", code, errs)
	}
	write("schema: olm.semver\nstable:\n  bundles:\n    - image: " + host + "/nobody:v1\n")
	if code, _, errs := runTemplate("render", tmpl, "--insecure-registry", host); code != exitFail || !strings.Contains(errs, "semver.yaml:4:") {
		t.Errorf("missing image: exit %d: %s", code, errs)
	}
	write("schema: olm.semver\nbogus: true\n")
	if code, _, errs := runTemplate("render", tmpl, "--offline"); code != exitFail || !strings.Contains(errs, "semver.yaml:2:1: error: template.semver-field") {
		t.Errorf("unknown field: exit %d: %s", code, errs)
	}
	if code, _, _ := runTemplate("render", tmpl, "--output", "xml"); code != exitCannotRun {
		t.Errorf("--output xml: exit %d, want 2", code)
	}
}

// `catalog-check template check` is the templates check of `check`, alone.
func TestTemplateCheckCommand(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs}]\nmaintainers: [alice]\ntemplates:\n  - path: templates/foo.yaml\n    catalogs: [catalogs/foo/catalog.yaml]\n")
	write("templates/foo.yaml", "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: foo\n    defaultChannel: stable\n  - schema: olm.channel\n    package: foo\n    name: stable\n    entries: [{name: foo.v1.0.0}]\n")
	write("catalogs/foo/catalog.yaml", "---\ndefaultChannel: stable\nname: foo\nschema: olm.package\n---\nentries:\n- name: foo.v1.0.0\nname: stable\npackage: foo\nschema: olm.channel\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	write("catalogs/foo/catalog.yaml", "---\ndefaultChannel: beta\nname: foo\nschema: olm.package\n---\nentries:\n- name: foo.v1.0.0\nname: stable\npackage: foo\nschema: olm.channel\n")
	git("commit", "-q", "-am", "hand edit")
	head := git("rev-parse", "HEAD")
	var out, errb bytes.Buffer
	code := runEnv(context.Background(), []string{"template", "check", "--repo", dir, "--base", base, "--head", head, "--author", "alice"}, &out, &errb, env{getenv: func(string) string { return "" }})
	if code != exitFail || !strings.Contains(out.String(), "catalogs/foo/catalog.yaml:2:17: error: template.drift-changed") || !strings.Contains(out.String(), "defaultChannel: is \"beta\", the template renders \"stable\"") {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
}

// add-bundle then render: the bundle directory, named by the digest of its image, is added to a basic
// template with the CSV's replaces, and renders offline from the directory.
func TestTemplateAddBundleThenRender(t *testing.T) {
	dir := t.TempDir()
	files := etcdBundleFiles("1.1.0", "etcd", "registry+v1")
	files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = strings.Replace(files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"], "spec:\n", "spec:\n  replaces: etcdoperator.v1.0.0\n", 1)
	for name, body := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	bdir := filepath.Join(dir, "operators/etcd/1.1.0")
	b, _, err := bundle.Load(context.Background(), os.DirFS(bdir), bundle.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	img, err := image.BundleImage(context.Background(), os.DirFS(bdir), b.Annotations, image.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	d, _ := img.Digest()
	ref := "quay.io/acme/etcd-bundle@" + d.String()
	tmpl := filepath.Join(dir, "basic.yaml")
	// A comment, a list at its key's column and a description folded over two lines: --write keeps them and
	// only adds lines, in the file's own style.
	original := "# etcd's template\nschema: olm.template.basic\nentries:\n- schema: olm.package\n  name: etcd\n  defaultChannel: stable\n  description: the etcd\n    operator\n"
	if err := os.WriteFile(tmpl, []byte(original), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runTemplate("add-bundle", tmpl, bdir, "--image", ref, "--write"); code != exitPass {
		t.Fatalf("add-bundle: exit %d: %s", code, errs)
	}
	if written, _ := os.ReadFile(tmpl); !strings.HasPrefix(string(written), original) || !strings.Contains(string(written), "\n- schema: olm.channel\n  package: etcd\n") {
		t.Errorf("add-bundle --write did not only add lines in the file's style:\n%s", written)
	}
	if code, _, errs := runTemplate("add-bundle", tmpl, bdir, "--image", ref); code != exitFail || !strings.Contains(errs, "already names") {
		t.Errorf("adding twice: exit %d: %s", code, errs)
	}
	code, out, errs := runTemplate("render", tmpl, "--offline", "--bundles", filepath.Join(dir, "operators"), "-o", "yaml")
	if code != exitPass {
		t.Fatalf("render: exit %d: %s", code, errs)
	}
	for _, want := range []string{"- name: " + b.CSV.Name + "\n  replaces: etcdoperator.v1.0.0\nname: " + b.Channels[0], "image: " + ref} {
		if !strings.Contains(out, want) {
			t.Errorf("render lacks %q:\n%s", want, out)
		}
	}
}
