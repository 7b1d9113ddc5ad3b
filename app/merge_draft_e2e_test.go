package app

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/merge"
	"github.com/catalogbot/catalogbot/app/store"
)

// prEventNow is the fake's pull_request event for pull request 1 as it is now, with the local clone URL.
func (e *e2eEnv) prEventNow(t *testing.T, action string) []byte {
	t.Helper()
	body, err := e.fake.PullRequestEvent("acme", "catalog", 1, action)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.ReplaceAll(body, []byte(`"https://github.com/acme/catalog.git"`), []byte(`"`+e.git.URL("acme", "catalog")+`"`))
}

// statusComment returns the merge status comment of pull request 1, "" when there is none.
func (e *e2eEnv) statusComment() string {
	for _, c := range e.fake.Comments("acme", "catalog", 1) {
		if strings.HasPrefix(c.Body, merge.StatusMarker) {
			return c.Body
		}
	}
	return ""
}

// A draft is checked as it is opened (its author sees every verdict) and never merged, even approved by an
// owner; marked ready for review it is evaluated again and merges without a new check.
func TestDraftCheckedNeverMergedThenReady(t *testing.T) {
	e := startApprovalE2E(t, store.BackendSQLite)
	if err := e.fake.SetDraft("acme", "catalog", 1, true); err != nil {
		t.Fatal(err)
	}
	e.deliverRaw(t, "pull_request", e.prEventNow(t, "opened"))
	e.waitOwnership(t, e.headSHA, "action_required")
	e.review(t, "carol", "APPROVED")
	e.waitOwnership(t, e.headSHA, "success")
	waitFor(t, "no status comment saying the draft blocks", func() bool { return strings.Contains(e.statusComment(), "is a draft") })
	e.waitIdle(t)
	if n := len(e.fake.Merges()); n != 0 {
		t.Fatalf("a draft merged (%d merges)", n)
	}
	runs := len(e.fake.CheckRuns("acme", "catalog", e.headSHA))

	if err := e.fake.SetDraft("acme", "catalog", 1, false); err != nil {
		t.Fatal(err)
	}
	e.deliverRaw(t, "pull_request", e.prEventNow(t, "ready_for_review"))
	if merges := e.waitMerged(t, 30*time.Second); len(merges) != 1 || merges[0].HeadSHA != e.headSHA {
		t.Fatalf("merges = %+v, want one of %s once ready", merges, e.headSHA[:8])
	}
	e.waitIdle(t)
	if n := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); n != runs {
		t.Errorf("check runs %d → %d: ready for review checked the same head again", runs, n)
	}
	if c := e.statusComment(); c != "" {
		t.Errorf("the status comment stayed after the merge:\n%s", c)
	}
}
