package checks_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
)

// A base catalog that a template's bundle images resolve from, missing from the repository (a partial clone
// left its blob out): the template is not verified, and each annotation names the catalog and its blob, not
// only "registry access is off".
func TestTemplatesBaseCatalogBlobAbsent(t *testing.T) {
	r := newGitRepo(t)
	const digest = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
	r.write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nmaintainers: [alice]\nbundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\n")
	r.write("operators/etcd/ci.yaml", "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [\"v4.16\"]\n")
	r.write("operators/etcd/catalog-templates/basic.yaml", "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcd.v1.0.0\n  - schema: olm.bundle\n    image: quay.io/acme/etcd-bundle@"+digest+"\n")
	r.write("catalogs/v4.16/etcd/catalog.yaml", "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n---\nschema: olm.bundle\nname: etcd.v1.0.0\npackage: etcd\nimage: quay.io/acme/etcd-bundle@"+digest+"\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.0.0}\n")
	base := r.commit("base")
	r.write("operators/etcd/ci.yaml", "reviewers: [bob, carol]\nfbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [\"v4.16\"]\n")
	head := r.commit("a reviewer")
	run := func() checks.Result {
		t.Helper()
		ctx := context.Background()
		repo, err := gitfs.Open(r.dir)
		if err != nil {
			t.Fatal(err)
		}
		defer repo.Close()
		pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true})
		if err != nil {
			t.Fatal(err)
		}
		res, err := checks.Templates{}.Run(ctx, pr)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	if res := run(); res.Conclusion == checks.Neutral {
		t.Fatalf("with every blob: %s %q %v", res.Conclusion, res.Title, res.Findings)
	}
	blob := r.git("rev-parse", base+":catalogs/v4.16/etcd/catalog.yaml")
	if err := os.Remove(filepath.Join(r.dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	res := run()
	if res.Conclusion != checks.Neutral {
		t.Fatalf("the base catalog's blob absent: %s %q, want neutral", res.Conclusion, res.Title)
	}
	named := false
	for _, f := range res.Findings {
		if f.Rule == "template.bundle-unverified" && strings.Contains(f.Message, "catalogs/v4.16/etcd/catalog.yaml") && strings.Contains(f.Message, blob) {
			named = true
		}
	}
	if !named {
		t.Errorf("no template.bundle-unverified finding names the catalog and blob %s: %v", blob, res.Findings)
	}
}

// A template that cannot be rendered at one migrate level (its v4.16 catalog's blob absent) is still judged
// at the other: its v4.17 catalog, rendered with olm.csv.metadata from that catalog's blobs, is compared.
func TestTemplatesEachMigrateLevelJudged(t *testing.T) {
	r := newGitRepo(t)
	const digest = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	r.write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}, {path: catalogs/v4.17}]\nmaintainers: [alice]\nbundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true}]\n")
	mapping := "fbc:\n  enabled: true\n  catalog_mapping:\n  - template_name: basic.yaml\n    type: olm.template.basic\n    catalog_names: [\"v4.16\", \"v4.17\"]\n"
	r.write("operators/etcd/ci.yaml", "reviewers: [bob]\n"+mapping)
	r.write("operators/etcd/catalog-templates/basic.yaml", "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n      - name: etcd.v1.0.0\n  - schema: olm.bundle\n    image: quay.io/acme/etcd-bundle@"+digest+"\n")
	head := "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcd.v1.0.0\n---\nschema: olm.bundle\nname: etcd.v1.0.0\npackage: etcd\nimage: quay.io/acme/etcd-bundle@" + digest + "\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.0.0}\n"
	r.write("catalogs/v4.16/etcd/catalog.yaml", head)
	r.write("catalogs/v4.17/etcd/catalog.yaml", head+"  - type: olm.csv.metadata\n    value: {displayName: etcd}\n")
	base := r.commit("base")
	r.write("operators/etcd/ci.yaml", "reviewers: [bob, carol]\n"+mapping)
	headRev := r.commit("a reviewer")
	blob := r.git("rev-parse", base+":catalogs/v4.16/etcd/catalog.yaml")
	if err := os.Remove(filepath.Join(r.dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	repo, err := gitfs.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: headRev, Author: "bob", DiffFromMergeBase: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := checks.Templates{}.Run(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Summary, "`catalogs/v4.16/etcd/catalog.yaml`: not verified") {
		t.Errorf("v4.16 is not said to be not verified:\n%s", res.Summary)
	}
	if line := lineOf(res.Summary, "catalogs/v4.17/etcd/catalog.yaml"); line == "" || strings.Contains(line, "not verified") {
		t.Errorf("v4.17, renderable from its own catalog, was not judged: %q\n%s", line, res.Summary)
	}
}

func lineOf(text, sub string) string {
	for l := range strings.Lines(text) {
		if strings.Contains(l, sub) {
			return l
		}
	}
	return ""
}
