package app

import (
	"strings"
	"testing"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// communityPolicy declares the catalogs as the community repository keeps them, one per release under a
// pattern, and the package owners from ci.yaml; extra ends the catalog list.
func communityPolicy(extra string) string {
	return "version: 1\ncatalogs:\n  - path: \"catalogs/v4.*\"\n" + extra +
		"bundles:\n  - path: operators\n    ownersFromCIYaml: true\nmaintainers: [maria]\n"
}

// communitySeed commits policy, etcd's ci.yaml naming bob and etcd's catalog in v4.16 and v4.17; the pull
// request (by bob) changes etcd's rendered catalog of v4.17 only.
func communitySeed(policy string) func(w *workRepo) (string, string) {
	return func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": policy, "operators/etcd/ci.yaml": "reviewers:\n  - bob\n",
			"catalogs/v4.16/etcd/catalog.yaml": e2eBase, "catalogs/v4.17/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(w.t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.17/etcd/catalog.yaml": strings.Replace(e2eHead, "not-a-version", "1.1.0", 1)}, "etcd 1.1.0 in v4.17")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}
}

// Ownership that matches the community, through the App (issue 26.5): with the catalog roots given as a
// pattern resolved on the base, a package's ci.yaml reviewer owns its rendered catalog under a root the
// pattern found (before the fix: ownership.not-owner, "it has no owners in the policy").
func TestAppCIYamlReviewerOwnsRenderedCatalogs(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, communitySeed(communityPolicy("")), checks.Ownership{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	own := latestByName(e.waitRuns(t, e.headSHA, 1))["catalogbot/ownership"]
	if own.Conclusion != "success" {
		t.Fatalf("ownership of bob's change to catalogs/v4.17/etcd/catalog.yaml = %s (%s)\n%s\n%+v", own.Conclusion, own.Title, own.Summary, own.Annotations)
	}
}

// A catalog root pattern that matches nothing on the base is a policy error on its line, through the App:
// nothing is checked, every run is neutral and names the policy file, line and column, and the job is not
// retried. It is never read as a literal folder that holds no catalog.
func TestAppCatalogPatternMatchingNothing(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, communitySeed(communityPolicy("  - path: \"catalogs/v5.*\"\n")), checks.Ownership{}, checks.Validation{})
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	runs := e.waitRuns(t, e.headSHA, 2)
	e.waitIdle(t)
	if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != 2 {
		t.Errorf("check runs = %d, want 2 (no retry)", got)
	}
	for _, r := range runs {
		if r.Conclusion != "neutral" || !strings.Contains(r.Summary, ".catalogbot.yaml:4:5: catalog pattern catalogs/v5.* matches no directory of this revision") {
			t.Errorf("%s: %s %q, want neutral naming .catalogbot.yaml:4:5 and the pattern\n%s", r.Name, r.Conclusion, r.Title, r.Summary)
		}
	}
}
