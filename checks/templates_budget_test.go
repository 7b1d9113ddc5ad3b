package checks_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/catalog"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/checks/gitpr"
	"github.com/catalogbot/catalogbot/gitfs"
	"github.com/catalogbot/catalogbot/internal/pkgtemplate"
	"github.com/catalogbot/catalogbot/policy"
)

// manyTemplatesRepo is a community-layout package with versions bundle directories of about 300 KB each (a
// large CRD) and templates basic templates (one per OpenShift catalog, as stackgres-community keeps them), each
// naming every bundle by the bundle root's image pattern; the catalogs are rendered. The pull
// request maps the templates in ci.yaml and commits their catalogs, so every image resolves from the bundle
// directories.
func manyTemplatesRepo(t *testing.T, versions, templates int) (r *gitRepo, base, head string, dirBytes int64) {
	t.Helper()
	r = newGitRepo(t)
	const pattern = "quay.io/acme/{package}-bundle:v{version}"
	files := map[string]string{
		".catalogbot.yaml": "version: 1\ncatalogs: [" + roots(templates) + "]\nmaintainers: [alice]\n" +
			"bundles: [{path: operators, ownersFromCIYaml: true, templatesFromCIYaml: true, image: \"" + pattern + "\"}]\n",
	}
	ann := "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: etcd\n  operators.operatorframework.io.bundle.channels.v1: stable\n"
	var crd strings.Builder
	crd.WriteString("apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: widgets.example.com\nspec:\n  group: example.com\n  names: {kind: Widget, plural: widgets}\n  scope: Namespaced\n  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema:\n      openAPIV3Schema:\n        type: object\n        properties:\n")
	for i := 0; crd.Len() < 300<<10; i++ {
		fmt.Fprintf(&crd, "          field%05d: {type: string, description: \"%s\"}\n", i, strings.Repeat("x", 60))
	}
	entries, bundles := "", ""
	for v := 0; v < versions; v++ {
		ver := fmt.Sprintf("1.0.%d", v)
		dir := "operators/etcd/" + ver + "/"
		csv := "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: etcd.v" + ver + "\nspec:\n  version: " + ver + "\n  installModes: [{type: AllNamespaces, supported: true}]\n"
		files[dir+"metadata/annotations.yaml"] = ann
		files[dir+"manifests/etcd.csv.yaml"] = csv
		files[dir+"manifests/widgets.crd.yaml"] = "# " + ver + "\n" + crd.String() // distinct blobs: git reads each
		dirBytes += int64(len(ann) + len(csv) + len(files[dir+"manifests/widgets.crd.yaml"]))
		entries += "      - name: etcd.v" + ver + "\n"
		if v > 0 {
			entries += fmt.Sprintf("        replaces: etcd.v1.0.%d\n", v-1)
		}
		bundles += "  - schema: olm.bundle\n    image: quay.io/acme/etcd-bundle:v" + ver + "\n"
	}
	tmpl := "schema: olm.template.basic\nentries:\n  - schema: olm.package\n    name: etcd\n    defaultChannel: stable\n  - schema: olm.channel\n    package: etcd\n    name: stable\n    entries:\n" + entries + bundles
	ci := "reviewers: [bob]\nfbc:\n  enabled: true\n  catalog_mapping:\n"
	for i := 0; i < templates; i++ {
		name := fmt.Sprintf("v4.%d.yaml", 17+i)
		files["operators/etcd/catalog-templates/"+name] = tmpl
		ci += fmt.Sprintf("  - template_name: %s\n    type: olm.template.basic\n    catalog_names: [\"v4.%d\"]\n", name, 17+i)
	}
	files["operators/etcd/ci.yaml"] = ci
	// The catalogs as the check renders them (bundle-object-to-csv-metadata from 4.17 on: no CRD inside).
	pol, err := policy.Parse(".catalogbot.yaml", []byte(files[".catalogbot.yaml"]))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		r.write(name, body)
	}
	fsys := os.DirFS(r.dir)
	pol.Catalogs = nil
	for i := 0; i < templates; i++ {
		pol.Catalogs = append(pol.Catalogs, policy.Catalog{Path: fmt.Sprintf("catalogs/v4.%d", 17+i)})
	}
	pts, err := pkgtemplate.List(fsys, pol, "etcd")
	if err != nil || len(pts) != templates {
		t.Fatalf("package templates: %v, %d", err, len(pts))
	}
	rendered := map[string]string{}
	for _, pt := range pts {
		out, fs := pkgtemplate.Render(context.Background(), fsys, pol, pt, "etcd", []byte(tmpl), catalog.Limits{})
		if out == nil {
			t.Fatal(fs)
		}
		for p, body := range out {
			rendered[p] = string(body)
		}
	}
	// The base has the bundle directories and the templates; the pull request maps them and commits their
	// catalogs, so every image resolves from the bundle directories (no base catalog holds one).
	r.write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	base = r.commit("base")
	r.git("checkout", "-q", "-b", "pr")
	r.write("operators/etcd/ci.yaml", ci)
	for p, body := range rendered {
		r.write(p, body)
	}
	head = r.commit("the catalogs")
	return r, base, head, dirBytes
}

