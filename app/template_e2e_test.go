package app

import (
	"strconv"
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

const templatePolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [bob] }
templates:
  - path: templates/etcd.yaml
    catalogs: [catalogs/v4.16/etcd/catalog.yaml]
`

const etcdTemplate = `schema: olm.template.basic
entries:
  - schema: olm.package
    name: etcd
    defaultChannel: stable
  - schema: olm.channel
    package: etcd
    name: stable
    entries:
      - name: etcd.v1.0.0
      - name: etcd.v1.1.0
        replaces: etcd.v1.0.0
  - schema: olm.bundle
    image: quay.io/acme/etcd-bundle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
  - schema: olm.bundle
    image: quay.io/acme/etcd-bundle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
`

// etcdRendered is what the template renders to, as opm writes YAML (the bundles come from the base catalog,
// being pinned by digest).
const etcdRendered = `---
defaultChannel: stable
name: etcd
schema: olm.package
---
entries:
- name: etcd.v1.0.0
- name: etcd.v1.1.0
  replaces: etcd.v1.0.0
name: stable
package: etcd
schema: olm.channel
---
image: quay.io/acme/etcd-bundle@sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
name: etcd.v1.0.0
package: etcd
properties:
- type: olm.package
  value:
    packageName: etcd
    version: 1.0.0
schema: olm.bundle
---
image: quay.io/acme/etcd-bundle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
name: etcd.v1.1.0
package: etcd
properties:
- type: olm.package
  value:
    packageName: etcd
    version: 1.1.0
schema: olm.bundle
`

// Drift through the App: bob hand-edits the rendered catalog (etcd.v1.1.0 no longer replaces etcd.v1.0.0) without
// touching the template. catalogbot/templates fails with the difference annotated on the changed line, naming
// the command that writes what should be committed; the other runs are unaffected.
func TestTemplateDriftThroughTheApp(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": templatePolicy, "templates/etcd.yaml": etcdTemplate,
			"catalogs/v4.16/etcd/catalog.yaml": etcdRendered}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": strings.Replace(etcdRendered, "  replaces: etcd.v1.0.0\n", "  skipRange: '<1.1.0'\n", 1)}, "hand edit")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Templates{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 3))
	run, ok := runs["catalogbot/templates"]
	if !ok {
		t.Fatalf("no catalogbot/templates run: %v", runs)
	}
	if run.Conclusion != "failure" {
		t.Fatalf("templates = %s (%s), want failure\n%s", run.Conclusion, run.Title, run.Summary)
	}
	var lines []string
	for _, a := range run.Annotations {
		if a.Path != "catalogs/v4.16/etcd/catalog.yaml" {
			t.Errorf("annotation on %s, want the catalog: %+v", a.Path, a)
		}
		if !strings.Contains(a.Message, "catalog-check template render templates/etcd.yaml --output yaml > catalogs/v4.16/etcd/catalog.yaml") {
			t.Errorf("annotation without the fix command: %s", a.Message)
		}
		lines = append(lines, a.Title+"@"+strconv.Itoa(a.StartLine))
	}
	// Line 9 is the edited entry: its skipRange is extra, its replaces missing.
	if len(run.Annotations) != 2 || run.Annotations[0].StartLine != 9 || run.Annotations[1].StartLine != 9 {
		t.Errorf("annotations %q, want two on line 9", lines)
	}
	if own := runs["catalogbot/ownership"]; own.Conclusion != "success" {
		t.Errorf("ownership = %s, want success", own.Conclusion)
	}
	if !strings.Contains(run.Summary, "`templates/etcd.yaml` → `catalogs/v4.16/etcd/catalog.yaml`") {
		t.Errorf("summary does not list the mapping:\n%s", run.Summary)
	}
}
