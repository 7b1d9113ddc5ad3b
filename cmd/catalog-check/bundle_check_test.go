package main

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

func etcdBundleFiles(version, pkg, mediatype string) map[string]string {
	ann := strings.NewReplacer("registry+v1", mediatype, "package.v1: etcd", "package.v1: "+pkg).Replace(bundleAnnotations)
	csv := strings.ReplaceAll(bundleCSV, "1.0.0", version)
	return map[string]string{
		"operators/etcd/" + version + "/metadata/annotations.yaml":   ann,
		"operators/etcd/" + version + "/manifests/etcd.csv.yaml":     csv,
		"operators/etcd/" + version + "/manifests/etcd.service.yaml": "apiVersion: v1\nkind: Service\nmetadata:\n  name: etcd-metrics\nspec:\n  ports: [{port: 8443}]\n",
	}
}

// Pull requests that add or change bundle directories in the community layout (operators/<package>/<version>/,
// owners from ci.yaml), checked through `catalog-check check` on a real git repository.
func TestCheckBundlePullRequests(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true, strict: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "---\nupdateGraph: replaces-mode\nreviewers:\n  - bob\n")
	for name, body := range etcdBundleFiles("1.0.0", "etcd", "registry+v1") {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")

	pr := branchFrom(git, write, base)
	added := pr("add", etcdBundleFiles("1.1.0", "etcd", "registry+v1"))
	modified := pr("modify", map[string]string{"operators/etcd/1.0.0/manifests/etcd.csv.yaml": strings.ReplaceAll(bundleCSV, "1.0.0", "1.0.0") + "  displayName: etcd\n"})
	foreign := pr("foreign", etcdBundleFiles("1.2.0", "redis", "registry+v1"))
	invalid := pr("invalid", etcdBundleFiles("1.3.0", "etcd", "helm"))
	// opm takes the annotations of the first file of metadata/ (in name order) that has them: a second file
	// that sorts first decides the package every catalog built from the bundle shows (issue 26.3).
	hidden := etcdBundleFiles("1.4.0", "etcd", "registry+v1")
	hidden["operators/etcd/1.4.0/metadata/00-extra.yaml"] = strings.Replace(bundleAnnotations, "package.v1: etcd", "package.v1: redis", 1)
	twoAnnotations := pr("two-annotations", hidden)
	renamed := etcdBundleFiles("1.5.0", "etcd", "registry+v1")
	renamed["operators/etcd/1.5.0/metadata/bundle.yaml"] = renamed["operators/etcd/1.5.0/metadata/annotations.yaml"]
	delete(renamed, "operators/etcd/1.5.0/metadata/annotations.yaml")
	otherName := pr("other-name", renamed)
	// A skipRange opm cannot parse fails the bundle's own pull request, on the CSV's line (issue 27.2).
	badRange := etcdBundleFiles("1.6.0", "etcd", "registry+v1")
	badRange["operators/etcd/1.6.0/manifests/etcd.csv.yaml"] = strings.Replace(badRange["operators/etcd/1.6.0/manifests/etcd.csv.yaml"], "metadata:\n", "metadata:\n  annotations:\n    olm.skipRange: '>=1.0.0, <1.6.0'\n", 1)
	skipRange := pr("skip-range", badRange)

	for _, tc := range []struct {
		name, head, author string
		code               int
		want               []string // "check rule file"
	}{
		{"a ci.yaml reviewer adds a version", added, "bob", exitPass, nil},
		{"a stranger adds a version", added, "mallory", exitFail, []string{"ownership ownership.not-owner operators/etcd/1.1.0/manifests/etcd.csv.yaml"}},
		{"a released bundle directory changes", modified, "bob", exitFail, []string{"immutability immutability.bundle-modified operators/etcd/1.0.0/manifests/etcd.csv.yaml"}},
		{"the annotations name another package", foreign, "bob", exitFail, []string{"ownership ownership.new-package operators/etcd/1.2.0/manifests/etcd.csv.yaml"}},
		{"an invalid bundle", invalid, "bob", exitFail, []string{"validation bundle.mediatype operators/etcd/1.3.0/metadata/annotations.yaml"}},
		{"a second annotations file names another package", twoAnnotations, "bob", exitFail, []string{
			"ownership ownership.new-package operators/etcd/1.4.0/manifests/etcd.csv.yaml",
			"validation bundle.metadata-ambiguous operators/etcd/1.4.0/metadata/annotations.yaml"}},
		{"annotations under another file name", otherName, "bob", exitPass, nil},
		{"an unparsable skipRange", skipRange, "bob", exitFail, []string{"validation bundle.csv-skiprange operators/etcd/1.6.0/manifests/etcd.csv.yaml:5"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, v, out := checkJSON(t, dir, base, tc.head, tc.author, "ownership,validation,immutability")
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s", code, tc.code, out)
			}
			var got []string
			for _, r := range v.Results {
				for _, f := range r.Findings {
					if f.Severity == "error" {
						where := f.File
						if f.Rule == "bundle.csv-skiprange" {
							where = fmt.Sprintf("%s:%d", f.File, f.Line)
						}
						got = append(got, r.Check+" "+f.Rule+" "+where)
					}
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors = %q\nwant     %q\n%s", got, tc.want, out)
			}
		})
	}
}

