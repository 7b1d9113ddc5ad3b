package app

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
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

// startPruningE2E starts the App on a repository whose policy lets owners remove pre-release builds, with a
// pull request (by bob) that removes a nightly bundle: its directory, its catalog blob and its channel entry.
// reviewers are etcd's ci.yaml reviewers.
func startPruningE2E(t *testing.T, reviewers string) *e2eEnv {
	nightly := strings.Replace(etcdWithNightly, "  - name: etcd.v1.0.0\n", "  - name: etcd.v1.0.0\n  - name: etcd.v1.1.0-nightly.1\n    replaces: etcd.v1.0.0\n", 1)
	return startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		files := map[string]string{
			".catalogbot.yaml":                 bundlePolicy + "automerge: {enabled: true}\nremovals:\n  - versions: [prerelease]\n",
			"catalogs/v4.16/etcd/catalog.yaml": nightly, "operators/etcd/ci.yaml": "reviewers: [" + reviewers + "]\n"}
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
}

// waitAuditedRemovals waits for the merge of the head and checks that its audit row names who authorized it
// and the removals.
func (e *e2eEnv) waitAuditedRemovals(t *testing.T, authorized string) {
	t.Helper()
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
		t.Fatalf("merges = %+v, want the pruning merged", merges)
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
	for _, want := range []string{authorized + "; removals the policy allows: ", `released bundle "etcd.v1.1.0-nightly.1" of package "etcd" was removed`,
		"operators/etcd/1.1.0-nightly.1", "removals (line 10): versions prerelease of every package"} {
		if !strings.Contains(by, want) {
			t.Errorf("the audit row's authorization lacks %q:\n%s", want, by)
		}
	}
}

// Pruning through the App (issue 28.3): bob, a ci.yaml reviewer of etcd, removes a nightly build the policy's
// removals allow; the checks pass, the pull request merges by itself and the audit log records the removals
// with who vouched for them.
func TestPruningPullRequestMergesAndIsAudited(t *testing.T) {
	e := startPruningE2E(t, "bob")
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := latestByName(e.waitRuns(t, e.headSHA, 2))
	val := runs["catalogbot/validate"] // immutability reports there
	if val.Conclusion != "success" || !strings.Contains(val.Title, "Removals the policy allows") {
		t.Errorf("validate = %s (%s), want success with the allowed removals\n%s", val.Conclusion, val.Title, val.Summary)
	}
	e.waitAuditedRemovals(t, "author bob")
}

// The same pruning by someone who does not own etcd waits for an owner; carol, a ci.yaml reviewer, approves it
// with /approve, as any change of the package, and the audit log says she authorized the removals.
func TestPruningApprovedByAnOwner(t *testing.T) {
	e := startPruningE2E(t, "carol")
	e.srv.commands.SetClockSkew(0)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	if n := len(e.fake.Merges()); n != 0 {
		t.Fatalf("merged %d times before an owner approved", n)
	}
	carol := e.comment(t, "carol", "/approve")
	e.waitReaction(t, carol)
	e.waitOwnership(t, e.headSHA, "success")
	e.waitAuditedRemovals(t, "approved by carol")
}
