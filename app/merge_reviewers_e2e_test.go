package app

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
)

// reviewersPolicy: the approval world with a community bundle root whose ci.yaml reviewers own their package;
// holdLabels left to the default.
const reviewersPolicy = approvalPolicy + `bundles:
  - path: operators
    ownersFromCIYaml: true
`

// When the author does not own a package whose ci.yaml says addReviewers: true, its reviewers are asked for
// a review, once, as GitHub allows (a non-collaborator is refused by GitHub and not asked again); the
// work-in-progress label holds the merge by default until it is taken off.
func TestAddReviewersAndWorkInProgress(t *testing.T) {
	e := startE2EWith(t, store.BackendSQLite, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": reviewersPolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase,
			"operators/etcd/ci.yaml": "addReviewers: true\nreviewers:\n  - carol\n  - dave\n  - mallory\n"}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
	must(t, e.fake.SetCollaborator("acme", "catalog", "carol", "write"))
	must(t, e.fake.SetCollaborator("acme", "catalog", "dave", "read"))
	must(t, e.fake.AddLabel("acme", "catalog", 1, "do-not-merge/work-in-progress"))

	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	waitFor(t, "carol and dave not asked for a review", func() bool {
		got, _ := e.fake.RequestedReviewers("acme", "catalog", 1)
		return slices.Equal(got, []string{"carol", "dave"})
	})
	e.review(t, "carol", "APPROVED")
	e.waitOwnership(t, e.headSHA, "success")
	waitFor(t, "no status comment naming the work-in-progress label", func() bool {
		return strings.Contains(e.statusComment(), `the hold label "do-not-merge/work-in-progress" is set`)
	})
	e.waitIdle(t)
	if n := len(e.fake.Merges()); n != 0 {
		t.Fatalf("merged with the work-in-progress label on (%d)", n)
	}
	must(t, e.fake.RemoveLabel("acme", "catalog", 1, "do-not-merge/work-in-progress"))
	e.deliverRaw(t, "pull_request", e.prEventNow(t, "unlabeled"))
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 {
		t.Fatalf("merges = %+v, want one once the label is off", merges)
	}
	e.waitIdle(t)
	// Asked once each: the later evaluations (review, label) asked nobody again; mallory was refused once.
	posts := 0
	for _, r := range e.fake.Requests() {
		if r.Method == "POST" && strings.HasSuffix(r.Path, "/requested_reviewers") {
			posts++
		}
	}
	if posts != 4 { // the batch GitHub refused, then carol, dave and mallory one at a time
		t.Errorf("review request calls = %d, want 4", posts)
	}
	if got, _ := e.fake.RequestedReviewers("acme", "catalog", 1); !slices.Equal(got, []string{"dave"}) {
		t.Errorf("requested after carol's review = %v, want dave", got)
	}
}