// The images check reads a bundle directory's CSV: relatedImages and the deployment's containers, each
// reported at its line.
func TestCheckBundleImages(t *testing.T) {
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer reg.Close()
	host := strings.TrimPrefix(reg.URL, "http://")
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	files := etcdBundleFiles("1.1.0", "etcd", "registry+v1")
	files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = strings.ReplaceAll(bundleCSV, "1.0.0", "1.1.0") +
		"  relatedImages:\n    - name: operand\n      image: " + host + "/acme/etcd:3.5\n" +
		"  install:\n    strategy: deployment\n    spec:\n      deployments:\n        - name: etcd-operator\n          spec:\n            template:\n              spec:\n                containers:\n                  - name: manager\n                    image: " + host + "/acme/etcd-operator:1.1.0\n"
	for name, body := range files {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "add")
	head := git("rev-parse", "HEAD")
	var out, errb bytes.Buffer
	runEnv(context.Background(), []string{"check", "--repo", dir, "--base", base, "--head", head, "--author", "bob",
		"--checks", "images", "--insecure-registry", host, "--output", "json"}, &out, &errb, env{getenv: func(string) string { return "" }})
	var v verdict
	if err := json.Unmarshal(out.Bytes(), &v); err != nil {
		t.Fatalf("%v\n%s%s", err, out.String(), errb.String())
	}
	var got []string
	for _, r := range v.Results {
		for _, f := range r.Findings {
			got = append(got, fmt.Sprintf("%s %s:%d", f.Rule, f.File, f.Line))
		}
	}
	slices.Sort(got)
	want := []string{"images.missing operators/etcd/1.1.0/manifests/etcd.csv.yaml:11", "images.missing operators/etcd/1.1.0/manifests/etcd.csv.yaml:22"}
	if !slices.Equal(got, want) {
		t.Errorf("findings = %q, want %q", got, want)
	}
}

func crdWithFields(fields ...string) string {
	var props strings.Builder
	for _, f := range fields {
		props.WriteString("                " + f + ": {type: string}\n")
	}
	return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata:\n  name: etcdclusters.etcd.database.coreos.com\nspec:\n  group: etcd.database.coreos.com\n  names: {kind: EtcdCluster, listKind: EtcdClusterList, plural: etcdclusters, singular: etcdcluster}\n  scope: Namespaced\n  versions:\n    - name: v1\n      served: true\n      storage: true\n      schema:\n        openAPIV3Schema:\n          type: object\n          properties:\n            spec:\n              type: object\n              properties:\n" + props.String()
}