func roots(n int) string {
	var out []string
	for i := 0; i < n; i++ {
		out = append(out, fmt.Sprintf("{path: catalogs/v4.%d}", 17+i))
	}
	return strings.Join(out, ", ")
}

func runTemplatesWithBudget(t *testing.T, r *gitRepo, base, head string, budget int64) checks.Result {
	t.Helper()
	ctx := context.Background()
	repo, err := gitfs.Open(r.dir)
	if err != nil {
		t.Fatal(err)
	}
	pr, err := gitpr.Build(ctx, repo, gitpr.Options{Base: base, Head: head, Author: "bob", DiffFromMergeBase: true, GitLimits: gitfs.Limits{MaxTotalBytes: budget}})
	if err != nil {
		t.Fatal(err)
	}
	if err := checks.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	res, err := checks.Templates{}.Run(ctx, pr)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// The templates check reads a package's bundle directories once, whatever number of templates render it: ten
// templates over 2.4 MB of bundle directories fit a read budget of three times the directories (before, each
// template read every directory twice — load, then build its image — and the budget ran out, reported as
// broken mappings on ci.yaml:1). A budget too small for even one reading is "could not verify", naming the
// budget, and never a finding about the mapping.
func TestTemplatesReadBundleDirectoriesOnce(t *testing.T) {
	r, base, head, dirBytes := manyTemplatesRepo(t, 8, 10)
	res := runTemplatesWithBudget(t, r, base, head, 3*dirBytes)
	if res.Conclusion != checks.Success || strings.Count(res.Summary, ": matches") != 10 {
		t.Errorf("budget 3× the directories (%d bytes): templates %s %q, want success, 10 catalogs matching\n%s\n%v", 3*dirBytes, res.Conclusion, res.Title, res.Summary, res.Findings)
	}

	res = runTemplatesWithBudget(t, r, base, head, dirBytes/2)
	if res.Conclusion != checks.Neutral {
		t.Errorf("budget half the directories: templates %s %q, want neutral\n%s", res.Conclusion, res.Title, res.Summary)
	}
	saidBudget := false
	for _, f := range res.Findings {
		if f.Severity == catalog.SeverityError || strings.HasPrefix(f.Rule, "templates.mapping") || f.Rule == "template.drift-mapping" || f.File == "operators/etcd/ci.yaml" {
			t.Errorf("a budget exhausted reported as a finding about the mapping or the template: %s", f)
		}
		saidBudget = saidBudget || strings.Contains(f.Message, "budget")
	}
	if !saidBudget {
		t.Errorf("no finding says the read budget is exhausted: %v", res.Findings)
	}
}
