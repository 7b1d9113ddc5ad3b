package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/checks"
)

// etcdWithNightly is e2eBase with a nightly build added to channel stable.
const etcdWithNightly = e2eBase + `---
schema: olm.bundle
package: etcd
name: etcd.v1.1.0-nightly.1
image: quay.io/acme/etcd-bundle@sha256:bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb
properties:
  - type: olm.package
    value: {packageName: etcd, version: 1.1.0-nightly.1}
`

// Pruning through the App (issue 28.3): the policy lets owners remove pre-release builds; bob, a ci.yaml
// reviewer of etcd, removes a nightly bundle (its directory, its catalog blob and its channel entry); the
// checks pass, the pull request merges by itself and the audit log records the removals with who vouched.
func TestPruningPullRequestMergesAndIsAudited(t *testing.T) {
	nightly := strings.Replace(etcdWithNightly, "  - name: etcd.v1.0.0\n", "  - name: etcd.v1.0.0\n  - name: etcd.v1.1.0-nightly.1\n    replaces: etcd.v1.0.0\n", 1)
	e := startE2EWith(t, BackendSQLite, func(w *workRepo) (string, string) {
		files := map[string]string{
			".catalogbot.yaml":                 bundlePolicy + "automerge: {enabled: true}\nremovals:\n  - versions: [prerelease]\n",
			"catalogs/v4.16/etcd/catalog.yaml": nightly, "operators/etcd/ci.yaml": "reviewers: [bob]\n"}
		for k, v := range e2eBundle("1.1.0-nightly.1", "registry+v1") {
			files[k] = v
		}
		base := w.commit(files, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		prune := map[string]string{"catalogs/v4.16/etcd/catalog.yaml": e2eBase}
		for k := range e2eBundle("1.1.0-nightly.1", "registry+v1") {
			prune[k] = ""
		}
		head := w.commit(prune, "clean nightly builds")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 2))
	val := runs["catalogbot/validate"] // immutability reports there
	if val.Conclusion != "success" || !strings.Contains(val.Title, "Removals the policy allows") {
		t.Errorf("validate = %s (%s), want success with the allowed removals\n%s", val.Conclusion, val.Title, val.Summary)
	}
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
		t.Fatalf("merges = %+v, want bob's pruning merged", merges)
	}
	waitFor(t, "no merge audit row", func() bool {
		m, _ := e.srv.Queue().AuditLog(context.Background(), "acme/catalog", 0)
		return len(m) > 0
	})
	log, err := e.srv.Queue().AuditLog(context.Background(), "acme/catalog", 0)
	if err != nil || len(log) != 1 {
		t.Fatalf("audit = %+v, %v", log, err)
	}
	by := log[0].AuthorizedBy
	for _, want := range []string{"author bob; removals the policy allows: ", `released bundle "etcd.v1.1.0-nightly.1" of package "etcd" was removed`,
		"operators/etcd/1.1.0-nightly.1", "removals (line 10): versions prerelease of every package"} {
		if !strings.Contains(by, want) {
			t.Errorf("the audit row's authorization lacks %q:\n%s", want, by)
		}
	}
}
