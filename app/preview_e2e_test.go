package app

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// previewPolicy maps etcd's semver template to its catalog; merged bundles go to quay.io/acme/etcd-bundle.
const previewPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
bundles:
  - path: operators
    ownersFromCIYaml: true
    image: quay.io/acme/{package}-bundle:v{version}
templates:
  - path: operators/etcd/catalog-templates/semver.yaml
    catalogs: [catalogs/v4.16/etcd/catalog.yaml]
maintainers: [maria]
`

const previewTemplate = `schema: olm.semver
generateMajorChannels: true
generateMinorChannels: false
stable:
  bundles:
    - image: quay.io/acme/etcd-bundle:v1.0.0
`

const previewCatalog = `---
schema: olm.package
name: etcd
defaultChannel: stable-v1
---
schema: olm.channel
package: etcd
name: stable-v1
entries:
  - name: etcdoperator.v1.0.0
---
schema: olm.bundle
package: etcd
name: etcdoperator.v1.0.0
image: quay.io/acme/etcd-bundle:v1.0.0
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.0.0}
`

// previewBundle is e2eBundle with a CRD whose spec has the given string fields.
func previewBundle(version string, fields ...string) map[string]string {
	files := e2eBundle(version, "registry+v1")
	csv := "operators/etcd/" + version + "/manifests/etcd.csv.yaml"
	files[csv] += "  customresourcedefinitions:\n    owned:\n      - {name: etcdclusters.etcd.database.coreos.com, version: v1, kind: EtcdCluster}\n"
	var props strings.Builder
	for _, f := range fields {
		props.WriteString("                " + f + ": {type: string}\n")
	}
	files["operators/etcd/"+version+"/manifests/etcdclusters.crd.yaml"] = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: etcdclusters.etcd.database.coreos.com
spec:
  group: etcd.database.coreos.com
  names: {kind: EtcdCluster, listKind: EtcdClusterList, ghapp.Plural: etcdclusters, singular: etcdcluster}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
` + props.String()
	return files
}

// A community-style bundle pull request through the App: the new CSV names no predecessor (the package's
// semver template makes the edges), and its CRD drops a field. The catalog update is previewed: crd-safety
// compares with the bundle the rendered channel upgrades from and fails on the CRD's file; validate says the
// rendered catalog is valid and draws the channel after the catalog update.
func TestBundlePullRequestPreviewThroughTheApp(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		files := map[string]string{".catalogbot.yaml": previewPolicy, "catalogs/v4.16/etcd/catalog.yaml": previewCatalog,
			"operators/etcd/ci.yaml": "reviewers: [bob]\n", "operators/etcd/catalog-templates/semver.yaml": previewTemplate}
		for k, v := range previewBundle("1.0.0", "size", "version") {
			files[k] = v
		}
		base := w.commit(files, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(previewBundle("1.1.0", "size"), "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.CRDSafety{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 3))
	cs := runs["catalogbot/crd-safety"]
	if cs.Conclusion != "failure" {
		t.Fatalf("crd-safety = %s (%s), want failure\n%s", cs.Conclusion, cs.Title, cs.Summary)
	}
	if !strings.Contains(cs.Summary, "predecessors from the rendered channels") ||
		!strings.Contains(cs.Summary, "`etcdoperator.v1.0.0` → `etcdoperator.v1.1.0` (replaces, channel stable-v1 of v4.16") {
		t.Errorf("crd-safety summary does not name the rendered edge:\n%s", cs.Summary)
	}
	found := false
	for _, a := range cs.Annotations {
		if a.Path == "operators/etcd/1.1.0/manifests/etcdclusters.crd.yaml" && strings.Contains(a.Message, "^.spec.version") {
			found = true
		}
	}
	if !found {
		t.Errorf("no annotation of the removed field on the new CRD: %+v", cs.Annotations)
	}
	val := runs["catalogbot/validate"]
	if val.Conclusion != "success" {
		t.Errorf("validate = %s, want success\n%s\n%+v", val.Conclusion, val.Summary, val.Annotations)
	}
	if !strings.Contains(val.Summary, "catalog update of `etcd` (previewed): valid") ||
		!strings.Contains(val.Summary, "channel `stable-v1`, after the catalog update (previewed") ||
		!strings.Contains(val.Summary, "```mermaid") {
		t.Errorf("validate summary lacks the preview and its upgrade graph:\n%s", val.Summary)
	}
	// The server keeps each bundle directory's facts by its tree for the next check of the repository.
	if n := e.srv.caches.bundleDirs.Len(); n == 0 {
		t.Error("the server kept no bundle directory's facts after checking a bundle pull request")
	}
}
