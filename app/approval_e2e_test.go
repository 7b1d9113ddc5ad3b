package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// approvalPolicy: bob, the pull request's author, does not own etcd; carol does.
const approvalPolicy = `version: 1
catalogs:
  - path: catalogs/v4.16
maintainers: [maria]
packages:
  etcd: { owners: [carol] }
automerge:
  enabled: true
  method: squash
`

// approvalHead adds a valid etcd 1.1.0 upgrading from 1.0.0.
var approvalHead = strings.Replace(e2eHead, "version: not-a-version", "version: 1.1.0", 1)

// startApprovalE2E runs the real server with the checks that need no registry, on a pull request by bob that
// changes carol's package and is otherwise valid.
func startApprovalE2E(t *testing.T, backend string) *e2eEnv {
	t.Helper()
	return startE2EWith(t, backend, func(w *workRepo) (string, string) {
		base := w.commit(map[string]string{".catalogbot.yaml": approvalPolicy, "catalogs/v4.16/etcd/catalog.yaml": e2eBase}, "base")
		w.push("HEAD", "refs/heads/main")
		runGit(t, w.dir, "checkout", "-q", "-b", "pr")
		head := w.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead}, "add etcd 1.1.0")
		w.push("HEAD", "refs/pull/1/head")
		return base, head
	}, checks.Ownership{}, checks.Validation{}, checks.Immutability{})
}

// review adds a review by login on the pull request's current head and delivers its event, as GitHub does.
func (e *e2eEnv) review(t *testing.T, login, state string) int64 {
	t.Helper()
	id, err := e.fake.AddReview("acme", "catalog", 1, githubfake.Review{User: login, State: state})
	if err != nil {
		t.Fatal(err)
	}
	e.deliverReview(t, id, "submitted")
	return id
}

func (e *e2eEnv) deliverReview(t *testing.T, id int64, action string) {
	t.Helper()
	body, err := e.fake.PullRequestReviewEvent("acme", "catalog", 1, id, action)
	if err != nil {
		t.Fatal(err)
	}
	// The fake names github.com as the clone URL; the server clones from the local git server.
	body = bytes.ReplaceAll(body, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+e.git.URL("acme", "catalog")+`"`))
	e.deliverRaw(t, "pull_request_review", body)
}

func (e *e2eEnv) deliverRaw(t *testing.T, event string, body []byte) {
	t.Helper()
	d, err := e.fake.Deliver(t.Context(), event, body)
	if err != nil {
		t.Fatal(err)
	}
	if d.StatusCode != 202 && d.StatusCode != 200 {
		t.Fatalf("delivery of %s answered %d (%s)", event, d.StatusCode, d.Status)
	}
}

// waitOwnership waits until the latest ownership run on sha has the conclusion and returns it.
func (e *e2eEnv) waitOwnership(t *testing.T, sha, conclusion string) githubfake.CheckRun {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	var last githubfake.CheckRun
	for time.Now().Before(deadline) {
		last = latestByName(e.fake.CheckRuns("acme", "catalog", sha))["catalogbot/ownership"]
		if last.Status == "completed" && last.Conclusion == conclusion {
			return last
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("catalogbot/ownership on %s = %s %s (%s), want %s", sha[:8], last.Status, last.Conclusion, last.Title, conclusion)
	return last
}

// An owner's approval of the exact head turns ownership green and merges a non-owner's pull request; before
// it, the ownership run asks for action and names who may approve. On SQLite and PostgreSQL.
func TestOwnerApprovalMergesNonOwnersPullRequest(t *testing.T) {
	for _, backend := range backendNames {
		t.Run(backend, func(t *testing.T) {
			e := startApprovalE2E(t, backend)
			e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
			run := e.waitOwnership(t, e.headSHA, "action_required")
			if !strings.Contains(run.Summary, "@carol") || !strings.Contains(run.Summary, "@maria") {
				t.Errorf("the ownership run does not say who may approve:\n%s", run.Summary)
			}
			e.waitIdle(t)
			if n := len(e.fake.Merges()); n != 0 {
				t.Fatalf("merged %d times before any approval", n)
			}

			// A reviewer who owns nothing does not count.
			e.review(t, "dave", "APPROVED")
			e.waitIdle(t)
			if got := latestByName(e.fake.CheckRuns("acme", "catalog", e.headSHA))["catalogbot/ownership"]; got.Conclusion != "action_required" {
				t.Errorf("after dave's approval, ownership = %s, want action_required", got.Conclusion)
			}

			e.review(t, "carol", "APPROVED")
			run = e.waitOwnership(t, e.headSHA, "success")
			if !strings.Contains(run.Title+run.Summary, "@carol") || !strings.Contains(run.Summary, e.headSHA[:7]) {
				t.Errorf("the ownership run does not say who approved which commit: %s\n%s", run.Title, run.Summary)
			}
			deadline := time.Now().Add(30 * time.Second)
			for len(e.fake.Merges()) == 0 && time.Now().Before(deadline) {
				time.Sleep(100 * time.Millisecond)
			}
			merges := e.fake.Merges()
			if len(merges) != 1 || merges[0].HeadSHA != e.headSHA || merges[0].RequestSHA != e.headSHA {
				t.Fatalf("merges = %+v, want one of %s", merges, e.headSHA[:8])
			}
		})
	}
}

// An approval of an older commit never counts: after a push, the new head needs its own approval; and a
// dismissed approval is withdrawn.
func TestApprovalIsBoundToTheHead(t *testing.T) {
	e := startApprovalE2E(t, store.BackendSQLite)
	// Hold the merge so the first approval does not merge before the push.
	if err := e.fake.AddLabel("acme", "catalog", 1, "do-not-merge/hold"); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitOwnership(t, e.headSHA, "action_required")
	id := e.review(t, "carol", "APPROVED")
	e.waitOwnership(t, e.headSHA, "success")

	// The approval is dismissed: ownership asks again.
	if err := e.fake.DismissReview("acme", "catalog", 1, id); err != nil {
		t.Fatal(err)
	}
	e.deliverReview(t, id, "dismissed")
	e.waitOwnership(t, e.headSHA, "action_required")

	// Approved again, then bob pushes: the new head is not approved.
	e.review(t, "carol", "APPROVED")
	e.waitOwnership(t, e.headSHA, "success")
	runGit(t, e.work.dir, "checkout", "-q", "pr")
	newHead := e.work.commit(map[string]string{"catalogs/v4.16/etcd/catalog.yaml": approvalHead + "# a comment\n"}, "touch")
	e.work.push("HEAD", "refs/pull/1/head")
	if err := e.fake.PushPullRequest("acme", "catalog", 1, newHead); err != nil {
		t.Fatal(err)
	}
	e.deliver(t, "pull_request", e.prEvent("synchronize", newHead))
	run := e.waitOwnership(t, newHead, "action_required")
	if strings.Contains(run.Title, "Approved") {
		t.Errorf("the new head counts the old approval: %s", run.Title)
	}
	e.waitIdle(t)
	if n := len(e.fake.Merges()); n != 0 {
		t.Errorf("merges = %d, want none", n)
	}
}
