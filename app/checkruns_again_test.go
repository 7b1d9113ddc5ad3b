package app

import (
	"context"
	"testing"
	"time"

	"github.com/catalogbot/catalogbot/app/ghapp"
	"github.com/catalogbot/catalogbot/app/jobs"
	"github.com/catalogbot/catalogbot/app/store"
	"github.com/catalogbot/catalogbot/checks"
	"github.com/catalogbot/catalogbot/internal/githubfake"
)

// CheckedByAnother names the job whose completed verdicts cover every name,
// and nothing when a name is missing, in progress or only a placeholder
// (superseded, not checked, could not run), or when the asking job has runs
// of its own there.
func TestCheckRunReporterCheckedByAnother(t *testing.T) {
	e := newFakeEnv(t, ghapp.RetryPolicy{})
	ctx := context.Background()
	c := e.installation(t)
	rep := ghapp.NewCheckRunReporter(nil)
	head := githubfake.MakeSHA("checked-before")
	by := func(job string) string {
		t.Helper()
		got, err := rep.CheckedByAnother(ctx, c, testOwner, testRepo, head, 5, job, checkNames)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := by("j2"); got != "" {
		t.Errorf("on a head without runs: %q, want none", got)
	}
	first, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j1", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	// Placeholders first: the head was superseded, then checked.
	for _, id := range first {
		if err := rep.Complete(ctx, c, testOwner, testRepo, id, checks.Result{Conclusion: checks.Neutral, Title: ghapp.TitleSuperseded}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got := by("j2"); got != "" {
		t.Errorf("after a superseded set: %q, want none (it is no verdict)", got)
	}
	second, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j3", checkNames)
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range checkNames {
		if got := by("j2"); got != "" {
			t.Errorf("with %d of %d runs of j3 completed: %q, want none", i, len(checkNames), got)
		}
		if err := rep.Complete(ctx, c, testOwner, testRepo, second[name], checks.Result{Conclusion: checks.Failure, Title: "1 error"}, ""); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := by("j2"), jobs.CheckRunExternalID(5, "j3"); got != want {
		t.Errorf("after j3's verdicts: %q, want %q", got, want)
	}
	if got := by("j3"); got != "" {
		t.Errorf("asked by j3 itself: %q, want none", got)
	}
	if got, err := rep.CheckedByAnother(ctx, c, testOwner, testRepo, head, 6, "j2", checkNames); err != nil || got != "" {
		t.Errorf("for PR 6 on the same head: %q, %v; want none (PR 5's runs are not its)", got, err)
	}
	if _, err := rep.Start(ctx, c, testOwner, testRepo, head, 5, "j2", checkNames[:1]); err != nil {
		t.Fatal(err)
	}
	if got := by("j2"); got != "" {
		t.Errorf("asked by j2 with a run of its own: %q, want none (its retry completes it)", got)
	}
}

// The startup resync and a delivery for the same head (a late redelivery,
// or a second synchronize) report one set between them: the job that runs
// second finds the first's verdicts and drops. A reopened pull request is
// checked afresh.
func TestCheckPRSameHeadAgainReportsOnce(t *testing.T) {
	e := startE2E(t, store.BackendSQLite)
	e.deliver(t, "pull_request", e.prEvent("opened", e.headSHA))
	e.waitIdle(t)
	runs := e.fake.CheckRuns("acme", "catalog", e.headSHA)
	n := len(runs)
	if n == 0 {
		t.Fatal("no runs after opened")
	}
	for _, r := range runs {
		if r.Status != "completed" {
			t.Fatalf("run %s left %s", r.Name, r.Status)
		}
	}
	e.deliver(t, "pull_request", e.prEvent("synchronize", e.headSHA))
	e.waitIdle(t)
	if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != n {
		t.Errorf("runs after a second delivery for the checked head = %d, want the first %d", got, n)
	}
	e.deliver(t, "pull_request", e.prEvent("reopened", e.headSHA))
	e.waitRuns(t, e.headSHA, 2*n)
	e.waitIdle(t)
	time.Sleep(100 * time.Millisecond)
	if got := len(e.fake.CheckRuns("acme", "catalog", e.headSHA)); got != 2*n {
		t.Errorf("runs after reopened = %d, want a fresh set: %d", got, 2*n)
	}
}