// A new bundle directory's CRDs are compared with those of the bundle directory it replaces: removing a
// field is refused at the CRD's file, as OLM v1's preflight would refuse the upgrade.
func TestCheckBundleCRDSafety(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	for name, body := range etcdBundleFiles("1.0.0", "etcd", "registry+v1") {
		write(name, body)
	}
	write("operators/etcd/1.0.0/manifests/etcdclusters.crd.yaml", crdWithFields("size", "version"))
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	files := etcdBundleFiles("1.1.0", "etcd", "registry+v1")
	files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = strings.ReplaceAll(bundleCSV, "1.0.0", "1.1.0") + "  replaces: etcdoperator.v1.0.0\n"
	files["operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml"] = crdWithFields("size")
	for name, body := range files {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "drop a field")
	head := git("rev-parse", "HEAD")
	code, v, out := checkJSON(t, dir, base, head, "bob", "crd-safety")
	if code != exitFail {
		t.Errorf("exit %d, want %d\n%s", code, exitFail, out)
	}
	found := false
	for _, r := range v.Results {
		for _, f := range r.Findings {
			if f.Rule == "crd.field-removed" && f.File == "operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml" && strings.Contains(f.Message, "etcdoperator.v1.0.0 → etcdoperator.v1.1.0 (replaces, ") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no crd.field-removed on the new CRD for the upgrade from 1.0.0:\n%s", out)
	}
}

// A bundle directory whose predecessor is published only in a catalog of the repository (an olm.bundle blob
// with its CRDs embedded) is compared with that blob's CRDs.
func TestCheckBundleCRDSafetyAgainstACatalogBundle(t *testing.T) {
	crdJSON := `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"etcdclusters.etcd.database.coreos.com"},` +
		`"spec":{"group":"etcd.database.coreos.com","names":{"kind":"EtcdCluster","listKind":"EtcdClusterList","plural":"etcdclusters","singular":"etcdcluster"},"scope":"Namespaced",` +
		`"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{"spec":{"type":"object","properties":{"size":{"type":"string"},"version":{"type":"string"}}}}}}}]}}`
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/etcd/catalog.yaml", "---\nschema: olm.package\nname: etcd\ndefaultChannel: stable\n---\nschema: olm.channel\npackage: etcd\nname: stable\nentries:\n  - name: etcdoperator.v1.0.0\n"+
		"---\nschema: olm.bundle\npackage: etcd\nname: etcdoperator.v1.0.0\nimage: quay.io/acme/etcd-bundle:v1.0.0\nproperties:\n  - type: olm.package\n    value: {packageName: etcd, version: 1.0.0}\n"+
		"  - type: olm.bundle.object\n    value: {data: "+base64.StdEncoding.EncodeToString([]byte(crdJSON))+"}\n")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	files := etcdBundleFiles("1.1.0", "etcd", "registry+v1")
	files["operators/etcd/1.1.0/manifests/etcd.csv.yaml"] = strings.ReplaceAll(bundleCSV, "1.0.0", "1.1.0") + "  replaces: etcdoperator.v1.0.0\n"
	files["operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml"] = crdWithFields("size")
	for name, body := range files {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "1.1.0")
	head := git("rev-parse", "HEAD")
	code, v, out := checkJSON(t, dir, base, head, "bob", "crd-safety")
	if code != exitFail {
		t.Errorf("exit %d, want %d\n%s", code, exitFail, out)
	}
	found := false
	for _, r := range v.Results {
		for _, f := range r.Findings {
			if f.Rule == "crd.field-removed" && f.File == "operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml" && strings.Contains(f.Message, "etcdoperator.v1.0.0 → etcdoperator.v1.1.0 (replaces, ") {
				found = true
			}
		}
	}
	if !found {
		t.Errorf("no crd.field-removed against the catalog's etcdoperator.v1.0.0:\n%s", out)
	}
}

// A bundle root's optionalSuites: [operatorhub] runs operator-sdk's optional suite in the validation check:
// a CSV without a provider fails its pull request on the CSV's spec (issue 29.4).
func TestCheckBundleOptionalSuite(t *testing.T) {
	dir, git, write := testRepo(t)
	write(".catalogbot.yaml", "version: 1\ncatalogs: [{path: catalogs/v4.16}]\nbundles: [{path: operators, ownersFromCIYaml: true, optionalSuites: [operatorhub]}]\nmaintainers: [alice]\n")
	write("catalogs/v4.16/.keep", "")
	write("operators/etcd/ci.yaml", "reviewers: [bob]\n")
	git("add", "-A")
	git("commit", "-q", "-m", "base")
	base := git("rev-parse", "HEAD")
	for name, body := range etcdBundleFiles("1.0.0", "etcd", "registry+v1") {
		write(name, body)
	}
	git("add", "-A")
	git("commit", "-q", "-m", "etcd 1.0.0")
	head := git("rev-parse", "HEAD")
	code, v, out := checkJSON(t, dir, base, head, "bob", "validation")
	found := false
	for _, r := range v.Results {
		for _, f := range r.Findings {
			if f.Rule == "operatorhub.provider" && f.Severity == "error" && f.File == "operators/etcd/1.0.0/manifests/etcd.csv.yaml" && f.Line > 1 {
				found = true
			}
		}
	}
	if code != exitFail || !found {
		t.Errorf("exit %d, want 1 with operatorhub.provider on the CSV\n%s", code, out)
	}
}
