package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog/template"
	"github.com/catalogbot/catalogbot/checks"
)

// identityRepo is a community-layout repository: bundle directories operators/etcd/1.0.0 and 1.1.0 (both
// merged), the bundle root's image pattern quay.io/acme/{package}-bundle:v{version}, the package's basic
// template naming 1.0.0 by digest in that repository, and its catalog for v4.16 rendered from it. The
// policy allows quay.io/acme only and requires digests.
type identityRepo struct {
	dir, base string
	git       func(args ...string) string
	write     func(name, body string)
	digests   map[string]string // version -> digest of the directory's build
}

const (
	identityTemplate = "operators/etcd/catalog-templates/basic.yaml"
	identityCatalog  = "catalogs/v4.16/etcd/catalog.yaml"
	identityPattern  = "quay.io/acme/{package}-bundle:v{version}"
)

func newIdentityRepo(t *testing.T) *identityRepo {
	t.Helper()
	dir, git, write := testRepo(t)
	r := &identityRepo{dir: dir, git: git, write: write, digests: map[string]string{}}
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\n"+
		"bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true, image: \""+identityPattern+"\"}]\n"+
		"images: {allowedRegistries: [quay.io/acme], requireDigest: true}\n")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [v4.16]\n")
	for _, v := range []string{"1.0.0", "1.1.0"} {
		for name, body := range etcdBundleFiles(v, "etcd", "registry+v1") {
			write(name, body)
		}
		d, err := template.BundleImageDigest(context.Background(), os.DirFS(filepath.Join(dir, "operators", "etcd", v)))
		if err != nil {
			t.Fatal(err)
		}
		r.digests[v] = d
	}
	r.setTemplate(t, "quay.io/acme/etcd-bundle@"+r.digests["1.0.0"], "", true)
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	r.base = git("rev-parse", "HEAD")
	return r
}

// setTemplate writes the template naming img1 (1.0.0) and, when img2 is set, img2 as 1.1.0 replacing it,
// and the catalog as `catalog-check template render` writes it from the bundle directories (naming them by
// the root's pattern when strict, by any repository's digest otherwise).
func (r *identityRepo) setTemplate(t *testing.T, img1, img2 string, strict bool) {
	t.Helper()
	body := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n" +
		"  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcdoperator.v1.0.0\n"
	if img2 != "" {
		body += "      - name: etcdoperator.v1.1.0\n        replaces: etcdoperator.v1.0.0\n"
	}
	body += "  - schema: olm.bundle\n    image: " + img1 + "\n"
	if img2 != "" {
		body += "  - schema: olm.bundle\n    image: " + img2 + "\n"
	}
	r.write(identityTemplate, body)
	args := []string{"template", "render", filepath.Join(r.dir, identityTemplate), "--output", "yaml", "--offline", "--bundles", filepath.Join(r.dir, "operators", "etcd")}
	if strict {
		args = append(args, "--bundle-image", identityPattern)
	}
	var out, errb bytes.Buffer
	if code := runEnv(context.Background(), args, &out, &errb, env{getenv: func(string) string { return "" }}); code != exitPass {
		t.Fatalf("template render: exit %d\n%s", code, errb.String())
	}
	r.write(identityCatalog, out.String())
}

// A template entry, and the catalog blob rendered from it, that name a bundle directory's build by digest
// count as that directory only in the bundle root's image repository: quay.io/acme/etcd-bundle@<digest> is
// operators/etcd/1.1.0, evil.example/...@<the same digest> or quay.io/acme/other@<the same digest> is not
// (offline, the templates check cannot render it: neutral, never a pass). The policy's allow-list and
// requireDigest are validation findings on the lines that name the images, offline and without the images
// check.
func TestCheckImagesMatchedByRepositoryAndDigest(t *testing.T) {
	r := newIdentityRepo(t)
	d11 := r.digests["1.1.0"]
	img1 := "quay.io/acme/etcd-bundle@" + r.digests["1.0.0"]
	for _, tc := range []struct {
		name, img2 string
		strict     bool
		templates  checks.Conclusion
		validation []string // rules of validation's findings
	}{
		{"the root's repository by digest", "quay.io/acme/etcd-bundle@" + d11, true, checks.Success, nil},
		{"the root's pattern by tag (requireDigest refuses the tag)", "quay.io/acme/etcd-bundle:v1.1.0", true, checks.Success, []string{"images.not-pinned", "images.not-pinned"}},
		{"the digest on another host", "evil.example/acme/etcd-bundle@" + d11, false, checks.Neutral, []string{"images.registry-not-allowed", "images.registry-not-allowed"}},
		{"the digest in another repository of an allowed registry", "quay.io/acme/other-bundle@" + d11, false, checks.Neutral, nil},
		{"the digest on Docker Hub", "docker.io/acme/etcd-bundle@" + d11, false, checks.Neutral, []string{"images.registry-not-allowed", "images.registry-not-allowed"}},
		{"the root's repository with a tag and the digest", "quay.io/acme/etcd-bundle:v1.1.0@" + d11, false, checks.Success, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r.git("checkout", "-q", "-B", "pr", r.base)
			r.setTemplate(t, img1, tc.img2, tc.strict)
			r.git("add", "-A")
			r.git("commit", "-q", "-m", tc.name)
			head := r.git("rev-parse", "HEAD")
			_, v, out := checkJSON(t, r.dir, r.base, head, "bob", "validation,templates")
			tm := resultOf(t, v, "templates")
			if tm.Conclusion != tc.templates {
				t.Errorf("templates = %s %q, want %s\n%s", tm.Conclusion, tm.Title, tc.templates, out)
			}
			if tc.templates == checks.Neutral && !strings.Contains(out, "is the digest of bundle directory operators/etcd/1.1.0's build, but that directory's image is in quay.io/acme/etcd-bundle") {
				t.Errorf("the templates check does not say why the digest is not the directory:\n%s", out)
			}
			var got []string
			for _, f := range resultOf(t, v, "validation").Findings {
				got = append(got, f.Rule)
				if f.Line == 0 || (f.File != identityTemplate && f.File != identityCatalog) {
					t.Errorf("finding %s not on a line of the template or the catalog: %s:%d", f.Rule, f.File, f.Line)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.validation) {
				t.Errorf("validation findings %q, want %q\n%s", got, tc.validation, out)
			}
		})
	}
}
